"""Timed prefills and one layer's attention alone, the measurements of the prefill and attention claims (K1, K6;
their declarations in llmviz/analysis/claimdefs/) and of the Claims page's latency curves: held-out text as the
prompt, an untimed warm-up, then rounds whose order rotates (labs/rounds.interleaved), so sides pair by round.
"""

from __future__ import annotations

import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.models.attention import ATTENTION_BACKENDS
from llmviz.engine.session import Session
from llmviz.engine.timing import StepTimer, spread
from llmviz.errors import ConfigError
from llmviz.i18n.translator import timed
from llmviz.labs.attention_inputs import attention_inputs
from llmviz.labs.evaluation import heldout_ids
from llmviz.labs.rounds import CONTROL, interleaved
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.progress import Progress


def text_ids(lm: LoadedModel, n: int) -> list[int]:
    """n tokens of the held-out text (repeated as needed): real text, as a prompt would be."""
    ids = heldout_ids(lm.tokenizer)
    return (ids * (n // len(ids) + 1))[:n]


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
    more in each round (its A-vs-A floor). progress(fraction, "length", {"tokens": n})."""
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
