"""Decode A against B at a long context: the decode claims' measurement (K2, K4, K10, K11; C8, C11, C14,
C18), the one the Claims page, the lesson's Reveal and the Compare page's long-context section all run.

    workload  one sequence whose first `context` tokens are already cached as seeded random K and V (no prefill:
              engine/random_fill.py; a step's cost depends on how many keys it reads, not their values), so a
              decode step reads the weights and `context` + k cached tokens: where the article's decode effects
              live (KV's share of the bytes a step reads grows with the context, ~13% at 1,024 tokens of the
              GPT-2-124M shape in fp32); the short prompts of the Compare page leave it near 0
    timed     per run, a fresh session of each side's settings: one untimed decode step, then `steps` decode
              steps, each the engine's timed region of a step (plan, forward pass, greedy pick; device
              synchronized) at capture off; ms/token of a run is their mean (a compiling step left out)
    rounds    `warmup` untimed rounds, then `repeats` rounds; in each, A, B and (control) A again, the order
              rotating round by round, and the memory bandwidth probe once, so every figure pairs by round
    control   A's second run in each round against its first: an A-vs-A effect whose interval is this run's
              noise floor (what the same rule reads as an effect where there is none)
The drawn tokens mean nothing (the cache holds random K and V): this lab times, the Compare page's prompt runs
show outputs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

import torch

from llmviz.analysis.claims import noise_floor
from llmviz.engine.lean_steps import lean_generate
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.platform.memory import typed_out_of_memory
from llmviz.engine.session import Session
from llmviz.engine.timing import spread
from llmviz.errors import ConfigError
from llmviz.i18n.translator import timed
from llmviz.labs.compare import load_sides, lossy_against
from llmviz.labs.probes import memory_bandwidth
from llmviz.labs.rounds import CONTROL, interleaved
from llmviz.trace.check import COMPILE_STATES
from llmviz.trace.config import EngineConfig, SamplingConfig, default_max_seq
from llmviz.trace.progress import Progress, silent
from llmviz.trace.switches import format_spec, lossy_changes, parse_spec

MAX_STEPS, MAX_REPEATS, MAX_WARMUP = 128, 30, 5
Loader = Callable[[str | None, EngineConfig], LoadedModel]


@dataclass(frozen=True)
class DecodePairConfig:
    a: str = ""  # a spec: "kv-dtype=fp16,attn=eager" (empty: the defaults)
    b: str = ""
    model: str | None = None  # None: the embedded model
    # the quick decode claims' workload (labs/claims.ClaimsPlan.pair_workload), on whichever model is named
    context: int = 1024  # tokens cached before the timed steps
    steps: int = 16  # timed decode steps per run
    repeats: int = 6  # six: one look has an interval at 96.9% (the Compare page); a claim pools 3 a batch
    warmup: int = 1
    control: bool = True  # A twice per round: the A-vs-A noise floor
    device: str = "auto"
    seed: int = 0
    bandwidth_bytes: int = 256 * 2**20  # the probe's buffer: beyond a CPU's caches

    def __post_init__(self):
        for name, value, low, high in (("context", self.context, 1, 2**20), ("steps", self.steps, 1, MAX_STEPS),
                                       ("repeats", self.repeats, 1, MAX_REPEATS),
                                       ("warmup", self.warmup, 0, MAX_WARMUP)):
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ConfigError(f"{name} must be a whole number in {low}..{high}, got {value!r}")
        for side in "ab":  # ConfigError now on an unknown switch or a value the engine refuses
            self.engine_config(side)

    def engine_config(self, side: str) -> EngineConfig:
        """A side's settings; its sessions hold just the run's tokens (a GPT-2-shape cache of the whole context
        would be 151 MB in fp32, twice what a public server lets a session keep)."""
        changes = parse_spec(self.a if side == "a" else self.b)
        return EngineConfig(device=self.device, sampling=SamplingConfig(temperature=0), seed=self.seed,
                            capture="off", logit_lens_top_k=0, stop_at_eos=False, max_seq_len=self.tokens,
                            **changes)

    @property
    def tokens(self) -> int:
        """Tokens each run's cache must hold: the context, the untimed step's token and the timed steps'."""
        return self.context + 1 + self.steps


def check_fits(lm: LoadedModel, config: DecodePairConfig) -> None:
    """ConfigError naming the longest context that fits when context + steps exceed what a session may hold."""
    max_seq = default_max_seq(lm.cfg.max_position_embeddings)
    if config.tokens > max_seq:
        longest = max_seq - 1 - config.steps
        raise ConfigError(f"a context of {config.context} tokens and {config.steps} decode steps need "
                          f"{config.tokens} slots; a session of {lm.name} holds {max_seq}: use a context of at most "
                          f"{longest} tokens", code="decode_context", context=config.context, longest=longest)


def _one_run(lm: LoadedModel, engine: EngineConfig, ids: list[int], steps: int, seed: int) -> tuple[float, dict]:
    """A fresh session with len(ids) - 1 tokens cached at random, one untimed step, then `steps` timed: their
    mean ms (a compiling step left out) and the cache's last snapshot."""
    session = Session(lm, prompt_ids=[ids], config=engine)
    session.fill_random(seed)
    trace = lean_generate(session, steps + 1)
    steps_ = trace.steps[1:]
    ms = [s.timings["total_ms"] for s in steps_ if s.timings.get("compile") != COMPILE_STATES[0]]
    return statistics.fmean(ms or [s.timings["total_ms"] for s in steps_]), trace.steps[-1].kv


def decode_pair(config: DecodePairConfig, load: Loader, progress: Progress | None = None) -> dict:
    """Time A and B (and the control) in rounds at the configured context (module docstring); `load(model,
    engine)` gives the model for a side's load switches (fused QKV, quantized weights, dtype)."""
    progress = progress or silent
    engines, models = load_sides(config, load, progress)
    check_fits(models["a"], config)
    device, cfg = models["a"].device, models["a"].cfg
    gen = torch.Generator().manual_seed(config.seed)
    ids = torch.randint(0, cfg.vocab_size, (config.context + 1,), generator=gen).tolist()
    runs = {"a": [], "b": [], CONTROL: []}
    per_round = 2 + config.control
    kv, probed = {}, []
    rounds = config.warmup + config.repeats
    for r in range(rounds):
        timed_round = r >= config.warmup
        if timed_round:
            progress(0.08 + 0.9 * r / rounds, "probe", {"round": r + 1, "rounds": rounds})
            with typed_out_of_memory("the bandwidth probe", "free some memory"):
                probed.append(round(memory_bandwidth(device, config.bandwidth_bytes, repeats=3)["gb_per_s"], 3))
        for j, (key, side) in enumerate(interleaved("ab", r, config.control)):
            progress(0.08 + 0.9 * (r + (j + 1) / (per_round + 1)) / rounds, "round",
                     {"round": r + 1, "rounds": rounds, "side": "A′" if key == CONTROL else side.upper()})
            with typed_out_of_memory(f"decoding at a context of {config.context} tokens", "use a shorter context"):
                ms, kv[key] = _one_run(models[side], engines[side], ids, config.steps, config.seed + r)
            if timed_round:
                runs[key].append(ms)
    sides = {side: _side(models[side], config, side, runs[side], kv[side], engines[side]) for side in "ab"}
    sides["b"]["lossy"] = lossy_against(parse_spec(config.a), parse_spec(config.b))
    result = {
        "model": models["a"].name, "device": str(device), "threads": torch.get_num_threads(),
        "context": config.context, "prompt_tokens": config.context + 1, "steps": config.steps,
        "repeats": config.repeats, "warmup": config.warmup, "seed": config.seed, "a": sides["a"], "b": sides["b"],
        "bandwidth": {"gb_per_s": statistics.median(probed), "rounds_gb_per_s": probed,
                      "bytes": config.bandwidth_bytes},
        **timed("timed.decode_pair", context=config.context, steps=config.steps, warmup=config.warmup,
                repeats=config.repeats),
    }
    if config.control:
        control = spread(runs[CONTROL])
        result["control"] = {"decode_ms_per_token": control,
                             "noise_floor": noise_floor(sides["a"]["decode_ms_per_token"], control)}
    progress(1.0, "done", {})
    return result


def _side(lm: LoadedModel, config: DecodePairConfig, side: str, runs: list[float], kv: dict,
          engine: EngineConfig) -> dict:
    changes = parse_spec(config.a if side == "a" else config.b)
    decode = spread(runs)
    return {"spec": format_spec(changes), "lossy": lossy_changes(changes), "engine_config": engine.to_dict(),
            "model_config": lm.cfg.to_dict(), "kv": kv, "kv_bytes_allocated": kv["bytes_allocated"],
            "decode_ms_per_token": decode, "tokens_per_s": 1000 / decode["median"], "weight_bytes": lm.weight_bytes,
            "compiled": engine.compile}


def claim_figures(result: dict) -> dict:
    """What the decode claims read of a pair (their rules: llmviz/analysis/claimdefs/): both sides' ms per token,
    specs, settings and shapes (the bytes each step reads), the KV bytes each allocated, the dtype A's q, k, v
    traffic is counted in, the probe's bandwidth and A's second run in each round (pooled with later batches,
    its floor taken after). The Claims page, the lesson's Reveal and the Compare page's long-context section all
    judge these figures."""
    where = {k: result[k] for k in ("model", "device", "threads", "prompt_tokens", "steps", "context", "bandwidth",
                                    "what_was_timed", "timed")}
    kept = ("engine_config", "model_config", "kv")  # what the arithmetic's prediction needs of a side
    both = where | {"specs": [result[s]["spec"] for s in "ab"], "sides": [{k: result[s][k] for k in kept}
                                                                          for s in "ab"],
                    "decode_ms_per_token": [result[s]["decode_ms_per_token"] for s in "ab"],
                    "kv_bytes_allocated": [result[s]["kv_bytes_allocated"] for s in "ab"],
                    "model_config": result["a"]["model_config"], "dtype": result["a"]["engine_config"]["dtype"]}
    if "control" in result:
        both["control_ms_per_token"] = result["control"]["decode_ms_per_token"]
    return both
