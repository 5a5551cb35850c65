"""Adaptive rounds: a claim is measured again, and its rounds pooled with the earlier ones, until the one
rule (llmviz/analysis/claims.py) decides or the claim's time budget would be passed by one more batch.

A batch is one call of the claim's measurement (its warm-up and its `repeats` rounds); batches pool into one
measurement by concatenating every timing spread's rounds (`merge_rounds`), so the interval narrows as the rounds
grow. Counted figures (bytes, slots) are the same in every batch: the first batch's stand.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from llmviz.analysis.claim_effects import judged, looks_of
from llmviz.analysis.claims import CANNOT_TELL
from llmviz.engine.timing import spread

MAX_BATCHES = 8
USABLE = 0.9  # of a claim's budget, for its batches: the rest for the page that shows it (a Reveal is timed click to
# drawn, bench/lesson.py: K1's batches took the whole 10 s and the Reveal 10.04 s)
CONTROL = "control"  # a lab's A run once more in each round: its A-vs-A noise floor
SPREAD_KEYS = frozenset({"median", "min", "max", "all"})
ROUND_LISTS = frozenset({"rounds_gb_per_s"})  # plain lists with one value per round (a compare's probe per round)


def rotated(items: list, r: int) -> list:
    """Round r's order of the runs a lab interleaves: the list rotated by r, so each run goes first as often as the
    others (A B C, B C A, C A B, ...) and no side always follows the same one."""
    shift = r % len(items)
    return items[shift:] + items[:shift]


def interleaved(items, r: int, control: bool = False) -> list[tuple]:
    """Round r's runs as (key, item) pairs, rotated: each item keyed by itself, and with `control` the first item
    once more keyed CONTROL (its A-vs-A noise floor). The one round rule of every lab that interleaves."""
    keys = [*items, CONTROL] if control else list(items)
    return [(key, items[0] if key == CONTROL else key) for key in rotated(keys, r)]


def _is_spread(x) -> bool:
    return isinstance(x, dict) and x.keys() >= SPREAD_KEYS


def merge_rounds(a, b):
    """Two batches of one measurement as one: a timing spread's rounds concatenated (a per-length spread, whose
    "all" holds one list per length, length by length), and so the plain per-round lists of ROUND_LISTS; dicts and
    equal-length lists walked; anything else (a count, a name, a length) is the first batch's."""
    if _is_spread(a) and _is_spread(b):
        if a["all"] and isinstance(a["all"][0], list):  # per length: {median: [...], ..., all: [[...], ...]}
            cells = [spread(x + y) for x, y in zip(a["all"], b["all"], strict=True)]
            return {key: [c[key] for c in cells] for key in ("median", "min", "max", "all")}
        return spread(list(a["all"]) + list(b["all"]))
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: (v + b[k] if k in ROUND_LISTS else merge_rounds(v, b[k])) if k in b else v for k, v in a.items()}
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [merge_rounds(x, y) for x, y in zip(a, b, strict=True)]
    return a


def until_decided(claim_ids: str | tuple[str, ...], measure: Callable[[], dict], budget_s: float,
                  clock=time.perf_counter, on_batch: Callable[[dict], None] | None = None) -> dict:
    """Batches of `measure()` pooled until no claim of `claim_ids` (one id, or the claims one workload serves:
    claim_spec.sharing) has a "cannot tell", MAX_BATCHES are taken, no look of the plan is left, or one more batch
    (at the mean batch's time) would pass USABLE of `budget_s`. The budget counts the batches' own time: a run
    that waits between batches (a run ahead giving its turn to a step just opened, ui/claims/claim_flight.py)
    spends none of it waiting. The looks are planned from the first batch's rounds (stats.Looks: the verdict's
    error holds over every look, however many are taken before stopping) and travel with the figures, as do the
    batches pooled and the budget. on_batch(the figures pooled so far) after each batch: the rounds so far, for a
    page that shows them while it waits."""
    ids = (claim_ids,) if isinstance(claim_ids, str) else tuple(claim_ids)
    spent = 0.0

    def timed_batch() -> dict:
        nonlocal spent
        began = clock()
        figures_ = measure()
        spent += clock() - began
        return figures_

    def effects(figures_: dict) -> list[dict]:
        return [e for cid in ids for e in judged(cid, figures_)["effects"]]

    figures, batches = timed_batch(), 1
    rounds = max((e.get("rounds") or 0 for e in effects(figures)), default=0)
    if rounds:  # timed: the looks a batch of this many rounds allows (counted figures need none)
        figures = figures | {"looks": {"batch": rounds, "batches": MAX_BATCHES}}
    plan = looks_of(figures)
    if on_batch is not None:
        on_batch(figures)
    while batches < MAX_BATCHES:
        undecided = any(e["verdict"] == CANNOT_TELL for e in effects(figures))
        done = plan is not None and plan.next(batches * plan.batch) is None  # no look left to decide at
        if not undecided or done or spent + spent / batches > USABLE * budget_s:
            break
        figures, batches = merge_rounds(figures, timed_batch()), batches + 1
        if on_batch is not None:
            on_batch(figures)
    return figures | {"batches": batches, "budget_s": budget_s}
