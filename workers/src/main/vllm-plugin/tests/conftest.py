"""The Python workers' test helpers (the Hugging Face fixture made on disk) on the path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "tests"))
