"""Every engine switch measured against the default and against transformers (section 8).

    python bench/engine_switches.py [--threads 1] [--repeats 3] [--new-tokens 32] [--device cpu] [--compile]

Prints one JSON object. Two models: the embedded llmviz-tiny and a GPT-2-124M-shaped model with random
weights and a 2048-token context. Per model, interleaved rounds (round 0 is a warm-up), medians:
  - the peer: a transformers forward-pass loop with its StaticCache (greedy, logits_to_keep=1), on the
    same weights, dtype, device, threads and prompt ids; generate() beside it for reference;
  - the engine at capture off: wall clock of Session.step() (sampling and recording included);
  - each switch (layout, KV dtype, backend, fused, GQA, weight quant, window, dtype, compile): prefill ms,
    decode ms/token, tokens/s, weight and KV bytes, and greedy agreement with the default.
Then the targets: decode vs the peer, paged vs contiguous at 512 cached tokens, paged waste, batch 8 vs
batch 1 tokens/s (GPT-2 shape), and decode at batch 1 as a share of the memory-bandwidth bound measured by
the engine's probe in the same run.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import ASSETS, gpt2_124m_folder, machine  # noqa: E402

from llmviz.engine.loading.model import load_model  # noqa: E402
from llmviz.engine.session import Session  # noqa: E402
from llmviz.labs.probes import matmul_flops, memory_bandwidth  # noqa: E402
from llmviz.trace.config import EngineConfig, SamplingConfig  # noqa: E402

LOAD_KEYS = ("dtype", "kv_heads", "fused_qkv", "quant", "quant_group")
ONLY_ONE_SIDE = {
    "engine": ["projection weights stored column-major on CPU (faster matrix-vector products)"],
    "transformers": ["its own StaticCache and attention dispatch; generate() adds logits processors and stopping "
                     "checks per step"],
}


def switches(model: str, compile_too: bool) -> dict[str, dict]:
    gqa = {"kv_heads": 2} if model == "llmviz-tiny" else {"kv_heads": 4}
    fused = {"fused_qkv": "on"} if model == "llmviz-tiny" else {"fused_qkv": "off"}
    out = {
        "default": {}, "kv-layout=dynamic": {"kv_layout": "dynamic"}, "kv-layout=paged": {"kv_layout": "paged"},
        "kv-dtype=fp16": {"kv_dtype": "fp16"}, "kv-dtype=bf16": {"kv_dtype": "bf16"},
        "kv-dtype=int8": {"kv_dtype": "int8"}, "kv-dtype=fp8": {"kv_dtype": "fp8"},
        "attn=eager": {"attn_backend": "eager"}, "attn=flash": {"attn_backend": "flash"},
        f"fused-qkv={fused['fused_qkv']}": fused, f"kv-heads={gqa['kv_heads']}": gqa,
        "quant=int8": {"quant": "int8"}, "quant=int4": {"quant": "int4"},
        "sliding-window=64": {"sliding_window": 64}, "dtype=bf16": {"dtype": "bf16"},
    }
    if compile_too:
        out["compile"] = {"compile": True}
    return out


class Models:
    """Loaded models by their load-time switches (each loaded once)."""

    def __init__(self, folder: Path, device: str):
        self.folder, self.device, self.cache = folder, device, {}

    def get(self, change: dict):
        key = tuple((k, change[k]) for k in LOAD_KEYS if k in change)
        if key not in self.cache:
            self.cache[key] = load_model(str(self.folder), device=self.device, **dict(key))
        return self.cache[key]


def engine_run(lm, rows: list[list[int]], n: int, change: dict, device: str) -> dict:
    cfg = EngineConfig(device=device, capture="off", logit_lens_top_k=0, stop_at_eos=False,
                       sampling=SamplingConfig(temperature=0), max_seq_len=max(map(len, rows)) + n + 1, **change)
    session = Session(lm, config=cfg, prompt_ids=rows)
    start = time.perf_counter()
    session.step()
    prefill = (time.perf_counter() - start) * 1000
    walls = []
    for _ in range(n - 1):
        start = time.perf_counter()
        session.step()
        walls.append((time.perf_counter() - start) * 1000)
    if change.get("compile"):
        walls = walls[1:]  # the first compiled call compiles
    kv = session.trace.steps[-1].kv
    return {"prefill_ms": prefill, "decode_ms": statistics.fmean(walls), "kv_used": kv["bytes_used"],
            "kv_allocated": kv["bytes_allocated"], "wasted_slots": kv["wasted_slots"], "batch": len(rows),
            "tokens": [session.trace.row_output_ids(i) for i in range(len(rows))], "weight_bytes": lm.weight_bytes}


def hf_loop(hf, ids: torch.Tensor, n: int) -> float:
    """transformers forward loop with its StaticCache: decode ms/token (greedy, one token per forward)."""
    from transformers import StaticCache

    cache = StaticCache(config=hf.config, max_cache_len=ids.shape[1] + n + 1)
    key = "cache" if "cache" in inspect.signature(hf.forward).parameters else "past_key_values"  # 5.24 / older 5.x
    with torch.inference_mode():
        out = hf(ids, use_cache=True, logits_to_keep=1, **{key: cache})
        walls = []
        for _ in range(n - 1):
            token = out.logits[:, -1].argmax(-1, keepdim=True)
            start = time.perf_counter()
            out = hf(token, use_cache=True, logits_to_keep=1, **{key: cache})
            out.logits[:, -1].argmax(-1)
            walls.append((time.perf_counter() - start) * 1000)
    return statistics.fmean(walls)


def hf_generate(hf, ids: torch.Tensor, n: int) -> float:
    def timed(k):
        start = time.perf_counter()
        with torch.inference_mode():
            hf.generate(ids, max_new_tokens=k, min_new_tokens=k, do_sample=False, pad_token_id=0)
        return (time.perf_counter() - start) * 1000

    return (timed(n) - timed(1)) / (n - 1)


def median_of(rounds: list[dict], key: str) -> dict:
    values = [r[key] for r in rounds]
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}


def bench_switches(name: str, folder: Path, args, ids: list[int]) -> dict:
    from transformers import AutoModelForCausalLM

    models = Models(folder, args.device)
    base = models.get({})
    hf = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).to(base.device).eval()
    table = switches(name, args.compile)
    rounds: dict[str, list[dict]] = {k: [] for k in [*table, "transformers loop", "transformers generate"]}
    tensor_ids = torch.tensor([ids], device=base.device)
    for r in range(args.repeats + 1):
        measured = {k: engine_run(models.get(change), [ids], args.new_tokens, change, args.device)
                    for k, change in table.items()}
        measured["transformers loop"] = {"decode_ms": hf_loop(hf, tensor_ids, args.new_tokens)}
        measured["transformers generate"] = {"decode_ms": hf_generate(hf, tensor_ids, args.new_tokens)}
        if r:
            for k, v in measured.items():
                rounds[k].append(v)
    default = rounds["default"][0]
    out = {}
    for k, rs in rounds.items():
        entry = {"decode_ms_per_token": median_of(rs, "decode_ms")}
        entry["tokens_per_s"] = round(1000 / entry["decode_ms_per_token"]["median"], 1)
        if "prefill_ms" in rs[0]:
            entry["prefill_ms"] = median_of(rs, "prefill_ms")
            entry.update(weight_bytes=rs[0]["weight_bytes"], kv_bytes_used=rs[0]["kv_used"],
                         kv_bytes_allocated=rs[0]["kv_allocated"],
                         greedy_agreement=sum(a == b for a, b in zip(rs[0]["tokens"][0], default["tokens"][0],
                                                                     strict=True)) / len(default["tokens"][0]))
        out[k] = entry
    d = out["default"]["decode_ms_per_token"]["median"]
    for entry in out.values():
        entry["decode_vs_default"] = round(entry["decode_ms_per_token"]["median"] / d, 3)
    loop = out["transformers loop"]["decode_ms_per_token"]["median"]
    return {"switches": out, "prompt_tokens": len(ids), "new_tokens": args.new_tokens,
            "decode_ratio_transformers_loop_over_engine": round(loop / d, 3)}


def paged_at_512(models: Models, args, ids: list[int], base: dict | None = None) -> dict:
    """Decode with 512 tokens cached: contiguous vs paged (block 16), interleaved. base: other switches (dtype)."""
    base = base or {}
    rounds = {"contiguous": [], "paged": []}
    for r in range(args.repeats + 1):
        for layout in rounds:
            run = engine_run(models.get(base), [ids], 16, {**base, "kv_layout": layout}, args.device)
            if r:
                rounds[layout].append(run)
    c, p = (statistics.median(x["decode_ms"] for x in rounds[k]) for k in ("contiguous", "paged"))
    waste = rounds["paged"][0]["wasted_slots"]
    return {"cached_tokens": len(ids) + 15, "contiguous_decode_ms": round(c, 3), "paged_decode_ms": round(p, 3),
            "paged_over_contiguous": round(p / c, 3), "target": "<= 1.15",
            "paged_wasted_slots_per_sequence": waste, "block_size": 16, "waste_target": "< 16 (one block)"}


def batch_scaling(models: Models, args, rows: list[list[int]], base: dict | None = None) -> dict:
    """Decode tokens/s at batch 8 over batch 1, beside the bound this device's matmul rate puts on it."""
    base = base or {}
    lm = models.get(base)
    c = lm.cfg
    rounds = {1: [], len(rows): []}
    for r in range(args.repeats + 1):
        for b in rounds:
            run = engine_run(lm, rows[:b], args.new_tokens, base, args.device)
            if r:
                rounds[b].append(run)
    per_s = {b: b * 1000 / statistics.median(x["decode_ms"] for x in rs) for b, rs in rounds.items()}
    b = len(rows)
    # FLOPs of one row's decode step: 2 per weight of the blocks and of the output head
    weights = sum(p.numel() for p in lm.model.layers.parameters()) + c.vocab_size * c.hidden_size
    rate = matmul_flops(args.device, m=b, k=c.hidden_size, n=c.vocab_size, dtype=lm.dtype)
    compute_ms = b * 2 * weights / (rate["gflop_per_s"] * 1e9) * 1000  # batch-b step at the head's matmul rate
    best_ratio = b * (1000 / per_s[1]) / max(compute_ms, 1000 / per_s[1])
    return {"tokens_per_s": {str(k): round(v, 1) for k, v in per_s.items()},
            f"batch_{b}_over_batch_1": round(per_s[b] / per_s[1], 3), "target": ">= 4",
            "matmul_probe": rate, f"batch_{b}_step_compute_bound_ms": round(compute_ms, 2),
            "best_ratio_this_device_allows": round(best_ratio, 2),
            "note": "at batch b a step does b times the FLOPs of batch 1 while reading the weights once: where "
                    "the matmul rate bounds the batch-b step above batch 1's time, the ratio cannot reach b"}


def roofline(result: dict, bandwidth: dict) -> dict:
    d = result["switches"]["default"]
    bytes_per_token = d["weight_bytes"] + d["kv_bytes_used"]  # every weight and every cached row read once
    bound_ms = bytes_per_token / (bandwidth["gb_per_s"] * 1e9) * 1000
    measured = d["decode_ms_per_token"]["median"]
    return {"bytes_per_token": bytes_per_token, "bound_ms": round(bound_ms, 3), "measured_ms": measured,
            "share_of_roofline": round(bound_ms / measured, 3)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--compile", action="store_true", help="also the compile switch (minutes of compiling)")
    p.add_argument("--only", choices=("tiny", "gpt2"), default=None)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 4000, (args.prompt_tokens,), generator=gen).tolist()
    out = {"bench": "engine_switches", "machine": machine(args.device), "repeats": args.repeats,
           "what": "medians of interleaved rounds after a warm-up round; engine at capture off, greedy, fp32 "
                   "unless the switch says otherwise", "only_one_side_has": ONLY_ONE_SIDE,
           "bandwidth": memory_bandwidth(args.device), "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        folders = {"llmviz-tiny": ASSETS / "llmviz-tiny", "gpt2-124m-random-2048": gpt2_124m_folder(Path(tmp), 2048)}
        for name, folder in folders.items():
            if args.only and not name.startswith({"tiny": "llmviz", "gpt2": "gpt2"}[args.only]):
                continue
            result = bench_switches(name, folder, args, ids)
            models = Models(folder, args.device)
            long_ids = torch.randint(1, 4000, (495,), generator=gen).tolist()  # + 15 decoded: 510 cached (context 512)
            result["paged_vs_contiguous_at_512"] = paged_at_512(models, args, long_ids)
            if name.startswith("gpt2"):
                rows = [torch.randint(1, 4000, (args.prompt_tokens,), generator=gen).tolist() for _ in range(8)]
                result["batch_8_vs_1"] = batch_scaling(models, args, rows)
            result["roofline_batch_1"] = roofline(result, out["bandwidth"])
            out["models"][name] = result
    out["bandwidth_after"] = memory_bandwidth(args.device)  # the machine may drift during the run
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
