"""The ``ravel-file`` weight-transfer engine inside vLLM's workers.

The trainer side (a Ravel generation worker, or any client) writes the policy's weights as one safetensors file
in Hugging Face names where the server's workers can read it (the server's node, or a file system every node
shares), then drives vLLM's own routes in vLLM's order::

    POST /init_weight_transfer_engine  {"init_info": {"transport": "ravel-file"}}           (once)
    POST /pause?mode=wait|keep
    POST /start_weight_update
    POST /update_weights               {"update_info": {"path": P, "sha256": H, "bytes": N}}
    POST /finish_weight_update         {"weight_version": "<version>"}
    POST /resume

Each worker checks the file's size and SHA-256 against the request before it loads anything (a file that was
replaced or cut short is refused naming the path), then hands the tensors to the model's own ``load_weights``
between vLLM's layerwise-reload start and finish, as vLLM's NCCL engine does. With tied word embeddings a file
without ``lm_head.weight`` (what ``save_pretrained`` writes) would leave the head stale after a layerwise reload:
the embedding is loaded as the head too.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

import torch
from vllm.distributed.weight_transfer.base import (
    WeightTransferEngine,
    WeightTransferInitInfo,
    WeightTransferUpdateInfo,
)

from ravel_vllm.plugin import BACKEND

EMBED = "model.embed_tokens.weight"
HEAD = "lm_head.weight"


@dataclass
class RavelFileInitInfo(WeightTransferInitInfo):
    """``init_info``: the transport's name, checked."""

    transport: str = BACKEND

    def __post_init__(self) -> None:
        if self.transport != BACKEND:
            raise TypeError(f"transport must be {BACKEND!r}, got {self.transport!r}")


@dataclass
class RavelFileUpdateInfo(WeightTransferUpdateInfo):
    """``update_info``: the weights file, its SHA-256 (hex) and its size in bytes."""

    path: str
    sha256: str
    bytes: int


def read_weights(info: RavelFileUpdateInfo) -> dict[str, torch.Tensor]:
    """The tensors of a checked weights file, read once (the bytes checked are the bytes loaded); a clear error
    naming the file when it is absent, of another size or digest, or not safetensors."""
    path = info.path
    if not os.path.isfile(path):
        raise ValueError(f"ravel-file: {path}: no such file on this server's node (write it where the server reads)")
    with open(path, "rb") as f:
        data = f.read()
    if len(data) != info.bytes:
        raise ValueError(f"ravel-file: {path}: {len(data)} bytes, the request says {info.bytes}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != info.sha256.lower():
        raise ValueError(f"ravel-file: {path}: SHA-256 {digest}, the request says {info.sha256}")
    from safetensors import SafetensorError
    from safetensors.torch import load

    try:
        return load(data)
    except SafetensorError as e:
        raise ValueError(f"ravel-file: {path}: not a safetensors file of Hugging Face weights ({e})") from e


def with_tied_head(weights: dict[str, torch.Tensor], tied: bool) -> dict[str, torch.Tensor]:
    """With tied word embeddings and no ``lm_head.weight`` in the file, the embedding loaded as the head too."""
    if tied and HEAD not in weights and EMBED in weights:
        return {**weights, HEAD: weights[EMBED]}
    return weights


class RavelFileWeightTransferEngine(WeightTransferEngine[RavelFileInitInfo, RavelFileUpdateInfo]):
    """vLLM's worker side of ``ravel-file``: weights from a checked safetensors file, loaded layerwise."""

    init_info_cls = RavelFileInitInfo
    update_info_cls = RavelFileUpdateInfo

    def init_transfer_engine(self, init_info: RavelFileInitInfo) -> None:
        self.initialized = True

    def start_weight_update(self) -> None:
        from vllm.model_executor.model_loader.reload import initialize_layerwise_reload

        initialize_layerwise_reload(self.model)

    def finish_weight_update(self) -> None:
        from vllm.model_executor.model_loader.reload import finalize_layerwise_reload

        finalize_layerwise_reload(self.model, self.model_config)

    def update_weights(self, update_info: dict[str, Any]) -> None:
        # the base class synchronises the accelerator, which a CPU server does not have
        self.receive_weights(self.parse_update_info(update_info))
        if self.device.type != "cpu" and torch.accelerator.is_available():
            torch.accelerator.synchronize()

    def receive_weights(self, update_info: RavelFileUpdateInfo) -> None:
        hf_config = getattr(self.model_config, "hf_config", None)
        tied = bool(getattr(hf_config, "tie_word_embeddings", False))
        weights = with_tied_head(read_weights(update_info), tied)
        self.model.load_weights(iter(weights.items()))

    def shutdown(self) -> None:
        pass
