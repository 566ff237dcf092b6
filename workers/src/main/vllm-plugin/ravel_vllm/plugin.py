"""The entry point vLLM's plugin system calls (group ``vllm.general_plugins``, name ``ravel``)."""

from __future__ import annotations

BACKEND = "ravel-file"
"""The backend's name: ``vllm serve --weight-transfer-config '{"backend": "ravel-file"}'``; the same name as the
``init_info.transport`` Ravel's workers send, and as ``ravel serve``'s transport."""


def register() -> None:
    """Registers the ``ravel-file`` weight-transfer engine with vLLM's factory, lazily (the module is imported when
    a server configured with it creates its engine). Called once per process; a second call is a no-op."""
    from vllm.distributed.weight_transfer.factory import WeightTransferEngineFactory

    try:
        WeightTransferEngineFactory.register_engine(BACKEND, "ravel_vllm.backend", "RavelFileWeightTransferEngine")
    except ValueError:  # already registered in this process
        pass
