"""`python -m llmviz compare`: two settings on one prompt, predicted, then measured (see llmviz/labs/compare.py)."""

from __future__ import annotations

import json
import sys

from llmviz import service
from llmviz.analysis.lab import gap_text, jsonable, table, verdict
from llmviz.cli.options import DEFAULT_SAMPLING, add_threads, start
from llmviz.i18n.translator import Translator
from llmviz.trace.config import SamplingConfig

# The preset names do not depend on the model (only their specs do): listed from a stand-in card's config
NAMES_CONFIG = {"num_heads": 8, "num_kv_heads": 8, "max_position_embeddings": 512}


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="A/B: two settings on one prompt, timed, measured and diffed")
    p.add_argument("--prompt", required=True, help="text to run both settings on")
    p.add_argument("--model", default=service.EMBEDDED_MODEL,
                   help="hub id, local folder, the embedded llmviz-tiny or the built-in gpt2-124m-random")
    p.add_argument("--a", default="", help='setting A as switches: "kv-dtype=fp16,attn=sdpa" (empty: defaults)')
    p.add_argument("--b", default="", help="setting B, the same way")
    p.add_argument("--preset", default=None, choices=list(service.measure.presets(NAMES_CONFIG)),
                   help="A and B of a preset (--a/--b then add to it)")
    p.add_argument("--steps", type=int, default=16, help="decode steps after the prefill")
    p.add_argument("--repeats", type=int, default=3, help="timed rounds of A and B, interleaved")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    p.add_argument("--top-k", type=int, default=DEFAULT_SAMPLING.top_k)
    p.add_argument("--top-p", type=float, default=DEFAULT_SAMPLING.top_p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto|cpu|cuda|cuda:N|mps")
    p.add_argument("--max-seq-len", type=int, default=None, help="KV cache length (default: context, <= 2048)")
    p.add_argument("--perplexity", action="store_true", help="also held-out perplexity of each side")
    p.add_argument("--layer", type=int, default=0, help="the attention map's layer")
    p.add_argument("--head", type=int, default=0, help="the attention map's head")
    add_threads(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def specs(args) -> tuple[str, str]:
    """--a/--b, added to the preset's A and B when --preset is given (the later setting of a switch wins
    only if it is not set twice: a preset and --a naming one switch is an error)."""
    if not args.preset:
        return args.a, args.b
    cfg = service.models.model_config_dict(args.model)
    device = service.models.resolved_device("auto") if args.device == "auto" else args.device
    p = service.measure.preset(args.preset, cfg, "cuda" if device.startswith("cuda") else device)  # a device type
    return ",".join(filter(None, (p.a, args.a))), ",".join(filter(None, (p.b, args.b)))


def run(args) -> int:
    start(args)
    a, b = specs(args)
    config = service.CompareConfig(prompt=args.prompt, a=a, b=b, model=args.model, steps=args.steps,
                                   repeats=args.repeats, warmup=args.warmup, seed=args.seed, device=args.device,
                                   max_seq_len=args.max_seq_len,
                                   sampling=SamplingConfig(temperature=args.temperature, top_k=args.top_k,
                                                           top_p=args.top_p),
                                   perplexity=args.perplexity, layer=args.layer, head=args.head)
    result = service.measure.compare(config)
    key, _ = verdict(result)
    result["prediction"] = [{"what": r.what, "predicted_a": r.predicted_a, "predicted_b": r.predicted_b,
                             "measured_a": r.measured_a, "measured_b": r.measured_b,
                             "predicted_ratio": r.predicted_ratio, "measured_ratio": r.measured_ratio}
                            for r in table(result)]
    result["verdict"] = {"key": key, "text": gap_text(Translator("en"), result)}
    if args.json:
        print(json.dumps(jsonable(result), ensure_ascii=False))
        return 0
    for side in "ab":
        s = result[side]
        print(f"{side.upper()} [{s['spec'] or 'defaults'}]: "
              f"prefill {s['prefill_ms']['median']:.2f} ms, decode {s['decode_ms_per_token']['median']:.2f} ms/token "
              f"({s['decode_ms_per_token']['min']:.2f}-{s['decode_ms_per_token']['max']:.2f}), "
              f"weights {s['weight_bytes']:,} B, KV {s['kv_bytes_used']:,} B used of {s['kv_bytes_allocated']:,} B")
        print(f"   {args.prompt}{s['text']}")
    drift = result["drift"].get("max")
    print(f"token agreement {result['outputs']['agreement']:.0%}, first divergence "
          f"{result['outputs']['first_divergence']}, max |Δlogit| {drift if drift is None else f'{drift:.3g}'}")
    print(result["verdict"]["text"])
    print(f"[{result['device']}, {result['threads']} threads; {result['what_was_timed']}]", file=sys.stderr)
    return 0
