"""Decode speed: llmviz's engine vs transformers generate() on the same weights (section 9).

    python bench/decode_speed.py [--threads 1] [--prompt-tokens 64] [--new-tokens 64] [--repeats 5]

Prints one JSON object. For each model (the embedded one, and a random GPT-2-124M-shaped model written
to a temporary folder) it times, after a warm-up, interleaved repeats of:
  - transformers: generate() with greedy decoding, min_new_tokens = max_new_tokens = N; decode ms/token
    is (T(N) - T(1)) / (N - 1), so the prefill and the set-up are left out;
  - the engine: Session.step() wall clock per decode step (everything the step does, recording
    included), at capture off, meta and full. The logit lens is off (it is UI work, run after the step).
Medians over repeats. Same dtype (fp32), device (cpu unless --device), thread count and prompt ids.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import cpu_name, gpt2_124m_folder  # noqa: E402

from llmviz.engine.loading.model import ASSETS, EMBEDDED_MODEL, load_model  # noqa: E402
from llmviz.engine.session import Session  # noqa: E402
from llmviz.trace.config import EngineConfig, SamplingConfig  # noqa: E402


def time_hf(model, ids: torch.Tensor, n: int) -> float:
    start = time.perf_counter()
    with torch.inference_mode():
        model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=0)
    return (time.perf_counter() - start) * 1000


def time_engine(lm, prompt_ids: list[int], n: int, capture: str, device: str) -> float:
    cfg = EngineConfig(device=device, capture=capture, logit_lens_top_k=0, stop_at_eos=False,
                       sampling=SamplingConfig(temperature=0), max_seq_len=len(prompt_ids) + n + 1)
    session = Session(lm, config=cfg, prompt_ids=[prompt_ids])  # the same ids transformers gets
    session.step()  # prefill
    walls = []
    for _ in range(n - 1):
        start = time.perf_counter()
        session.step()
        walls.append((time.perf_counter() - start) * 1000)
    return statistics.fmean(walls)


def bench_model(folder: Path, args) -> dict:
    from transformers import AutoModelForCausalLM

    lm = load_model(str(folder), device=args.device, dtype="fp32")
    hf = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).to(lm.device).eval()
    ids = torch.randint(1, min(lm.cfg.vocab_size, 4000), (1, args.prompt_tokens),
                        generator=torch.Generator().manual_seed(0))
    prompt_ids = ids[0].tolist()
    ids = ids.to(lm.device)
    n = args.new_tokens
    results: dict[str, list[float]] = {"transformers": [], "off": [], "meta": [], "full": []}
    for round_ in range(args.repeats + 1):  # round 0 is the warm-up
        hf_ms = (time_hf(hf, ids, n) - time_hf(hf, ids, 1)) / (n - 1)
        measured = {"transformers": hf_ms}
        for capture in ("off", "meta", "full"):
            measured[capture] = time_engine(lm, prompt_ids, n, capture, args.device)
        if round_:
            for key, value in measured.items():
                results[key].append(value)
    med = {k: statistics.median(v) for k, v in results.items()}
    return {
        "model": str(folder.name), "parameters": lm.parameters, "device": str(lm.device),
        "decode_ms_per_token": {k: round(v, 3) for k, v in med.items()},
        "speed_ratio_transformers_over_engine_off": round(med["transformers"] / med["off"], 3),
        "meta_over_off": round(med["meta"] / med["off"], 3),
        "full_over_off": round(med["full"] / med["off"], 3),
        "repeats": {k: [round(x, 3) for x in v] for k, v in results.items()},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--skip-gpt2", action="store_true")
    p.add_argument("--model", type=Path, default=ASSETS / EMBEDDED_MODEL,
                   help="the first model's folder (default: the embedded one; e.g. an older copy, to compare)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    out = {"bench": "decode_speed", "threads": args.threads, "torch": torch.__version__,
           "machine": cpu_name(), "cpus": os.cpu_count(), "prompt_tokens": args.prompt_tokens,
           "new_tokens": args.new_tokens, "targets": {"speed_ratio": ">= 1.0", "meta_over_off": "<= 1.10",
                                                      "full_over_off": "<= 2.0"}, "models": []}
    out["models"].append(bench_model(args.model, args))
    if not args.skip_gpt2:
        with tempfile.TemporaryDirectory() as tmp:
            out["models"].append(bench_model(gpt2_124m_folder(Path(tmp)), args))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
