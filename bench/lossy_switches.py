"""What each lossy engine switch costs in held-out quality, on one model (the README's switch table).

    python bench/lossy_switches.py [--model llmviz-tiny] [--threads 1]

Prints one JSON object: for the plain model and each lossy switch, the held-out perplexity on
assets/corpus/heldout.txt (within this one model and tokenizer: what a switch costs) and bits per character on
heldout.txt, and with --chinese heldout_zh.txt (comparable across tokenizers), each through the engine's KV
cache, one prefill per non-overlapping 512-token window, on the CPU. Not a timing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import cpu_name  # noqa: E402

from llmviz import service  # noqa: E402
from llmviz.labs.evaluation import (  # noqa: E402
    bits_per_char,
    chars_counter,
    heldout_ids,
    perplexity,
    through_cache,
)
from llmviz.paths import CORPUS  # noqa: E402
from llmviz.trace.config import EngineConfig  # noqa: E402
from llmviz.trace.switches import parse_spec  # noqa: E402

SPECS = ("", "kv-dtype=fp16", "kv-dtype=bf16", "kv-dtype=int8", "kv-dtype=fp8", "quant=int8", "quant=int4",
         "dtype=bf16", "dtype=fp16", "kv-heads=4", "kv-heads=2", "sliding-window=64",
         "sparse-block=4,sparse-local=2,sparse-global=1")


def measure(model: str, spec: str, chinese: bool) -> dict:
    config = EngineConfig(device="cpu", **parse_spec(spec))
    lm = service.models.load(model, config)
    logits = through_cache(lm, config.kv_dtype, config.kv_layout, config.attn_backend, config.attention_mask)
    count = chars_counter(lm.tokenizer)
    en = heldout_ids(lm.tokenizer, CORPUS / "heldout.txt")
    row = {"spec": spec or "(none)", "perplexity_en": round(perplexity(logits, en), 3),
           "bits_per_char_en": round(bits_per_char(logits, en, count), 4)}
    if chinese:  # 70k tokens: minutes for the whole table on one thread
        row["bits_per_char_zh"] = round(bits_per_char(logits, heldout_ids(lm.tokenizer, CORPUS / "heldout_zh.txt"),
                                                      count), 4)
    print(json.dumps(row, ensure_ascii=False), file=sys.stderr, flush=True)  # progress, row by row
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=service.EMBEDDED_MODEL)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--chinese", action="store_true", help="also bits/char on heldout_zh.txt (slow)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = [measure(args.model, spec, args.chinese) for spec in SPECS]
    print(json.dumps({"bench": "lossy_switches", "model": args.model, "machine": cpu_name(), "threads": args.threads,
                      "torch": torch.__version__, "rows": rows}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
