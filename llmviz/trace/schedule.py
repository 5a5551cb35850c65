"""The scheduler's and the speculative decoder's decisions, as typed records of the torch-free trace (the design's
"the trace holds scheduler and speculative decisions"): which request held which slot at each step and fed how
many tokens of which kind, the KV blocks, the waits, preemptions and finishes (C13, C15, C22); each speculative
round's draft, how much of it the target kept, and its two costs (C16). The engine's schedulers write them; the
analysis, the pages and the CLI read their fields, never an engine object or its __dict__. A record read back from
JSON (a list where a tuple was) is made typed again by `step_record` and `round_record`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import NamedTuple

from llmviz.errors import TraceFormatError

KINDS = ("prefill", "decode", "idle")  # what a row fed: prompt tokens, one drawn token, nothing (a static batch's
# finished row that still holds its slot)


class SlotRow(NamedTuple):
    """One row of a batched step: the request in a slot, the tokens it fed, and of which kind."""

    request: int
    slot: int
    fed: int
    kind: str


@dataclass(frozen=True)
class StepRecord:
    """What one engine step did: which request held which slot and fed how many tokens (and of which kind)."""

    index: int
    ms: float  # wall clock of the step (schedule, forward pass, sampling; device synchronized)
    rows: tuple[SlotRow, ...]
    blocks_used: int  # the paged pool's blocks in use after the step (0: a layout without a pool)
    blocks_total: int
    waiting: int  # requests arrived and not yet running
    blocks_shared: int = 0  # blocks held by more than one request (prefix sharing)
    preempted: tuple = ()
    finished: tuple = ()
    drawn: tuple = ()  # request ids that drew a token this step
    tables: tuple = ()  # (request id, its block table) of every request holding blocks after the step

    def __post_init__(self):
        whole = ("index", "blocks_used", "blocks_total", "waiting", "blocks_shared")
        wrong = [name for name in whole if not isinstance(getattr(self, name), int) or getattr(self, name) < 0]
        if wrong or isinstance(self.ms, bool) or not isinstance(self.ms, int | float) or self.ms < 0:
            raise TraceFormatError(f"a step record's {', '.join(wrong) or 'ms'} must be a number >= 0")
        rows = tuple(row if isinstance(row, SlotRow) else SlotRow(*row) for row in self.rows)
        bad = [row for row in rows if row.kind not in KINDS or row.fed < 0]
        if bad:
            raise TraceFormatError(f"step {self.index}: a row feeds 0 or more tokens of a kind in {KINDS}, "
                                   f"got {bad[0]}")
        object.__setattr__(self, "rows", rows)
        for name in ("preempted", "finished", "drawn"):  # lists when read back from JSON: tuples, as written
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "tables", tuple((rid, tuple(blocks)) for rid, blocks in self.tables))

    def to_dict(self) -> dict:
        return asdict(self) | {"rows": [list(row) for row in self.rows]}


@dataclass(frozen=True)
class Round:
    """One speculative round: the draft's k tokens, how many the target kept, and the token it gave after them
    (the correction, or the bonus when all were kept), with the draft's and the verification's wall clock."""

    proposed: tuple
    accepted: int
    token: int
    draft_ms: float
    verify_ms: float

    def __post_init__(self):
        object.__setattr__(self, "proposed", tuple(self.proposed))
        if not 0 <= self.accepted <= len(self.proposed):
            raise TraceFormatError(f"a round keeps 0 to {len(self.proposed)} of its draft, got {self.accepted}")


def schedule_of(items) -> list[StepRecord]:
    """A trace file's "schedule" (a JSON list of step records) typed again; TraceFormatError naming what is wrong."""
    if not isinstance(items, list):
        raise TraceFormatError(f"a trace's schedule is a list of step records, got {type(items).__name__}")
    try:
        return [step_record(item) for item in items]
    except (TypeError, ValueError) as exc:  # a field missing, unknown or of another type (TraceFormatError is one)
        raise TraceFormatError(f"a step record of the trace's schedule is malformed: {exc}") from exc


def step_record(value: StepRecord | dict) -> StepRecord:
    """A step's record, typed: as the scheduler wrote it, or read back from JSON."""
    return value if isinstance(value, StepRecord) else StepRecord(**value)


def round_record(value: Round | dict) -> Round:
    return value if isinstance(value, Round) else Round(**value)
