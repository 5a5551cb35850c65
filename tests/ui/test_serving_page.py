"""Serving page (C15, C16, C22): the schedulers' figures on screen are the engine's, every request's tokens
are the same under both schedulers and with sharing on and off, greedy speculation is the target's own."""

import pytest
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
    rec = results["continuous"]["records"][3]
    assert any(x.startswith(f"Step 3 ({rec.ms:.1f} ms)") for x in rendered_text(at))
    next(b for b in at.button if b.key == "serve_step_continuous_next").click().run()
    assert at.slider(key="serve_step_continuous").value == 4


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


def test_speculative_tab_in_chinese(app_model):
    at = open_app(page_file("serving"), lang="zh", prompt="The list of")
    click(at, "运行投机解码")
    result = at.session_state["llmviz_serve_spec"][1]
    assert result["identical_outputs"] and 0 < result["acceptance_rate"] <= 1
    shown = {mt.label: mt.value for mt in at.metric}
    assert shown["接受率"] == f"{result['acceptance_rate']:.0%}"
    assert any("输出与目标模型单独运行时完全相同" in x for x in rendered_text(at))


def test_each_tab_downloads_its_figures(app_model):
    at = open_app(page_file("serving"))
    at.number_input(key="serve_slots_w").set_value(8).run()
    click(at, "Run static and continuous")
    labels = [d.proto.label for d in at.get("download_button")]
    assert labels == ["Download JSON", "Download CSV"]
