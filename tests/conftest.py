import os
import sys
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"  # tests never touch the network
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory):
    """{kind: folder} of small random checkpoints for every supported family."""
    from model_factory import KINDS, write_model

    base = tmp_path_factory.mktemp("models")
    return {kind: write_model(kind, base / kind) for kind in KINDS}
