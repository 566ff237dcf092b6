"""Ravel's Python workers: the generation worker and policy trainer actors the Java driver creates.

See docs/python-workers.md for the contract (actors, wire forms, specs, telemetry).
"""

__version__ = "0.1.0"
