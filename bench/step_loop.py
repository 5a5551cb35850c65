"""The one step loop costs nothing: decode on the GPT-2-124M shape, llmviz against its peer.

    python bench/step_loop.py [--threads 1] [--repeats 7] [--new-tokens 32] [--prompt-tokens 64]

Random weights in GPT-2-124M's shape (fp32, CPU unless --device). Interleaved rounds after a warm-up round, each
timing, on the same prompt ids: the peer, a transformers forward-pass loop with its StaticCache (greedy,
logits_to_keep=1: bench/engine_switches.hf_loop); llmviz's Session.step() wall clock per decode step (sampling
and recording included) at capture off and at capture meta (bench/decode_speed.time_engine). Medians with the
min and max; the targets: the peer's ms over the engine's >= 1.2, meta over off <= 1.10. Run the same script on
an older commit (copy it there) for a before/after on the same machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import gpt2_124m_folder, machine  # noqa: E402
from decode_speed import time_engine  # noqa: E402
from engine_switches import hf_loop  # noqa: E402

from llmviz.engine.loading.model import load_model  # noqa: E402


def spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3), "all": [round(v, 3) for v in values]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--prompt-tokens", type=int, default=64)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    from transformers import AutoModelForCausalLM

    with tempfile.TemporaryDirectory() as tmp:
        folder = gpt2_124m_folder(Path(tmp))
        lm = load_model(str(folder), device=args.device)
        hf = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).to(lm.device).eval()
        ids = list(range(100, 100 + args.prompt_tokens))
        sides = {"transformers loop": [], "engine off": [], "engine meta": []}
        for r in range(args.repeats + 1):  # round 0 warms up
            measured = {"transformers loop": hf_loop(hf, torch.tensor([ids], device=lm.device), args.new_tokens),
                        "engine off": time_engine(lm, ids, args.new_tokens, "off", args.device),
                        "engine meta": time_engine(lm, ids, args.new_tokens, "meta", args.device)}
            if r:
                for k, v in measured.items():
                    sides[k].append(v)
    ms = {k: spread(v) for k, v in sides.items()}
    off = ms["engine off"]["median"]
    print(json.dumps({"bench": "step_loop", "machine": machine(args.device), "model": "gpt2-124m-random",
                      "prompt_tokens": args.prompt_tokens, "new_tokens": args.new_tokens, "repeats": args.repeats,
                      "what": "decode ms per token (mean over the run's decode steps), medians of interleaved rounds",
                      "decode_ms_per_token": ms,
                      "peer_over_engine_off": round(ms["transformers loop"]["median"] / off, 3),
                      "meta_over_off": round(ms["engine meta"]["median"] / off, 3),
                      "targets": {"peer_over_engine_off": ">= 1.2", "meta_over_off": "<= 1.10"}}, indent=1))


if __name__ == "__main__":
    main()
