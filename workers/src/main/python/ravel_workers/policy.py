"""The policy: a small causal LM built from a :class:`~ravel_workers.wire.ModelConfig`, and checkpoint reading.

The model is randomly initialised, deterministically from the seed: ``torch.manual_seed(seed)`` right
before construction, on the CPU, then moved to the device, so every worker and the trainer start from the
same weights whatever their devices. Dropout is off (RL log-probs must be those of the sampling policy).
Weights are drawn with standard deviation ``hidden ** -0.5`` (transformers' ``initializer_range``, whose
default 0.02 suits wide models): at the small widths used here the default leaves the last position's
output nearly independent of the prompt, and GRPO then collapses onto one answer for every prompt.

Families: ``gpt2`` (``GPT2Config``/``GPT2LMHeadModel``) and ``qwen2`` (``Qwen2Config``/``Qwen2ForCausalLM``,
intermediate size 4 x hidden, as many KV heads as heads). Input and output embeddings are tied.

A trainer checkpoint is what ``torch.save({"version": v, "state_dict": ..., ...})`` writes, tensors on the CPU
(:func:`read_blob` reads its weights). A refit moves weights otherwise: :mod:`ravel_workers.weights`.
"""

from __future__ import annotations

import io
from typing import Any

import torch

from .wire import ModelConfig

BLOB_KEYS = ("version", "state_dict")


def resolve_device(device: str) -> torch.device:
    """``auto`` is CUDA when available, else the CPU; ``cuda`` without a GPU is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device '{device}' was asked for but torch sees no CUDA device")
    return torch.device(device)


def hf_config(config: ModelConfig, eos_token: int | None = None) -> Any:
    """The transformers config of ``config`` (dropout off, tied embeddings, init std hidden^-0.5, SDPA attention)."""
    from transformers import GPT2Config, PretrainedConfig, Qwen2Config

    c: PretrainedConfig
    if config.family == "gpt2":
        c = GPT2Config(vocab_size=config.vocab_size, n_positions=config.max_positions, n_embd=config.hidden,
                       n_layer=config.layers, n_head=config.heads, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                       summary_first_dropout=0.0, bos_token_id=eos_token, eos_token_id=eos_token,
                       tie_word_embeddings=True)
    elif config.family == "qwen2":
        c = Qwen2Config(vocab_size=config.vocab_size, hidden_size=config.hidden,
                        intermediate_size=4 * config.hidden, num_hidden_layers=config.layers,
                        num_attention_heads=config.heads, num_key_value_heads=config.heads,
                        max_position_embeddings=config.max_positions, attention_dropout=0.0,
                        tie_word_embeddings=True, bos_token_id=eos_token, eos_token_id=eos_token)
    else:
        raise ValueError(f"unknown model family '{config.family}' (valid: gpt2, qwen2)")
    c.initializer_range = config.hidden ** -0.5
    c._attn_implementation = "sdpa"
    return c


def build_model(config: ModelConfig, seed: int, device: str | torch.device = "cpu",
                eos_token: int | None = None) -> torch.nn.Module:
    """The checkpoint of ``config.path``, or a randomly initialised causal LM, identical for the same config and
    seed; in eval mode on ``device``."""
    from transformers import GPT2LMHeadModel, Qwen2ForCausalLM

    target = device if isinstance(device, torch.device) else torch.device(device)
    if config.path:
        from .hf import load_model

        return load_model(config.path, target, config.dtype)

    cls = GPT2LMHeadModel if config.family == "gpt2" else Qwen2ForCausalLM
    hf = hf_config(config, eos_token)
    with torch.device("cpu"):
        torch.manual_seed(seed)
        # typed as a Module: mypy cannot call transformers' PreTrainedModel.to (a functools.wraps of Module.to)
        model: torch.nn.Module = cls(hf)
    model = model.to(dtype=torch.float32)
    model.eval()
    return model.to(device if isinstance(device, torch.device) else torch.device(device))


def state_dict_cpu(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's state dict with every tensor copied to the CPU (detached)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def read_blob(blob: bytes) -> tuple[int, dict[str, torch.Tensor]]:
    """The version and state dict of ``torch.save({"version", "state_dict", ...})`` bytes, a trainer checkpoint
    (loaded with ``weights_only=True``, on the CPU)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"checkpoint: expected bytes, got {type(blob).__name__}")
    data = torch.load(io.BytesIO(bytes(blob)), map_location="cpu", weights_only=True)
    if not isinstance(data, dict) or any(k not in data for k in BLOB_KEYS):
        raise ValueError(f"checkpoint: expected a dict with keys {BLOB_KEYS}")
    return int(data["version"]), data["state_dict"]


def weights_sha256(model: torch.nn.Module) -> str:
    """A digest of the model's weights that depends on their values only: SHA-256 over every tensor of the state
    dict in name order (its name, dtype, shape and bytes), so that two trainers holding the same weights agree."""
    return state_sha256(state_dict_cpu(model))


def state_sha256(state: dict[str, torch.Tensor]) -> str:
    """:func:`weights_sha256` of the weights ``state`` (a state dict)."""
    import hashlib

    h = hashlib.sha256()
    for name, t in sorted((k, v.detach().to("cpu")) for k, v in state.items()):
        c = t.contiguous()
        h.update(f"{name}|{c.dtype}|{tuple(c.shape)}|".encode())
        h.update(c.view(torch.uint8).numpy().tobytes() if c.numel() else b"")
    return h.hexdigest()

