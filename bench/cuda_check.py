"""The GPU paths, checked in one short run on a CUDA machine (section 8). Prints JSON.

    python bench/cuda_check.py [--out results.json] [--skip-compile]

fp32 parity with transformers on CUDA; fp16/bf16 against transformers in the same dtype on decode steps
that read the half-precision cache (teacher-forced top-1 agreement over 64 steps); the flash kernel; KV
fp8/int8; paged vs contiguous (logits, and the bytes each layout reports against torch.cuda.memory_allocated
deltas); a padded batch against single rows; int8/int4 weight kernels; compile; and a short benchmark
(GPT-2-124M shape: engine vs a transformers StaticCache loop, batch 8 vs 1, paged vs contiguous at 512).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "support"))

from common import ASSETS, gpt2_124m_folder, machine  # noqa: E402
from engine_switches import Models, batch_scaling, engine_run, hf_loop, paged_at_512  # noqa: E402
from parity import teacher_forced  # noqa: E402

from llmviz.engine.kv import make_kv_cache  # noqa: E402
from llmviz.engine.loading.model import load_model  # noqa: E402
from llmviz.engine.phases import feed  # noqa: E402
from llmviz.engine.platform.devices import torch_dtype  # noqa: E402
from llmviz.engine.session import Session  # noqa: E402
from llmviz.errors import ConfigError  # noqa: E402
from llmviz.labs.probes import memory_bandwidth  # noqa: E402
from llmviz.trace.config import EngineConfig, SamplingConfig  # noqa: E402

DEV = "cuda"
TINY = ASSETS / "llmviz-tiny"
PROMPT = "Return the value of the function and the list of its arguments"


def parity(folder, dtype: str, steps: int, **kwargs) -> dict:
    """The suite's own teacher-forced comparison with transformers (tests/support/parity.py), on CUDA."""
    diffs, agreement = teacher_forced(folder, kwargs.pop("backend", "sdpa"), prompt=PROMPT, dtype=dtype, device=DEV,
                                      steps=steps, **kwargs)
    return {"max_abs_dlogit": max(diffs), "top1_agreement": agreement, "steps": steps + 1}


def max_gap(a, b) -> float:
    return float(max(abs(x.logits - y.logits).max() for x, y in zip(a.steps, b.steps, strict=True)))


def cache_bytes_vs_allocator(lm) -> dict:
    if DEV != "cuda":
        return {"skipped": "no CUDA allocator here"}
    out = {}
    for layout in ("contiguous", "paged", "dynamic"):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        cache = make_kv_cache(layout, lm.cfg, 256, capacity=2, model_dtype=lm.dtype, device=DEV, block_size=16)
        for i in range(2):
            cache.add(i)
        with torch.inference_mode():
            feed(lm.model, cache, [lm.tokenizer.encode(PROMPT), lm.tokenizer.encode("Return")], [0, 1])
        torch.cuda.synchronize()
        out[layout] = {"bytes_allocated": cache.bytes_allocated(), "bytes_used": cache.bytes_used(),
                       "cuda_memory_allocated_delta": torch.cuda.memory_allocated() - before}
        del cache
    return out


def batch_vs_single(lm) -> dict:
    prompts = ["The list of", "Return the value of the function", "This"]
    greedy = SamplingConfig(temperature=0)
    out = {}
    for layout in ("contiguous", "paged"):
        cfg = EngineConfig(device=DEV, sampling=greedy, stop_at_eos=False, kv_layout=layout)
        batch = Session(lm, prompts, cfg).generate(8)
        alone = [Session(lm, p, cfg).generate(8).output_ids for p in prompts]
        out[layout] = all(batch.row_output_ids(i) == alone[i] for i in range(3))
    return out


def flash(lm32, lm16) -> dict:
    out = {}
    try:
        Session(lm32, PROMPT, EngineConfig(device=DEV, attn_backend="flash")).step()
        out["fp32"] = "ran (unexpected)"
    except ConfigError as exc:
        out["fp32"] = f"ConfigError: {exc}"
    greedy = SamplingConfig(temperature=0)
    a = Session(lm16, PROMPT, EngineConfig(device=DEV, dtype="fp16", sampling=greedy, stop_at_eos=False)).generate(16)
    b = Session(lm16, PROMPT, EngineConfig(device=DEV, dtype="fp16", sampling=greedy, stop_at_eos=False,
                                           attn_backend="flash")).generate(16)
    out["fp16_same_tokens_as_sdpa"] = a.output_ids == b.output_ids
    out["fp16_max_dlogit_vs_sdpa"] = max_gap(a, b)
    return out


def quant() -> dict:
    out = {}
    for mode in ("int8", "int4"):
        for dtype in ("bf16", "fp32"):
            lm = load_model(str(TINY), device=DEV, dtype=dtype, quant=mode)
            step = Session(lm, PROMPT, EngineConfig(device=DEV, dtype=dtype, quant=mode)).step()
            out[f"{mode}/{dtype}"] = {"kernels": lm.options.get("kernels"), "weight_bytes": lm.weight_bytes,
                                      "finite": bool(abs(step.logits).max() < 1e30)}
    return out


def compiled() -> dict:
    lm = load_model(str(TINY), device=DEV)
    cfg = EngineConfig(device=DEV, sampling=SamplingConfig(temperature=0), stop_at_eos=False, max_seq_len=128)
    eager = Session(lm, PROMPT, cfg).generate(17)
    start = time.perf_counter()
    comp = Session(lm, PROMPT, cfg.with_(compile=True)).generate(17)
    return {"same_tokens": comp.output_ids == eager.output_ids, "wall_s": time.perf_counter() - start,
            "first_compiled_step_ms": comp.steps[1].timings["total_ms"],
            "steady_ms": sorted(s.timings["total_ms"] for s in comp.steps[2:])[7],
            "eager_ms": sorted(s.timings["total_ms"] for s in eager.steps[2:])[7],
            "max_dlogit": max_gap(eager, comp)}


def speed(tmp: Path) -> dict:
    """GPT-2-124M shape on the GPU: the engine vs the transformers loop, then the benchmark's own
    paged-at-512 and batch-scaling measurements, in fp32 and bf16."""
    from transformers import AutoModelForCausalLM

    folder = gpt2_124m_folder(tmp, 2048)
    args = argparse.Namespace(device=DEV, repeats=3, new_tokens=32)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 4000, (64,), generator=gen).tolist()
    rows = [torch.randint(1, 4000, (64,), generator=gen).tolist() for _ in range(8)]
    long_ids = torch.randint(1, 4000, (497,), generator=gen).tolist()
    out = {}
    for dtype in ("fp32", "bf16"):
        base = {"dtype": dtype}
        models = Models(folder, DEV)
        lm = models.get(base)
        hf = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch_dtype(dtype)).to(DEV).eval()
        engine, loop = [], []
        for r in range(args.repeats + 1):
            e = engine_run(lm, [ids], args.new_tokens, base, DEV)["decode_ms"]
            h = hf_loop(hf, torch.tensor([ids], device=DEV), args.new_tokens)
            if r:
                engine.append(e)
                loop.append(h)
        med_e, med_h = sorted(engine)[len(engine) // 2], sorted(loop)[len(loop) // 2]
        out[dtype] = {"engine_decode_ms": round(med_e, 3), "transformers_loop_decode_ms": round(med_h, 3),
                      "engine_vs_transformers_loop": round(med_h / med_e, 3),
                      "repeats": {"engine": [round(x, 3) for x in engine],
                                  "transformers_loop": [round(x, 3) for x in loop]},
                      "paged_vs_contiguous_at_512": paged_at_512(models, args, long_ids, base),
                      "batch_8_vs_1": batch_scaling(models, args, rows, base)}
    return out


def lab_presets() -> dict:
    """The Compare page's design-card presets on the GPU, on the GPT-2-124M shape: FP16, GQA, flash."""
    from llmviz import service
    from llmviz.analysis.lab import gap_text, jsonable
    from llmviz.i18n.translator import Translator
    from llmviz.labs.compare import CompareConfig, compare
    from llmviz.labs.presets import presets

    lm = load_model("gpt2-124m-random", device=DEV)
    out = {}
    for name in ("fp16", "gqa", "flash", "kv-fp8"):
        p = presets(lm.cfg.to_dict(), "cuda" if DEV.startswith("cuda") else DEV)[name]
        r = compare(CompareConfig(prompt="The list of", a=p.a, b=p.b, model="gpt2-124m-random", steps=16, device=DEV),
                    service.models.load)
        keep = ("decode_ms_per_token", "prefill_ms", "weight_bytes", "kv_bytes_used", "peak_memory")
        out[name] = jsonable({"a": {"spec": r["a"]["spec"], **{k: r["a"][k] for k in keep}},
                              "b": {"spec": r["b"]["spec"], **{k: r["b"][k] for k in keep}},
                              "drift_max": r["drift"].get("max"), "agreement": r["outputs"]["agreement"],
                              "within_noise": r["within_noise"], "verdict": gap_text(Translator("en"), r)})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None)
    p.add_argument("--skip-compile", action="store_true")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--device", default="cuda", help="cpu: a dry run of the script itself")
    args = p.parse_args()
    global DEV
    DEV = args.device
    out = {"bench": "cuda_check", "machine": machine(DEV)}
    checks = {
        "bandwidth": lambda: memory_bandwidth(DEV, nbytes=4 * 2**30),
        "fp32_parity_sdpa": lambda: parity(TINY, "fp32", 16),
        "fp32_parity_eager_paged": lambda: parity(TINY, "fp32", 16, backend="eager", layout="paged"),
        "fp16_vs_transformers_fp16": lambda: parity(TINY, "fp16", 64),
        "bf16_vs_transformers_bf16": lambda: parity(TINY, "bf16", 64),
        "fp16_flash_vs_transformers_fp16": lambda: parity(TINY, "fp16", 64, backend="flash"),
        "kv_fp8_vs_transformers_fp32": lambda: parity(TINY, "fp32", 32, kv_dtype="fp8", layout="paged"),
        "kv_int8_vs_transformers_fp32": lambda: parity(TINY, "fp32", 32, kv_dtype="int8"),
        "flash": lambda: flash(load_model(str(TINY), device=DEV), load_model(str(TINY), device=DEV, dtype="fp16")),
        "cache_bytes_vs_cuda_allocator": lambda: cache_bytes_vs_allocator(load_model(str(TINY), device=DEV)),
        "batch_equals_single_rows": lambda: batch_vs_single(load_model(str(TINY), device=DEV)),
        "quant": quant,
        "lab_presets_gpt2_124m": lab_presets,
    }
    if not args.skip_compile:
        checks["compile"] = compiled
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_speed:
            checks["speed_gpt2_124m"] = lambda: speed(Path(tmp))
        for name, check in checks.items():
            start = time.perf_counter()
            try:
                out[name] = check()
            except Exception:  # report and go on: one broken path must not hide the others
                out[name] = {"error": traceback.format_exc(limit=4)}
            out[name + "_s"] = round(time.perf_counter() - start, 1)
            print(f"{name}: {json.dumps(out[name])[:300]}", file=sys.stderr, flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
