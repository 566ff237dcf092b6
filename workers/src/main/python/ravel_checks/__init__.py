"""Command-line checks of Ravel's Python workers, kept out of the runtime package ``ravel_workers``.

``python -m ravel_checks.grpo_check``: the GRPO loss on JSON inputs (the Java parity test);
``python -m ravel_checks.gpu_check``: scripts/gpu-check.sh's body.
"""
