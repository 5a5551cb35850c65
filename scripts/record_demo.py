"""Record the default demos as traces shipped in assets/: the stepper can show them
before any model is loaded, labelled as recordings. Each is the app's default run in one interface language
(Settings.fresh(lang): the embedded model, "The list of" or 济南的冬天, seed 0, the default sampling, capture
full) on the CPU, DEMO_STEPS decode steps.

    python scripts/record_demo.py          # rewrites assets/demo/default-run.zip and default-run-zh.zip

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
from llmviz.ui.demo import DEMO_PATHS, DEMO_STEPS  # noqa: E402
from llmviz.ui.settings import UI_THREADS, Settings  # noqa: E402


def record(lang: str = "en"):
    s = Settings.fresh(lang).with_(device="cpu")
    service.models.use_cpu_threads(UI_THREADS)
    lm = service.models.load(s.model, EngineConfig(device="cpu"))
    return service.runs.run(lm, s.prompt, s.engine_config(lm.cfg.max_position_embeddings), DEMO_STEPS + 1)


if __name__ == "__main__":
    for lang, target in DEMO_PATHS.items():
        path = save_zip(record(lang), target)
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
