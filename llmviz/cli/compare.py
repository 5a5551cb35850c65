"""`python -m llmviz compare`: two settings on one prompt, predicted, then measured (see llmviz/labs/compare.py)."""

from __future__ import annotations

import json
import sys

from llmviz import service
from llmviz.analysis.lab import gap_text, jsonable, table, verdict
from llmviz.i18n.translator import Translator
from llmviz.trace.config import SamplingConfig


def specs(args) -> tuple[str, str]:
    """--a/--b, added to the preset's A and B when --preset is given (the later setting of a switch wins
    only if it is not set twice: a preset and --a naming one switch is an error)."""
    if not args.preset:
        return args.a, args.b
    from llmviz.engine.loading.model import model_config, read_config, resolve_path
    from llmviz.labs.presets import preset

    cfg = model_config(read_config(resolve_path(args.model))).to_dict()
    device = "cuda" if args.device.startswith("cuda") else args.device
    if device == "auto":
        from llmviz.engine.platform.devices import resolve_device

        device = resolve_device("auto").type
    p = preset(args.preset, cfg, device)
    return ",".join(filter(None, (p.a, args.a))), ",".join(filter(None, (p.b, args.b)))


def run_compare(args) -> int:
    a, b = specs(args)
    config = service.CompareConfig(prompt=args.prompt, a=a, b=b, model=args.model, steps=args.steps,
                                   repeats=args.repeats, warmup=args.warmup, seed=args.seed, device=args.device,
                                   max_seq_len=args.max_seq_len,
                                   sampling=SamplingConfig(temperature=args.temperature, top_k=args.top_k,
                                                           top_p=args.top_p),
                                   perplexity=args.perplexity, layer=args.layer, head=args.head)
    result = service.compare(config)
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
