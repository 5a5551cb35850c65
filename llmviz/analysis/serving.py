"""Serving metrics from a scheduler's step records (C15; claim K7): throughput, time to first token,
inter-token latency and slot utilization, the same arithmetic for static and continuous batching.

Time runs on the steps' wall clocks: step i ends at the sum of the first i+1 steps' ms; a request arriving
at step s arrives when step s begins. TTFT = the end of the step that drew its first token minus its
arrival; ITL = the gaps between the ends of the steps that drew its successive tokens. Both also in steps.
Slot utilization = the share of slot-steps in which a request fed a token it needed (an idle row of a
static batch, or an empty slot, counts as unused).
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np

from llmviz.trace.config import KV_LAYOUTS, SCHEDULERS
from llmviz.trace.schedule import StepRecord, round_record, step_record


def serving_layout(scheduler: str, chosen: str) -> str:
    """The KV layout a scheduler runs on when `chosen` is asked for: its own where its declaration names the growth it
    needs (continuous batching: blocks, so the paged pool) and the chosen one does not grow that way; else the
    chosen one. A page and the CLI say so when the two differ."""
    needs = SCHEDULERS.describe(scheduler).growth
    if not needs or KV_LAYOUTS.describe(chosen).growth == needs:
        return chosen
    return KV_LAYOUTS.having(growth=needs)[0]


def _percentiles(values: list[float]) -> dict:
    if not values:
        return {"p50": None, "p95": None}
    arr = np.asarray(values, dtype=np.float64)
    return {"p50": float(np.percentile(arr, 50)), "p95": float(np.percentile(arr, 95))}


def kv_figures(result: dict) -> dict:
    """The prompt tokens the prefills fed and the wall time of the steps that fed any (those steps may also
    decode other rows), and for the paged pool of continuous batching the peak KV blocks held at any step,
    their bytes and the most blocks shared at once (C22)."""
    records = records_of(result)
    prefilling = [r for r in records if any(row.kind == "prefill" for row in r.rows)]
    out = {"prefill_tokens_fed": sum(row.fed for r in records for row in r.rows if row.kind == "prefill"),
           "prefill_steps_ms": sum(r.ms for r in prefilling)}
    if result["scheduler"] == "continuous":
        peak = max(r.blocks_used for r in records)
        out.update(peak_blocks=peak, peak_kv_bytes=peak * result["bytes_per_block"],
                   peak_shared_blocks=max(r.blocks_shared for r in records))
    return out


def spread_text(p: dict, digits: int) -> str:
    """'p50 / p95' of a percentile pair, or '—' where there were no values (no gaps between tokens)."""
    if p["p50"] is None:
        return "—"
    return f"{p['p50']:.{digits}f} / {p['p95']:.{digits}f}"


def records_of(result: dict) -> list[StepRecord]:
    """A serving result's step records, typed (as the scheduler wrote them, or read back from JSON)."""
    return [step_record(r) for r in result["records"]]


def _records(result: dict) -> tuple[list[StepRecord], np.ndarray]:
    """The steps' records, and when each step ended (ms from the first step's start)."""
    records = records_of(result)
    return records, np.cumsum([r.ms for r in records])  # [steps] ms


def latencies(result: dict, ends: np.ndarray | None = None) -> dict:
    """Each request's {ttft_ms, ttft_steps, itl_ms: [gaps], itl_steps: [gaps]}, by its id: the one rule of TTFT and
    ITL that the metrics below and a class's phones (each its own request) read. `ends`: _records' (the caller's)."""
    ends = _records(result)[1] if ends is None else ends
    starts = np.concatenate([[0.0], ends[:-1]])
    out = {}
    for rid, steps in result["token_steps"].items():
        arrival = result["arrival_steps"][rid]
        out[rid] = {"ttft_ms": float(ends[steps[0]] - starts[arrival]), "ttft_steps": steps[0] - arrival + 1,
                    "itl_ms": [float(ends[b] - ends[a]) for a, b in pairwise(steps)],
                    "itl_steps": [b - a for a, b in pairwise(steps)]}
    return out


def metrics(result: dict) -> dict:
    """result: {"records": [StepRecord or dict], "token_steps": {id: [step, ...]}, "arrival_steps": {id: s},
    "slots": n}."""
    records, ends = _records(result)
    each = latencies(result, ends).values()
    ttft_ms, ttft_steps = [x["ttft_ms"] for x in each], [x["ttft_steps"] for x in each]
    itl_ms = [g for x in each for g in x["itl_ms"]]
    itl_steps = [g for x in each for g in x["itl_steps"]]
    tokens = sum(len(s) for s in result["token_steps"].values())
    wall_s = float(ends[-1]) / 1000 if len(ends) else 0.0
    used = sum(1 for r in records for row in r.rows if row.kind != "idle" and row.fed > 0)
    slot_steps = result["slots"] * len(records)
    return {"steps": len(records), "tokens": tokens, "wall_s": wall_s,
            "tokens_per_s": tokens / wall_s if wall_s else None, "tokens_per_step": tokens / len(records),
            "ttft_ms": _percentiles(ttft_ms), "ttft_steps": _percentiles(ttft_steps),
            "itl_ms": _percentiles(itl_ms), "itl_steps": _percentiles(itl_steps),
            "slot_utilization": used / slot_steps if slot_steps else 0.0}


NOT_ARRIVED, WAITING, PREFILL, DECODE, IDLE, DONE = range(6)
STATES = ("not_arrived", "waiting", "prefill", "decode", "idle", "done")


def timeline(result: dict) -> tuple[list[int], np.ndarray]:
    """(request ids, [requests, steps] state codes): what each request was doing at each step, for a Gantt.
    A request is waiting from its arrival step until it feeds tokens, done after the step that drew its last
    token; a static batch's finished row that still holds its slot is idle."""
    records = records_of(result)
    ids = sorted(result["token_steps"])
    row_of = {rid: i for i, rid in enumerate(ids)}
    grid = np.full((len(ids), len(records)), NOT_ARRIVED, dtype=np.int64)
    for rid in ids:
        grid[row_of[rid], result["arrival_steps"][rid]:] = WAITING
        grid[row_of[rid], result["token_steps"][rid][-1] + 1:] = DONE
    for step, rec in enumerate(records):
        for rid, _slot, take, kind in rec.rows:
            state = {"prefill": PREFILL, "decode": DECODE, "idle": IDLE}[kind]
            if take > 0 or kind == "idle":
                grid[row_of[rid], step] = state
    return ids, grid


def per_step(result: dict) -> dict:
    """Series over the steps: the share of slots feeding a token, blocks in use (and shared), requests waiting."""
    records = records_of(result)
    slots = result["slots"]
    return {"utilization": [sum(1 for row in r.rows if row.kind != "idle" and row.fed > 0) / slots for r in records],
            "blocks_used": [r.blocks_used for r in records], "blocks_shared": [r.blocks_shared for r in records],
            "waiting": [r.waiting for r in records], "ms": [r.ms for r in records]}


def round_costs(result: dict) -> dict:
    """Where a speculative run's speed-up came from (C16), per round: the tokens a round yielded and its cost in
    steps of the target alone (its decode ms per token), the draft steps and the verify pass as measured, each
    beside what the prediction counts. The prediction is (expected tokens per round) / (k·c + 1), c the
    draft/target cost ratio measured alone; its expected tokens are read back from it (one formula, in the
    engine), and the draft is counted for the drafts proposed here (a last round may propose fewer than k)."""
    rounds = [round_record(r) for r in result["rounds"]]
    step, c = result["target_alone_ms_per_token"], result["cost_ratio"]
    n = len(rounds)
    counted_draft = c * sum(len(r.proposed) for r in rounds) / n
    draft, verify = result["draft_ms"] / n / step, result["verify_ms"] / n / step
    return {"k": result["k"], "target_ms": step, "tokens": len(result["output_ids"]) / n,
            "counted_tokens": result["predicted_speedup"] * (result["k"] * c + 1), "draft": draft,
            "verify": verify, "round": draft + verify, "counted_draft": counted_draft, "counted_verify": 1.0,
            "counted_round": counted_draft + 1.0, "measured_speedup": result["measured_speedup"],
            "predicted_speedup": result["predicted_speedup"]}


CLOSE = 0.10  # measured and predicted speed-ups within this share of each other: the prediction holds


def round_gap(costs: dict) -> str:
    """Which factor explains most of the gap between the measured and the predicted speed-up (round_costs):
    "close" when they are within CLOSE of each other; else the tokens a round yields ("tokens_fewer",
    "tokens_more"), the draft steps or the verify pass ("draft_dearer", ..., "verify_cheaper"), whichever moves
    the speed-up most: a token share of the expected count, a step's share of the counted round."""
    if abs(costs["measured_speedup"] / costs["predicted_speedup"] - 1) <= CLOSE:
        return "close"
    effects = {"tokens": costs["tokens"] / costs["counted_tokens"] - 1,  # > 0: more tokens, faster
               "draft": (costs["counted_draft"] - costs["draft"]) / costs["counted_round"],  # > 0: cheaper, faster
               "verify": (costs["counted_verify"] - costs["verify"]) / costs["counted_round"]}
    part = max(effects, key=lambda name: abs(effects[name]))
    if part == "tokens":
        return "tokens_more" if effects[part] > 0 else "tokens_fewer"
    return f"{part}_{'cheaper' if effects[part] > 0 else 'dearer'}"


def predicted_speedup(acceptance: float, k: int, cost_ratio: float) -> float:
    """Expected tokens per round over its cost in target steps, for a per-token acceptance rate a and a
    draft step costing `cost_ratio` target steps: (1 - a^(k+1)) / (1 - a) / (k c + 1) (Leviathan et al.)."""
    tokens = k + 1 if acceptance >= 1 else (1 - acceptance ** (k + 1)) / (1 - acceptance)
    return tokens / (k * cost_ratio + 1) if math.isfinite(tokens) else float("nan")
