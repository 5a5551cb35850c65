"""Measure: each measurement, run in llmviz/labs/ over the engine (the claims K1-K11, the sweeps, Compare, the
decode pair, speculative decoding, the device's ceilings), and the Compare presets. A page runs one through
llmviz/ui/measure.py. `load_fn(name, engine_config)` lets the app hand in its shared model cache; without it the
model is loaded by service.models.load. Part of the service's door (llmviz/service/__init__.py); nothing here imports
torch until it is called.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from llmviz.service import models
from llmviz.trace.config import KV_LAYOUTS
from llmviz.trace.progress import Progress

if TYPE_CHECKING:  # annotations only
    from llmviz.engine.loading.model import LoadedModel
    from llmviz.labs.compare import CompareConfig
    from llmviz.labs.decode_pair import DecodePairConfig


def _loader(load_fn):
    """The caller's loader, or service.models.load looked up now (a test that replaces it is heard)."""
    return load_fn or models.load


@functools.lru_cache(maxsize=64)
def article_cache(tokens: int) -> dict:
    """The article's 6 MB at 1,024 tokens from a real cache of its shapes, one layer (llmviz/labs/article_cache.py);
    kept per token count (the allocator's answer does not change within a process; callers only read it)."""
    from llmviz.labs.article_cache import article_cache_bytes

    return article_cache_bytes(tokens)


def quantization(lm, mode: str, group: int) -> dict:
    """A model loaded with a weight-quantization method measured on held-out text (llmviz/labs/quant_eval.py): its
    perplexity, weight bytes, and the method's own counts."""
    from llmviz.labs.quant_eval import quant_row

    return quant_row(lm, mode, group)


def block_tables(lm: LoadedModel) -> dict:
    """The article's two prompts in one paged cache, each request's block table read from the engine (vLLM's
    drawing; llmviz/labs/block_table.py, C9)."""
    from llmviz.labs.block_table import two_requests

    return two_requests(lm)


@functools.lru_cache(maxsize=8)
def fp8_support(device: str = "auto") -> dict:
    """What this machine's device does with FP8, read once per process (llmviz/engine/platform/fp8.py): the
    article's FP8 on an A100 beside this machine's and the lent GPU's."""
    from llmviz.engine.platform.devices import resolve_device
    from llmviz.engine.platform.fp8 import fp8_facts

    return fp8_facts(resolve_device(device))


# --- the article's claims ----------------------------------------------------------------------------------------
def claims(ids=None, quick: bool = True, device: str = "auto", load_fn=None, progress: Progress | None = None,
           patience: float = 1.0, on_batch=None) -> dict:
    """The article's claims K1-K11 measured on this machine (llmviz/labs/claims.py): `ids` "K1,K4" or None for
    all; `patience` times each claim's time budget its batches may take before the rule decides with what it has;
    on_batch(claim id, the figures pooled so far) after each batch of rounds."""
    from llmviz.labs.claims import ClaimsPlan, parse_ids, run_claims

    return run_claims(parse_ids(ids), ClaimsPlan(quick=quick, device=device, patience=patience), _loader(load_fn),
                      progress, on_batch)


def claim_workload(claim_id: str, quick: bool = True, device: str = "auto", load_fn=None) -> dict | None:
    """What a claim's quick (or full) measurement will run, before it runs (llmviz/labs/claims.Measurer.workload):
    the sides, shapes, prompt and steps the arithmetic predicts from; None where a claim has no such prediction."""
    from llmviz.labs.claims import ClaimsPlan, Measurer

    return Measurer(ClaimsPlan(quick=quick, device=device), _loader(load_fn)).workload(claim_id)


def claim_ids() -> tuple[str, ...]:
    """The ids of the article's claims, as declared (llmviz/analysis/claimdefs/)."""
    from llmviz.analysis.claim_spec import ids

    return ids()


def sweep_workload(lab_kind: str, lm: LoadedModel) -> dict:
    """A full page's sweep as the claim its lab kind measures runs it: the claim's id, its workload and whether
    `lm` is the model the claim is judged on ({} when no claim is measured by that lab; llmviz/labs/claims.py)."""
    from llmviz.labs.claims import sweep_workload as workload

    return workload(lab_kind, lm)


def layouts_judged_as(result: dict) -> str | None:
    """The claim a KV layouts sweep is the quick workload of, or None (llmviz/labs/claims.layouts_judged_as)."""
    from llmviz.labs.claims import layouts_judged_as as judged_as

    return judged_as(result)


# --- sweeps over one model ---------------------------------------------------------------------------------------
def batch_sweep(lm: LoadedModel, prompt: list[int], **options) -> dict:
    """Throughput at batch 1, 2, 4, 8 copies of one prompt (llmviz/labs/batch_sweep.py)."""
    from llmviz.labs.batch_sweep import batch_sweep as sweep

    return sweep(lm, prompt, **options)


def prefill_sweep(lm: LoadedModel, lengths, repeats: int = 3, backend: str = "sdpa",
                  progress: Progress | None = None) -> dict:
    """Prefill ms against prompt length, median of repeats (llmviz/labs/prefill_timing.py; C18, claim K1)."""
    from llmviz.labs.prefill_timing import prefill_sweep as sweep

    return sweep(lm, lengths, repeats, backend, str(lm.device), progress)


def attention_growth(lm: LoadedModel, repeats: int = 7, progress: Progress | None = None) -> dict:
    """Layer 0's score matrix and attention time against prompt length beside its Q/K/V projection (the O(n²) term;
    llmviz/labs/attention_growth.py, C3)."""
    from llmviz.labs.attention_growth import attention_growth as sweep

    return sweep(lm, None, repeats, progress)


def kv_budget(lm: LoadedModel, ids: list[int], budget: int, tokens: int, per_token: int) -> dict:
    """One request under one KV budget three ways: contiguous at the context (refused), at the max_seq_len the
    budget holds, and paged (llmviz/labs/kv_budget.py, C17)."""
    from llmviz.labs.kv_budget import budget_runs

    return budget_runs(lm, ids, budget, tokens, per_token)


def locality_sweep(lm: LoadedModel, lengths=None, steps: int = 8, repeats: int = 3, progress: Progress | None = None,
                   **options) -> dict:
    """Decode ms/token from paged blocks in order against the same blocks scattered (llmviz/labs/locality.py, C12)."""
    from llmviz.labs.locality import locality_sweep as sweep

    return sweep(lm, lengths, steps, repeats, progress, **options)


def decode_slope(lm: LoadedModel, progress: Progress | None = None, **options) -> dict:
    """Decode ms/token against the tokens in the cache over the model's whole context, and the bandwidth probe
    (llmviz/labs/decode_slope.py, C18)."""
    from llmviz.labs.decode_slope import decode_slope as sweep

    return sweep(lm, progress=progress, **options)


def layout_sweep(lm: LoadedModel, lengths=None, layouts: tuple | None = None, steps: int = 8,
                 repeats: int = 2, progress: Progress | None = None, **options) -> dict:
    """Decode ms/token of each KV layout (default: every choice) over cached lengths (llmviz/labs/layout_sweep.py,
    claim K3)."""
    from llmviz.labs.layout_sweep import layout_sweep as sweep

    return sweep(lm, lengths, tuple(KV_LAYOUTS) if layouts is None else layouts, steps, repeats, progress, **options)


def device_limits(device: str, layer_bytes: int) -> dict:
    """The roofline's ceilings measured now: peak matmul FLOP/s, bandwidth beyond and within the caches (C7)."""
    from llmviz.engine.platform.devices import resolve_device
    from llmviz.labs.probes import device_limits as probe

    return probe(resolve_device(device), layer_bytes)


# --- two sides of one switch -------------------------------------------------------------------------------------
def compare(config: CompareConfig, load_fn=None, progress: Progress | None = None) -> dict:
    """An A/B comparison (llmviz/labs/compare.py)."""
    from llmviz.labs.compare import compare as run_compare

    return run_compare(config, _loader(load_fn), progress)


def decode_pair(config: DecodePairConfig, load_fn=None, progress: Progress | None = None) -> dict:
    """A and B decoding after a long context (llmviz/labs/decode_pair.py: the decode claims' measurement), and
    under "claim" the decode claim their specs are (K4, K10, K11: labs/claims.claim_of_pair), whether this was its
    workload, and the figures it is judged on; None for another pair."""
    from llmviz.labs.claims import claim_of_pair
    from llmviz.labs.decode_pair import claim_figures
    from llmviz.labs.decode_pair import decode_pair as run

    result = run(config, _loader(load_fn), progress)
    claim = claim_of_pair(config, result["a"]["model_config"], result["device"].split(":")[0])
    return result | {"claim": claim and claim | {"figures": claim_figures(result)}}


def presets(config: dict, device: str = "cpu") -> dict:
    """The Compare presets {name: Preset} for a model's card config on a device type (llmviz/labs/presets.py).
    Torch-free: a replay-only install reads them too."""
    from llmviz.labs.presets import presets as table

    return table(config, device)


def preset(name: str, config: dict, device: str = "cpu"):
    """One Compare preset by name; ConfigError listing the names otherwise."""
    from llmviz.labs.presets import preset as one

    return one(name, config, device)


def speculation_costs(target: LoadedModel, draft: LoadedModel, ids: list[int], n: int) -> dict:
    """Each model alone, greedy, timed the same way (llmviz/labs/speculative.py)."""
    from llmviz.labs.speculative import speculation_costs as costs

    return costs(target, draft, ids, n)


def speculate(target: LoadedModel, draft: LoadedModel, prompt: str, k: int, max_new: int = 32,
              sampling=None, seed: int = 0, backend: str = "sdpa", layout: str = "contiguous") -> dict:
    """Speculative decoding of `prompt` beside the target alone and the draft alone, all on `backend` and `layout`
    (C16; claim K8) (llmviz/labs/speculative.py)."""
    from llmviz.labs.speculative import speculate as run_speculative

    return run_speculative(target, draft, prompt, k, max_new, sampling, seed, backend, layout)
