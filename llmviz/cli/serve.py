"""`python -m llmviz serve-sim`: a request trace through static or continuous batching on the real engine
(llmviz/engine/serving/), with the serving metrics and whether every request got exactly the tokens it draws
alone with its seed."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from llmviz.analysis.serving import kv_figures, metrics, spread_text


def add_parser(sub) -> None:
    p = sub.add_parser("serve-sim", help="a request trace through static or continuous batching, measured")
    p.add_argument("--trace", default="mixed", help="built-in: mixed, mixed-poisson, shared-prompt; or a JSON file")
    p.add_argument("--scheduler", default="continuous", choices=("static", "continuous"))
    p.add_argument("--model", default="llmviz-tiny", help="a model sharing the embedded tokenizer's ids "
                   "(llmviz-tiny, gpt2-124m-random) for the built-in traces")
    p.add_argument("--slots", type=int, default=8, help="requests running at once (static: the batch size)")
    p.add_argument("--token-budget", type=int, default=256, help="tokens fed per step (continuous)")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--pool-blocks", type=int, default=None, help="blocks in the paged pool (continuous)")
    p.add_argument("--prefix-sharing", action="store_true",
                   help="continuous: requests reuse full KV blocks another request filled with the same tokens")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (for the whole process)")
    p.add_argument("--no-check", action="store_true", help="skip running every request alone to compare tokens")
    p.add_argument("--json", action="store_true", help="print one JSON object (with every step's record)")


def alone_outputs(lm, trace, device: str) -> dict:
    """Every request run by itself with its seed: what the schedulers must reproduce."""
    from llmviz.engine.lean_steps import lean_generate
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig

    out = {}
    for r in trace.requests:
        cfg = EngineConfig(device=device, capture="off", logit_lens_top_k=0, stop_at_eos=False, sampling=r.sampling,
                           max_seq_len=len(r.prompt_ids) + r.output_len + 1)
        session = Session(lm, config=cfg, prompt_ids=[list(r.prompt_ids)], seeds=[r.seed])
        out[r.id] = lean_generate(session, r.output_len).output_ids  # tokens only: no logits kept
    return out


def run(args) -> int:
    from llmviz import service
    from llmviz.engine.serving.continuous import ContinuousScheduler, ServeConfig
    from llmviz.engine.serving.requests import load_trace
    from llmviz.engine.serving.static import run_static

    trace = load_trace(args.trace)
    config = ServeConfig(slots=args.slots, token_budget=args.token_budget, block_size=args.block_size,
                         pool_blocks=args.pool_blocks, device=args.device, prefix_sharing=args.prefix_sharing)
    if args.prefix_sharing and args.scheduler == "static":
        from llmviz.errors import ConfigError

        raise ConfigError("--prefix-sharing needs --scheduler continuous (static batching has no paged pool)")
    lm = service.load(args.model, service.EngineConfig(device=args.device))
    if args.scheduler == "static":
        result = run_static(lm, trace, config)
    else:
        result = ContinuousScheduler(lm, trace, config).run()
    m = metrics(result)
    identical = None if args.no_check else result["outputs"] == alone_outputs(lm, trace, args.device)
    doc = {"trace": trace.name, "note": trace.note, "scheduler": args.scheduler, "model": lm.name,
           "device": str(lm.device), "slots": args.slots, **m, "identical_outputs": identical,
           "preemptions": sum(len(r.preempted) for r in result["records"]), "prefix_sharing": args.prefix_sharing,
           **kv_figures(result),
           "what_was_timed": "the wall clock of every engine step (scheduling, forward passes, sampling; device "
                             "synchronized); TTFT from the start of a request's arrival step"}
    if args.json:
        doc["records"] = [asdict(r) for r in result["records"]]
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


def add_speculative_parser(sub) -> None:
    p = sub.add_parser("speculative", help="a draft proposes k tokens, the target verifies them: measured")
    p.add_argument("--prompt", required=True)
    p.add_argument("--model", default="llmviz-tiny", help="the target")
    p.add_argument("--draft", default="llmviz-tiny-draft", help="the draft (the same tokenizer as the target)")
    p.add_argument("--k", type=int, default=4, help="draft tokens per round")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (output identical to the target's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (for the whole process)")
    p.add_argument("--json", action="store_true")


def speculative(args) -> int:
    from llmviz import service
    from llmviz.trace.config import SamplingConfig

    config = service.EngineConfig(device=args.device)
    target, draft = service.load(args.model, config), service.load(args.draft, config)
    sampling = SamplingConfig(temperature=args.temperature)
    result = service.speculate(target, draft, args.prompt, args.k, args.max_new_tokens, sampling, args.seed)
    doc = {"model": target.name, "draft": draft.name, "k": args.k, "device": str(target.device),
           "temperature": args.temperature, "output_ids": result["output_ids"],
           "text": target.tokenizer.hf.decode(result["output_ids"], skip_special_tokens=True),
           "identical_outputs": result["identical_outputs"], "acceptance_rate": result["acceptance_rate"],
           "rounds": len(result["rounds"]), "speculative_ms_per_token": result["ms_per_token"],
           **{k: result[k] for k in ("target_alone_ms_per_token", "draft_alone_ms_per_token", "cost_ratio",
                                     "measured_speedup", "predicted_speedup")},
           "per_round": [{"proposed": list(r.proposed), "accepted": r.accepted, "token": r.token,
                          "draft_ms": r.draft_ms, "verify_ms": r.verify_ms} for r in result["rounds"]],
           "what_was_timed": "speculative: the wall clock of each round (draft steps, then the target's verify "
                             "pass; device synchronized), after a warm-up run; alone: each model's greedy decode "
                             "steps (the engine's timed region at capture off)"}
    if args.json:
        print(json.dumps(doc))
        return 0
    print(f"{args.prompt}{doc['text']}")
    print(f"k={args.k}: acceptance {doc['acceptance_rate']:.0%} over {doc['rounds']} rounds; "
          f"{doc['speculative_ms_per_token']:.2f} ms/token against {doc['target_alone_ms_per_token']:.2f} alone: "
          f"measured {doc['measured_speedup']:.2f}x, predicted {doc['predicted_speedup']:.2f}x from the draft/target "
          f"cost ratio {doc['cost_ratio']:.2f}; identical to the target alone: {doc['identical_outputs']}")
    return 0
