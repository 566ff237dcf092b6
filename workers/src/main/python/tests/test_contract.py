"""The contract file (ravel_workers/contract.json) against what the Python workers do; Java's ContractTest
holds the Java constants to the same file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

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
    assert {k: defaults[k] for k in ("group_size", "kl_beta", "learning_rate", "loss_type", "kl_estimator")} == {
        "group_size": 8, "kl_beta": 0.04, "learning_rate": 0.03, "loss_type": "grpo", "kl_estimator": "k3"}
    for name, choices in names.GRPO_CHOICES.items():
        assert defaults[name] in choices, name


def test_train_outcome_fields_are_the_contracts():
    assert tuple(f.name for f in dataclasses.fields(wire.TrainOutcome)) == names.TRAIN_METRICS


def test_the_file_is_json_with_every_section():
    data = json.loads(names.CONTRACT_FILE.read_text(encoding="utf-8"))
    assert {"scopes", "spans", "engine_attributes", "role_attributes", "resource_attributes", "span_groups",
            "presets", "exporters", "engines", "finish_reasons", "keep_reasons", "environment", "grpo_defaults",
            "golden"} <= set(data)
    assert len(set(data["engine_attributes"].values())) == len(data["engine_attributes"])  # no key twice


@pytest.mark.parametrize("index", range(1 + len(CONTRACT["golden"]["grpo_loss_variants"])))
def test_grpo_loss_matches_the_golden_cases(index):
    # the cases the Java GrpoLoss is held to (ContractGrpoTest): the Python loss, by autograd in float64
    from ravel_checks.grpo_check import check

    golden = ([CONTRACT["golden"]["grpo_loss"]] + CONTRACT["golden"]["grpo_loss_variants"])[index]
    got = check(golden["input"])
    want = golden["expected"]
    for key in ("loss", "kl", "clip_fraction", "mean_ratio"):
        assert abs(got[key] - want[key]) < 1e-9, key
    for key in set(want) - {"advantages", "grad_logprobs", "scales"}:
        assert abs(got[key] - want[key]) < 1e-9, key
    assert len(got["advantages"]) == len(want["advantages"])
    assert all(abs(a - b) < 1e-9 for a, b in zip(got["advantages"], want["advantages"], strict=True))
    if index == 0:
        assert want["clip_fraction"] > 0, "the case exercises the clip"
    for i, (row, expected) in enumerate(zip(got["grad_logprobs"], want["grad_logprobs"], strict=True)):
        assert len(row) == len(expected), i
        assert all(abs(a - b) < 1e-9 for a, b in zip(row, expected, strict=True)), i
