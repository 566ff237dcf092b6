"""Ravel's vLLM plugin: the ``ravel-file`` weight-transfer backend (:mod:`ravel_vllm.backend`), registered in vLLM
through its ``vllm.general_plugins`` entry point (:func:`ravel_vllm.plugin.register`), which vLLM calls in every
process it starts, the engine core's included."""
