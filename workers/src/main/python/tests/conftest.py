"""pytest configuration: the shared fixtures (helpers live in support.py)."""

from support import make_telemetry  # noqa: F401 - a fixture
