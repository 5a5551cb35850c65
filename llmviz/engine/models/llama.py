"""The Llama family (Llama incl. Llama 3 rope scaling, Qwen2, Mistral, SmolLM): config and weight names.

All share one shape: RMSNorm, RoPE, SwiGLU, grouped-query attention; Qwen2 adds q/k/v biases,
Mistral a sliding window. Our module names mirror Hugging Face's after a fixed renaming, so the
map below is a list of prefix swaps in both directions.
"""

from __future__ import annotations

import math
import re

from llmviz.errors import ModelConfigError, UnsupportedArchitectureError
from llmviz.trace.model_config import ACTIVATIONS, ROPE_TYPES, ModelConfig

MODEL_TYPES = ("llama", "qwen2", "mistral")

# (Hugging Face prefix, our prefix); {i} is the layer index. Read left to right on load, right to left on save.
_PREFIXES = (
    ("model.embed_tokens.", "embed."),
    ("model.layers.{i}.self_attn.", "layers.{i}.attn."),
    ("model.layers.{i}.mlp.", "layers.{i}.mlp."),
    ("model.layers.{i}.input_layernorm.", "layers.{i}.attn_norm."),
    ("model.layers.{i}.post_attention_layernorm.", "layers.{i}.mlp_norm."),
    ("model.norm.", "final_norm."),
    ("lm_head.", "lm_head."),
)


def _swap_prefix(name: str, source: int) -> str | None:
    """Rename by the first prefix pair whose side `source` (0 = Hugging Face, 1 = ours) matches."""
    for pair in _PREFIXES:
        pattern = "^" + re.escape(pair[source]).replace(r"\{i\}", r"(\d+)")
        match = re.match(pattern, name)
        if match:
            target = pair[1 - source].replace("{i}", match.group(1) if match.groups() else "")
            return target + name[match.end():]
    return None


_IGNORED = re.compile(r"rotary_emb\.inv_freq$")


def _rope(d: dict) -> tuple[float, dict]:
    """rope theta and scaling from a transformers 5 (`rope_parameters`) or 4 (`rope_*`) config."""
    params = dict(d.get("rope_parameters") or {})
    if not params:
        params = dict(d.get("rope_scaling") or {})
        params.setdefault("rope_theta", d.get("rope_theta", 10000.0))
    if "type" in params and "rope_type" not in params:
        params["rope_type"] = params.pop("type")
    theta = float(params.pop("rope_theta", d.get("rope_theta", 10000.0)))
    if params.get("partial_rotary_factor", 1.0) != 1.0:
        raise UnsupportedArchitectureError("partial rotary embeddings are not supported")
    if params.get("rope_type", "default") not in ROPE_TYPES:
        raise UnsupportedArchitectureError(f"rope_type {params['rope_type']!r} is not supported; supported: "
                                           f"{', '.join(ROPE_TYPES)}")
    if params.get("rope_type", "default") == "default":
        params = {}
    _check_scaling(params)
    return theta, params


_SCALING_KEYS = {"linear": ("factor",),
                 "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")}


def _check_scaling(params: dict) -> None:
    """Every number a rope scaling needs, present and sensible (transformers only warns about some)."""
    kind = params.get("rope_type", "default")
    for key in _SCALING_KEYS.get(kind, ()):
        value = params.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
            raise ModelConfigError(f"rope_scaling of type {kind!r} needs a positive number {key!r}, got {value!r}")
    if kind in _SCALING_KEYS and params["factor"] < 1:
        raise ModelConfigError(f"rope_scaling factor must be >= 1, got {params['factor']}")
    if kind == "llama3" and not params["high_freq_factor"] > params["low_freq_factor"]:
        raise ModelConfigError("rope_scaling of type 'llama3' needs high_freq_factor > low_freq_factor")


def _windows(d: dict, model_type: str, layers: int) -> tuple:
    window = d.get("sliding_window") or 0
    if not window:
        return ()
    if model_type == "qwen2" and not d.get("use_sliding_window", False):
        return ()
    types = d.get("layer_types")
    if types:
        return tuple(window if t == "sliding_attention" else 0 for t in types)
    return (int(window),) * layers


def _ids(value) -> tuple:
    if value is None:
        return ()
    return tuple(value) if isinstance(value, list | tuple) else (int(value),)


def config_from_hf(d: dict) -> ModelConfig:
    model_type = d["model_type"]
    hidden_act = d.get("hidden_act", "silu")
    act = {"gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh"}.get(hidden_act, hidden_act)
    if act not in ACTIVATIONS:
        raise UnsupportedArchitectureError(f"activation {act!r} is not supported; supported: {', '.join(ACTIVATIONS)}")
    heads = d["num_attention_heads"]
    layers = d["num_hidden_layers"]
    if not d.get("head_dim") and (not isinstance(heads, int) or heads < 1 or d["hidden_size"] % heads):
        raise ModelConfigError(f"hidden_size={d['hidden_size']} must split evenly into {heads!r} attention heads")
    theta, scaling = _rope(d)
    attention_bias = bool(d.get("attention_bias", False))
    return ModelConfig(
        family=model_type,
        vocab_size=d["vocab_size"],
        hidden_size=d["hidden_size"],
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=d.get("num_key_value_heads") or heads,
        head_dim=d.get("head_dim") or d["hidden_size"] // heads,
        intermediate_size=d["intermediate_size"],
        max_position_embeddings=d.get("max_position_embeddings", 2048),
        norm="rms",
        norm_eps=float(d.get("rms_norm_eps", 1e-6)),
        position="rope",
        rope_theta=theta,
        rope_scaling=scaling,
        mlp="gated",
        activation=act,
        qkv_bias=model_type == "qwen2" or attention_bias,
        out_bias=attention_bias,
        mlp_bias=bool(d.get("mlp_bias", False)),
        tie_embeddings=bool(d.get("tie_word_embeddings", False)),
        sliding_windows=_windows(d, model_type, layers),
        bos_token_id=d.get("bos_token_id"),
        eos_token_ids=_ids(d.get("eos_token_id")),
    )


def hf_to_ours(name: str) -> str | None:
    """Our parameter name for a checkpoint tensor name, or None for tensors we do not need."""
    if _IGNORED.search(name):
        return None
    if not name.startswith(("model.", "lm_head.")):
        name = "model." + name  # checkpoints saved from the bare LlamaModel lack the prefix
    return _swap_prefix(name, 0) or name  # unknown names come back as they are: the loader reports them


def transform(ours: str, tensor):
    """Llama-family checkpoints are stored in nn.Linear layout already."""
    return tensor


def ours_to_hf(name: str) -> str:
    """The Hugging Face name of one of our parameters (used when the trainer saves a checkpoint)."""
    return _swap_prefix(name, 1) or name


def hf_config(cfg: ModelConfig, **extra) -> dict:
    """A config.json that transformers' LlamaForCausalLM reads back as `cfg`."""
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": cfg.vocab_size, "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size, "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads, "num_key_value_heads": cfg.num_kv_heads,
        "head_dim": cfg.head_dim, "max_position_embeddings": cfg.max_position_embeddings,
        "rms_norm_eps": cfg.norm_eps, "hidden_act": cfg.activation,
        "rope_theta": cfg.rope_theta, "rope_parameters": {"rope_type": "default", "rope_theta": cfg.rope_theta},
        "tie_word_embeddings": cfg.tie_embeddings, "attention_bias": False, "mlp_bias": False,
        "bos_token_id": cfg.bos_token_id,
        "eos_token_id": cfg.eos_token_ids[0] if len(cfg.eos_token_ids) == 1 else list(cfg.eos_token_ids),
        **extra,
    }
