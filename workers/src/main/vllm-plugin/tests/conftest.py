"""The Python workers' test helpers (the Hugging Face fixture made on disk) and their packages (ravel_workers,
ravel_checks: the GPU check's vLLM mode) on the path."""

import sys
from pathlib import Path

PYTHON = Path(__file__).resolve().parents[2] / "python"
sys.path.insert(0, str(PYTHON / "tests"))
sys.path.insert(0, str(PYTHON))
