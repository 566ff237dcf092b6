"""``python tests/local_ray_actors.py RAY_DIR RUNS_DIR OUT``: the actor classes under a local Ray, in a child
process of ``test_actors.py::test_under_a_local_ray_cluster`` (tests/ray_child.py says why).

Starts Ray on loopback in ``RAY_DIR`` (no dashboard), a generation worker and a policy trainer with Ravel's worker
environment (spans to files under ``RUNS_DIR``), runs 8 ``generate_async`` calls, a refit and a flush, and writes
what they answered to ``OUT`` (JSON) for the test to check; stops its Ray with ``ray.shutdown``. Any failure,
Ray's start included, is an exit status other than 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import ray

from ravel_workers import actors

import ray_child
from support import answer, carrier, request, trainer_spec, worker_spec

#: A hang guard: a loaded machine starts two actors that import PyTorch in minutes.
TIMEOUT_S = 600


def main(ray_dir: Path, runs_dir: Path, out: Path) -> None:
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             _temp_dir=str(ray_dir), log_to_driver=False,
             runtime_env={"env_vars": {"RAVEL_TELEMETRY_RUN_ID": "ray-test", "RAVEL_TELEMETRY_EXPORTER": "file",
                                       "RAVEL_TELEMETRY_RUNS_DIR": str(runs_dir),
                                       "PYTHONPATH": str(Path(__file__).resolve().parents[1])}})
    try:
        ray_child.record_node(ray_dir)
        w = actors.GenerationWorker.options(max_concurrency=4, num_cpus=0).remote(json.dumps(worker_spec()))
        t = actors.PolicyTrainer.options(num_cpus=0).remote(json.dumps(trainer_spec()))
        c = carrier()
        futures = [w.generate_async.remote(c, json.dumps([[request(f"r{i}", [1, 10, i % 5, 12], seed=i)]]))
                   for i in range(8)]
        results = [r for chunk in ray.get(futures, timeout=TIMEOUT_S) for r in answer(chunk)]
        blob_ref = t.weights.remote(c, "[]")
        version = json.loads(ray.get(w.update_weights.remote(c, json.dumps([{"$ref": 0}]), blob_ref),
                                     timeout=TIMEOUT_S))
        stats = json.loads(ray.get(w.flush_telemetry.remote(c, "[60000]"), timeout=TIMEOUT_S))  # returns when done
        report = {"request_ids": sorted(r["request_id"] for r in results), "version": version, "stats": stats,
                  "node_ip": ray.util.get_node_ip_address()}
    finally:
        ray.shutdown()
    out.write_text(json.dumps(report), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
