"""ModelConfig: the architecture-neutral description every model family is built from (C2, C3).

No torch here: the UI reads it through the model card. Family files (llama.py, gpt2.py) translate a
Hugging Face config dict into this; the transformer in transformer.py is built from it alone.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import cached_property

from llmviz.errors import ConfigError

NORMS = ("rms", "layer")
POSITIONS = ("rope", "learned")
MLPS = ("gated", "plain")  # gated: down(act(gate(x)) * up(x)) (SwiGLU); plain: proj(act(fc(x)))
ACTIVATIONS = ("silu", "gelu", "gelu_tanh", "relu")
ROPE_TYPES = ("default", "linear", "llama3")


def _finite(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# The Hugging Face model types a trace's card may name, declared here (torch-free, so a replayed trace is checked
# without the engine); engine/models/ maps each onto a family module and checks that it covers exactly these.
SUPPORTED_MODEL_TYPES = ("llama", "qwen2", "mistral", "gpt2")
# Beyond these a config describes no model anyone runs: a pasted config (the memory calculator) is refused before
# anything is built from it (a tuple per layer, a loop per head). A model folder's sizes meet its checkpoint instead.
MAX_SIZES = {"num_layers": 10_000, "hidden_size": 1_000_000, "num_heads": 100_000, "num_kv_heads": 100_000,
             "head_dim": 100_000, "intermediate_size": 10_000_000, "vocab_size": 100_000_000,
             "max_position_embeddings": 100_000_000}


@dataclass(frozen=True)
class ModelConfig:
    family: str  # "llama" | "qwen2" | "mistral" | "gpt2": which weight map and which oracle
    vocab_size: int
    hidden_size: int  # d_model
    num_layers: int
    num_heads: int
    num_kv_heads: int  # < num_heads is grouped-query attention (C19); == num_heads is plain MHA
    head_dim: int  # usually hidden_size // num_heads, but Llama-family configs may set it
    intermediate_size: int
    max_position_embeddings: int  # the model's context: learned tables end here; RoPE was trained to here
    norm: str = "rms"
    norm_eps: float = 1e-6
    position: str = "rope"
    rope_theta: float = 10000.0
    rope_scaling: dict = field(default_factory=dict)  # {"rope_type": "llama3", "factor": ...} or empty
    mlp: str = "gated"
    activation: str = "silu"
    qkv_bias: bool = False  # Qwen2 and GPT-2 have biases on q/k/v
    out_bias: bool = False  # GPT-2 has biases on the output and MLP projections
    mlp_bias: bool = False
    fused_qkv: bool = False  # GPT-2 stores one [d, 3d] projection (C10: one matmul instead of three)
    fused_mlp: bool = False  # a gated MLP's gate and up projections as one [2f, d] matmul (C10)
    tie_embeddings: bool = False  # lm_head shares the embedding matrix
    sliding_windows: tuple = ()  # per layer: window in tokens, or 0 for full causal attention (C20)
    bos_token_id: int | None = None
    eos_token_ids: tuple = ()

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                     "intermediate_size", "max_position_embeddings"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(
                f"num_kv_heads={self.num_kv_heads} must divide num_heads={self.num_heads}: "
                "each KV head serves a whole group of query heads")
        if not _finite(self.norm_eps) or self.norm_eps < 0:
            raise ConfigError(f"norm_eps must be a finite number >= 0, got {self.norm_eps!r}: NaN or inf here "
                              "makes every activation NaN")
        checks = (("norm", NORMS), ("position", POSITIONS), ("mlp", MLPS), ("activation", ACTIVATIONS))
        for name, allowed in checks:
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name}={getattr(self, name)!r} is not one of {allowed}")
        if self.position == "rope":
            if self.head_dim % 2:
                raise ConfigError(f"RoPE needs an even head_dim, got {self.head_dim}")
            if not _finite(self.rope_theta) or self.rope_theta <= 0:
                raise ConfigError(f"rope_theta must be a finite number > 0, got {self.rope_theta!r}")
            rope_type = self.rope_scaling.get("rope_type", "default")
            if rope_type not in ROPE_TYPES:
                raise ConfigError(f"rope_type={rope_type!r} is not supported; supported: {ROPE_TYPES}")
        if self.sliding_windows and len(self.sliding_windows) != self.num_layers:
            raise ConfigError("sliding_windows needs one entry per layer")
        if any(not isinstance(w, int) or isinstance(w, bool) or w < 0 for w in self.sliding_windows):
            raise ConfigError("a sliding window is a whole number of tokens >= 0 (0: the whole context)")
        if self.fused_mlp and self.mlp != "gated":
            raise ConfigError("only a gated MLP has a gate/up pair to fuse")

    @property
    def group_size(self) -> int:
        """Query heads per KV head."""
        return self.num_heads // self.num_kv_heads

    def window(self, layer: int) -> int:
        """Sliding-window length of one layer, 0 when the layer attends to every earlier token."""
        return self.sliding_windows[layer] if self.sliding_windows else 0

    @cached_property
    def windows(self) -> frozenset[int]:
        """The distinct window sizes of the layers (0 = full causal attention); computed once per config."""
        return frozenset(self.window(i) for i in range(self.num_layers))

    def to_dict(self) -> dict:
        data = asdict(self)
        data["sliding_windows"] = list(self.sliding_windows)
        data["eos_token_ids"] = list(self.eos_token_ids)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        data = dict(data)
        data["sliding_windows"] = tuple(data.get("sliding_windows", ()))
        data["eos_token_ids"] = tuple(data.get("eos_token_ids", ()))
        return cls(**data)
