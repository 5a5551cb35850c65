"""What a request's engine work costs, estimated from the model's shape before it runs.

A public server sends every request whose cost grows with a link's size (a run opened at a link's step, the KV
layouts page's runs, the Batch page's prefill and its run to the end) through its heavy queue once the estimate
passes LIGHT_S; lighter work (the embedded model, a short prompt, one step) runs at once, so a class is never held
behind someone's measurement for it. One step of the engine is estimated as

    seconds = weights read / WEIGHT_BYTES_PER_S + FLOPs / FLOPS_PER_S + STEP_S

with the FLOPs of analysis/predict.step_flops (the matmuls and attention of every row, padding included) and the
weights one step reads (predict.weight_read_bytes). The rates are this project's 2-core CPU machine's (torch on one
thread, fp32): a decode step of gpt2-124m-random (~0.5 GB of weights) took 0.067-0.071 s, a 479-token prefill 1.8 s
(~86 GFLOP), a decode step of the embedded model 7 ms. On a faster machine the estimate is high: more work waits in
the queue than needs to, never less. Pure arithmetic: no numpy, no torch.
"""

from __future__ import annotations

from llmviz.analysis.predict import Setup, Shape, step_flops, weight_read_bytes

WEIGHT_BYTES_PER_S = 7.5e9  # weights read per second by a step (a decode step is memory-bound, C7)
FLOPS_PER_S = 50e9  # matmul FLOPs per second (a long prefill is compute-bound)
STEP_S = 0.005  # one step's Python work around the matmuls (planning, sampling, recording)
LIGHT_S = 1.0  # estimated seconds a public server runs at once, outside its heavy queue


def step_seconds(setup: Setup, new: int, cached_before: int, rows: int = 1) -> float:
    """One step feeding `new` tokens to each of `rows` rows after `cached_before` cached positions."""
    flops = step_flops(setup, max(1, new), max(0, cached_before), max(1, rows))
    return weight_read_bytes(setup) / WEIGHT_BYTES_PER_S + flops / FLOPS_PER_S + STEP_S


def _setup(config: dict, dtype: str) -> Setup:
    return Setup(Shape.from_config(config), dtype=dtype if dtype in ("fp32", "fp16", "bf16") else "fp32")


def decode_seconds(config: dict, rows: int, cached: int, steps: int, dtype: str = "fp32", copies: int = 1) -> float:
    """`steps` decode steps of `rows` rows from `cached` positions on; `copies` times (the KV layouts page steps one
    session per layout). `config` is a model card's config dict (LoadedModel.cfg.to_dict())."""
    setup = _setup(config, dtype)
    return copies * sum(step_seconds(setup, 1, cached + i, rows) for i in range(max(0, steps)))


def run_seconds(config: dict, prompt_tokens: list[int], steps: int, dtype: str = "fp32", copies: int = 1) -> float:
    """A padded batch of prompts (their token counts, one row each): its prefill, then `steps` decode steps."""
    if not prompt_tokens:
        return 0.0
    longest, rows = max(prompt_tokens), len(prompt_tokens)
    prefill = copies * step_seconds(_setup(config, dtype), longest, 0, rows)
    return prefill + decode_seconds(config, rows, longest, steps, dtype, copies)


def is_light(seconds: float) -> bool:
    return seconds <= LIGHT_S
