"""Your data: prompts (and answers) from JSON Lines, Parquet, or a ``datasets.Dataset.save_to_disk`` folder.

:func:`read_rows` reads every file of ``data.train`` in order into plain rows, checking each one: a row
without the prompt key, or whose prompt is neither text nor a list of chat messages, is a :class:`DataError`
naming the file and the row (1-based, as an editor shows it); so is an empty file. :func:`prepare` turns
rows into what the policy sees: the prompt text (through the tokenizer's chat template when asked, with an
optional system prompt), its token ids, the answer as text and every other field of the row as metadata for
the reward. A prompt longer than ``max_prompt_tokens`` is dropped or truncated from the left
(``long_prompts``), and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LONG_PROMPTS = ("drop", "truncate_left")


class DataError(ValueError):
    """Input data Ravel cannot use; the message names the file and row."""


@dataclass(frozen=True)
class PreparedRow:
    """One prompt as the run uses it: rendered text, token ids, answer, metadata and where it came from."""

    prompt: str
    tokens: list[int]
    answer: str
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    def to_wire(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "tokens": list(self.tokens), "answer": self.answer,
                "metadata": self.metadata, "source": self.source}


@dataclass(frozen=True)
class Prepared:
    """The rows of a dataset ready to train on, and how many were dropped or truncated for their length."""

    rows: list[PreparedRow]
    dropped: int
    truncated: int


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{n}: not JSON ({e.msg} at column {e.colno})") from e


def _parquet(path: Path) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(str(path))
    except Exception as e:  # pyarrow raises its own ArrowInvalid etc.
        raise DataError(f"{path}: not a Parquet file ({e})") from e
    yield from enumerate(table.to_pylist(), start=1)


def _saved(path: Path) -> Iterator[tuple[int, Any]]:
    import datasets

    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as e:
        raise DataError(f"{path}: not a folder that datasets' save_to_disk wrote ({e})") from e
    if isinstance(ds, datasets.DatasetDict):
        if "train" not in ds:
            raise DataError(f"{path}: a DatasetDict without a 'train' split (splits: {', '.join(ds)})")
        ds = ds["train"]
    for n, row in enumerate(ds, start=1):
        yield n, dict(row)


def _rows_of(path: Path) -> Iterator[tuple[int, Any]]:
    if path.is_dir():
        return _saved(path)
    if path.suffix in (".jsonl", ".json", ".ndjson"):
        return _jsonl(path)
    if path.suffix == ".parquet":
        return _parquet(path)
    raise DataError(f"{path}: unknown format (JSON Lines .jsonl, Parquet .parquet, or a save_to_disk folder)")


def _check_prompt(where: str, prompt: Any) -> str | list[dict[str, str]]:
    if isinstance(prompt, str):
        if not prompt:
            raise DataError(f"{where}: the prompt is empty")
        return prompt
    if isinstance(prompt, list) and prompt and all(
            isinstance(m, Mapping) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in prompt):
        return [{"role": m["role"], "content": m["content"]} for m in prompt]
    raise DataError(f"{where}: the prompt must be text or a list of chat messages ({{role, content}}), got "
                    f"{type(prompt).__name__}")


def read_rows(files: Sequence[str], prompt_key: str = "prompt", answer_key: str = "answer") -> list[dict[str, Any]]:
    """Every row of ``files``, in order, each with ``prompt``, ``answer`` (text, empty when the key is ``""``),
    ``metadata`` (the row's other fields) and ``source`` (``file:row``); a bad row or an empty file is an error."""
    if not files:
        raise DataError("no files given")
    out: list[dict[str, Any]] = []
    for name in files:
        path = Path(name).expanduser()
        if not path.exists():
            raise DataError(f"{name}: no such file or folder")
        count = 0
        for n, row in _rows_of(path):
            where = f"{name}:{n}"
            if not isinstance(row, Mapping):
                raise DataError(f"{where}: a row must be an object, got {type(row).__name__}")
            if prompt_key not in row:
                raise DataError(f"{where}: no '{prompt_key}' field (data.prompt_key; fields: "
                                f"{', '.join(map(str, row))})")
            prompt = _check_prompt(where, row[prompt_key])
            answer = ""
            if answer_key:
                if answer_key not in row:
                    raise DataError(f"{where}: no '{answer_key}' field (data.answer_key)")
                a = row[answer_key]
                if isinstance(a, bool) or not isinstance(a, (str, int, float)):
                    raise DataError(f"{where}: the answer must be text or a number, got {type(a).__name__}")
                answer = str(a)
            metadata = {str(k): v for k, v in row.items() if k not in (prompt_key, answer_key)}
            out.append({"prompt": prompt, "answer": answer, "metadata": metadata, "source": where})
            count += 1
        if count == 0:
            raise DataError(f"{name}: no rows (an empty file)")
    return out


def render(tokenizer: Any, prompt: str | list[dict[str, str]], chat_template: bool, system_prompt: str,
           where: str) -> str:
    """The text the policy is given for ``prompt``."""
    if not chat_template:
        if not isinstance(prompt, str):
            raise DataError(f"{where}: a list of chat messages needs data.chat_template: true")
        return system_prompt + prompt if system_prompt else prompt
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    if system_prompt and messages[0]["role"] != "system":
        messages = [{"role": "system", "content": system_prompt}, *messages]
    if not getattr(tokenizer, "chat_template", None):
        raise DataError("data.chat_template: the tokenizer has no chat template")
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return str(text)


def prepare(rows: Sequence[Mapping[str, Any]], tokenizer: Any, max_prompt_tokens: int, chat_template: bool = False,
            system_prompt: str = "", long_prompts: str = "drop") -> Prepared:
    """``rows`` rendered and tokenized; prompts over ``max_prompt_tokens`` dropped or cut from the left."""
    if long_prompts not in LONG_PROMPTS:
        raise DataError(f"data.long_prompts: unknown '{long_prompts}' (valid: {', '.join(LONG_PROMPTS)})")
    out: list[PreparedRow] = []
    dropped = truncated = 0
    for r in rows:
        text = render(tokenizer, r["prompt"], chat_template, system_prompt, r["source"])
        ids = [int(t) for t in tokenizer(text, add_special_tokens=not chat_template)["input_ids"]]
        if not ids:
            raise DataError(f"{r['source']}: the prompt has no tokens")
        if len(ids) > max_prompt_tokens:
            if long_prompts == "drop":
                dropped += 1
                continue
            ids = ids[-max_prompt_tokens:]
            truncated += 1
        out.append(PreparedRow(prompt=text, tokens=ids, answer=r["answer"], metadata=dict(r["metadata"]),
                               source=r["source"]))
    if not out:
        raise DataError(f"every prompt is longer than grpo.max_prompt_tokens ({max_prompt_tokens}): none is left")
    return Prepared(rows=out, dropped=dropped, truncated=truncated)
