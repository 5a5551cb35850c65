"""A class's counts, as the projector shows them: how many predicted, the histogram of their predictions
in the slider's units, and a chapter's question's right answers and most common mistake. Reads only: the rules that
decide what a class may hold are llmviz/classroom/classes.py."""

from __future__ import annotations

import statistics

from llmviz.classroom.classes import normal_code
from llmviz.classroom.store import Store


def mistake(given: float, answer_: float | None) -> float | None:
    """A wrong answer as its ratio to the right one (x0.5: K or V left out; x2: fp32 for fp16; x1/1024: KiB for
    MiB), the same mistake on neighbours' different numbers; None where no ratio exists (a right answer of 0, or
    none kept)."""
    return None if answer_ is None or answer_ == 0 else given / answer_


Common = tuple[float | None, int, float | None]  # a mistake's ratio, how many made it, the one value they gave


def answer_stats(store: Store, code: str, chapter: str) -> tuple[int, int, Common | None]:
    """(right, answered, the most common wrong answer or None): what the projector says of a chapter's question. Each
    student's numbers are their own, so a mistake is counted by its ratio to that student's right answer (`mistake`,
    grouped to two significant figures, which forgive the rounding a unit asks for) as (the group's median ratio,
    how many made it, the value they gave where they all gave one, else None); answers without a ratio (a right
    answer of 0, or none kept) by their value. Ties go to the smaller ratio, then to those by value."""
    given = list(store.answers(normal_code(code), chapter).values())
    wrong: dict[float | tuple, list[tuple[float, float | None]]] = {}  # a ratio, or ("value", v) without one
    for value, right, answer_ in given:
        if not right:
            ratio = mistake(value, answer_)
            key = ("value", value) if ratio is None else float(f"{ratio:.2g}")
            wrong.setdefault(key, []).append((value, ratio))
    common = None
    if wrong:
        key, made = min(wrong.items(), key=lambda kv: (-len(kv[1]), isinstance(kv[0], tuple),
                                                        kv[0][1] if isinstance(kv[0], tuple) else kv[0]))
        values = {v for v, _ in made}
        common = (None if isinstance(key, tuple) else statistics.median(r for _, r in made), len(made),
                  made[0][0] if len(values) == 1 else None)
    return sum(right for _, right, _ in given), len(given), common


def answered(store: Store, code: str, item: str, round_: int) -> tuple[int, int]:
    """(students who predicted `item` in that round, students joined): what the projector counts."""
    return len(store.predictions(normal_code(code), item, round_)), len(store.students(normal_code(code)))


def histogram(values: list[float], low: float, high: float, step: float, most_bins: int = 40
              ) -> tuple[float, list[int]]:
    """(a bin's width, counts) of slider values over [low, high] in steps of `step`: each bin holds the same whole
    number of slider positions (at most `most_bins` bins), a value counted by the position it stands at (rounded,
    never truncated: x1.40 is position 23 of 0.05 from x0.25, not 22.99...), outside values in the end bins."""
    if not step > 0 or not high > low or most_bins < 1:
        raise ValueError(f"a step and bins over a range, got {step}, {most_bins} over [{low}, {high}]")
    positions = round((high - low) / step) + 1
    per = -(-positions // most_bins)  # positions a bin
    bins = -(-positions // per)
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, round((v - low) / step) // per))] += 1
    return per * step, counts
