"""The scheduler's and the speculative decoder's decisions are typed records of the torch-free trace
(llmviz/trace/schedule.py): a step's rows name their request, slot, tokens fed and kind; a record survives JSON and
comes back typed; a malformed one is refused; and no module above the engine reads an object's __dict__ (the guard
below, with a planted read it must catch)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from llmviz.trace.schedule import Round, SlotRow, StepRecord, round_record, step_record

ROOT = Path(__file__).resolve().parents[2]
DICT_READ = re.compile(r"\.__dict__\b")
ALLOWED = {"llmviz/trace/records.py"}  # the trace's own StepTrace, written to its JSON by the trace itself


def test_a_step_record_names_its_rows_and_comes_back_from_json_typed():
    rec = StepRecord(3, 1.5, ((7, 0, 12, "prefill"), SlotRow(8, 1, 1, "decode")), 5, 64, 2, drawn=(8,),
                     tables=((7, (0, 1)),))
    assert rec.rows[0] == SlotRow(request=7, slot=0, fed=12, kind="prefill") and rec.rows[1].kind == "decode"
    back = step_record(json.loads(json.dumps(rec.to_dict())))
    assert back.rows == rec.rows and (back.index, back.ms, back.blocks_used, back.waiting) == (3, 1.5, 5, 2)
    assert isinstance(back.rows[1], SlotRow) and back.rows[1].request == 8


@pytest.mark.parametrize("row", [(1, 0, 2, "swap"), (1, 0, -1, "decode")])
def test_a_row_of_no_kind_or_negative_tokens_is_refused(row):
    with pytest.raises(ValueError, match="a row feeds 0 or more tokens"):
        StepRecord(0, 1.0, (row,), 0, 0, 0)


def test_a_round_keeps_at_most_its_draft():
    r = round_record({"proposed": [5, 6, 7], "accepted": 2, "token": 9, "draft_ms": 1.0, "verify_ms": 2.0})
    assert r == Round((5, 6, 7), 2, 9, 1.0, 2.0)
    with pytest.raises(ValueError, match="keeps 0 to 3"):
        Round((5, 6, 7), 4, 9, 1.0, 2.0)


def test_the_records_are_the_traces_not_the_engines():
    from llmviz.engine.serving import continuous, speculative, static

    assert StepRecord.__module__ == Round.__module__ == "llmviz.trace.schedule"
    assert continuous.StepRecord is static.StepRecord is StepRecord and speculative.Round is Round


def dict_reads(text: str) -> list[int]:
    return [i + 1 for i, line in enumerate(text.splitlines()) if DICT_READ.search(line.split("#")[0])]


def test_nothing_reads_an_objects_dict():
    """A planted read is caught; then every module of the package but the trace's own serializer is clean."""
    assert dict_reads("records = [r.__dict__ for r in result['records']]\n") == [1]
    found = {str(p.relative_to(ROOT)): dict_reads(p.read_text(encoding="utf-8"))
             for p in (ROOT / "llmviz").rglob("*.py")}
    assert {k: v for k, v in found.items() if v and k not in ALLOWED} == {}


def test_a_runs_schedule_is_saved_and_loaded_with_it_typed():
    """A request opened from a serving run keeps the scheduler's log (trace/rows.request_run): in the trace's file
    and back, typed; an older file without one opens with none; a malformed one is a TraceFormatError."""
    import dataclasses

    from llmviz.errors import TraceFormatError
    from llmviz.trace.records import trace_from_zip, trace_to_zip

    demo = trace_from_zip((ROOT / "assets" / "demo" / "default-run.zip").read_bytes())
    assert demo.schedule == []  # recorded before a trace held one
    log = [StepRecord(0, 4.5, (SlotRow(3, 1, 9, "prefill"),), 2, 16, 1, 0, (), (), (3,), ((3, (0, 5)),)),
           StepRecord(1, 0.0, (), 2, 16, 0)]
    back = trace_from_zip(trace_to_zip(dataclasses.replace(demo, schedule=log)))
    assert back.schedule == log and isinstance(back.schedule[0].rows[0], SlotRow)
    assert back.schedule[0].rows[0].slot == 1 and back.schedule[0].tables == ((3, (0, 5)),)
    for bad in ([{"index": 0}], [{**log[0].to_dict(), "rows": [[3, 1, 9, "flying"]]}], {"not": "a list"},
                [{**log[0].to_dict(), "index": -1}], [{**log[0].to_dict(), "ms": "fast"}],
                [{**log[0].to_dict(), "blocks_used": 2.5}]):
        with pytest.raises(TraceFormatError):
            from llmviz.trace.schedule import schedule_of

            schedule_of(json.loads(json.dumps(bad)))
