"""Next-token sampling: repetition penalty, temperature, top-k, top-p, then a seeded draw (C5).

Each sequence owns its torch.Generator, so the same settings and seed give the same tokens, and two
sequences (or sessions) never disturb each other's random stream.

The rule for ties, shared with the numpy mirror in llmviz/analysis/sampling.py: tokens are ranked by
logit, equal logits by lower token id first; top-k keeps exactly the first k of that ranking; top-p
keeps a token while the mass ranked before it is below p; greedy takes the first of the ranking.
"""

from __future__ import annotations

import torch

from llmviz.errors import LogitsNotFiniteError
from llmviz.trace.config import SamplingConfig


def apply_repetition_penalty(logits: torch.Tensor, history: torch.Tensor, penalty: float) -> torch.Tensor:
    """logits [b, V], history [b, t]: seen tokens' logits divided by penalty if > 0, else multiplied."""
    if penalty == 1.0 or history.numel() == 0:
        return logits
    seen = logits.gather(1, history)  # [b, t]
    seen = torch.where(seen > 0, seen / penalty, seen * penalty)
    return logits.scatter(1, history, seen)


def kept_mask(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """[b, V] bool: the tokens temperature, top-k and top-p leave to be sampled (the tie rule above)."""
    scaled = logits / cfg.temperature
    ranked, order = scaled.sort(dim=-1, descending=True, stable=True)  # equal logits: lower id first
    keep = torch.ones_like(ranked, dtype=torch.bool)
    if 0 < cfg.top_k < ranked.shape[-1]:
        keep[:, cfg.top_k:] = False
    if cfg.top_p < 1.0:
        probs = ranked.masked_fill(~keep, float("-inf")).softmax(-1)
        before = probs.cumsum(-1) - probs  # the mass ranked before each token
        keep &= before < cfg.top_p
    return torch.empty_like(keep).scatter_(1, order, keep)


def filter_logits(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """Temperature, then top-k, then top-p: logits [b, V] / temperature, excluded tokens at -inf."""
    return (logits / cfg.temperature).masked_fill(~kept_mask(logits, cfg), float("-inf"))


def sample(logits: torch.Tensor, cfg: SamplingConfig, generator: torch.Generator,
           history: torch.Tensor) -> torch.Tensor:
    """logits [b, V] (any dtype) -> token ids [b]."""
    logits = apply_repetition_penalty(logits.float(), history, cfg.repetition_penalty)
    if cfg.greedy:
        return logits.argmax(dim=-1)  # the first maximum: the lowest id among equal logits
    probs = filter_logits(logits, cfg).softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def check_finite(logits: torch.Tensor, rows: list[int] | None = None) -> None:
    """Refuse NaN or inf logits (of `rows` only: a finished row's come from a pad slot) before anything is
    drawn from them: greedy would pick a meaningless token, sampling would fail inside torch."""
    values = logits if rows is None else logits[rows]
    # one pass, no [b, V] mask: NaN propagates into the min and the max, and an inf is one of them
    if values.numel() and not bool(torch.isfinite(torch.stack(torch.aminmax(values))).all()):
        if logits.dtype == torch.float16:
            why = "fp16 overflowed its range (|x| > 65504) in the forward pass: run in bf16 (fp32's range) or fp32"
        else:
            why = "the weights or config.json (norm eps, rope) produce them: check the checkpoint"
        raise LogitsNotFiniteError(f"the model's next-token logits hold NaN or inf ({str(logits.dtype)[6:]}); {why}",
                                   code="logits_not_finite", dtype=str(logits.dtype)[6:])


def sample_rows(logits: torch.Tensor, seqs) -> torch.Tensor:
    """logits [b, V] -> [b]: row i drawn with sequence i's settings, generator and history; -1 for a row
    that had already finished (its logits came from a pad slot)."""
    live = [i for i, s in enumerate(seqs) if not s.finished]
    check_finite(logits, None if len(live) == len(seqs) else live)  # every row: no copy of the logits
    if all(s.sampling.greedy and s.sampling.repetition_penalty == 1.0 and not s.finished for s in seqs):
        return logits.float().argmax(dim=-1)
    out = torch.full((logits.shape[0],), -1, dtype=torch.long, device=logits.device)
    for i, seq in enumerate(seqs):
        if seq.finished:
            continue
        history = seq.history(logits.device) if seq.sampling.repetition_penalty != 1.0 else logits.new_empty(
            (1, 0), dtype=torch.long)
        out[i] = sample(logits[i:i + 1], seq.sampling, seq.generator, history)[0]
    return out
