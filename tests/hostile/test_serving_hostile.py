"""Request traces built to cost the Serving page, through the library and the page.

Finding 2: 1,024 requests of 1 + 1 tokens with arrivals spread to step 10,000 (2,048 tokens of work, within the
public limit) stepped every idle step, summed every request's tokens at every step, and drew a Gantt cell per
request-step: a 225 MB figure Streamlit refused with its raw error, and 15 s of CPU on every rerun. Now idle
steps are recorded without an engine step, the Gantt is binned to at most 40,000 cells and says so, a rerun
derives nothing, and a figure past its bound is not sent (the app's own message).
Finding 8: the page checked the public work limit without the slots, so static batching's padding was not
counted (1,080 tokens, 16,320 in 16 slots, ran 27 s); now it is, and the refusal names the padding.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest
from hostile_helpers import TRIED, check_typed, outcome
from plotly_data import array
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file

from llmviz import service
from llmviz.analysis.serving import PREFILL, STATES
from llmviz.analysis.serving_timeline import MAX_CELLS, MAX_ROWS, Timeline, binned_timeline
from llmviz.engine.serving.requests import Request, RequestTrace
from llmviz.i18n.translator import translate
from llmviz.viz.serving import gantt

pages = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the Serving page runs the embedded model")
GANTT_BYTES = 2 * 2**20  # what a Gantt may send, whatever the trace (the worst case below: 1.7 MB)


def spread(n: int = 1024, span: int = 10_000) -> RequestTrace:
    """Finding 2: n requests of 1 + 1 tokens, arrivals spread evenly over steps 0..span."""
    return RequestTrace("spread", tuple(Request(i, round(i * span / (n - 1)), (5,), 1) for i in range(n)))


def padded() -> RequestTrace:
    """Finding 8: two batches of 16, each one request of 1 + 509 tokens beside fifteen of 1 + 1. Unpadded 2 x (510
    + 15 x 2) = 1,080 tokens; in 16 slots every row runs to 510: 32 x 510 = 16,320."""
    return RequestTrace("padded", tuple(Request(i, 0, (5,), 509 if i % 16 == 0 else 1) for i in range(32)))


def names(lang: str = "en") -> dict:
    return {s: translate(lang, f"serving.state.{s}") for s in STATES}


# --- finding 8: the padding counts ----------------------------------------------------------------------------
def test_a_trace_that_padding_makes_too_big_is_refused_with_the_padding_named(tiny):
    exc = outcome(lambda: service.serving.check_serving_work(tiny, padded(), public=True, slots=16), "error")
    message = check_typed(exc, "NotAllowedError")
    assert exc.code == "serving_work_padded" and "16,320 tokens" in message and "16 slots" in message
    assert (exc.params["work"], exc.params["tokens"], exc.params["slots"]) == (16_320, 1_080, 16)
    # in 1 slot nothing is padded; in 2, the two long rows' batches are 2 x 510 and the 14 others 2 x 2
    assert outcome(lambda: service.serving.check_serving_work(tiny, padded(), public=True, slots=1), "ok") == 1_080
    assert service.serving.check_serving_work(tiny, padded(), public=True, slots=2) == 2 * 2 * 510 + 14 * 2 * 2


@pages
@pytest.mark.parametrize("lang, said", [("en", ("16,320 tokens", "1,080 of prompt", "static batching in 16 slots")),
                                        ("zh", ("16,320 个 token", "只有 1,080 个", "以 16 个槽位做静态批处理"))],
                         ids=["en", "zh"])
def test_the_page_refuses_the_padded_trace_in_sixteen_slots(monkeypatch, lang, said):
    TRIED["pages"] += 1
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    at = open_app(page_file("serving"), lang=lang)
    at.selectbox(key="serve_trace_w").set_value("upload").run()
    at.file_uploader(key="serve_upload_w").set_value(("pad.json", padded().to_json().encode(),
                                                      "application/json")).run()
    at.number_input(key="serve_slots_w").set_value(16).run()
    run = translate(lang, "serving.run")
    next(b for b in at.button if b.label == run).click().run(timeout=60)
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert any(all(part in e for part in said) for e in errors), errors
    assert "llmviz_serve_batching" not in at.session_state  # nothing ran


# --- finding 2: a trace spread over 10,000 steps ---------------------------------------------------------------
def test_idle_steps_between_arrivals_are_recorded_not_stepped(tiny, monkeypatch):
    """64 one-token requests over 10,000 steps: 64 engine steps (one each: its prefill draws its one token) and a
    progress report after each, where there were 10,001 of both; the records still count every step."""
    from llmviz.engine.serving import driver

    stepped, reports = [], []
    step = driver.step_once
    monkeypatch.setattr(driver, "step_once", lambda policy: stepped.append(1) or step(policy))
    trace = spread(64)
    result = outcome(lambda: service.serving.serve(tiny, trace, "continuous", lambda *a: reports.append(a), slots=8,
                                                   device="cpu"), "ok", seconds=20)
    assert len(result["records"]) == 10_001 and len(stepped) == 64 and len(reports) == 64
    assert reports[-1][0] == 1.0 and {len(o) for o in result["outputs"].values()} == {1}
    fed = [i for i, r in enumerate(result["records"]) if r.rows]
    assert fed == sorted(trace.requests[i].arrival_step for i in range(64))  # each served at its arrival
    assert all(r.ms == 0.0 and r.waiting == 0 for r in result["records"] if not r.rows)


def test_static_batching_counts_who_waits_without_recounting_everyone(tiny):
    """The waiting count of each idle step, against a count by hand from the arrivals (bisection replaced a scan of
    every request at every one of 10,000 idle steps)."""
    trace = spread(64)
    result = outcome(lambda: service.serving.serve(tiny, trace, "static", slots=8, device="cpu"), "ok", seconds=20)
    arrivals = [r.arrival_step for r in trace.requests]
    for step in (0, 1, 158, 159, 1110, 5000, 9999):
        rec = result["records"][step]
        started = 8 * sum(1 for b in range(8) if max(arrivals[8 * b:8 * b + 8]) <= step)  # batches begun by now
        if not rec.rows:  # an idle step: arrived, their batch not begun
            assert rec.waiting == sum(1 for a in arrivals if a <= step) - started, step


def test_the_spread_traces_gantt_is_bounded_and_says_it_binned(tiny):
    result = outcome(lambda: service.serving.serve(tiny, spread(), "static", slots=8, device="cpu"), "ok", seconds=30)
    view = binned_timeline(result)
    assert (view.per_row, view.per_column) == (8, 33)  # 1,024 / 128 rows; 10,001 steps / 312 columns, made odd
    assert view.counts[..., PREFILL].sum() == 1024 and view.counts.sum() == 1024 * 10_001  # every request-step
    note = translate("en", "serving.gantt_binned", rows=view.per_row, cols=view.per_column)
    spec = json.loads(gantt(view, names(), "t", "step", "request", 5000, note).to_json())
    assert len(json.dumps(spec)) < GANTT_BYTES  # it was 225 MB
    said = "Binned to fit: 8 requests a row, 33 steps a column; a cell shows its most common busy state"
    assert spec["layout"]["title"]["subtitle"]["text"] == said + " (its share in the hover)"
    # row 0, steps 0-32: requests 0-7 arrive at 0, 10, 20, 29, 39, ... and wait for their batch to begin at 68:
    # 33 + 23 + 13 + 4 = 73 of the cell's 8 x 33 = 264 request-steps waiting (28%), the rest not arrived
    waiting = next(d for d in spec["data"] if d["name"] == "waiting")
    assert waiting["y"][:2] == ["0–7", "8–15"] and array(waiting["z"])[0, 0] == pytest.approx(73 / 264)
    assert waiting["hovertemplate"].endswith(": waiting %{z:.1~%}<extra></extra>")


def test_the_worst_gantt_any_trace_can_make_is_bounded():
    """The most cells (128 rows x 312 columns), every state present (a heatmap each, the whole grid), the longest
    ids (19 digits): 6 x 39,936 float32 cells, 1.3 MB as base64 (1.7 MB as plotly writes it: "/" as \\u002f), in
    either language."""
    rows, columns = MAX_ROWS, MAX_CELLS // MAX_ROWS
    shown = np.arange(rows * columns).reshape(rows, columns) % len(STATES)
    counts = np.zeros((rows, columns, len(STATES)), dtype=np.int64)
    view = Timeline(tuple(range(2**62, 2**62 + 1024)), columns * 33, 8, 33, counts, shown, np.full(shown.shape, 0.5))
    for lang in ("en", "zh"):
        size = len(gantt(view, names(lang), "t", "step", "request", 0, "note").to_json())
        assert 6 * rows * columns * 4 * 4 / 3 < size < GANTT_BYTES, (lang, size)


# --- a figure past its bound: the app's own message, nothing sent ----------------------------------------------
def _chart_script():
    """An AppTest page: a figure of 1.5 million float64 values (15.5 MB of JSON), then a small one."""
    import numpy as np
    import plotly.graph_objects as go

    from llmviz.i18n.translator import Translator
    from llmviz.ui.charts import chart

    t = Translator("zh" if __import__("streamlit").query_params.get("lang") == "zh" else "en")
    chart(t, go.Figure(go.Scatter(y=np.arange(1_500_000, dtype=np.float64))), "big")
    chart(t, go.Figure(go.Scatter(y=[1, 2, 3])), "small")


@pytest.mark.parametrize("lang, said", [("en", "This chart is not drawn: it would send 15.5 MB"),
                                        ("zh", "此图表未绘制：它需要向浏览器发送 15.5 MB")], ids=["en", "zh"])
def test_a_chart_past_its_bound_is_not_sent_and_the_page_says_so(lang, said):
    import plotly.graph_objects as go
    import plotly.io as pio
    from streamlit.testing.v1 import AppTest

    TRIED["pages"] += 1
    size = len(pio.to_json(go.Figure(go.Scatter(y=np.arange(1_500_000, dtype=np.float64))), validate=False))
    assert f"{size / 2**20:.1f}" == "15.5"  # the size the page states, measured here by plotly itself
    at = AppTest.from_function(_chart_script, default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = [w.value for w in at.warning]
    assert len(warnings) == 1 and said in warnings[0] and "8 MB" in warnings[0], warnings
    assert [c.proto.id.rsplit("-", 1)[-1] for c in at.get("plotly_chart")] == ["small"]  # the big one never sent


# --- finding 2 on the page: the run, then reruns, measured ------------------------------------------------------
@pages
@pytest.mark.slow  # ~15 s: the spread trace through both schedulers on the page, then two reruns
def test_the_spread_trace_on_the_page_costs_little_to_run_and_nothing_to_rerun(monkeypatch):
    import psutil

    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    at = open_app(page_file("serving"))
    at.selectbox(key="serve_trace_w").set_value("upload").run()
    at.file_uploader(key="serve_upload_w").set_value(("spread.json", spread().to_json().encode(),
                                                      "application/json")).run()
    began = time.perf_counter()
    next(b for b in at.button if b.label == "Run static and continuous").click().run(timeout=300)
    ran_s = time.perf_counter() - began
    assert not at.exception and not at.error and not at.warning, [e.value for e in (*at.error, *at.warning)]
    assert ran_s < 30, ran_s  # 5.5 s here (2-core CPU), 45 s on the red team's server before
    process = psutil.Process(os.getpid())
    for value in (5000, 5001):
        rss, cpu = process.memory_info().rss, time.process_time()
        at.slider(key="serve_step_continuous").set_value(value).run(timeout=60)
        cpu, grown = time.process_time() - cpu, process.memory_info().rss - rss
        assert cpu < 2.0 and grown < 100 * 2**20, (cpu, grown)  # 0.18 s, ~0 MB here; 12.9 s and +200 MB before
    specs = {c.proto.id.rsplit("-", 1)[-1]: c.proto.spec for c in at.get("plotly_chart")}
    assert len(specs["serve_gantt"]) < GANTT_BYTES and sum(map(len, specs.values())) < GANTT_BYTES + 2**20
    layout = json.loads(specs["serve_gantt"])["layout"]
    assert layout["title"]["subtitle"]["text"].startswith("Binned to fit: 8 requests a row, 33 steps a column")
    assert layout["shapes"][0]["x0"] == 5000.5
    util = json.loads(specs["serve_util"])["layout"]
    assert util["title"]["subtitle"]["text"] == "Each point: the mean over 11 steps"  # 10,001 steps, 1,000 points
