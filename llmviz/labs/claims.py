"""The measurements behind the article's claims K1-K11 (issue 11), on this machine, with the engine's own sweeps,
compares and serving runs: nothing here times anything a second way. Each claim returns plain figures (numbers,
{median, min, max, all} spreads, the model and what was timed); llmviz.analysis.claims turns them into effects
and verdicts.

Models: the embedded llmviz-tiny (context 512) with its draft, and a random GPT-2-124M-shaped model (context
2048) where a claim needs long sequences (K3 past 1024 tokens, K6 at 2048), a decode step that reads a long
context (K2, K4, K10, K11: labs/decode_pair.py at 1,024 cached tokens, 2,000 in a full run) or, for K1 in a full
run, a model whose weights do not sit in a CPU's caches. A shared measurement (the kv-fp16 pair serves K2 and K4)
runs once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from llmviz.analysis.claim_effects import k1_pair
from llmviz.engine.capture import RunContext
from llmviz.engine.loading.model import LoadedModel, config_dict
from llmviz.engine.models.attention import ATTENTION_BACKENDS
from llmviz.engine.platform.devices import resolve_device
from llmviz.engine.session import Session
from llmviz.engine.timing import StepTimer, spread
from llmviz.errors import ConfigError, LlmvizError
from llmviz.i18n.translator import timed
from llmviz.labs.attention_inputs import attention_inputs
from llmviz.labs.batch_sweep import batch_sweep
from llmviz.labs.claims_serving import ServingClaims
from llmviz.labs.decode_pair import DecodePairConfig, claim_figures, decode_pair
from llmviz.labs.evaluation import heldout_ids
from llmviz.labs.layout_sweep import LONG, SHORT, default_lengths, layout_sweep, sweep_max_seq
from llmviz.labs.presets import preset
from llmviz.labs.rounds import CONTROL, interleaved, until_decided
from llmviz.trace.config import EMBEDDED_MODEL, LAYOUT_SWEEP_STEPS, EngineConfig, SamplingConfig
from llmviz.trace.progress import Progress, silent, within
from llmviz.trace.switches import load_options, parse_spec

LONG_MODEL = "gpt2-124m-random"
QUICK_BUDGET_S, LONG_BUDGET_S = 10.0, 60.0  # a claim's batches on the embedded model, on the GPT-2 shape
MAX_PATIENCE = 6.0
CLAIM_IDS = tuple(f"K{i}" for i in range(1, 12))
PAIR_PRESETS = {"K2": "kv-fp16", "K4": "kv-fp16", "K10": "sdpa-fp8", "K11": "fused"}  # the decode claims' pairs
Loader = Callable[[str | None, EngineConfig], LoadedModel]


@dataclass(frozen=True)
class ClaimsPlan:
    """How much to measure: quick (all eleven in ~85 s with 2 CPU threads: bench/results/claims_stability_cpu.json)
    or full."""

    quick: bool = True
    device: str = "auto"
    patience: float = 1.0  # times the claim's budget its batches may take (a student who asks for the rounds)

    def __post_init__(self):
        if not isinstance(self.device, str) or not self.device.strip():
            raise ConfigError(f"device must be auto, cpu, cuda, cuda:N or mps, got {self.device!r}")
        if not isinstance(self.patience, int | float) or not 1 <= self.patience <= MAX_PATIENCE:
            raise ConfigError(f"patience must be 1 to {MAX_PATIENCE} times a claim's budget, got {self.patience!r}")

    @property
    def repeats(self) -> int:
        return 3 if self.quick else 5

    @property
    def base_model(self) -> str:
        """The model of the compares and the prefill sweep: a full run uses the larger one."""
        return EMBEDDED_MODEL if self.quick else LONG_MODEL

    def pair_workload(self, a: str, b: str) -> DecodePairConfig:
        """A decode pair as the plan measures the decode claims (K2, K4, K10, K11): the lab's defaults in a quick
        run (1,024 cached tokens, 16 steps, 5 rounds: what the Compare page's long-context section runs too); a
        full run 2,000 tokens (KV ~22% of the bytes a step reads), 32 steps, 9 rounds."""
        quick = DecodePairConfig(a=a, b=b, model=LONG_MODEL, device=self.device)
        return quick if self.quick else replace(quick, context=2000, steps=32, repeats=9, bandwidth_bytes=512 * 2**20)

    @property
    def context(self) -> int:
        """The decode claims' cached tokens: KV is ~13% of the bytes a GPT-2-124M step reads at 1,024 in fp32; on
        the embedded model's short prompts it was ~0.3% (issue 36)."""
        return self.pair_workload("", "").context

    @property
    def pair_repeats(self) -> int:
        """Rounds of a decode pair (A, B and the A-vs-A control in each): a run is ~0.5 s on 2 CPU cores."""
        return self.pair_workload("", "").repeats

    def model_of(self, claim: str) -> str:
        """The model a claim's measurement runs (K3 and K6 need the GPT-2 shape's 2,048 tokens, the decode claims
        its long context, K1 the plan's base model)."""
        if claim in ("K3", "K6") or claim in PAIR_PRESETS:
            return LONG_MODEL
        return self.base_model if claim == "K1" else EMBEDDED_MODEL

    def budget_s(self, claim: str) -> float:
        """The seconds a claim's batches may take before the rule must decide with what it has (issue 36: a Reveal
        within 10 s on the embedded model, 60 s on the GPT-2 shape; a full run three times that)."""
        seconds = LONG_BUDGET_S if self.model_of(claim) == LONG_MODEL else QUICK_BUDGET_S
        return self.patience * (seconds if self.quick else 3 * seconds)


class Measurer(ServingClaims):
    """Runs claims one by one; measurements two claims share are kept (memo) for the run."""

    def __init__(self, plan: ClaimsPlan, load: Loader, progress: Progress | None = None):
        self.plan, self.load = plan, load
        self.progress = progress or silent
        self.memo: dict = {}

    def model(self, name: str, engine: EngineConfig | None = None) -> LoadedModel:
        """A model loaded with `engine`'s load-time switches (fused QKV, dtype, ...), once per combination."""
        engine = engine or EngineConfig(device=self.plan.device)
        key = ("model", name, tuple(sorted(load_options(engine).items())))
        if key not in self.memo:
            self.memo[key] = self.load(name, engine)
        return self.memo[key]

    def measure(self, claim: str) -> dict:
        """A claim measured in batches until the one rule decides or its budget is spent (labs/rounds.py)."""
        if claim not in CLAIM_IDS:
            raise ConfigError(f"no claim {claim!r}; the claims are {', '.join(CLAIM_IDS)}")
        taken = []

        def batch() -> dict:
            if taken:  # a later batch measures anew what an earlier one shared (a decode pair); the models stay
                self.memo = {k: v for k, v in self.memo.items() if k[0] == "model"}
            taken.append(claim)
            return getattr(self, claim.lower())()

        return until_decided(claim, batch, self.plan.budget_s(claim))

    # --- shared measurements -------------------------------------------------------------------------------
    def pair_config(self, name: str) -> DecodePairConfig:
        """The Compare page's preset `name` as the decode claims measure it (labs/decode_pair.py): decode on the
        GPT-2-124M shape at the plan's long context, where KV's share of the bytes a step reads is no longer ~0.
        Read from the model's config, its weights not built (a lesson step predicts from it before measuring)."""
        a, b = pair_specs(name, config_dict(LONG_MODEL), resolve_device(self.plan.device).type)
        return self.plan.pair_workload(a, b)

    def pair(self, name: str) -> dict:
        """Decode with the preset's A and B at the long context (one measurement serves K2 and K4)."""
        key = ("pair", name)
        if key not in self.memo:
            self.memo[key] = decode_pair(self.pair_config(name), lambda name, engine: self.model(name, engine),
                                         within(self.progress, 0.0, 1.0, name))
        return self.memo[key]

    def workload(self, claim: str) -> dict | None:
        """What a decode claim (K4, K10, K11) will run, before it runs: its sides' settings, the model's config, the
        cached tokens and the steps, for the arithmetic's prediction (issue 36: the app says where the article's
        effect cannot appear here before measuring). None for the other claims."""
        name = PAIR_PRESETS.get(claim)
        if name is None or claim == "K2":
            return None
        config, model_config = self.pair_config(name), config_dict(LONG_MODEL)
        sides = [{"engine_config": config.engine_config(s).to_dict(), "model_config": model_config,
                  "kv": {"max_seq": config.tokens}} for s in "ab"]  # a pair's sessions hold its tokens
        return {"sides": sides, "prompt_tokens": config.context + 1, "steps": config.steps,
                "specs": [config.a, config.b], "context": config.context, "model": LONG_MODEL}

    # --- one method per claim ----------------------------------------------------------------------------
    def k1(self) -> dict:
        lm = self.model(self.plan.base_model)
        # the article's pair is 256 -> 512 tokens; the embedded model's context (512) holds a 510-token prompt
        lengths = (32, 64, 128, 255, 384, 510) if self.plan.quick else (64, 128, 256, 512, 768, 1024, 1536, 2047)
        short, _ = k1_pair(lengths)  # the length K1 is judged from runs once more in each round: its noise floor
        return prefill_sweep(lm, lengths, self.plan.repeats, device=self.plan.device, control=short,
                             progress=within(self.progress, 0.0, 1.0, "K1"))

    def k2(self) -> dict:
        return claim_figures("K2", self.pair("kv-fp16"))

    def k3(self) -> dict:
        lm = self.model(LONG_MODEL)
        sweep = layout_sweep(lm, k3_lengths(sweep_max_seq(lm), self.plan.quick), steps=LAYOUT_SWEEP_STEPS,
                             repeats=self.plan.repeats,
                             progress=within(self.progress, 0.0, 1.0, "K3"))
        return {k: sweep[k] for k in ("lengths", "ms_per_token", "kv", "what_was_timed", "timed", "seconds", "control")
                if k in sweep} | {
            "model": lm.name, **self.where(lm)}

    def k4(self) -> dict:
        return claim_figures("K4", self.pair("kv-fp16"))

    def k5(self) -> dict:
        lm = self.model(EMBEDDED_MODEL)
        sweep = batch_sweep(lm, k5_prompt(lm), sizes=K5_SIZES, steps=K5_STEPS, repeats=self.plan.repeats,
                            device=self.plan.device,
                            progress=within(self.progress, 0.0, 1.0, "K5"))
        return {k: sweep[k] for k in ("sizes", "model", "device", "threads", "prompt_tokens", "what_was_timed",
                                      "timed", "control")}

    def k6(self) -> dict:
        lm = self.model(LONG_MODEL)
        ids = text_ids(lm, lm.cfg.max_position_embeddings - 1)  # the whole context: 2047 tokens and one slot
        self.progress(0.0, "K6", {"what": "q, k, v"})
        out = attention_ms(lm, ids, ("eager", "sdpa"), self.plan.repeats,
                           lambda i, name: self.progress((i + 1) / 3, "K6", {"what": name}), control=True)
        again = out.pop(CONTROL)  # eager once more in each round: the A-vs-A floor
        return {"model": lm.name, "tokens": len(ids), "layer": 0, "attention_ms": out, "control_ms": again,
                **self.where(lm),
                **timed("timed.k6")}

    def where(self, lm: LoadedModel) -> dict:
        return {"device": str(lm.device), "threads": torch.get_num_threads()}


def pair_specs(name: str, config: dict, device_type: str) -> tuple[str, str]:
    """A decode claim's preset as its A and B specs on a device type (a model's card config fits the preset)."""
    p = preset(name, config, device_type)
    if name == "kv-fp16" and device_type == "cpu":
        return p.a, "kv-dtype=bf16"  # CPUs have no fast fp16 arithmetic: the half-precision cache they use
    return p.a, p.b


def claim_of_pair(config: DecodePairConfig, model_config: dict, device_type: str) -> dict | None:
    """{"id": the decode claim (K4, K10, K11) whose A and B a pair's are (switches in any order), "wants": that
    claim's quick workload (model, context, steps, rounds), the only one it is judged on, "workload": whether the
    pair ran it}; None for another pair."""
    for claim, name in PAIR_PRESETS.items():
        want = ClaimsPlan(device=config.device).pair_workload(*pair_specs(name, model_config, device_type))
        if claim != "K2" and [parse_spec(x) for x in (config.a, config.b)] == [parse_spec(want.a),
                                                                             parse_spec(want.b)]:
            wants = {k: getattr(want, k) for k in ("model", "context", "steps", "repeats")}
            return {"id": claim, "workload": all(getattr(config, k) == v for k, v in wants.items()), "wants": wants}
    return None


def parse_ids(text: str | None) -> tuple[str, ...]:
    """"K1,K4" (any case, spaces allowed) -> ("K1", "K4"); None or empty: all eleven. Text that names no claim
    (",,,") is a ConfigError listing the claims, not a run of none (issue 19)."""
    if not text or not text.strip():
        return CLAIM_IDS
    ids = tuple(dict.fromkeys(part.strip().upper() for part in text.split(",") if part.strip()))
    if not ids:
        raise ConfigError(f"{text!r} names no claim; the claims are {', '.join(CLAIM_IDS)}")
    unknown = [i for i in ids if i not in CLAIM_IDS]
    if unknown:
        raise ConfigError(f"no claim {unknown[0]!r}; the claims are {', '.join(CLAIM_IDS)}")
    return ids


def run_claims(ids: tuple, plan: ClaimsPlan, load: Loader, progress: Progress | None = None) -> dict:
    """Measure each claim in turn. A claim this machine cannot run (out of memory, a model it cannot load) is
    kept as {"error": one line} and the others go on. progress(fraction, claim id, values)."""
    progress = progress or silent
    m = Measurer(plan, load)
    out, seconds = {}, {}
    for i, claim in enumerate(ids):
        m.progress = within(progress, i / len(ids), (i + 1) / len(ids), claim)
        progress(i / len(ids), claim, {})
        began = time.perf_counter()
        try:
            out[claim] = m.measure(claim)
        except (LlmvizError, MemoryError, torch.OutOfMemoryError) as exc:  # the device's limit, not a bug
            out[claim] = {"error": " ".join(str(exc).split()) or type(exc).__name__}
        seconds[claim] = round(time.perf_counter() - began, 2)
    progress(1.0, "done", {})
    return {"quick": plan.quick, "device": plan.device, "threads": torch.get_num_threads(), "claims": out,
            "seconds": seconds}


def text_ids(lm: LoadedModel, n: int) -> list[int]:
    """n tokens of the held-out text (repeated as needed): real text, as a prompt would be."""
    ids = heldout_ids(lm.tokenizer)
    return (ids * (n // len(ids) + 1))[:n]


def k3_lengths(max_seq: int, quick: bool) -> list[int]:
    """K3's lengths are the KV layouts page's automatic ones (issue 36: one measurement per claim): in a quick run
    only those it is judged at (512, and the longest past 1,024), all of them in a full one. Each length's rounds
    run on their own, so the page's other lengths change nothing at these."""
    lengths = default_lengths(max_seq, LAYOUT_SWEEP_STEPS)
    return [n for n in lengths if n == SHORT or n == lengths[-1] > LONG] if quick else lengths


K5_SIZES, K5_TOKENS, K5_STEPS = (1, 2, 4, 8), 64, 2


def k5_prompt(lm: LoadedModel) -> list[int]:
    """K5's prompt: 64 tokens of held-out text, b copies of which make batch b. A 3-token prompt leaves a CPU's
    cores idle at batch 1, and batching looks far better there than on a prompt that already fills them."""
    return text_ids(lm, K5_TOKENS)


def k5_workload(lm: LoadedModel) -> dict:
    """K5's quick workload (issue 36: one measurement per claim) for the Batch page's sweep: its prompt, steps and
    rounds, and whether `lm` is the model K5 is judged on (the embedded one, in fp32) so the page judges it."""
    return {"prompt": k5_prompt(lm), "tokens": K5_TOKENS, "steps": K5_STEPS, "repeats": ClaimsPlan().repeats,
            "judged": lm.name == EMBEDDED_MODEL and lm.dtype == torch.float32}


SHORT_WARMUP = 128  # tokens: on a CPU, a long prompt's warm-up runs only its start (see prefill_ms)


def prefill_ms(lm: LoadedModel, ids: list[int], backend: str = "sdpa", repeats: int = 3, device: str = "auto") -> dict:
    """One prompt's prefill, timed by the engine (capture off), after one untimed warm-up run. On a CPU a prompt
    longer than 4 x SHORT_WARMUP tokens warms up on its first SHORT_WARMUP: the same kernels and threads, and a
    full-length warm-up warms nothing more there (the allocator hands large buffers back to the OS after each run;
    measured before eager attention went a head at a time: GPT-2-124M's eager prefill of 2,047 tokens, 9.2 s as
    the warm-up, 10.2 s timed after it) while it costs as much as a timed run. On a GPU the warm-up is the prompt
    itself (its caching allocator keeps the buffers)."""
    config = prefill_config(ids, backend, device)
    warm_prefill(lm, ids, config)
    return spread([timed_prefill(lm, ids, config) for _ in range(repeats)])


def prefill_config(ids: list[int], backend: str, device: str) -> EngineConfig:
    """A timed prefill's settings: capture off, greedy, a cache of just the prompt and its one new token."""
    return EngineConfig(device=device, attn_backend=backend, capture="off", logit_lens_top_k=0, stop_at_eos=False,
                        sampling=SamplingConfig(temperature=0), max_seq_len=len(ids) + 1)


def warm_prefill(lm: LoadedModel, ids: list[int], config: EngineConfig) -> None:
    """One untimed prefill (on a CPU of a long prompt's first SHORT_WARMUP tokens: prefill_ms says why)."""
    short = lm.device.type == "cpu" and len(ids) > 4 * SHORT_WARMUP
    Session(lm, None, config, prompt_ids=[ids[:SHORT_WARMUP] if short else ids]).step()


def timed_prefill(lm: LoadedModel, ids: list[int], config: EngineConfig) -> float:
    """One prefill's ms, the engine's timed region of the step."""
    return Session(lm, None, config, prompt_ids=[ids]).step().timings["total_ms"]


def attention_ms(lm: LoadedModel, ids: list[int], backends: tuple, repeats: int = 3, progress=None,
                 control: bool = False) -> dict:
    """Claim K6 as the article states it ("replace the original attention computation: flash_attention(q, k, v)",
    §3.1): one layer's attention alone, each backend's own function called on the q, k, v and mask that layer 0
    is handed in a prefill of `ids`, timed by the engine's StepTimer after one untimed warm-up call, the backends
    interleaved `repeats` times, the order rotating. {backend: spread of ms}, and with `control` {"control": the
    first backend once more in each round} (its A-vs-A floor); progress(i, backend) before each warm-up."""
    attn, fns = lm.model.layers[0].attn, {b: ATTENTION_BACKENDS.get(b) for b in backends}
    ctx, timer, out = RunContext(), StepTimer(lm.device), {b: [] for b in (*backends, CONTROL)}
    q, k, v, mask = attention_inputs(lm.model, torch.tensor([ids], device=lm.device), 0)  # under inference_mode
    with torch.inference_mode():
        for i, backend in enumerate(backends):
            if progress:
                progress(i, backend)
            fns[backend](q, k, v, mask, attn.scale, attn.names, ctx)
        for r in range(repeats):
            for key, backend in interleaved(backends, r, control):
                timer.start()
                fns[backend](q, k, v, mask, attn.scale, attn.names, ctx)
                timer.mark("attention")
                out[key].append(timer.spans_ms()["attention"])
    return {b: spread(ms) for b, ms in out.items() if ms}


def prefill_sweep(lm: LoadedModel, lengths, repeats: int = 3, backend: str = "sdpa", device: str = "auto",
                  progress: Progress | None = None, control: int | None = None) -> dict:
    """Prefill ms against prompt length (C18; claim K1): each length's prompt warmed up once (prefill_ms' rule), then
    `repeats` rounds over the lengths, the order rotating, so lengths pair by round; `control`: a length run once
    more in each round (its A-vs-A floor, issue 36). progress(fraction, "length", {"tokens": n})."""
    lengths = sorted({int(n) for n in lengths})
    if not lengths or lengths[0] < 1 or lengths[-1] >= lm.cfg.max_position_embeddings:
        raise ConfigError(f"prefill lengths must be 1..{lm.cfg.max_position_embeddings - 1} tokens, got {lengths}")
    if control is not None and control not in lengths:
        raise ConfigError(f"the control length {control} is not one of the sweep's lengths {lengths}")
    # the control length first, so that interleaved's control (the first item once more) is that length
    order = [control, *(n for n in lengths if n != control)] if control is not None else lengths
    runs = {n: [] for n in (*lengths, CONTROL)}
    ids = {n: text_ids(lm, n) for n in lengths}
    config = {n: prefill_config(ids[n], backend, device) for n in lengths}
    per_round, done = len(lengths) + (control is not None), 0
    total = len(lengths) + repeats * per_round
    for n in lengths:
        if progress:
            progress(done / total, "length", {"tokens": n})
        warm_prefill(lm, ids[n], config[n])
        done += 1
    for r in range(repeats):
        for key, n in interleaved(order, r, control is not None):
            if progress:
                progress(done / total, "length", {"tokens": n})
            runs[key].append(timed_prefill(lm, ids[n], config[n]))
            done += 1
    out = {"model": lm.name, "lengths": lengths, "prefill_ms": [spread(runs[n]) for n in lengths], "backend": backend,
           "device": str(lm.device), "threads": torch.get_num_threads(), "paired": True,
           **timed("timed.prefill_sweep", repeats=repeats)}
    if control is not None:
        out["control"] = {"length": control, "prefill_ms": spread(runs[CONTROL])}
    return out
