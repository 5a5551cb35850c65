"""`python -m llmviz generate`: text from one prompt or a batch, with the run's timings and KV cache bytes (capture
off, so the timings are the engine's own)."""

from __future__ import annotations

import json
import statistics
import sys

from llmviz import service
from llmviz.cli.options import add_run_flags, engine_config, prompts_of, start
from llmviz.errors import LlmvizError


def add_parser(sub) -> None:
    p = sub.add_parser("generate", help="generate text; timings taken with capture off")
    add_run_flags(p)
    p.add_argument("--max-new-tokens", type=int, default=32,
                   help="tokens to generate: the prefill's token plus N-1 decode steps")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    if args.max_new_tokens < 1:
        raise LlmvizError("--max-new-tokens must be at least 1")
    prompts = prompts_of(args)
    config = engine_config(args, capture="off", lens=0)
    start(args)
    lm = service.models.load(args.model, config)
    trace = service.runs.run(lm, prompts, config, args.max_new_tokens)
    c, last = lm.cfg, trace.steps[-1]
    decode_ms = [s.timings["total_ms"] for s in trace.steps[1:]]
    first_compiled_ms = None
    if args.compile and decode_ms:  # the first decode step compiles: report it apart from the steady state
        first_compiled_ms, decode_ms = decode_ms[0], decode_ms[1:]
    rows = [{"prompt": p, "prompt_ids": trace.row_prompt_ids(i), "output_ids": trace.row_output_ids(i),
             "text": service.models.generated_text(lm, trace, i),
             "finished": (last.row_finished[i] if last.row_finished else last.finished) or "max_new_tokens"}
            for i, p in enumerate(prompts)]
    result = {
        "model": args.model, "device": str(lm.device), "dtype": args.dtype, "attn": args.attn,
        "kv_layout": args.kv_layout, "kv_dtype": last.kv["kv_dtype"], "threads": last.timings["threads"],
        "capture": "off",
        "config": {"num_layers": c.num_layers, "num_heads": c.num_heads, "num_kv_heads": c.num_kv_heads,
                   "head_dim": c.head_dim, "hidden_size": c.hidden_size, "vocab_size": c.vocab_size},
        **{k: rows[0][k] for k in ("prompt_ids", "output_ids", "text", "finished")},  # row 0, as before batches
        "rows": rows,
        "prefill_ms": trace.steps[0].timings["total_ms"],
        "decode_ms_per_token": statistics.fmean(decode_ms) if decode_ms else None,
        "compile": args.compile, "first_compiled_step_ms": first_compiled_ms,
        "kv_cache_bytes": last.kv["bytes_used"], "kv_cache_bytes_allocated": last.kv["bytes_allocated"],
        "kv_wasted_slots": last.kv["wasted_slots"],
    }
    notes = sorted({n for n in (service.models.language_note(lm, p) for p in prompts) if n})
    if notes:
        result["note"] = " ".join(notes)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
        return 0
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for row in rows:
        print(row["prompt"] + row["text"])
    per_token = "n/a" if result["decode_ms_per_token"] is None else f"{result['decode_ms_per_token']:.2f} ms"
    print(f"\n[{len(rows)} x {len(trace.steps)} steps on {result['device']} {args.dtype}, {args.attn}: prefill "
          f"{result['prefill_ms']:.2f} ms, decode {per_token}/step; {args.kv_layout} KV cache "
          f"{result['kv_cache_bytes']:,} B used of {result['kv_cache_bytes_allocated']:,} B]",
          file=sys.stderr)
    return 0
