"""Serving metrics from a scheduler's step records (C15; claim K7): throughput, time to first token,
inter-token latency and slot utilization, the same arithmetic for static and continuous batching.

Time runs on the steps' wall clocks: step i ends at the sum of the first i+1 steps' ms; a request arriving
at step s arrives when step s begins. TTFT = the end of the step that drew its first token minus its
arrival; ITL = the gaps between the ends of the steps that drew its successive tokens. Both also in steps.
Slot utilization = the share of slot-steps in which a request fed a token it needed (an idle row of a
static batch, or an empty slot, counts as unused).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np


def _percentiles(values: list[float]) -> dict:
    if not values:
        return {"p50": None, "p95": None}
    arr = np.asarray(values, dtype=np.float64)
    return {"p50": float(np.percentile(arr, 50)), "p95": float(np.percentile(arr, 95))}


def kv_figures(result: dict) -> dict:
    """The prompt tokens the prefills fed and the wall time of the steps that fed any (those steps may also
    decode other rows), and for the paged pool of continuous batching the peak KV blocks held at any step,
    their bytes and the most blocks shared at once (C22)."""
    records = [r if isinstance(r, dict) else r.__dict__ for r in result["records"]]
    prefilling = [r for r in records if any(row[3] == "prefill" for row in r["rows"])]
    out = {"prefill_tokens_fed": sum(row[2] for r in records for row in r["rows"] if row[3] == "prefill"),
           "prefill_steps_ms": sum(r["ms"] for r in prefilling)}
    if result["scheduler"] == "continuous":
        peak = max(r["blocks_used"] for r in records)
        out.update(peak_blocks=peak, peak_kv_bytes=peak * result["bytes_per_block"],
                   peak_shared_blocks=max(r["blocks_shared"] for r in records))
    return out


def spread_text(p: dict, digits: int) -> str:
    """'p50 / p95' of a percentile pair, or '—' where there were no values (no gaps between tokens)."""
    if p["p50"] is None:
        return "—"
    return f"{p['p50']:.{digits}f} / {p['p95']:.{digits}f}"


def metrics(result: dict) -> dict:
    """result: {"records": [StepRecord or dict], "token_steps": {id: [step, ...]}, "arrival_steps": {id: s},
    "slots": n}."""
    records = [r if isinstance(r, dict) else r.__dict__ for r in result["records"]]
    ends = np.cumsum([r["ms"] for r in records])  # [steps] ms
    starts = np.concatenate([[0.0], ends[:-1]])
    ttft_ms, ttft_steps, itl_ms, itl_steps = [], [], [], []
    for rid, steps in result["token_steps"].items():
        arrival = result["arrival_steps"][rid]
        ttft_ms.append(float(ends[steps[0]] - starts[arrival]))
        ttft_steps.append(steps[0] - arrival + 1)
        itl_ms += [float(ends[b] - ends[a]) for a, b in pairwise(steps)]
        itl_steps += [b - a for a, b in pairwise(steps)]
    tokens = sum(len(s) for s in result["token_steps"].values())
    wall_s = float(ends[-1]) / 1000 if len(ends) else 0.0
    used = sum(1 for r in records for row in r["rows"] if row[3] != "idle" and row[2] > 0)
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
    records = [r if isinstance(r, dict) else r.__dict__ for r in result["records"]]
    ids = sorted(result["token_steps"])
    row_of = {rid: i for i, rid in enumerate(ids)}
    grid = np.full((len(ids), len(records)), NOT_ARRIVED, dtype=np.int64)
    for rid in ids:
        grid[row_of[rid], result["arrival_steps"][rid]:] = WAITING
        grid[row_of[rid], result["token_steps"][rid][-1] + 1:] = DONE
    for step, rec in enumerate(records):
        for rid, _slot, take, kind in rec["rows"]:
            state = {"prefill": PREFILL, "decode": DECODE, "idle": IDLE}[kind]
            if take > 0 or kind == "idle":
                grid[row_of[rid], step] = state
    return ids, grid


def per_step(result: dict) -> dict:
    """Series over the steps: the share of slots feeding a token, blocks in use (and shared), requests waiting."""
    records = [r if isinstance(r, dict) else r.__dict__ for r in result["records"]]
    slots = result["slots"]
    return {"utilization": [sum(1 for row in r["rows"] if row[3] != "idle" and row[2] > 0) / slots for r in records],
            "blocks_used": [r["blocks_used"] for r in records], "blocks_shared": [r["blocks_shared"] for r in records],
            "waiting": [r["waiting"] for r in records], "ms": [r["ms"] for r in records]}


def round_costs(result: dict) -> dict:
    """Where a speculative round's time went (C16), in steps of the target alone (its decode ms per token): the k
    draft steps and the verify pass of k + 1 tokens as measured, beside what the prediction counts for them (k·c,
    with c the draft/target cost ratio measured alone, and 1). The gap between the measured and the predicted
    speed-up is the gap between these sums."""
    rounds, step = len(result["rounds"]), result["target_alone_ms_per_token"]
    draft, verify = result["draft_ms"] / rounds / step, result["verify_ms"] / rounds / step
    counted_draft = result["k"] * result["cost_ratio"]
    return {"k": result["k"], "target_ms": step, "draft": draft, "verify": verify, "round": draft + verify,
            "counted_draft": counted_draft, "counted_verify": 1.0, "counted_round": counted_draft + 1.0}


CLOSE = 0.10  # a round's measured cost within this share of the predicted one: the prediction holds


def round_gap(costs: dict) -> str:
    """Which part of a round explains most of the gap between its measured and counted cost (round_costs):
    "close" when the whole round is within CLOSE of the count, else "verify_dearer", "verify_cheaper",
    "draft_dearer" or "draft_cheaper"."""
    if abs(costs["round"] - costs["counted_round"]) <= CLOSE * costs["counted_round"]:
        return "close"
    verify, draft = costs["verify"] - costs["counted_verify"], costs["draft"] - costs["counted_draft"]
    part, gap = ("verify", verify) if abs(verify) >= abs(draft) else ("draft", draft)
    return f"{part}_{'dearer' if gap > 0 else 'cheaper'}"
