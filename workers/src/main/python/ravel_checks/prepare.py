"""``python -m ravel_checks.prepare SPEC.json``: a run's data, model and reward checked and prepared before
Ray starts.

The spec names ``model_path``, ``train`` (files), ``eval`` (files, optional, with ``eval_out``),
``prompt_key``, ``answer_key``, ``chat_template``, ``system_prompt``, ``max_prompt_tokens``, ``long_prompts``,
``reward_function``, ``reward_code_path`` and ``out``. The tokenizer of ``model_path`` renders and tokenizes
every prompt; the rows go to ``out`` (and ``eval_out``) as JSON Lines (prompt text, token ids, answer, metadata,
source), and one JSON line on stdout says what was read::

    {"rows": 100, "dropped": 0, "truncated": 0, "vocab_size": 40, "eos_token": 2, "pad_token": 0,
     "max_positions": 64, "reward": "exact_match", "eval_rows": 0}

Anything wrong is one line on stderr, ``KEY: problem`` naming the config key (``model.path``,
``data.train``, ``reward.function``, ...), and exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ravel_workers import data, hf, rewards


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Checks and prepares ``spec`` (module docstring); raises ``KeyError``-free errors naming the key."""
    try:
        tokenizer = hf.load_tokenizer(spec["model_path"])
        config = json.loads((Path(spec["model_path"]).expanduser() / "config.json").read_text(encoding="utf-8"))
    except hf.CheckpointError as e:
        raise Problem("model.path", str(e)) from e
    except Exception as e:
        raise Problem("model.path",
                      f"'{spec['model_path']}': the tokenizer does not load ({type(e).__name__}: {e})") from e
    try:
        rows = data.read_rows(spec["train"], spec.get("prompt_key", "prompt"), spec.get("answer_key", "answer"))
        prepared = data.prepare(rows, tokenizer, int(spec["max_prompt_tokens"]), bool(spec.get("chat_template")),
                                str(spec.get("system_prompt", "")), str(spec.get("long_prompts", "drop")))
    except data.DataError as e:
        raise Problem("data.train", str(e)) from e
    evaluated: data.Prepared | None = None
    if spec.get("eval"):
        try:
            evaluated = data.prepare(
                data.read_rows(spec["eval"], spec.get("prompt_key", "prompt"), spec.get("answer_key", "answer")),
                tokenizer, int(spec["max_prompt_tokens"]), bool(spec.get("chat_template")),
                str(spec.get("system_prompt", "")), str(spec.get("long_prompts", "drop")))
        except data.DataError as e:
            raise Problem("data.eval", str(e)) from e
    try:
        rewards.RewardFunction(spec["reward_function"], spec.get("reward_code_path", []))
    except rewards.RewardError as e:
        raise Problem("reward.function", str(e).removeprefix("reward.function ")) from e
    _write(Path(spec["out"]), prepared)
    if evaluated is not None:
        _write(Path(spec["eval_out"]), evaluated)
    positions = next((int(config[k]) for k in ("max_position_embeddings", "n_positions") if k in config), 2048)
    return {"rows": len(prepared.rows), "dropped": prepared.dropped, "truncated": prepared.truncated,
            "vocab_size": int(config.get("vocab_size", len(tokenizer))), "eos_token": int(tokenizer.eos_token_id),
            "pad_token": int(tokenizer.pad_token_id), "max_positions": positions,
            "reward": spec["reward_function"], "eval_rows": 0 if evaluated is None else len(evaluated.rows)}


def _write(out: Path, prepared: data.Prepared) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for r in prepared.rows:
            f.write(json.dumps(r.to_wire(), ensure_ascii=False, allow_nan=False) + "\n")
    tmp.replace(out)


class Problem(Exception):
    """A config key and what is wrong with its value."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m ravel_checks.prepare SPEC.json", file=sys.stderr)
        return 2
    try:
        print(json.dumps(run(json.loads(Path(argv[0]).read_text(encoding="utf-8")))))
    except Problem as e:
        print(str(e).replace("\n", " "), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
