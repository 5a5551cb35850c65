"""Bits per character of model folders on the two held-out files: the figure that compares models whose
tokenizers differ (perplexity does not).

    python bench/bits_per_char.py [FOLDER ...]      # default: the embedded model

Prints one JSON object: for each folder, its parameters and vocabulary, and bits per character on
assets/corpus/heldout.txt (English) and heldout_zh.txt (Chinese), each computed through the engine's KV cache
(one prefill per non-overlapping 512-token window, fp32, CPU), with the tokens and characters counted.
Not a timing: the seconds are reported only to say what the run cost.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import cpu_name  # noqa: E402

from llmviz.corpus import read_documents  # noqa: E402
from llmviz.engine.loading.model import EMBEDDED_MODEL, load_model  # noqa: E402
from llmviz.labs.evaluation import engine_bits_per_char, heldout_ids  # noqa: E402
from llmviz.paths import CORPUS  # noqa: E402

FILES = {"en": CORPUS / "heldout.txt", "zh": CORPUS / "heldout_zh.txt"}


def measure(name: str) -> dict:
    lm = load_model(name)
    out = {"model": name, "parameters": sum(p.numel() for p in lm.model.parameters()),
           "vocab_size": lm.cfg.vocab_size}
    for lang, path in FILES.items():
        start = time.perf_counter()
        ids = heldout_ids(lm.tokenizer, path)
        out[lang] = {"file": path.name, "tokens": len(ids), "characters": sum(len(d) for d in read_documents(path)),
                     "bits_per_char": round(engine_bits_per_char(lm, ids), 4),
                     "seconds": round(time.perf_counter() - start, 1)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", default=[EMBEDDED_MODEL])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(json.dumps({"machine": cpu_name(), "threads": args.threads, "torch": torch.__version__,
                      "models": [measure(f) for f in args.folders]}, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
