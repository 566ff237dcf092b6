"""A real, tiny Hugging Face checkpoint and dataset made on disk (nothing is downloaded).

``make(folder)`` writes ``folder/model`` (a WordLevel tokenizer trained with the ``tokenizers`` library on the
fixture's text, one token per character, with a chat template; a randomly initialised Qwen2 saved with
``save_pretrained``) and ``folder/data/{train,eval}.jsonl``: text sums ``"3+4="`` with their answers ``"7"``.
Run as ``python tests/hf_fixture.py FOLDER`` (the integration tests do) it prints the folder's JSON layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] }}{% endif %}{% endfor %}"
                 "{% for m in messages %}{% if m['role'] == 'user' %}{{ m['content'] }}{% endif %}{% endfor %}")
SPECIALS = ["<pad>", "</s>", "<unk>"]


def problems() -> list[dict[str, Any]]:
    """The 25 sums of two numbers 0-4, as text prompts with text answers and a metadata field."""
    return [{"prompt": f"{a}+{b}=", "answer": str(a + b), "level": "easy" if a + b < 5 else "hard"}
            for a in range(5) for b in range(5)]


def make_tokenizer(folder: Path) -> Any:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    texts = [p["prompt"] + p["answer"] for p in problems()] + ["0123456789+=-"]
    tok.train_from_iterator(texts, trainer=trainers.WordLevelTrainer(special_tokens=SPECIALS))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(folder))
    return fast


def make_model(folder: Path, tokenizer: Any, hidden: int = 128, layers: int = 2, heads: int = 4,
               seed: int = 7) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=4 * hidden,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                         max_position_embeddings=64, tie_word_embeddings=True, attention_dropout=0.0,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.eos_token_id)
    # small widths need a larger init than transformers' 0.02 for the output to depend on the prompt
    config.initializer_range = hidden ** -0.5
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(str(folder), safe_serialization=True)


def make(folder: Path, heads: int = 4) -> dict[str, str]:
    """Writes the checkpoint (``heads`` attention heads over a hidden size of 128) and the dataset under
    ``folder``; returns their paths."""
    model = folder / "model"
    data = folder / "data"
    model.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    make_model(model, make_tokenizer(model), heads=heads)
    rows = problems()
    with (data / "train.jsonl").open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    with (data / "eval.jsonl").open("w", encoding="utf-8") as f:
        for r in rows[::5]:
            f.write(json.dumps(r) + "\n")
    return {"model": str(model), "train": str(data / "train.jsonl"), "eval": str(data / "eval.jsonl")}


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="a tiny Hugging Face checkpoint and dataset made on disk")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--heads", type=int, default=4, help="attention heads (2: heads of 64, as vLLM's CPU takes)")
    args = parser.parse_args()
    print(json.dumps(make(args.folder, heads=args.heads)))
