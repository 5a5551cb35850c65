"""`python -m llmviz serve-sim`: a request trace through static or continuous batching on the real engine
(llmviz/engine/serving/), with the serving metrics and whether every request got exactly the tokens it draws
alone with its seed."""

from __future__ import annotations

import json
import sys

from llmviz import service
from llmviz.analysis.serving import kv_figures, metrics, serving_layout, spread_text
from llmviz.cli.options import add_threads, start
from llmviz.errors import ConfigError
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS, SCHEDULERS


def add_parser(sub) -> None:
    p = sub.add_parser("serve-sim", help="a request trace through static or continuous batching, measured")
    p.add_argument("--trace", default="mixed", help="built-in: mixed, mixed-poisson, shared-prompt; or a JSON file")
    p.add_argument("--scheduler", default="continuous", choices=tuple(SCHEDULERS),
                   help="a scheduler declared in trace/config.SCHEDULERS (an extension adds its own)")
    p.add_argument("--model", default="llmviz-tiny", help="a model sharing the embedded tokenizer's ids "
                   "(llmviz-tiny, gpt2-124m-random) for the built-in traces")
    p.add_argument("--slots", type=int, default=8, help="requests running at once (static: the batch size)")
    p.add_argument("--token-budget", type=int, default=256, help="tokens fed per step (continuous)")
    p.add_argument("--backend", default="sdpa", choices=tuple(ATTN_BACKENDS), help="attention, both schedulers")
    p.add_argument("--kv-layout", default="contiguous", choices=tuple(KV_LAYOUTS),
                   help="static batching's KV layout (continuous batching always runs on the paged pool)")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--pool-blocks", type=int, default=None, help="blocks in the paged pool (continuous)")
    p.add_argument("--prefix-sharing", action="store_true",
                   help="continuous: requests reuse full KV blocks another request filled with the same tokens")
    p.add_argument("--device", default="auto")
    add_threads(p)
    p.add_argument("--no-check", action="store_true", help="skip running every request alone to compare tokens")
    p.add_argument("--json", action="store_true", help="print one JSON object (with every step's record)")


def run(args) -> int:
    start(args)
    trace = service.replay.request_trace(args.trace)  # the trace and the settings are checked before the model loads
    config = service.serving.serve_config(slots=args.slots, token_budget=args.token_budget,
                                          block_size=args.block_size, pool_blocks=args.pool_blocks,
                                          device=args.device, prefix_sharing=args.prefix_sharing,
                                          backend=args.backend, layout=args.kv_layout)
    if args.prefix_sharing and args.scheduler == "static":
        raise ConfigError("--prefix-sharing needs --scheduler continuous (static batching has no paged pool)")
    lm = service.models.load(args.model, service.EngineConfig(device=args.device))
    result = service.serving.serve(lm, trace, args.scheduler, config=config)
    m = metrics(result)
    identical = None if args.no_check else result["outputs"] == service.serving.serve_alone(lm, trace, args.device,
                                                                                             args.backend)
    doc = {"trace": trace.name, "note": trace.note, "scheduler": args.scheduler, "model": lm.name,
           "device": str(lm.device), "slots": args.slots, "backend": args.backend,
           "kv_layout": serving_layout(args.scheduler, args.kv_layout), **m, "identical_outputs": identical,
           "preemptions": sum(len(r.preempted) for r in result["records"]), "prefix_sharing": args.prefix_sharing,
           **kv_figures(result),
           "what_was_timed": "the wall clock of every engine step (scheduling, forward passes, sampling; device "
                             "synchronized); TTFT from the start of a request's arrival step"}
    if args.json:
        doc["records"] = [r.to_dict() for r in result["records"]]
        doc["outputs"] = result["outputs"]
        print(json.dumps(doc))
        return 0
    print(f"{trace.name} ({len(trace.requests)} requests) through {args.scheduler} batching, {args.slots} slots, "
          f"on {lm.name} ({doc['device']}):")
    print(f"  {m['tokens']} tokens in {m['steps']} steps, {m['wall_s']:.2f} s: {m['tokens_per_s']:.1f} tokens/s, "
          f"{m['tokens_per_step']:.2f} tokens/step; slot utilization {m['slot_utilization']:.0%}")
    print(f"  TTFT p50/p95 {spread_text(m['ttft_ms'], 0)} ms ({spread_text(m['ttft_steps'], 0)} steps); "
          f"ITL p50/p95 {spread_text(m['itl_ms'], 1)} ms")
    if "peak_kv_bytes" in doc:
        print(f"  KV: at most {doc['peak_blocks']} blocks held ({doc['peak_kv_bytes']:,} B), "
              f"{doc['peak_shared_blocks']} shared; prompt tokens fed {doc['prefill_tokens_fed']:,}")
    print(f"  every request's tokens as alone: {identical}", file=sys.stderr if identical is None else sys.stdout)
    return 0
