"""Weight quantization by method on one model (C21; the article's "8-bit"/"4-bit" slip): round-to-nearest int8 and
int4, LLM.int8() and GPTQ int4, each by held-out perplexity and the bytes its weights take.

    python bench/quantization.py [--model llmviz-tiny] [--groups 32,128] [--threads 1]

Prints one JSON object. Perplexity: assets/corpus/heldout.txt through the engine's KV cache, one prefill per
512-token window, on the CPU (not a timing); GPTQ is calibrated on training-split text (labs/calibration.py), never
on that held-out text. LLM.int8(): how many input columns crossed its 6.0 threshold over the whole evaluation, of how
many column-calls (every projection's input width, at every step). Load time: the quantization itself (GPTQ's
calibration passes and column-by-column rounding), on this machine's threads.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import machine  # noqa: E402

from llmviz import service  # noqa: E402
from llmviz.labs.quant_eval import GROUPED, quant_row  # noqa: E402
from llmviz.trace.config import EngineConfig  # noqa: E402

MODES = ("none", "int8", "int4", "llm-int8", "gptq-int4")


def measure(model: str, mode: str, group: int) -> dict:
    began = time.perf_counter()
    lm = service.models.load(model, EngineConfig(device="cpu", quant=mode, quant_group=group))
    row = quant_row(lm, mode, group, time.perf_counter() - began)
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=service.EMBEDDED_MODEL)
    ap.add_argument("--groups", default="32,128")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    groups = [int(g) for g in args.groups.split(",")]
    rows = [measure(args.model, mode, group) for mode in MODES for group in (groups if mode in GROUPED else groups[:1])]
    print(json.dumps({"bench": "quantization", "machine": machine("cpu"), "model": args.model,
                      "what": "held-out perplexity (assets/corpus/heldout.txt, 512-token windows) and weight bytes "
                              "per weight-quantization method; GPTQ calibrated on training-split pydoc topics",
                      "rows": rows}))


if __name__ == "__main__":
    main()
