import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"  # tests never touch the network
# The suite compares the engine with transformers and numpy on the CPU, so "auto" means cpu here, on a GPU
# machine too; the CUDA paths have their own tests (tests/engine/test_cuda.py, skipped without a GPU).
os.environ["LLMVIZ_AUTO_DEVICE"] = "cpu"
# A claim's step measures on a thread as it opens: off for the suite, whose lesson tests open claim steps
# by the dozen; tests/ui/test_measure_ahead.py turns it on
os.environ["LLMVIZ_MEASURE_AHEAD"] = "0"
# A page shows an unexpected error as a message (ui/errors.guarded); the tests want to see it as the exception
# it is, except the test of that message itself.
os.environ["LLMVIZ_RAISE_UNEXPECTED"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# A class's store: the suite's own file, never the machine's default that a running app shares (a page
# opened by a test starts the store's sweep); tests of the class set their own on top.
os.environ["LLMVIZ_CLASS_STORE"] = f"sqlite:///{Path(tempfile.mkdtemp(prefix='llmviz-class-tests-')) / 'class.db'}"
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# The helpers every test folder shares (tests/support/: model_factory, ui_helpers, parity, ...) import by their
# bare names, as a test module's own folder does under pytest's rootdir import mode; no test imports a test module
# (tests/test_test_tree.py).
sys.path.insert(0, str(ROOT / "tests" / "support"))


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory):
    """{kind: folder} of small random checkpoints for every supported family."""
    from model_factory import KINDS, write_model

    base = tmp_path_factory.mktemp("models")
    return {kind: write_model(kind, base / kind) for kind in KINDS}
