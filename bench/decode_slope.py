"""Decode slowing down on the GPT-2-124M shape (C18, §4.2): the slope of decode ms/token against the
tokens in the cache, its 95% interval, and the slope the bytes predict. Prints JSON.

    python bench/decode_slope.py [--model gpt2-124m-random] [--points 10] [--repeats 3] [--threads N]

What is timed: llmviz/labs/decode_slope.py (the layout sweep's timed region of a decode step, contiguous cache
filled with seeded random K and V at each length, no prefill), capture off; the bandwidth probe after it.
Target: the slope's interval excludes zero, printed beside the predicted slope.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from common import machine  # noqa: E402

from llmviz import service  # noqa: E402
from llmviz.analysis.decode_slope import slowdown  # noqa: E402
from llmviz.trace.config import EngineConfig  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="gpt2-124m-random")
    p.add_argument("--points", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="auto")
    args = p.parse_args()
    if args.threads:
        service.models.use_cpu_threads(args.threads)
    lm = service.models.load(args.model, EngineConfig(device=args.device, capture="off"))
    began = time.perf_counter()
    result = service.measure.decode_slope(lm, points=args.points, repeats=args.repeats)
    wall = time.perf_counter() - began
    s = slowdown(result, result["model_config"])
    us = 1000  # ms -> us per cached token
    out = {"benchmark": "decode slope (C18)", "command": " ".join(["python bench/decode_slope.py",
                                                                               *sys.argv[1:]]),
           "machine": machine(args.device), "model": lm.name, "threads": result["threads"], "wall_s": round(wall, 1),
           "what_was_timed": result["what_was_timed"], "lengths": result["lengths"],
           "median_ms": [round(m, 3) for m in result["ms_per_token"]["contiguous"]["median"]],
           "slope_us_per_token": round(us * s.measured.value, 3),
           "slope_interval_us": [round(us * s.measured.low, 3), round(us * s.measured.high, 3)],
           "points": s.measured.rounds, "predicted_us_per_token": s.predicted and round(us * s.predicted, 3),
           "bandwidth_gb_per_s": round(result["bandwidth"]["gb_per_s"], 2),
           "kv_share_of_bytes": [round(s.kv_share_first, 4), round(s.kv_share_last, 4)], "verdict": s.verdict,
           "as_predicted": s.as_predicted, "target": "the slope's interval excludes zero",
           "target_met": s.measured.low > 0 or s.measured.high < 0}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
