"""The measurements behind the article's claims, on this machine, with the engine's own sweeps,
compares and serving runs: nothing here times anything a second way. A claim's declaration
(llmviz/analysis/claimdefs/) names its lab kind (labs/claim_labs.LABS) and workload; the Measurer runs it in
batches until the one rule decides (labs/rounds.py) and returns plain figures (numbers, {median, min, max, all}
spreads, the model and what was timed) that the claim's own rule turns into effects and verdicts.

Models: the embedded llmviz-tiny (context 512) with its draft, and a random GPT-2-124M-shaped model (context
2048) where a claim needs long sequences, a decode step that reads a long context (labs/decode_pair.py at 1,024
cached tokens, 2,000 in a full run) or, for a full run's base model, weights that do not sit in a CPU's caches.
A shared measurement (one decode pair serves every claim of its preset) runs once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from llmviz.analysis import claim_spec
from llmviz.analysis.claim_spec import BASE, EMBEDDED, LONG
from llmviz.analysis.stats import MIN_ROUNDS
from llmviz.engine.loading.model import LoadedModel, config_dict
from llmviz.engine.platform.devices import resolve_device
from llmviz.errors import ConfigError, LlmvizError
from llmviz.labs.claim_labs import LABS, batch_workload, layout_lengths
from llmviz.labs.decode_pair import DecodePairConfig, decode_pair
from llmviz.labs.presets import preset
from llmviz.labs.rounds import until_decided
from llmviz.trace.config import (
    EMBEDDED_MODEL,
    KV_LAYOUTS,
    LAYOUT_SWEEP_BACKEND,
    LAYOUT_SWEEP_BLOCK,
    LAYOUT_SWEEP_STEPS,
    EngineConfig,
)
from llmviz.trace.progress import Progress, silent, within
from llmviz.trace.switches import load_options, parse_spec

LONG_MODEL = "gpt2-124m-random"
QUICK_BUDGET_S, LONG_BUDGET_S = 10.0, 60.0  # a claim's batches on the embedded model, on the GPT-2 shape
MAX_PATIENCE = 6.0
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
        """A decode pair as the plan measures the decode claims (K2, K4, K10, K11): in a quick run the lab's
        workload (1,024 cached tokens, 16 steps: what the Compare page's long-context section runs too) in batches
        of 3 rounds, so a lesson's Reveal has figures ~10 s after its run starts on 2 CPU cores and the first look
        comes at 9 rounds (stats.Looks; the Compare page's one look takes 6); a full run 2,000 tokens (KV ~22% of
        the bytes a step reads), 32 steps, 9 rounds a batch."""
        quick = DecodePairConfig(a=a, b=b, model=LONG_MODEL, device=self.device, repeats=self.repeats)
        return quick if self.quick else replace(quick, context=2000, steps=32, repeats=9, bandwidth_bytes=512 * 2**20)

    @property
    def context(self) -> int:
        """The decode claims' cached tokens: KV is ~13% of the bytes a GPT-2-124M step reads at 1,024 in fp32; on
        the embedded model's short prompts it was ~0.3%."""
        return self.pair_workload("", "").context

    @property
    def pair_repeats(self) -> int:
        """Rounds of a decode pair (A, B and the A-vs-A control in each): a run is ~0.5 s on 2 CPU cores."""
        return self.pair_workload("", "").repeats

    def model_of(self, claim: str) -> str:
        """The model a claim's measurement runs, as its declaration's lab names it: the embedded one, the GPT-2
        shape (2,048 tokens of context: long sweeps, a decode step that reads a long context) or the plan's base."""
        model = claim_spec.claim(claim).lab.model
        return {EMBEDDED: EMBEDDED_MODEL, LONG: LONG_MODEL, BASE: self.base_model}[model]

    def budget_s(self, claim: str) -> float:
        """The seconds a claim's batches may take before the rule must decide with what it has (a Reveal
        within 10 s on the embedded model, 60 s on the GPT-2 shape; a full run three times that)."""
        seconds = LONG_BUDGET_S if self.model_of(claim) == LONG_MODEL else QUICK_BUDGET_S
        return self.patience * (seconds if self.quick else 3 * seconds)

class Measurer:
    """Runs claims one by one, each by the lab its declaration names; measurements two claims share are kept
    (memo) for the run."""

    def __init__(self, plan: ClaimsPlan, load: Loader, progress: Progress | None = None,
                 on_batch: Callable[[str, dict], None] | None = None):
        self.plan, self.load = plan, load
        self.progress = progress or silent
        self.on_batch = on_batch  # (claim id, the figures pooled so far) after each batch
        self.memo: dict = {}

    def model(self, name: str, engine: EngineConfig | None = None) -> LoadedModel:
        """A model loaded with `engine`'s load-time switches (fused QKV, dtype, ...), once per combination."""
        engine = engine or EngineConfig(device=self.plan.device)
        key = ("model", name, tuple(sorted(load_options(engine).items())))
        if key not in self.memo:
            self.memo[key] = self.load(name, engine)
        return self.memo[key]

    def model_name(self, claim: claim_spec.ClaimSpec) -> str:
        return self.plan.model_of(claim.id)

    def measure(self, claim_id: str, judge: tuple[str, ...] = ()) -> dict:
        """A claim measured in batches until the one rule decides it, and each claim of `judge` (others its
        workload serves: claim_spec.sharing), or its budget is spent (labs/rounds.py)."""
        claim = claim_spec.claim(claim_id)
        lab = LABS.get(claim.lab.kind)
        if lab is None:
            raise ConfigError(f"{claim_id} names the lab {claim.lab.kind!r}; the labs are {', '.join(LABS)}")
        taken = []

        def batch() -> dict:
            if taken:  # a later batch measures anew what an earlier one shared (a decode pair); the models stay
                self.memo = {k: v for k, v in self.memo.items() if k[0] == "model"}
            taken.append(claim_id)
            return lab(self, claim)

        report = None if self.on_batch is None else (lambda figures: self.on_batch(claim_id, figures))
        return until_decided((claim_id, *(c for c in judge if c != claim_id)), batch, self.plan.budget_s(claim_id),
                             on_batch=report)

    # --- shared measurements -------------------------------------------------------------------------------
    def pair_config(self, name: str) -> DecodePairConfig:
        """The Compare page's preset `name` as the decode claims measure it (labs/decode_pair.py): decode on the
        GPT-2-124M shape at the plan's long context, where KV's share of the bytes a step reads is no longer ~0.
        Read from the model's config, its weights not built (a lesson step predicts from it before measuring)."""
        a, b = pair_specs(name, config_dict(LONG_MODEL), resolve_device(self.plan.device).type)
        return self.plan.pair_workload(a, b)

    def pair(self, name: str) -> dict:
        """Decode with the preset's A and B at the long context (one measurement serves each claim of the preset)."""
        key = ("pair", name)
        if key not in self.memo:
            self.memo[key] = decode_pair(self.pair_config(name), lambda name, engine: self.model(name, engine),
                                         within(self.progress, 0.0, 1.0, name))
        return self.memo[key]

    def workload(self, claim_id: str) -> dict | None:
        """What a decode claim whose time the bytes predict will run, before it runs: its sides' settings, the
        model's config, the cached tokens and the steps, for the arithmetic's prediction (the app says
        where the article's effect cannot appear here before measuring). None for the other claims."""
        claim = claim_spec.claim(claim_id)
        if claim.lab.kind != "decode_pair" or not claim.from_bytes:
            return None
        config, model_config = self.pair_config(claim.lab.options["preset"]), config_dict(LONG_MODEL)
        sides = [{"engine_config": config.engine_config(s).to_dict(), "model_config": model_config,
                  "kv": {"max_seq": config.tokens}} for s in "ab"]  # a pair's sessions hold its tokens
        return {"sides": sides, "prompt_tokens": config.context + 1, "steps": config.steps,
                "specs": [config.a, config.b], "context": config.context, "model": LONG_MODEL}

    def where(self, lm: LoadedModel) -> dict:
        return {"device": str(lm.device), "threads": torch.get_num_threads()}


def pair_specs(name: str, config: dict, device_type: str) -> tuple[str, str]:
    """A decode claim's preset as its A and B specs on a device type (a model's card config fits the preset)."""
    p = preset(name, config, device_type)
    if name == "kv-fp16" and device_type == "cpu":
        return p.a, "kv-dtype=bf16"  # CPUs have no fast fp16 arithmetic: the half-precision cache they use
    return p.a, p.b


def claim_of_pair(config: DecodePairConfig, model_config: dict, device_type: str) -> dict | None:
    """{"id": the decode claim whose time the bytes predict and whose A and B a pair's are (switches in any
    order), "wants": that claim's quick workload (model, context, steps; its rounds are how many, not what), the
    only one it is judged on, "workload": whether the pair ran it}; None for another pair."""
    for claim in claim_spec.measured_by("decode_pair"):
        if not claim.from_bytes:
            continue
        want = ClaimsPlan(device=config.device).pair_workload(*pair_specs(claim.lab.options["preset"], model_config,
                                                                          device_type))
        if [parse_spec(x) for x in (config.a, config.b)] == [parse_spec(want.a), parse_spec(want.b)]:
            wants = {k: getattr(want, k) for k in ("model", "context", "steps")}
            return {"id": claim.id, "workload": all(getattr(config, k) == v for k, v in wants.items()),
                    "wants": wants}
    return None


def parse_ids(text: str | None) -> tuple[str, ...]:
    """"K1,K4" (any case, spaces allowed) -> ("K1", "K4"); None or empty: every declared claim. Text that names no
    claim (",,,") is a ConfigError listing the claims, not a run of none."""
    known = claim_spec.ids()
    if not text or not text.strip():
        return known
    ids = tuple(dict.fromkeys(part.strip().upper() for part in text.split(",") if part.strip()))
    if not ids:
        raise ConfigError(f"{text!r} names no claim; the claims are {', '.join(known)}")
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ConfigError(f"no claim {unknown[0]!r}; the claims are {', '.join(known)}")
    return ids


def run_claims(ids: tuple, plan: ClaimsPlan, load: Loader, progress: Progress | None = None,
               on_batch: Callable[[str, dict], None] | None = None) -> dict:
    """Measure each claim in turn; claims one workload serves (claim_spec.sharing: K2 and K4) in one measurement,
    judged on the same rounds, the later one `shared` with the first (its seconds the measurement's, counted once
    in the run's). A claim this machine cannot run (out of memory, a model it cannot load) is kept as {"error": one
    line} and the others go on. progress(fraction, claim id, values); on_batch(claim id, the figures pooled so
    far) after each batch of rounds: once per claim the batch serves."""
    progress = progress or silent
    report = None if on_batch is None else (lambda cid, figures: [on_batch(c, figures) for c in group(cid)])
    m = Measurer(plan, load, on_batch=report)
    out, seconds, shared = {}, {}, {}

    def group(cid: str) -> tuple[str, ...]:
        return tuple(c for c in claim_spec.sharing(cid) if c in ids)

    for i, claim in enumerate(ids):
        first = group(claim)[0]
        if first != claim and first in out:  # measured with `first`, on its rounds
            out[claim], seconds[claim], shared[claim] = out[first], seconds[first], first
            continue
        m.progress = within(progress, i / len(ids), (i + 1) / len(ids), claim)
        progress(i / len(ids), claim, {})
        began = time.perf_counter()
        try:
            out[claim] = m.measure(claim, group(claim))
        except (LlmvizError, MemoryError, torch.OutOfMemoryError) as exc:  # the device's limit, not a bug
            out[claim] = {"error": " ".join(str(exc).split()) or type(exc).__name__}
        seconds[claim] = round(time.perf_counter() - began, 2)
    progress(1.0, "done", {})
    return {"quick": plan.quick, "device": plan.device, "threads": torch.get_num_threads(), "claims": out,
            "seconds": seconds, "shared": shared}


def sweep_workload(lab_kind: str, lm: LoadedModel) -> dict:
    """A full page's sweep as the claim its lab kind measures runs it ({} when no claim is measured by it): the
    claim's id, its workload (batch_sweep: prompt, steps, rounds) and whether `lm` is the model the claim is
    judged on (in fp32), so the page judges its sweep by the one rule (one measurement per claim)."""
    claims = claim_spec.measured_by(lab_kind)
    if not claims:
        return {}
    claim, plan = claims[0], ClaimsPlan()
    # a page judges its one sweep at one look: the fewest rounds whose median has a 95% interval
    work = batch_workload(claim, lm, max(plan.repeats, MIN_ROUNDS)) if lab_kind == "batch_sweep" else {}
    judged = lm.name == plan.model_of(claim.id) and lm.dtype == torch.float32
    return work | {"claim": claim.id, "judged": judged}


def layouts_judged_as(result: dict) -> str | None:
    """The claim a KV layouts page's sweep is the quick workload of (its id), or None: the claim's model in fp32,
    its steps, block size, backend and seed, every layout, and the lengths it is judged at among the sweep's (each
    length's rounds run on their own). Such a sweep is the run the lesson shares (ui/claims/shared_runs.py)."""
    claims = claim_spec.measured_by("layout_sweep")
    if not claims:
        return None
    claim, plan = claims[0], ClaimsPlan()
    same = (result.get("model") == plan.model_of(claim.id) and result.get("dtype") == "float32"
            and result.get("steps") == LAYOUT_SWEEP_STEPS and result.get("block_size") == LAYOUT_SWEEP_BLOCK
            and result.get("attn_backend") == LAYOUT_SWEEP_BACKEND and result.get("seed") == 0
            and set(result.get("layouts", ())) == set(KV_LAYOUTS) and result.get("max_seq") is not None
            and set(layout_lengths(result["max_seq"], True)) <= set(result.get("lengths", ())))
    return claim.id if same else None
