"""`python -m llmviz speculative`: a draft proposes k tokens, the target verifies them in one pass (C16, claim K8),
beside the target alone and the draft alone, timed the same way (llmviz/engine/serving/speculative.py)."""

from __future__ import annotations

import json

from llmviz import service
from llmviz.cli.options import add_threads, start
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS, SamplingConfig


def add_parser(sub) -> None:
    p = sub.add_parser("speculative", help="a draft proposes k tokens, the target verifies them: measured")
    p.add_argument("--prompt", required=True)
    p.add_argument("--model", default="llmviz-tiny", help="the target")
    p.add_argument("--draft", default="llmviz-tiny-draft", help="the draft (the same tokenizer as the target)")
    p.add_argument("--k", type=int, default=4, help="draft tokens per round")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (output identical to the target's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="sdpa", choices=tuple(ATTN_BACKENDS), help="attention, every model")
    p.add_argument("--kv-layout", default="contiguous", choices=tuple(KV_LAYOUTS), help="both models' KV layout")
    p.add_argument("--device", default="auto")
    add_threads(p)
    p.add_argument("--json", action="store_true")


def run(args) -> int:
    start(args)
    config = service.EngineConfig(device=args.device)
    target, draft = service.models.load(args.model, config), service.models.load(args.draft, config)
    sampling = SamplingConfig(temperature=args.temperature)
    result = service.measure.speculate(target, draft, args.prompt, args.k, args.max_new_tokens, sampling, args.seed,
                                       args.backend, args.kv_layout)
    doc = {"model": target.name, "draft": draft.name, "k": args.k, "device": str(target.device),
           "backend": result["backend"], "kv_layout": result["layout"],
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
