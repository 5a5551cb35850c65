"""GPT-2: LayerNorm, learned absolute positions, one fused QKV projection, GELU, tied embeddings.

Hugging Face stores GPT-2's projections as Conv1D weights `[in, out]`, the transpose of nn.Linear's
`[out, in]`; `transform` turns them around on load.
"""

from __future__ import annotations

import re

from llmviz.errors import ModelConfigError, UnsupportedArchitectureError
from llmviz.trace.model_config import ModelConfig

MODEL_TYPES = ("gpt2",)

_RENAMES = (
    (r"^wte\.", "embed."),
    (r"^wpe\.", "pos_embed."),
    (r"^h\.(\d+)\.ln_1\.", r"layers.\1.attn_norm."),
    (r"^h\.(\d+)\.ln_2\.", r"layers.\1.mlp_norm."),
    (r"^h\.(\d+)\.attn\.c_attn\.", r"layers.\1.attn.qkv_proj."),
    (r"^h\.(\d+)\.attn\.c_proj\.", r"layers.\1.attn.o_proj."),
    (r"^h\.(\d+)\.mlp\.c_fc\.", r"layers.\1.mlp.fc."),
    (r"^h\.(\d+)\.mlp\.c_proj\.", r"layers.\1.mlp.proj."),
    (r"^ln_f\.", "final_norm."),
)
# Causal-mask buffers of old checkpoints, and the head that is tied to wte.
_IGNORED = re.compile(r"(^|\.)attn\.(masked_)?bias$|^lm_head\.weight$")
_CONV1D = re.compile(r"(qkv_proj|o_proj|mlp\.fc|mlp\.proj)\.weight$")


def config_from_hf(d: dict) -> ModelConfig:
    if d.get("scale_attn_by_inverse_layer_idx") or d.get("reorder_and_upcast_attn"):
        raise UnsupportedArchitectureError("GPT-2 variants with per-layer attention scaling are not supported")
    if not d.get("scale_attn_weights", True):
        raise UnsupportedArchitectureError("GPT-2 without 1/sqrt(head_dim) scaling is not supported")
    d_model, heads = d["n_embd"], d["n_head"]
    if not isinstance(heads, int) or heads < 1 or d_model % heads:
        raise ModelConfigError(f"n_embd={d_model} must split evenly into n_head={heads!r} heads")
    act = d.get("activation_function", "gelu_new")
    return ModelConfig(
        family="gpt2",
        vocab_size=d["vocab_size"],
        hidden_size=d_model,
        num_layers=d["n_layer"],
        num_heads=heads,
        num_kv_heads=heads,
        head_dim=d_model // heads,
        intermediate_size=d.get("n_inner") or 4 * d_model,
        max_position_embeddings=d["n_positions"],
        norm="layer",
        norm_eps=float(d.get("layer_norm_epsilon", 1e-5)),
        position="learned",
        mlp="plain",
        activation={"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}.get(act, act),
        qkv_bias=True,
        out_bias=True,
        mlp_bias=True,
        fused_qkv=True,
        tie_embeddings=True,
        bos_token_id=d.get("bos_token_id"),
        eos_token_ids=() if d.get("eos_token_id") is None else (int(d["eos_token_id"]),),
    )


def hf_to_ours(name: str) -> str | None:
    name = name.removeprefix("transformer.")
    if _IGNORED.search(name):
        return None
    for pattern, ours in _RENAMES:
        if re.match(pattern, name):
            return re.sub(pattern, ours, name)
    return name


def transform(ours: str, tensor):
    """Conv1D [in, out] -> nn.Linear [out, in]."""
    return tensor.t().contiguous() if _CONV1D.search(ours) else tensor
