"""Write the built-in request traces to assets/traces/ (mixed, mixed-poisson, shared-prompt), seeded, from the
held-out text encoded with the embedded tokenizer:  python scripts/make_traces.py"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llmviz.engine.loading.model import load_model
from llmviz.engine.serving.requests import BUILT_IN, TRACES, make_trace
from llmviz.labs.evaluation import heldout_ids


def main() -> None:
    ids = heldout_ids(load_model("llmviz-tiny").tokenizer)
    TRACES.mkdir(parents=True, exist_ok=True)
    for kind in BUILT_IN:
        trace = make_trace(kind, ids, seed=0)
        path = TRACES / f"{kind}.json"
        path.write_text(trace.to_json() + "\n", encoding="utf-8")
        print(f"{path}: {len(trace.requests)} requests, {sum(r.output_len for r in trace.requests)} output tokens")


if __name__ == "__main__":
    main()
