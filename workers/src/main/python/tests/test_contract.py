"""The contract file (ravel_workers/contract.json) against what the Python workers do; Java's ContractTest
holds the Java constants to the same file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ravel_workers import names, telemetry, wire
from ravel_workers.names import CONTRACT

PACKAGE = Path(names.__file__).parent


def test_no_module_writes_an_rl_or_gen_ai_name_of_its_own():
    # names come from the contract; a literal "rl.x" or "gen_ai.x" in a module would be a second definition
    # every module of the package (its subpackages included) but names.py, which reads them from the contract
    modules = sorted(p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "names.py")
    assert PACKAGE / "telemetry" / "process.py" in modules and PACKAGE / "wire" / "values.py" in modules
    for path in modules:
        module = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        assert '"rl.' not in text and '"gen_ai.' not in text and "'rl." not in text, module
        assert '"llm_request"' not in text, module


def test_presets_are_made_of_known_span_groups():
    assert set(names.PRESETS) == {"none", "default", "per_step", "all"}
    for preset, groups in names.PRESETS.items():
        assert groups <= set(names.SPAN_GROUPS), preset
    assert names.PRESETS["all"] == frozenset(names.SPAN_GROUPS)
    assert names.PRESETS["per_step"] == frozenset(names.SPAN_GROUPS) - {"engine"}


def test_telemetry_and_wire_use_the_contracts_values():
    assert telemetry.PRESETS == names.PRESETS and telemetry.EXPORTERS == ("file", "otlp", "both", "none")
    assert telemetry.ENV_PREFIX == "RAVEL_TELEMETRY_" and telemetry.OTLP_PREFIX == "RAVEL_OTLP_"
    assert wire.FINISH_REASONS == ("stop", "length", "abort", "error")
    assert names.ENGINES == ("transformers", "vllm")


def test_grpo_defaults_are_the_contracts():
    defaults = dataclasses.asdict(wire.GrpoSettings())
    assert defaults == CONTRACT["grpo_defaults"]
    assert defaults == {"group_size": 8, "clip_epsilon": 0.2, "kl_beta": 0.04, "learning_rate": 0.03,
                        "weight_decay": 0.0, "max_grad_norm": 1.0, "temperature": 1.0, "advantage_eps": 1e-6}


def test_the_file_is_json_with_every_section():
    data = json.loads(names.CONTRACT_FILE.read_text(encoding="utf-8"))
    assert {"scopes", "spans", "engine_attributes", "role_attributes", "resource_attributes", "span_groups",
            "presets", "exporters", "engines", "finish_reasons", "keep_reasons", "environment", "grpo_defaults",
            "golden"} <= set(data)
    assert len(set(data["engine_attributes"].values())) == len(data["engine_attributes"])  # no key twice


def test_grpo_loss_matches_the_golden_case():
    # the same case the Java GrpoLoss is held to (ContractGoldenTest): the Python loss, by autograd in float64
    from ravel_checks.grpo_check import check

    golden = CONTRACT["golden"]["grpo_loss"]
    got = check(golden["input"])
    want = golden["expected"]
    for key in ("loss", "kl", "clip_fraction", "mean_ratio"):
        assert abs(got[key] - want[key]) < 1e-9, key
    assert len(got["advantages"]) == len(want["advantages"])
    assert all(abs(a - b) < 1e-9 for a, b in zip(got["advantages"], want["advantages"], strict=True))
    assert want["clip_fraction"] > 0, "the case exercises the clip"
    for i, (row, expected) in enumerate(zip(got["grad_logprobs"], want["grad_logprobs"], strict=True)):
        assert len(row) == len(expected), i
        assert all(abs(a - b) < 1e-9 for a, b in zip(row, expected, strict=True)), i
