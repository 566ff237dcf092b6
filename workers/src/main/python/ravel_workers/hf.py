"""Your model: a Hugging Face checkpoint folder on local disk, loaded offline.

``model.path`` names a folder that ``save_pretrained`` wrote: ``config.json``, the weights (safetensors) and the
tokenizer's files. The trainer, its reference policy and every generation worker load it with
``AutoModelForCausalLM.from_pretrained`` and ``AutoTokenizer.from_pretrained`` with ``local_files_only=True``
(and ``HF_HUB_OFFLINE=1``): nothing is fetched. A name that is not a folder (a hub id such as
``Qwen/Qwen2.5-0.5B``) is refused with one line saying to download it first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

DTYPES = ("auto", "float32", "bfloat16", "float16")


class CheckpointError(ValueError):
    """A ``model.path`` that is not a loadable checkpoint; the message names the path and what is missing."""


def check_folder(path: str) -> Path:
    """``path`` as a checkpoint folder (``config.json`` and a tokenizer), or a :class:`CheckpointError`."""
    p = Path(path).expanduser()
    if not p.exists():
        if "/" in path and not path.startswith((".", "/", "~")) and path.count("/") == 1:
            raise CheckpointError(f"'{path}' is not a folder here; it looks like a Hugging Face hub id, and Ravel"
                                  " downloads nothing: fetch it first (huggingface-cli download "
                                  f"{path} --local-dir DIR) and give model.path: DIR")
        raise CheckpointError(f"'{path}' does not exist")
    if not p.is_dir():
        raise CheckpointError(f"'{path}' is not a folder (a checkpoint is a folder that save_pretrained wrote)")
    if not (p / "config.json").is_file():
        raise CheckpointError(f"'{path}' has no config.json: not a Hugging Face checkpoint folder")
    if not any((p / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json", "vocab.json")):
        raise CheckpointError(f"'{path}' has no tokenizer (tokenizer.json or tokenizer_config.json): save the"
                              " tokenizer beside the model (tokenizer.save_pretrained)")
    return p


def torch_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto`` is bfloat16 on CUDA and float32 on the CPU; the others are what they say."""
    if dtype not in DTYPES:
        raise ValueError(f"model.dtype: unknown '{dtype}' (valid: {', '.join(DTYPES)})")
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def load_tokenizer(path: str) -> Any:
    """The checkpoint's tokenizer (fast if it has one), with a pad token (its EOS when it has none)."""
    from transformers import AutoTokenizer

    _offline()
    tok = AutoTokenizer.from_pretrained(str(check_folder(path)), local_files_only=True)
    if tok.eos_token_id is None:
        raise CheckpointError(f"'{path}': the tokenizer has no EOS token (completions could not end)")
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def load_model(path: str, device: torch.device, dtype: str = "auto") -> torch.nn.Module:
    """The checkpoint's causal LM in eval mode on ``device`` (dropout off: RL log-probs are the sampler's)."""
    from transformers import AutoModelForCausalLM

    _offline()
    folder = check_folder(path)
    model: torch.nn.Module = AutoModelForCausalLM.from_pretrained(
        str(folder), local_files_only=True, dtype=torch_dtype(dtype, device), attn_implementation="sdpa")
    model.eval()
    return model.to(device)


def max_positions(model: torch.nn.Module) -> int:
    """The longest sequence the model takes (``max_position_embeddings`` or ``n_positions``)."""
    config = getattr(model, "config", None)
    for name in ("max_position_embeddings", "n_positions"):
        v = getattr(config, name, None)
        if isinstance(v, int) and v > 0:
            return v
    return 2048


def save(model: torch.nn.Module, tokenizer: Any, folder: Path, state: dict[str, torch.Tensor] | None = None) -> Path:
    """Writes ``folder`` with ``save_pretrained`` (safetensors) and the tokenizer: ``from_pretrained`` loads it. The
    weights are ``state`` when given (a sharded model's, gathered whole), else the model's own."""
    folder.mkdir(parents=True, exist_ok=True)
    # a copy: save_pretrained takes the tied and shared names out of the dict it is given
    model.save_pretrained(str(folder), safe_serialization=True,  # type: ignore[operator]
                          state_dict=None if state is None else dict(state))
    if tokenizer is not None:
        tokenizer.save_pretrained(str(folder))
    return folder
