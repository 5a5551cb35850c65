"""A/B comparison: one prompt, one model, one seed, two settings; timed, measured and diffed (C8-C11, C13,
C14, C19-C21; claims K4, K6, K10, K11).

    runs      warm-up rounds, then `repeats` rounds of A, B and (control) A again, the order rotating round
              by round, each run a fresh session of one prefill and `steps` decode steps at capture off; per
              run the engine's timed region of each step (planning it: positions, masks, cache slots; the forward pass;
              sampling; device synchronized); medians and the spread (min, max) over the rounds; B's effect
              whose 95% interval includes none is timing noise (judged from 3 rounds on); A's second run
              against its first in the same rounds is the run's noise floor
    outputs   the tokens and text of each side, token agreement and the first position they differ
    drift     B teacher-forced on A's tokens (untimed): max |logit_A - logit_B| and whether the greedy
              pick agrees, per step (after a divergence free-running logits compare different contexts)
    memory    weight bytes, KV bytes used and allocated; peak memory: on a GPU the model's weights plus
              CUDA's peak allocated during the run above what was resident when it began, on a CPU this
              run's own tensors (weights + KV + the largest activation a step materialized, read
              from an untimed run at capture meta), since the process's RSS is the whole server's
    maps      one layer and head's prefill attention probabilities per side (untimed, capture full; rebuilt
              from q and k where a fused backend never materialized them, and labelled so)
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

from llmviz.analysis.claims import noise_floor, speedup
from llmviz.analysis.stats import MIN_ROUNDS
from llmviz.engine.lean_steps import lean_generate
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.platform.memory import typed_out_of_memory
from llmviz.engine.session import Session
from llmviz.engine.timing import spread
from llmviz.errors import ConfigError
from llmviz.i18n.translator import timed
from llmviz.labs.evaluation import engine_perplexity, heldout_ids, teacher_forced_drift
from llmviz.labs.probes import memory_bandwidth
from llmviz.labs.rounds import CONTROL, interleaved
from llmviz.trace import hooks
from llmviz.trace.check import COMPILE_STATES
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.progress import Progress, silent
from llmviz.trace.switches import format_spec, lossy_changes, parse_spec

MAX_STEPS, MAX_REPEATS = 256, 20
TIMINGS = (("prefill_ms", "prefill_ms"), ("decode_ms_per_token", "decode_ms"))  # a side's spread, a run's figure
Loader = Callable[[str | None, EngineConfig], LoadedModel]


@dataclass(frozen=True)
class CompareConfig:
    prompt: str
    a: str = ""  # a spec: "kv-dtype=fp16,attn=eager" (empty: the defaults)
    b: str = ""
    model: str | None = None  # None: the embedded model
    steps: int = 16  # decode steps after the prefill
    repeats: int = 6  # the fewest rounds whose interval of a median covers 95% (stats.MIN_ROUNDS)
    warmup: int = 1
    seed: int = 0
    sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(temperature=0))
    device: str = "auto"
    max_seq_len: int | None = None
    perplexity: bool = False  # held-out perplexity of each side (seconds on the embedded model)
    layer: int = 0  # the attention map shown
    head: int = 0
    bandwidth_bytes: int = 512 * 2**20  # the probe's buffer: far beyond a CPU's caches
    control: bool = True  # A run twice in each timed round: the A-vs-A noise floor

    def __post_init__(self):
        if not isinstance(self.steps, int) or not 1 <= self.steps <= MAX_STEPS:
            raise ConfigError(f"steps must be a whole number in 1..{MAX_STEPS}, got {self.steps!r}")
        if not isinstance(self.repeats, int) or not 1 <= self.repeats <= MAX_REPEATS:
            raise ConfigError(f"repeats must be a whole number in 1..{MAX_REPEATS}, got {self.repeats!r}")
        if not isinstance(self.warmup, int) or not 1 <= self.warmup <= 5:
            raise ConfigError(f"warmup must be 1..5 rounds (the first run of a setting pays one-time costs), "
                              f"got {self.warmup!r}")
        if not isinstance(self.layer, int) or not isinstance(self.head, int) or self.layer < 0 or self.head < 0:
            raise ConfigError("layer and head must be whole numbers >= 0")
        for side in "ab":  # ConfigError now on an unknown switch or a value the engine refuses (a window >= 2**63)
            self.engine_config(side)

    def engine_config(self, side: str, capture: str = "off") -> EngineConfig:
        changes = parse_spec(self.a if side == "a" else self.b)
        if capture != "off":
            changes["compile"] = False  # a compiled graph keeps no hook data; maps come from the eager path
        return EngineConfig(device=self.device, max_seq_len=self.max_seq_len, sampling=self.sampling, seed=self.seed,
                            capture=capture, logit_lens_top_k=0, stop_at_eos=False,
                            capture_filter=(hooks.probs(self.layer),) if capture == "full" else (),
                            **changes)


def _timed_run(lm: LoadedModel, config: CompareConfig, engine: EngineConfig, keep_logits: bool = False) -> dict:
    """One timed run; only the drift's reference (keep_logits) keeps its whole logits: the other rounds are read
    for their timings, tokens and KV (GPT-2's vocab: 200 KB a step, 20 rounds x 257 steps held otherwise)."""
    session = Session(lm, [config.prompt], engine)
    if lm.device.type == "cuda":
        torch.cuda.synchronize(lm.device)
        resident = torch.cuda.memory_allocated(lm.device)
        torch.cuda.reset_peak_memory_stats(lm.device)
    trace = session.generate(config.steps + 1) if keep_logits else lean_generate(session, config.steps + 1)
    decode = [s.timings["total_ms"] for s in trace.steps[1:]]
    compiling = [i for i, s in enumerate(trace.steps[1:]) if s.timings.get("compile") == COMPILE_STATES[0]]
    timed = [ms for i, ms in enumerate(decode) if i not in compiling] or decode
    out = {"prefill_ms": trace.steps[0].timings["total_ms"], "decode_ms": statistics.fmean(timed), "trace": trace}
    if lm.device.type == "cuda":
        out["cuda_peak_bytes"] = lm.weight_bytes + int(torch.cuda.max_memory_allocated(lm.device)) - resident
    return out


def _largest_activation(lm: LoadedModel, config: CompareConfig, side: str) -> dict:
    """The largest tensor a step materialized (hook records at capture meta, maps rebuilt afterwards
    left out): the activation share of a CPU run's own memory."""
    trace = lean_generate(Session(lm, [config.prompt], config.engine_config(side, "meta")), config.steps + 1)
    records = [(r.nbytes, r.name, s.index) for s in trace.steps for r in s.hooks if not r.recomputed]
    nbytes, name, step = max(records)
    return {"bytes": nbytes, "hook": name, "step": step}


def _attention_map(lm: LoadedModel, config: CompareConfig, side: str) -> dict:
    session = Session(lm, [config.prompt], config.engine_config(side, "full"))
    record = session.step().hook(hooks.probs(config.layer))
    return {"probs": record.array[0, config.head], "recomputed": record.recomputed,
            "note": record.note}


def _drift(lm_b: LoadedModel, config: CompareConfig, reference) -> dict:
    """B teacher-forced on A's tokens (evaluation.teacher_forced_drift)."""
    return teacher_forced_drift(reference, Session(lm_b, [config.prompt], config.engine_config("b")))


def agreement(a: list[int], b: list[int]) -> dict:
    """Token agreement of two outputs and the first position where they differ (None: identical)."""
    same = [x == y for x, y in zip(a, b, strict=False)]
    first = next((i for i, s in enumerate(same) if not s), None)
    if first is None and len(a) != len(b):
        first = min(len(a), len(b))
    return {"agreement": sum(same) / max(len(a), len(b), 1), "first_divergence": first}


def load_sides(config, load: Loader, progress: Progress) -> tuple[dict, dict]:
    """Each side's EngineConfig and model (`load(model, engine)`: its load switches), reported as stage "load";
    ConfigError where the two would run on different devices. `config`: a CompareConfig or a DecodePairConfig."""
    engines = {side: config.engine_config(side) for side in "ab"}
    models = {}
    for side in "ab":
        progress(0.02 if side == "a" else 0.05, "load", {"side": side.upper()})
        models[side] = load(config.model, engines[side])
    if models["a"].device != models["b"].device:
        raise ConfigError("A and B must run on the same device")
    return engines, models


def compare(config: CompareConfig, load: Loader, progress: Progress | None = None) -> dict:
    """Run the comparison; `load(model, engine_config)` gives the loaded model for a side's load switches.
    `progress(fraction, stage, values)` names each stage by a key ("load", "probe", "round", "memory",
    "drift", "perplexity", "done") so a page can say it in its own language."""
    progress = progress or silent
    engines, models = load_sides(config, load, progress)
    cfg = models["a"].cfg
    if config.layer >= cfg.num_layers or config.head >= cfg.num_heads:
        raise ConfigError(f"layer {config.layer} / head {config.head} is outside this model "
                          f"({cfg.num_layers} layers, {cfg.num_heads} heads)")
    device = models["a"].device
    progress(0.08, "probe", {})
    with typed_out_of_memory("the bandwidth probe", "free some memory"):
        bandwidth = memory_bandwidth(device, config.bandwidth_bytes, repeats=3)
    runs, probed = {"a": [], "b": [], CONTROL: []}, []
    per_round = 2 + config.control
    rounds = config.warmup + config.repeats
    for r in range(rounds):
        if r >= config.warmup:  # the probe again in every timed round: a share of it pairs with that round's timings
            with typed_out_of_memory("the bandwidth probe", "free some memory"):
                probed.append(round(memory_bandwidth(device, config.bandwidth_bytes, repeats=3)["gb_per_s"], 3))
        for j, (key, side) in enumerate(interleaved("ab", r, config.control)):
            progress(0.1 + 0.6 * (per_round * r + j) / (per_round * rounds), "round",
                     {"round": r + 1, "rounds": rounds, "side": "A′" if key == CONTROL else side.upper()})
            # The last round's A run is the drift's reference (runs["a"][-1]): the only one that keeps its logits
            run = _timed_run(models[side], config, engines[side], keep_logits=key == "a" and r == rounds - 1)
            if r >= config.warmup:
                runs[key].append({k: v for k, v in run.items() if k != "trace"} if key == CONTROL else run)
    sides = {}
    for i, side in enumerate("ab"):
        progress(0.72 + 0.1 * i, "memory", {"side": side.upper()})
        sides[side] = _side_result(models[side], config, side, runs[side], engines[side])
    sides["b"]["lossy"] = lossy_against(parse_spec(config.a), parse_spec(config.b))
    progress(0.9, "drift", {})
    reference = runs["a"][-1]["trace"]
    outputs = agreement(sides["a"]["output_ids"], sides["b"]["output_ids"])
    for side in "ab":  # each text cut where the outputs part, decoded from the tokens' bytes together
        ids, cut = sides[side]["output_ids"], outputs["first_divergence"]
        cut = len(ids) if cut is None else cut
        decode = models[side].tokenizer.hf.decode
        sides[side]["text_same"], sides[side]["text_diff"] = decode(ids[:cut]), decode(ids[cut:])
    result = {
        "prompt": config.prompt, "model": models["a"].name, "device": str(device), "threads": torch.get_num_threads(),
        "steps": len(reference.steps) - 1, "steps_asked": config.steps, "repeats": config.repeats,
        "warmup": config.warmup, "seed": config.seed, "sampling": asdict(config.sampling),
        "a": sides["a"], "b": sides["b"], "bandwidth": bandwidth | {"rounds_gb_per_s": probed},
        "drift": _drift(models["b"], config, reference), "outputs": outputs,
        "prompt_tokens": len(reference.prompt_ids),
        **timed("timed.compare", warmup=config.warmup, repeats=config.repeats),
    }
    result["within_noise"] = within_noise(sides["a"], sides["b"])
    if config.control:  # A against itself in the same rounds, read as B's effect is read
        control = {key: spread([r[run_key] for r in runs[CONTROL]]) for key, run_key in TIMINGS}
        result["control"] = control | {"noise_floor": {key: noise_floor(sides["a"][key], control[key])
                                                       for key, _ in TIMINGS}}
    if config.perplexity:
        progress(0.93, "perplexity", {})
        for side in "ab":
            lm, e = models[side], engines[side]
            sides[side]["perplexity"] = engine_perplexity(lm, heldout_ids(lm.tokenizer), e.kv_dtype, e.kv_layout,
                                                          e.attn_backend, e.attention_mask)
    progress(1.0, "done", {})
    return result


def _side_result(lm: LoadedModel, config: CompareConfig, side: str, runs: list[dict], engine: EngineConfig) -> dict:
    trace = runs[-1]["trace"]
    kv = trace.steps[-1].kv
    activation = _largest_activation(lm, config, side)
    kv_alloc = kv["bytes_allocated"]
    peak = {"bytes": lm.weight_bytes + kv_alloc + activation["bytes"], "kind": "tensors",
            "what": "weights + KV cache allocated + the largest activation (this run's own tensors)"}
    if "cuda_peak_bytes" in runs[-1]:
        peak = {"bytes": runs[-1]["cuda_peak_bytes"], "kind": "cuda",
                "what": "this model's weights + the most CUDA memory the run allocated beyond what was resident "
                        "when it began (other sessions on the GPU share the allocator's counter)"}
    changes = parse_spec(config.a if side == "a" else config.b)
    decode = spread([r["decode_ms"] for r in runs])
    return {
        "spec": format_spec(changes), "lossy": lossy_changes(changes), "engine_config": engine.to_dict(),
        "prefill_ms": spread([r["prefill_ms"] for r in runs]), "decode_ms_per_token": decode,
        "tokens_per_s": 1000 / decode["median"], "weight_bytes": lm.weight_bytes, "parameters": lm.parameters,
        "kv_bytes_used": kv["bytes_used"], "kv_bytes_allocated": kv_alloc,
        "kv_bytes_held": kv.get("bytes_held", kv_alloc), "kv": kv, "largest_activation": activation,
        "peak_memory": peak, "output_ids": trace.row_output_ids(0),
        "text": lm.tokenizer.hf.decode(trace.row_output_ids(0), skip_special_tokens=True),
        "attention": _attention_map(lm, config, side), "model_config": lm.cfg.to_dict(),
        "compiled": engine.compile,
    }


def lossy_against(a: dict, b: dict) -> list[str]:
    """The lossy switches B sets to another value than A does (B's approximations relative to A)."""
    differ = {k: v for k, v in b.items() if a.get(k) != v}
    return lossy_changes(differ)


MIN_ROUNDS_FOR_NOISE = MIN_ROUNDS  # fewer: no interval of a median covers 95% whatever the noise (stats.py)


def within_noise(a: dict, b: dict) -> dict:
    """Per timing: True when the 95% interval of B's time over A's (the rounds paired: A and B ran in each, the
    one statistics rule, llmviz/analysis/stats.py) includes no difference at all; None with fewer than 6 rounds,
    where the interval says nothing."""
    out = {}
    for key in ("prefill_ms", "decode_ms_per_token"):
        x, y = a[key]["all"], b[key]["all"]
        if min(len(x), len(y)) < MIN_ROUNDS_FOR_NOISE:
            out[key] = None
            continue
        ratio = speedup(b[key], a[key])  # B's time over A's, minus 1: paired where the rounds pair (one rule)
        out[key] = ratio.low <= 0 <= ratio.high
    return out
