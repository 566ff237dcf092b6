"""pytest configuration: the shared fixtures (helpers live in support.py)."""

import hf_fixture
import pytest

from support import make_telemetry  # noqa: F401 - a fixture


@pytest.fixture(scope="session")
def hf_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A real tiny Hugging Face checkpoint and dataset on disk (tests/hf_fixture.py), made once per session."""
    return hf_fixture.make(tmp_path_factory.mktemp("hf"))
