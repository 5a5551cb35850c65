"""A fresh server process whose first sessions open different models at once: transformers is a lazy
module, and without state.imported() touching its names first, two or three of four first loads failed with
"cannot import name 'AutoConfig' from 'transformers'" (1 run in 3 here on the code before the fix)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, ROOT

FIRST_LOADS = """
import json, logging, threading
logging.disable(logging.WARNING)  # st.cache_resource outside a server says so once per call
from llmviz.ui import state
state.imported()  # what app.py does first, in every session
names = ["llmviz-tiny", "llmviz-tiny-draft", "llmviz-tiny-gqa4", "llmviz-tiny-gqa2"]
together, errors = threading.Barrier(len(names)), []
def load(name):
    together.wait()
    try:
        state.cached_model(name, "cpu", "fp32")
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
threads = [threading.Thread(target=load, args=(n,)) for n in names]
for t in threads:
    t.start()
for t in threads:
    t.join(240)
print(json.dumps({"errors": errors, "alive": sum(t.is_alive() for t in threads)}))
"""


@pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="loads the embedded models")
# the race is a matter of timing: three fresh processes, two of them with the slow checks (~8 s each)
@pytest.mark.parametrize("attempt", [1, *(pytest.param(n, marks=pytest.mark.slow) for n in (2, 3))])
def test_four_first_loads_at_once_in_a_fresh_process(attempt):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", FIRST_LOADS], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"errors": [], "alive": 0}, out
