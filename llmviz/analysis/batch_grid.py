"""A padded batch as a grid (C13): one row per sequence, one column per slot the forward passes computed.

Static batching runs every row through every step: the prefill pads short prompts up to the longest one,
and a row that has finished (EOS) still occupies its slot until the whole batch is done. Those slots are
computed and thrown away: the waste dynamic batching with padding pays, and continuous batching avoids.

Reads only what the trace recorded (input_ids and sampled with -1 for padding, each step's row_finished).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PROMPT, GENERATED, PAD, IDLE = 0, 1, 2, 3  # IDLE: a finished row's slot in a later decode step
CATEGORIES = ("prompt", "generated", "pad", "idle")


@dataclass(frozen=True)
class BatchGrid:
    kinds: np.ndarray  # [b, columns] one of PROMPT, GENERATED, PAD, IDLE
    ids: np.ndarray  # [b, columns] the token fed (prompt or generated) or -1
    step_of_column: np.ndarray  # [columns] 0 for the prefill's columns, t for decode step t's column

    @property
    def wasted(self) -> int:
        return int(((self.kinds == PAD) | (self.kinds == IDLE)).sum())

    @property
    def slots(self) -> int:
        return int(self.kinds.size)

    @property
    def utilization(self) -> float:
        """Share of computed slots that held a real token."""
        return 1 - self.wasted / self.slots if self.slots else 0.0


def batch_grid(steps) -> BatchGrid:
    """From a run's StepTraces: the prefill's [b, n] columns, then one column per decode step. A decode
    column holds the token the row fed (the one it drew the step before), or IDLE once it has finished."""
    first = steps[0].input_ids  # [b, n], -1 = pad
    kinds = [np.where(first >= 0, PROMPT, PAD)]
    ids = [first]
    for step in steps[1:]:
        fed = step.input_ids[:, :1]  # [b, 1]
        kinds.append(np.where(fed >= 0, GENERATED, IDLE))
        ids.append(fed)
    kinds_arr = np.concatenate(kinds, axis=1).astype(np.int64)
    ids_arr = np.concatenate(ids, axis=1).astype(np.int64)
    columns = np.concatenate([np.zeros(first.shape[1], dtype=np.int64), np.arange(1, len(steps), dtype=np.int64)])
    return BatchGrid(kinds_arr, ids_arr, columns)


def row_outputs(steps, row: int) -> list[int]:
    """The tokens row `row` drew, in order (the last one is drawn but never fed back)."""
    return [int(s.sampled[row]) for s in steps if s.sampled[row] >= 0]


def throughput_table(result: dict) -> list[dict]:
    """Per batch size: decode tokens/s, prefill tokens/s and the speed-up over batch 1 (from batch_sweep). A
    speed-up is the median of its per-round ratios where the sweep kept its rounds (every size runs in each round):
    the one figure the claims' rule judges (the page printed x1.48, a ratio of medians, above a verdict
    on x1.38)."""
    rows = result["sizes"]
    base = rows[0]
    return [{"batch": r["batch"], "decode_tokens_per_s": r["decode_tokens_per_s"],
             "decode_speedup": per_round_gain(r, base, "decode_ms_per_step", "decode_tokens_per_s"),
             "prefill_tokens_per_s": r["prefill_tokens_per_s"],
             "prefill_speedup": per_round_gain(r, base, "prefill_ms", "prefill_tokens_per_s"),
             "decode_ms_per_step": r["decode_ms_per_step"]["median"]} for r in rows]


def per_round_gain(row: dict, base: dict, ms_key: str, rate_key: str) -> float:
    """Tokens/s at `row`'s batch over `base`'s: per round, (batch x base's ms) / (base batch x row's ms), and their
    median; the ratio of the two rates where the rounds were not kept or do not pair."""
    a, b = (base.get(ms_key) or {}).get("all"), (row.get(ms_key) or {}).get("all")
    if not a or not b or len(a) != len(b):
        return row[rate_key] / base[rate_key]
    return float(np.median(row["batch"] * np.asarray(a, dtype=float) / (base["batch"] * np.asarray(b, dtype=float))))
