"""Your data: JSON Lines, Parquet and save_to_disk read the same rows; bad rows and files are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ravel_workers import data, hf


def _jsonl(path: Path, rows: list[object]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


ROWS = [{"prompt": "1+2=", "answer": "3", "level": "easy"}, {"prompt": "4+4=", "answer": 8, "level": "hard"}]


def test_read_rows_jsonl_parquet_and_save_to_disk_give_the_same_rows(tmp_path: Path) -> None:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl = _jsonl(tmp_path / "t.jsonl", ROWS)
    rows = [dict(r, answer=str(r["answer"])) for r in ROWS]
    pq.write_table(pa.Table.from_pylist(rows), str(tmp_path / "t.parquet"))
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "saved"))

    def strip(rs: list[dict[str, object]]) -> list[tuple[object, object, object]]:
        return [(r["prompt"], r["answer"], r["metadata"]) for r in rs]

    expected = strip(data.read_rows([jsonl]))
    assert expected == [("1+2=", "3", {"level": "easy"}), ("4+4=", "8", {"level": "hard"})]
    assert strip(data.read_rows([str(tmp_path / "t.parquet")])) == expected
    assert strip(data.read_rows([str(tmp_path / "saved")])) == expected
    assert [r["source"] for r in data.read_rows([jsonl, jsonl])] == [f"{jsonl}:1", f"{jsonl}:2"] * 2


@pytest.mark.parametrize(("rows", "message"), [
    ([{"prompt": "1+2=", "answer": "3"}, {"question": "x", "answer": "1"}],
     ":2: no 'prompt' field (data.prompt_key; fields: question, answer)"),
    ([{"prompt": 7, "answer": "1"}],
     ":1: the prompt must be text or a list of chat messages ({role, content}), got int"),
    ([{"prompt": "x", "answer": None}], ":1: the answer must be text or a number, got NoneType"),
    ([["not", "an", "object"]], ":1: a row must be an object, got list"),
])
def test_read_rows_names_the_file_and_row_of_a_bad_row(tmp_path: Path, rows: list[object], message: str) -> None:
    path = _jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(data.DataError) as e:
        data.read_rows([path])
    assert str(e.value) == path + message


def test_read_rows_empty_file_missing_file_and_torn_line_are_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(data.DataError, match=r"empty.jsonl: no rows \(an empty file\)"):
        data.read_rows([str(empty)])
    with pytest.raises(data.DataError, match="nope.jsonl: no such file or folder"):
        data.read_rows([str(tmp_path / "nope.jsonl")])
    torn = tmp_path / "torn.jsonl"
    torn.write_text('{"prompt": "a", "answer": "b"}\n{"prompt": "a', encoding="utf-8")
    with pytest.raises(data.DataError, match=r"torn.jsonl:2: not JSON"):
        data.read_rows([str(torn)])
    with pytest.raises(data.DataError, match="unknown format"):
        data.read_rows([str(_jsonl(tmp_path / "t.csv", ROWS))])


def test_prepare_renders_with_the_chat_template_and_counts_long_prompts(hf_checkpoint: dict[str, str],
                                                                       tmp_path: Path) -> None:
    tok = hf.load_tokenizer(hf_checkpoint["model"])
    rows = data.read_rows([hf_checkpoint["train"]])
    plain = data.prepare(rows, tok, max_prompt_tokens=64)
    assert len(plain.rows) == 25 and plain.dropped == 0
    first = plain.rows[0]
    assert first.prompt == "0+0=" and first.answer == "0" and first.metadata == {"level": "easy"}
    assert tok.decode(first.tokens) == "0+0="

    chat = data.prepare(rows, tok, max_prompt_tokens=64, chat_template=True, system_prompt="=")
    assert chat.rows[0].prompt == "=0+0="  # the fixture's template: system text, then the user's

    mixed = data.read_rows([_jsonl(tmp_path / "mixed.jsonl", [{"prompt": "1+2=", "answer": "3"},
                                                               {"prompt": "11+22=", "answer": "33"}])])
    dropped = data.prepare(mixed, tok, max_prompt_tokens=4)
    assert [r.prompt for r in dropped.rows] == ["1+2="] and dropped.dropped == 1 and dropped.truncated == 0
    cut = data.prepare(rows, tok, max_prompt_tokens=3, long_prompts="truncate_left")
    assert cut.truncated == 25 and tok.decode(cut.rows[0].tokens) == "+0="
    with pytest.raises(data.DataError, match="none is left"):
        data.prepare(rows, tok, max_prompt_tokens=3)


def test_prepare_chat_messages_need_the_chat_template(hf_checkpoint: dict[str, str], tmp_path: Path) -> None:
    tok = hf.load_tokenizer(hf_checkpoint["model"])
    path = _jsonl(tmp_path / "chat.jsonl", [{"prompt": [{"role": "user", "content": "1+1="}], "answer": "2"}])
    rows = data.read_rows([path])
    with pytest.raises(data.DataError, match=r"chat.jsonl:1: a list of chat messages needs data.chat_template"):
        data.prepare(rows, tok, max_prompt_tokens=64)
    assert data.prepare(rows, tok, max_prompt_tokens=64, chat_template=True).rows[0].prompt == "1+1="
