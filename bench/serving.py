"""Continuous against static batching on a built-in request trace (claim K7).

    python bench/serving.py [--trace mixed] [--slots 8] [--threads 1] [--rounds 3]
                            [--models llmviz-tiny,gpt2-124m-random]

Per model: the trace through static batching (batches of `slots` requests in arrival order, each a padded
batch until its longest request is done) and through continuous batching (the paged cache, `slots` rows,
a token budget of 256 per step with decode first and chunked prefill, preemption when the pool runs out),
each step timed on the wall clock (device synchronized); `rounds` runs of each, interleaved, the median
run reported (every run's tokens/s listed beside it). Prints JSON: throughput in generated tokens per
second and per step, TTFT and ITL p50/p95 (ms and steps), slot utilization, whether every request's tokens
are identical under both schedulers (they must be), and the throughput ratio (target >= 2). Then prefix
sharing on the built-in shared-prompt trace (continuous batching with and without it): peak KV blocks and
bytes, prompt tokens the prefills fed, prefill wall time, identical outputs (target: >= 30% of KV saved).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import machine  # noqa: E402

from llmviz.analysis.serving import kv_figures, metrics  # noqa: E402
from llmviz.engine.loading.model import load_model  # noqa: E402
from llmviz.engine.serving.continuous import ContinuousScheduler, ServeConfig  # noqa: E402
from llmviz.engine.serving.requests import load_trace  # noqa: E402
from llmviz.engine.serving.static import run_static  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trace", default="mixed")
    p.add_argument("--slots", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3, help="timed runs of each scheduler (the median is reported)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--models", default="llmviz-tiny,gpt2-124m-random")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    trace = load_trace(args.trace)
    out = {"bench": "serving", "machine": machine(args.device), "trace": trace.name, "note": trace.note,
           "slots": args.slots, "models": {}}
    config = ServeConfig(slots=args.slots, device=args.device)
    for name in args.models.split(","):
        lm = load_model(name, device=args.device)
        run_static(lm, trace, config)  # warm-up: one pass of both, so first-call costs stay out
        ContinuousScheduler(lm, trace, config).run()
        runs = {"static": [], "continuous": []}
        for r in range(args.rounds):  # interleaved, the order flipped each round (A B, B A, ...)
            for which in ("static", "continuous")[:: 1 if r % 2 == 0 else -1]:
                runs[which].append(run_static(lm, trace, config) if which == "static"
                                   else ContinuousScheduler(lm, trace, config).run())
        rates = {k: [metrics(x)["tokens_per_s"] for x in v] for k, v in runs.items()}
        mid = {k: sorted(range(len(v)), key=v.__getitem__)[len(v) // 2] for k, v in rates.items()}  # median run
        static, cont = runs["static"][mid["static"]], runs["continuous"][mid["continuous"]]
        ms, mc = metrics(static), metrics(cont)
        out["models"][name] = {
            "static": ms, "continuous": mc, "identical_outputs": static["outputs"] == cont["outputs"],
            "tokens_per_s_rounds": rates,
            "throughput_ratio": mc["tokens_per_s"] / ms["tokens_per_s"],
            "per_step_ratio": mc["tokens_per_step"] / ms["tokens_per_step"],
            "preemptions": sum(len(r.preempted) for r in cont["records"]), "target": ">= 2 (tokens/s)"}
        out["models"][name]["prefix_sharing"] = sharing(lm, args)
    print(json.dumps(out, indent=1))


def sharing(lm, args) -> dict:
    from dataclasses import replace

    trace = load_trace("shared-prompt")
    base = ServeConfig(slots=args.slots, device=args.device)
    runs = {on: ContinuousScheduler(lm, trace, replace(base, prefix_sharing=on)).run() for on in (False, True)}
    figures = {}
    for on, result in runs.items():
        fig = kv_figures(result)
        fig["tokens_per_s"] = metrics(result)["tokens_per_s"]
        figures["with" if on else "without"] = fig
    saved = 1 - figures["with"]["peak_kv_bytes"] / figures["without"]["peak_kv_bytes"]
    return {**figures, "kv_saved": saved, "identical_outputs": runs[True]["outputs"] == runs[False]["outputs"],
            "target": ">= 0.30 of the KV memory saved", "what": "peak KV blocks held at any step"}


if __name__ == "__main__":
    main()
