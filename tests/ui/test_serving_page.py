"""Serving page (C15, C16, C22): the schedulers' figures on screen are the engine's, every request's tokens
are the same under both schedulers and with sharing on and off, greedy speculation is the target's own."""

import json
from pathlib import Path

import numpy as np
import pytest
from plotly_data import array
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file, rendered_text

from llmviz.analysis.serving import metrics

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the built-in traces use the embedded model")


def click(at, label):
    next(b for b in at.button if b.label == label).click().run(timeout=240)
    assert not at.exception, [e.value for e in at.exception]


def test_batching_tab(app_model):
    at = open_app(page_file("serving"))
    at.number_input(key="serve_slots_w").set_value(4).run()
    click(at, "Run static and continuous")
    results = at.session_state["llmviz_serve_batching"][1]
    m = {name: metrics(r) for name, r in results.items()}
    table = at.table[0].value
    assert list(table["slot utilization"]) == [f"{m['static']['slot_utilization']:.0%}",
                                               f"{m['continuous']['slot_utilization']:.0%}"]
    assert m["continuous"]["slot_utilization"] > m["static"]["slot_utilization"]
    assert results["static"]["outputs"] == results["continuous"]["outputs"]
    assert any("Every request's tokens are identical under both" in x for x in rendered_text(at))
    at.slider(key="serve_step_continuous").set_value(3).run()
    drawn_as_before(at, results["continuous"], 3)
    rec = results["continuous"]["records"][3]
    assert any(x.startswith(f"Step 3 ({rec.ms:.1f} ms)") for x in rendered_text(at))
    next(b for b in at.button if b.key == "serve_step_continuous_next").click().run()
    assert at.slider(key="serve_step_continuous").value == 4


def drawn_as_before(at, result: dict, step: int) -> None:
    """A built-in trace's Gantt keeps a cell per request and step (only larger ones are binned): each state's
    cells those of the old grid (analysis.serving.timeline; the same pixels in Chromium), each request a row
    named by its id, the step marked, nothing said binned."""
    from llmviz.analysis.serving import STATES, timeline
    from llmviz.i18n.translator import translate

    ids, grid = timeline(result)
    spec = json.loads(next(c for c in at.get("plotly_chart") if c.proto.id.endswith("serve_gantt")).proto.spec)
    layout = spec["layout"]
    heats = {d["name"]: d for d in spec["data"] if d["type"] == "heatmap"}
    for code, state in enumerate(STATES):
        name = translate("en", f"serving.state.{state}")
        if not (grid == code).any():
            assert name not in heats
            continue
        assert (~np.isnan(array(heats[name]["z"])) == (grid == code)).all(), state
        assert heats[name]["hovertemplate"] == f"%{{y}} · %{{x}}: {name}<extra></extra>"
    assert {"waiting", "prefill", "decode", "done"} <= set(heats)
    assert layout["yaxis"]["ticktext"] == [str(i) for i in ids] == [str(i) for i in range(32)]
    assert layout["shapes"][0]["x0"] == step - 0.5 and "subtitle" not in layout["title"]
    util = json.loads(next(c for c in at.get("plotly_chart") if c.proto.id.endswith("serve_util")).proto.spec)
    line = next(d for d in util["data"] if d["name"] == "continuous")  # a point per step
    assert array(line["x"]).tolist() == list(range(len(result["records"])))
    assert "subtitle" not in util["layout"]["title"]


def test_sharing_tab(app_model):
    at = open_app(page_file("serving"))
    click(at, "Run without and with sharing")
    results = at.session_state["llmviz_serve_sharing"][1]
    peak = {on: max(r.blocks_used for r in results[on]["records"]) for on in (False, True)}
    assert 1 - peak[True] / peak[False] >= 0.3  # the target on the shared-prompt trace
    assert results[True]["outputs"] == results[False]["outputs"]
    shown = {mt.label: mt.value for mt in at.metric}
    from llmviz.analysis.kv_memory import human

    assert shown["Peak KV without sharing"] == human(peak[False] * results[False]["bytes_per_block"])
    prefill_ms = sum(r.ms for r in results[True]["records"] if any(row[3] == "prefill" for row in r.rows))
    assert shown["Time in prefill steps (with sharing)"] == f"{prefill_ms:,.0f} ms"


def test_speculative_tab_in_chinese(app_model):
    at = open_app(page_file("serving"), lang="zh", prompt="The list of")
    click(at, "运行推测解码")
    result = at.session_state["llmviz_serve_spec"][1]
    assert result["identical_outputs"] and 0 < result["acceptance_rate"] <= 1
    shown = {mt.label: mt.value for mt in at.metric}
    assert shown["接受率"] == f"{result['acceptance_rate']:.0%}"
    assert any("输出与目标模型单独运行时完全相同" in x for x in rendered_text(at))


@pytest.mark.slow  # ~12 s: every tab run again for its downloads; each tab's own test stays quick
def test_each_tab_downloads_its_figures(app_model):
    at = open_app(page_file("serving"))
    at.number_input(key="serve_slots_w").set_value(8).run()
    click(at, "Run static and continuous")
    labels = [d.proto.label for d in at.get("download_button")]
    assert labels == ["Download JSON", "Download CSV"]


def test_an_uploaded_trace_runs_and_a_bad_one_is_explained(app_model):
    """A user's trace file goes through both schedulers; a malformed one gets the typed message (both
    languages), never a traceback, and the page still works after it."""
    from llmviz.engine.serving.requests import Request, RequestTrace

    trace = RequestTrace("mine", (Request(0, 0, (5, 6, 7, 8), 3), Request(1, 2, (9, 10), 5, seed=4)))
    at = open_app(page_file("serving"))
    at.selectbox(key="serve_trace_w").set_value("upload").run()
    assert any("Choose a trace file" in x for x in rendered_text(at))
    at.file_uploader(key="serve_upload_w").set_value(("mine.json", trace.to_json().encode(), "application/json")).run()
    assert any("mine\\.json: 2 requests read." in x for x in rendered_text(at))
    click(at, "Run static and continuous")
    results = at.session_state["llmviz_serve_batching"][1]
    assert {rid: len(out) for rid, out in results["continuous"]["outputs"].items()} == {0: 3, 1: 5}
    assert results["static"]["outputs"] == results["continuous"]["outputs"]
    assert results["continuous"]["arrival_steps"] == {0: 0, 1: 2}
    for lang, headline in (("en", "This trace file cannot be read"), ("zh", "无法读取该运行记录文件")):
        at = open_app(page_file("serving"), lang=lang)
        at.selectbox(key="serve_trace_w").set_value("upload").run()
        at.file_uploader(key="serve_upload_w").set_value(("bad.json", b'{"requests": [{"prompt_ids": [1]}]',
                                                          "application/json")).run()
        assert not at.exception, [e.value for e in at.exception]
        assert any(headline in e.value and "not JSON" in e.value for e in at.error), [e.value for e in at.error]
        assert not [b for b in at.button if b.label in ("Run static and continuous", "运行静态与持续批处理")]


def test_self_speculation_and_sampled_speculation(app_model):
    at = open_app(page_file("serving"), prompt="The list of")
    at.selectbox(key="spec_draft_w").set_value("llmviz-tiny").run()
    click(at, "Run speculative decoding")
    result = at.session_state["llmviz_serve_spec"][1]
    assert result["acceptance_rate"] == 1.0 and result["identical_outputs"]  # its own draft: every draft kept
    assert all(r.accepted == len(r.proposed) for r in result["rounds"])
    assert result["tokens_per_round"] == pytest.approx(32 / len(result["rounds"]))  # k + 1 a round, the last cut
    assert len(result["rounds"]) == -(-32 // 5)  # k = 4: five tokens a round
    # each cell reads the token as the other views do (a space as ␣, a line break as ↵), checked against
    # transformers' own tokenizer of the model; a cell is never blank
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(app_model if Path(app_model).is_dir() else str(EMBEDDED_WEIGHTS.parent))
    spec = json.loads(next(c for c in at.get("plotly_chart") if "spec_rounds" in c.proto.id).proto.spec)
    by_hand = {" ": "␣", "\n": "↵", "\t": "⇥"}
    for row, r in zip(spec["data"][0]["text"], result["rounds"], strict=True):
        for cell, token in [*zip(row, r.proposed, strict=False), (row[-1], r.token)]:
            text = hf.convert_tokens_to_string([hf.convert_ids_to_tokens(token)])
            if "\ufffd" not in text:  # a whole character or more (a lone UTF-8 byte reads <e6>)
                assert cell == "".join(by_hand.get(ch, ch) for ch in text), (cell, text)
        assert all(row[:len(r.proposed)]) and row[-1]
    # where a round's time went: the rounds' own clocks over the target alone's step, k = 4 so 5 tokens verified
    step = result["target_alone_ms_per_token"]
    verify = sum(r.verify_ms for r in result["rounds"]) / len(result["rounds"]) / step
    per_round = 32 / len(result["rounds"])  # self-speculation: every draft kept, the last round cut at 32 tokens
    assert any(f"Per round here, tokens yielded: {per_round:.2f} (" in c.value and
               f"the verify pass of up to 5 tokens {verify:.2f} (counted as 1)" in c.value for c in at.caption)
    at.selectbox(key="spec_draft_w").set_value("llmviz-tiny-draft").run()
    at.number_input(key="spec_temp_w").set_value(0.9).run()
    click(at, "Run speculative decoding")
    result = at.session_state["llmviz_serve_spec"][1]
    assert result["identical_outputs"] is None and not result["greedy"] and len(result["output_ids"]) == 32
    assert any("drawn from the target's own distribution" in x for x in rendered_text(at))


def looked_inside_step_3():
    """The Serving page after a 4-slot run of the mixed trace and a look inside its step 3; and the timed
    continuous run."""
    at = open_app(page_file("serving"))
    at.number_input(key="serve_slots_w").set_value(4).run()
    click(at, "Run static and continuous")
    timed = at.session_state["llmviz_serve_batching"][1]["continuous"]
    at.slider(key="serve_step_continuous").set_value(3).run()
    click(at, "Look inside step 3")
    return at, timed


def test_a_look_inside_a_continuous_step_shows_its_recorded_rows(app_model):
    """Issue 37: the step under the continuous stepper re-run and recorded as a StepTrace: the rows table is the
    scheduler's record of that step (request, slot, tokens fed) with what the trace holds for each row (positions,
    cache length, blocks, the token drawn), and the attention figure greys exactly the slots past each row's own
    position (counted here from the positions, by hand)."""
    at, timed = looked_inside_step_3()
    look = at.session_state["llmviz_serve_look"][1]
    record, step = look["records"][3], look["steps"][3]
    assert record.rows == timed["records"][3].rows  # the same schedule as the timed (packed, unrecorded) run
    shown = next(d.value for d in at.dataframe if "request" in d.value.columns)
    assert list(shown["request"]) == [r[0] for r in record.rows] and list(shown["tokens fed"]) == [r[2] for r in
                                                                                                  record.rows]
    for i, (rid, *_rest) in enumerate(record.rows):
        positions = step.positions[i][step.positions[i] >= 0]
        assert shown["positions"][i] == f"{positions[0]}–{positions[-1]}"
        assert shown["cached after"][i] == positions[-1] + 1  # the cache holds every position fed so far
        blocks = step.kv["block_tables"][step.kv["seq_ids"].index(rid)]
        assert shown["its blocks"][i] == " ".join(map(str, blocks)) and len(blocks) == -(-(positions[-1] + 1) // 16)
    spec = json.loads(next(c for c in at.get("plotly_chart") if c.proto.id.endswith("serve_look_attention")).proto.spec)
    z = array(spec["data"][0]["z"])  # [rows, key slots], grey (NaN) where the row may not look
    last = [int(step.positions[i][step.positions[i] >= 0][-1]) for i in range(len(record.rows))]
    assert (np.isnan(z) == (np.arange(z.shape[1])[None, :] > np.array(last)[:, None])).all()
    assert np.allclose(np.nansum(z, axis=1), 1.0, atol=1e-4)  # each row's attention sums to one over what it sees


def test_a_request_of_a_step_opens_in_the_decode_and_prefill_views(app_model):
    """Issue 37: a request of the looked-at step opens as its own run: its rows of every step up to this one, cut out
    of the batched steps (llmviz/trace/rows.py). The Decode view replays it at this step; its tokens are the ones the
    timed continuous run gave that request; the Prefill view shows its whole prompt as one prefill."""
    at, timed = looked_inside_step_3()
    rows = at.session_state["llmviz_serve_look"][1]["records"][3].rows
    rid = rows[1][0]
    at.selectbox(key="serve_open_w").set_value(rid).run()
    click(at, "In the Decode view")
    run = at.session_state["llmviz_run"]
    assert run.key is None and run.trace.rows == 1  # a replay: no engine session, one row
    drawn = run.trace.row_output_ids(0)
    steps_with_it = [r.index for r in timed["records"][:4] if rid in (row[0] for row in r.rows)]
    assert drawn == timed["outputs"][rid][: len(drawn)] and len(drawn) >= 1  # its tokens, as the timed run drew them
    assert run.cursor == len(run.trace.steps) - 1 and len(run.trace.steps) <= len(steps_with_it)
    # the scheduler's log up to this step travels with the request's run: where it sat, what it fed
    assert [r.index for r in run.trace.schedule] == [0, 1, 2, 3]
    assert [row for r in run.trace.schedule for row in r.rows if row.request == rid] == [
        row for r in at.session_state["llmviz_serve_look"][1]["records"][:4] for row in r.rows if row.request == rid]
    last = run.trace.steps[-1]
    assert last.kv["batch"] == 1 and last.kv["seq_ids"] == [rid] and last.input_ids.shape == (1, 1)
    assert last.hook("layers.0.probs").shape[-1] == int(last.positions[0, -1]) + 1  # only its own keys
    held = last.kv["seq_len"]
    assert held == int(last.positions[0, -1]) + 1  # what its cache holds after the step: every position fed
    shown = rendered_text(at)  # the Decode page drew the run: its cache caption, its step counter
    assert any(f"from {held - 1} to {held} positions" in x for x in shown)
    assert shown[shown.index("Tokens generated") + 1] == str(len(drawn))
    prompt = len(run.trace.prompt_ids)

    at, _ = looked_inside_step_3()
    at.selectbox(key="serve_open_w").set_value(rid).run()
    click(at, "In the Prefill view")
    run = at.session_state["llmviz_run"]
    first = run.trace.steps[0]
    assert run.cursor == 0 and first.phase == "prefill" and first.input_ids.shape == (1, prompt)
    assert first.hook("layers.0.probs").shape == [1, first.hook("layers.0.q").shape[1], prompt, prompt]
    assert any(f"X [{prompt}, " in x for x in rendered_text(at))  # the Prefill page's shapes: X is [prompt, d]


def test_a_static_step_is_looked_inside_and_its_request_opens_too(app_model):
    """Issue 37: static batching records its steps as StepTraces as well: the look inside shows a step of the padded
    batch (a finished request's row is still computed, its token thrown away: no draw shown), and a request opens in
    the Decode view with the tokens the timed static run gave it."""
    at = open_app(page_file("serving"))
    at.number_input(key="serve_slots_w").set_value(4).run()
    click(at, "Run static and continuous")
    timed = at.session_state["llmviz_serve_batching"][1]["static"]
    at.radio(key="serve_which_w").set_value("static").run()
    idle = next(r.index for r in timed["records"] if any(kind == "idle" for *_, kind in r.rows))
    at.slider(key="serve_step_static").set_value(idle).run()
    click(at, f"Look inside step {idle}")
    look = at.session_state["llmviz_serve_look"][1]
    record, step = look["records"][idle], look["steps"][idle]
    assert record.rows == timed["records"][idle].rows and step.kv["layout"] == "contiguous"
    shown = next(d.value for d in at.dataframe if "request" in d.value.columns)
    for i, (rid, _, _, kind) in enumerate(record.rows):
        fed = step.positions[i][step.positions[i] >= 0]
        assert shown["positions"][i] == f"{fed[0]}–{fed[-1]}"  # every row computed, a finished one too (the waste)
        assert (shown["drew"][i] == "—") == (kind == "idle") == (rid not in record.drawn)  # its token thrown away
    rid = next(r[0] for r in record.rows if r[3] == "decode")
    at.selectbox(key="serve_open_w").set_value(rid).run()
    click(at, "In the Decode view")
    run = at.session_state["llmviz_run"]
    drawn = run.trace.row_output_ids(0)
    assert drawn == timed["outputs"][rid][: len(drawn)] and len(drawn) == idle + 1  # static: a token every step
    assert run.trace.steps[-1].kv["layout"] == "contiguous" and run.trace.steps[-1].kv["seq_ids"] == [rid]


def test_a_speculative_round_is_looked_inside(app_model):
    """Issue 37: a speculative round's verification recorded as a StepTrace: the figure's rows are x and the round's
    drafts as the timed run proposed them, marked kept, rejected or never judged as it judged them; each row sees the
    keys up to its own position (grey after it, counted here from the positions) and its attention sums to one."""
    at = open_app(page_file("serving"), prompt="The list of")
    click(at, "Run speculative decoding")
    timed = at.session_state["llmviz_serve_spec"][1]
    index = min(1, len(timed["rounds"]) - 1)
    if len(timed["rounds"]) > 1:
        at.slider(key="spec_round_w").set_value(index).run()
    click(at, f"Look inside round {index}")
    look = at.session_state["llmviz_serve_spec_look"][1]
    rnd, step = timed["rounds"][index], look["step"]
    assert look["rounds"][index].proposed == rnd.proposed and look["rounds"][index].accepted == rnd.accepted
    assert step.input_ids.shape == (1, len(rnd.proposed) + 1) and int(step.sampled[0]) == rnd.token
    spec = json.loads(next(c for c in at.get("plotly_chart") if c.proto.id.endswith("spec_look_attention")).proto.spec)
    z, labels = array(spec["data"][0]["z"]), spec["layout"]["yaxis"]["ticktext"]
    marks = [label[-1] for label in labels[1:]]  # kept, then the first rejected, then those never judged
    assert marks == ["✓"] * rnd.accepted + (["✗"] + ["–"] * (len(rnd.proposed) - rnd.accepted - 1)
                                            if rnd.accepted < len(rnd.proposed) else [])
    positions = step.positions[0]
    assert (np.isnan(z) == (np.arange(z.shape[1])[None, :] > positions[:, None])).all()
    assert np.allclose(np.nansum(z, axis=1), 1.0, atol=1e-4)
