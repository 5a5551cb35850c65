"""Which timer for K6's attention call: the claims' own interleaved StepTimer (eager and SDPA called in
turn, `repeats` rounds, the ratio per round paired) against torch.utils.benchmark's Timer.blocked_autorange (each
backend timed in its own block, at least `--min-run` seconds). Prints JSON: the eager/SDPA ratio of each of
`--runs` runs and their wall time, per method.

    python bench/k6_timers.py [--runs 3] [--min-run 1.0]

Layer 0's q, k, v and mask of a 2,047-token prefill of the GPT-2-124M shape, as claim K6 times them (labs/claims.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import torch  # noqa: E402
import torch.utils.benchmark as tb  # noqa: E402
from common import machine  # noqa: E402

from llmviz import service  # noqa: E402
from llmviz.engine.capture import RunContext  # noqa: E402
from llmviz.engine.models.attention import ATTENTION_BACKENDS  # noqa: E402
from llmviz.labs.attention_inputs import attention_inputs  # noqa: E402
from llmviz.labs.prefill_timing import attention_ms, text_ids  # noqa: E402
from llmviz.trace.config import EngineConfig  # noqa: E402

BACKENDS = ("eager", "sdpa")


def interleaved(lm, ids, runs: int) -> dict:
    ratios, walls = [], []
    for _ in range(runs):
        began = time.perf_counter()
        ms = attention_ms(lm, ids, BACKENDS, 3)
        walls.append(time.perf_counter() - began)
        ratios.append(ms["eager"]["median"] / ms["sdpa"]["median"])
    return {"ratios": [round(r, 3) for r in ratios], "wall_s": [round(w, 2) for w in walls]}


def blocked(lm, ids, runs: int, min_run: float) -> dict:
    attn, ctx = lm.model.layers[0].attn, RunContext()
    q, k, v, mask = attention_inputs(lm.model, torch.tensor([ids], device=lm.device), 0)
    ratios, walls = [], []
    with torch.inference_mode():
        for _ in range(runs):
            began, median = time.perf_counter(), {}
            for backend in BACKENDS:
                timer = tb.Timer(stmt="fn(q, k, v, mask, scale, names, ctx)", num_threads=torch.get_num_threads(),
                                 globals={"fn": ATTENTION_BACKENDS.get(backend), "q": q, "k": k, "v": v,
                                          "mask": mask, "scale": attn.scale, "names": attn.names, "ctx": ctx})
                median[backend] = timer.blocked_autorange(min_run_time=min_run).median
            walls.append(time.perf_counter() - began)
            ratios.append(median["eager"] / median["sdpa"])
    return {"ratios": [round(r, 3) for r in ratios], "wall_s": [round(w, 2) for w in walls]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--min-run", type=float, default=1.0)
    args = p.parse_args()
    lm = service.models.load("gpt2-124m-random", EngineConfig(device="auto", capture="off"))
    ids = text_ids(lm, lm.cfg.max_position_embeddings - 1)
    out = {"benchmark": "K6 timers", "command": " ".join(["python bench/k6_timers.py", *sys.argv[1:]]),
           "machine": machine("auto"), "tokens": len(ids), "threads": torch.get_num_threads(),
           "interleaved_steptimer": interleaved(lm, ids, args.runs),
           "torch_benchmark_blocked_autorange": blocked(lm, ids, args.runs, args.min_run)}
    for method in ("interleaved_steptimer", "torch_benchmark_blocked_autorange"):
        r = out[method]["ratios"]
        out[method]["spread_over_runs"] = round((max(r) - min(r)) / min(r), 3)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
