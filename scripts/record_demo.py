"""Record the default demo as a trace shipped in assets/ (issue 10, part 4): the stepper can show it before any
model is loaded, labelled as a recording. The run is the app's default one (Settings(): the embedded model,
"The list of", seed 0, the default sampling, capture full) on the CPU, DEMO_STEPS decode steps.

    python scripts/record_demo.py          # rewrites assets/demo/default-run.zip

tests/ui/test_demo_recording.py checks that the file is what the engine computes now.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llmviz import service  # noqa: E402
from llmviz.trace.config import EngineConfig  # noqa: E402
from llmviz.trace.records import save_zip  # noqa: E402
from llmviz.ui.demo import DEMO_PATH, DEMO_STEPS  # noqa: E402
from llmviz.ui.settings import UI_THREADS, Settings  # noqa: E402


def record():
    s = Settings(device="cpu")
    service.use_cpu_threads(UI_THREADS)
    lm = service.load(s.model, EngineConfig(device="cpu"))
    return service.run(lm, s.prompt, s.engine_config(lm.cfg.max_position_embeddings), DEMO_STEPS + 1)


if __name__ == "__main__":
    path = save_zip(record(), DEMO_PATH)
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
