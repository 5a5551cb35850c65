"""load_model: a local folder or hub id -> our DecoderModel with its tokenizer and model card.

Never trust_remote_code, never unpickle (safetensors only), never wait on a network that is not there:
local files first; the hub only when HF_HUB_OFFLINE is unset and the hub answers within seconds.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import nn

from llmviz.engine.loading import hub
from llmviz.engine.loading.random_weights import RANDOM_MODELS, TOKENIZER_OF_RANDOM, random_state
from llmviz.engine.loading.tokens import Tokenizer
from llmviz.engine.models import FAMILIES, check_model_type, model_config
from llmviz.engine.models.convert import convert
from llmviz.engine.models.layers import rope_inv_freq
from llmviz.engine.models.quant import quantize
from llmviz.engine.models.transformer import DecoderModel
from llmviz.engine.platform.devices import resolve_device, torch_dtype
from llmviz.engine.platform.memory import typed_out_of_memory
from llmviz.errors import (
    ConfigError,
    ModelConfigError,
    ModelNotFoundError,
    WeightLoadError,
)
from llmviz.paths import ASSETS
from llmviz.trace.config import CALIBRATED_QUANT, EMBEDDED_DRAFT, EMBEDDED_MODEL
from llmviz.trace.model_config import ModelConfig

# Shipped in assets/: the model, its draft (speculative decoding), and GQA versions uptrained from it (C19).
EMBEDDED_MODELS = (EMBEDDED_MODEL, EMBEDDED_DRAFT, "llmviz-tiny-gqa4", "llmviz-tiny-gqa2")
CALIBRATION_WINDOW = 512  # tokens per calibration window GPTQ reads (the embedded models' context)


@dataclass
class LoadedModel:
    """A model ready to run: shared read-only by every session that uses it."""

    name: str
    path: Path
    model: DecoderModel
    tokenizer: Tokenizer
    cfg: ModelConfig
    device: torch.device
    dtype: torch.dtype
    options: dict = field(default_factory=dict)  # the load-time switches: kv_heads, fused_qkv
    # torch.compile'd forward pass, made on first use and shared by every session on this model. Dynamo is
    # not thread-safe, so every compiled call holds this lock (compile is for measuring, not for a class).
    _compiled: object = field(default=None, repr=False, compare=False)
    compiled_shapes: set = field(default_factory=set, repr=False, compare=False)  # static shapes compiled so far
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def compiled_model(self):
        """The model under torch.compile (static shapes); compilation happens at its first call per shape.
        Call it with `lock` held."""
        with self.lock:
            if self._compiled is None:
                import torch._dynamo

                # The cache write is kept out of the graph, so the graph resumes once per layer, and Dynamo
                # specializes each resume on the layer index: allow that many graphs (its default is 8).
                limit = 8 * self.cfg.num_layers + 8
                for name in ("recompile_limit", "cache_size_limit"):
                    if hasattr(torch._dynamo.config, name):
                        setattr(torch._dynamo.config, name, max(getattr(torch._dynamo.config, name), limit))
                self._compiled = torch.compile(self.model, dynamic=False)
            return self._compiled

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())  # tied weights are counted once

    @property
    def weight_bytes(self) -> int:
        """Bytes of the weights as stored (quantized ones with their scales), each storage counted once."""
        from llmviz.engine.kv.base import storage_bytes

        return storage_bytes([*self.model.parameters(), *self.model.buffers()]) - storage_bytes(
            [b for name, b in self.model.named_buffers() if name.endswith("inv_freq")])

    def card(self) -> dict:
        c = self.cfg
        return {
            "name": self.name, "path": str(self.path), "family": c.family, "config": c.to_dict(),
            "parameters": self.parameters, "weight_bytes": self.weight_bytes,
            "dtype": str(self.dtype).removeprefix("torch."), "device": str(self.device),
            "position_scheme": "RoPE" if c.position == "rope" else "learned absolute",
            "tokenizer_vocab": len(self.tokenizer.hf), "byte_level": self.tokenizer.byte_level,
            "options": dict(self.options),
        }


def resolve_path(name_or_path: str | None, files: list[str] = hub.FILES) -> Path:
    """The local folder holding the model: the embedded one, a folder, or a hub snapshot (of `files`)."""
    name = EMBEDDED_MODEL if name_or_path is None else str(name_or_path).strip()
    if not name:
        raise ModelNotFoundError(f"no model was named: give a Hugging Face id (owner/name), a local folder, or "
                                 f"{EMBEDDED_MODEL} (the embedded model)", code="model_blank", default=EMBEDDED_MODEL)
    if name in EMBEDDED_MODELS or name in RANDOM_MODELS:
        return ASSETS / name
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(f"{path} has no config.json: not a Hugging Face model folder",
                                     code="model_no_config", path=str(path))
        return path
    return hub.snapshot(name, files)


def read_config(path: Path) -> dict:
    try:
        raw = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ModelNotFoundError(f"cannot read {path / 'config.json'}: {exc}") from exc
    check_model_type(raw, str(path / "config.json"))
    from transformers import AutoConfig  # normalizes rope_theta/rope_scaling into rope_parameters

    try:
        config = AutoConfig.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
    except Exception as exc:  # transformers' and huggingface_hub's own checks raise many kinds (rope keys, types)
        raise ModelConfigError(f"{path / 'config.json'} is malformed: {' '.join(str(exc).split())[:300]}") from exc
    return config.to_dict()


def config_dict(name: str | None) -> dict:
    """The named model's config (ModelConfig.to_dict()) read without its weights, from a folder, the local hub
    cache or config.json alone from the hub: the memory calculator's (C17), a claim's workload before it runs."""
    return model_config(read_config(resolve_path(name, hub.CONFIG_ONLY))).to_dict()


def generation_eos(path: Path) -> tuple:
    """End-of-sequence ids that generation_config.json adds (Llama 3 lists several), if the folder has one."""
    try:
        value = json.loads((path / "generation_config.json").read_text()).get("eos_token_id")
    except (OSError, ValueError, AttributeError):
        return ()
    values = value if isinstance(value, list) else [value]
    return tuple(int(v) for v in values if isinstance(v, int) and not isinstance(v, bool))


def checkpoint_tensors(path: Path) -> dict[str, torch.Tensor]:
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise WeightLoadError(f"{index.name} in {path} is not a shard index (a JSON object whose weight_map "
                                  f"names the .safetensors files): {type(exc).__name__}: {exc}") from exc
        stray = [s for s in shards if not isinstance(s, str) or Path(s).name != s or not s.endswith(".safetensors")]
        if stray:  # a shard is a .safetensors file in the folder itself: nothing else is ever read
            raise WeightLoadError(f"{index.name} in {path} names {stray[0]!r}: shards must be .safetensors files "
                                  "in the model folder")
        files = [path / s for s in shards]
    elif (path / "model.safetensors").is_file():
        files = [path / "model.safetensors"]
    else:
        pickles = [p.name for p in path.glob("*.bin")] + [p.name for p in path.glob("*.pt*")]
        hint = f" (found only {', '.join(pickles)}: pickle files are never loaded)" if pickles else ""
        raise WeightLoadError(f"{path} has no model.safetensors{hint}")
    tensors: dict[str, torch.Tensor] = {}
    for f in files:
        try:
            tensors.update(load_file(str(f), device="cpu"))
        except (OSError, SafetensorError) as exc:
            raise WeightLoadError(f"{f.name} in {path} cannot be read as safetensors: {exc}") from exc
    return tensors


def checkpoint_state(cfg: ModelConfig, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Checkpoint tensors under our parameter names, each checked against the shape `cfg` implies."""
    family = FAMILIES[cfg.family]
    names = {name: family.hf_to_ours(name) for name in tensors}
    layers = {ours.split(".")[1] for ours in names.values() if ours and ours.startswith("layers.")}
    if len(layers) != cfg.num_layers:  # checked before building the model: a config may claim millions of layers
        raise WeightLoadError(f"the config says {cfg.num_layers:,} layers but the checkpoint holds {len(layers)}: "
                              "config.json does not describe these weights")
    not_float = [name for name, t in tensors.items() if names[name] and not t.is_floating_point()]
    if not_float:
        raise WeightLoadError(f"{not_float[0]} holds {str(tensors[not_float[0]].dtype).removeprefix('torch.')} "
                              "values: the engine loads floating-point weights (fp32, fp16, bf16)")
    with torch.device("meta"):
        expected = DecoderModel(cfg).state_dict()
    loaded: dict[str, torch.Tensor] = {}
    unexpected = []
    for hf_name, tensor in tensors.items():
        ours = names[hf_name]
        if ours is None or (cfg.tie_embeddings and ours == "lm_head.weight"):
            continue
        if ours not in expected:
            unexpected.append(hf_name)
            continue
        tensor = family.transform(ours, tensor)
        if tuple(tensor.shape) != tuple(expected[ours].shape):
            raise WeightLoadError(f"{hf_name}: checkpoint shape {list(tensor.shape)} but the config implies "
                                  f"{list(expected[ours].shape)}")
        loaded[ours] = tensor
    skip = {"lm_head.weight"} if cfg.tie_embeddings else set()
    missing = sorted(set(expected) - set(loaded) - skip)
    if missing or unexpected:
        raise WeightLoadError(f"checkpoint does not match the {cfg.family} architecture: "
                              f"missing {missing[:5]}{'...' if len(missing) > 5 else ''}, "
                              f"unexpected {unexpected[:5]}{'...' if len(unexpected) > 5 else ''}")
    return loaded


def build(cfg: ModelConfig, state: dict[str, torch.Tensor], device: torch.device,
          dtype: torch.dtype) -> DecoderModel:
    with torch.device("meta"):
        model = DecoderModel(cfg)
    model.load_state_dict(state, strict=False, assign=True)
    if cfg.tie_embeddings:
        model.lm_head.weight = model.embed.weight
    if cfg.position == "rope":  # computed, not loaded; kept in fp32 whatever the weights' dtype
        model.rotary.register_buffer("inv_freq", rope_inv_freq(cfg), persistent=False)
    model = model.to(device=device, dtype=dtype).eval()
    if cfg.position == "rope":
        model.rotary.inv_freq = rope_inv_freq(cfg).to(device)
    if device.type == "cpu":
        column_major_weights(model)
    model.requires_grad_(False)
    return model


def column_major_weights(model: DecoderModel) -> None:
    """CPU fast path: store every projection weight [out, in] column-major (as GPT-2's Conv1D does).

    A decode step is a matrix-vector product per projection; on x86 CPUs, x @ W with W laid out
    [in, out] in memory runs ~20% faster for the layers and ~1.7x for a 50k-vocab head than nn.Linear's
    row-major [out, in] (measured here on one thread: GPT-2-124M layers 18.4 -> 15.3 ms, its head 9.0 -> 5.4 ms;
    bench/decode_speed.py shows the whole step); prefill matmuls are unchanged. Shapes and
    names stay the same, so the weights still read and save as Hugging Face's.
    """
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.weight = nn.Parameter(module.weight.detach().t().contiguous().t(), requires_grad=False)
    if model.cfg.tie_embeddings:
        model.embed.weight = model.lm_head.weight  # the lookup reads rows of the same (strided) matrix


def load_model(name_or_path: str | None = None, device: str = "auto", dtype: str = "fp32",
               kv_heads: int | None = None, fused_qkv: str = "auto", quant: str = "none",
               quant_group: int = 32, calibration=None) -> LoadedModel:
    """Load a supported model; raises the typed errors of llmviz.errors, never hangs.

    kv_heads (GQA by mean-pooling) and fused_qkv (auto|on|off) rewrite the weights at load (convert.py);
    quant int8|int4 replaces the blocks' projections by weight-only quantized ones (quant.py). A built-in
    random model (random_weights.py) draws its weights here and borrows the embedded tokenizer. calibration: a
    function of the tokenizer giving the token ids GPTQ reads (quant gptq-int4; labs/calibration.py's), cut here
    into windows of at most CALIBRATION_WINDOW tokens.
    """
    dev, dt = resolve_device(device), torch_dtype(dtype)
    path = resolve_path(name_or_path)
    hf_config = read_config(path)
    cfg = model_config(hf_config)
    is_random = (name_or_path or "").strip() in RANDOM_MODELS
    from transformers import AutoTokenizer

    tokenizer_path = ASSETS / TOKENIZER_OF_RANDOM if is_random else path
    try:
        hf_tok = AutoTokenizer.from_pretrained(str(tokenizer_path), local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError) as exc:
        raise ModelNotFoundError(f"{path} has no usable tokenizer: {exc}") from exc
    eos = tuple(dict.fromkeys((*cfg.eos_token_ids, *generation_eos(path))))  # config.json's, then the others
    tokenizer = Tokenizer(hf_tok, cfg.vocab_size, eos)
    with typed_out_of_memory(f"loading {name_or_path or EMBEDDED_MODEL}", "try dtype fp16/bf16 or a smaller model"):
        state = random_state(cfg) if is_random else checkpoint_state(cfg, checkpoint_tensors(path))
        cfg, state = convert(cfg, state, kv_heads, fused_qkv)
        model = build(cfg, state, dev, dt)
        windows = calibration_windows(calibration(tokenizer), cfg) if calibration and quant in CALIBRATED_QUANT \
            else None
        quant_info = quantize(model, quant, quant_group, windows)
    warm_up(model)
    return LoadedModel(name_or_path or EMBEDDED_MODEL, path, model, tokenizer, cfg, dev, dt,
                       {"kv_heads": kv_heads, "fused_qkv": fused_qkv, "quant": quant,
                        "quant_group": quant_group, **quant_info})


def calibration_windows(ids: list[int], cfg) -> torch.Tensor:
    """[w, n] windows of the calibration ids, n = min(CALIBRATION_WINDOW, the model's context), the rest dropped."""
    n = min(CALIBRATION_WINDOW, cfg.max_position_embeddings)
    w = len(ids) // n
    if w == 0:
        raise ConfigError(f"the calibration text holds {len(ids)} tokens: fewer than one window of {n}")
    return torch.tensor(ids[:w * n], dtype=torch.long).reshape(w, n)


def warm_up(model: DecoderModel) -> None:
    """One untimed pass through both attention backends, so a run's first timings are not one-time
    set-up costs (kernel selection, allocator growth, lazy initialization)."""
    from llmviz.engine.kv import make_kv_cache
    from llmviz.engine.models.attention import ATTENTION_BACKENDS
    from llmviz.engine.phases import feed

    device, dtype = model.embed.weight.device, model.embed.weight.dtype
    with torch.inference_mode():
        for backend in ATTENTION_BACKENDS:
            cache = make_kv_cache("contiguous", model.cfg, 9, model_dtype=dtype, device=device)
            cache.add(0)
            try:
                feed(model, cache, [[0] * 8], [0], backend=backend)  # a prefill ...
            except ConfigError:
                continue  # a backend this device and dtype lack (flash on CUDA fp32): it says so when asked for
            feed(model, cache, [[0]], [0], backend=backend)  # ... and a decode step
