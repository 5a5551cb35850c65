"""The Compare page's presets: the three comparisons the design card names (FP16, GQA, flash) and one per
other switch, each as two compare specs (A, B) fitted to the model and device (C8-C11, C13, C14, C19-C21).
No torch here: the page lists and fills them before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmviz.errors import ConfigError


@dataclass(frozen=True)
class Preset:
    name: str
    concepts: tuple  # concept ids of docs/concepts.md (a claim's declaration names the preset it runs)
    a: str
    b: str


def _gqa_heads(config: dict) -> int:
    """A quarter of the KV heads (8 -> 2 on the embedded model), or the largest divisor of the heads below."""
    heads, kv = config["num_heads"], config["num_kv_heads"]
    want = max(1, kv // 4)
    return max(d for d in range(1, want + 1) if heads % d == 0 and kv % d == 0)


def presets(config: dict, device: str = "cpu") -> dict[str, Preset]:
    """Every preset for a model (its card's config dict) on a device type ("cpu", "cuda", "mps")."""
    # CUDA's flash kernel runs in fp16/bf16 only: on a GPU both sides of the flash preset run in fp16
    flash_base = "dtype=fp16," if device == "cuda" else ""
    window = 8  # short enough to cut into a classroom prompt plus 16 decode steps
    items = [
        Preset("fp16", ("C11",), "dtype=fp32", "dtype=fp16"),
        Preset("gqa", ("C19",), "", f"kv-heads={_gqa_heads(config)}"),
        Preset("flash", ("C14",), f"{flash_base}attn=eager", f"{flash_base}attn=flash"),
        Preset("kv-fp16", ("C11",), "kv-dtype=fp32", "kv-dtype=fp16"),
        Preset("kv-fp8", ("C11", "C21"), "kv-dtype=fp32", "kv-dtype=fp8"),
        Preset("kv-int8", ("C21",), "kv-dtype=fp32", "kv-dtype=int8"),
        Preset("sdpa-fp8", ("C14", "C21"), "attn=eager,kv-dtype=fp32", "attn=sdpa,kv-dtype=fp8"),
        Preset("paged", ("C8", "C9"), "kv-layout=contiguous", "kv-layout=paged"),
        Preset("dynamic", ("C6", "C8"), "kv-layout=contiguous", "kv-layout=dynamic"),
        Preset("fused", ("C10",), "fused-qkv=off", "fused-qkv=on"),
        Preset("compile", ("C10",), "", "compile"),
        Preset("int8", ("C21",), "quant=none", "quant=int8"),
        Preset("int4", ("C21",), "quant=none", "quant=int4"),
        Preset("llm-int8", ("C21",), "quant=int8", "quant=llm-int8"),  # the method beside the plain rounding
        # groups of 128, where round-to-nearest int4 costs the embedded model perplexity for GPTQ to win back
        Preset("gptq", ("C21",), "quant=int4,quant-group=128", "quant=gptq-int4,quant-group=128"),
        Preset("window", ("C20",), "", f"sliding-window={window}"),
        # blocks of 4, the 2 nearest and the first: a pattern a short classroom prompt already feels
        Preset("block-sparse", ("C20",), "", "sparse-block=4,sparse-local=2,sparse-global=1"),
    ]
    return {p.name: p for p in items}


def preset(name: str, config: dict, device: str = "cpu") -> Preset:
    table = presets(config, device)
    if name not in table:
        raise ConfigError(f"unknown preset {name!r}; presets: {', '.join(table)}")
    return table[name]
