"""One figure on every surface: one recorded set of figures (K4's decode pair, twelve rounds,
A and B drifting together round by round) judged once, then rendered by every surface that shows it (the Claims
table, the verdict's sentence, the rounds under the chart, the lesson's metric and end table, the JSON, CSV and
HTML exports, the CLI's report) and compared number by number, in both languages. The figure by hand: the median
of the per-round speed-ups, not the ratio of the two medians (which differ here)."""

import json

import numpy as np
import pytest

from llmviz.analysis.claim_effects import reason_text, report, table_rows
from llmviz.analysis.claims import shown
from llmviz.i18n.translator import Translator
from llmviz.ui.claims.claim_rounds import rounds_sentence
from llmviz.ui.claims.claims_run import as_csv, as_html, as_json
from llmviz.ui.lesson.lesson_end import rows
from llmviz.ui.lesson.lesson_measure import entry_of

A = [10.0, 10.4, 9.8, 11.0, 10.1, 12.0, 10.0, 10.3, 9.9, 10.6, 10.2, 11.5]  # ms per token, round by round
B = [7.0, 7.1, 7.3, 6.9, 7.4, 7.0, 8.1, 7.2, 7.0, 7.5, 6.8, 7.9]


def spread(ms):
    return {"median": float(np.median(ms)), "min": min(ms), "max": max(ms), "all": ms}


@pytest.fixture(scope="module")
def claim():
    raw = {"quick": True, "threads": 2, "seconds": {"K4": 12.5}, "claims": {"K4": {
        "model": "gpt2-124m-random", "device": "cpu", "threads": 2, "specs": ["kv-dtype=fp32", "kv-dtype=bf16"],
        "decode_ms_per_token": [spread(A), spread(B)], "kv_bytes_allocated": [2000, 1000],
        "looks": {"batch": 6, "batches": 8}, "batches": 2, "budget_s": 60.0}}}
    return report(raw)


def test_the_figure_by_hand(claim):
    e = claim["claims"][0]["effects"][1]
    per_round = sorted(a / b - 1 for a, b in zip(A, B, strict=True))
    assert e["measured"] == pytest.approx((per_round[5] + per_round[6]) / 2)  # twelve rounds: the middle two
    assert e["measured"] != pytest.approx(np.median(A) / np.median(B) - 1)  # not the ratio of the medians
    # twelve rounds at the plan's second look (batches of 6: rank 2), 1 - 2 x 13/4096 = 99.4%
    assert (e["low"], e["high"]) == (pytest.approx(per_round[1]), pytest.approx(per_round[10]))
    assert e["level"] == pytest.approx(1 - 2 * 13 / 4096) and e["looks"] == 7 and e["rounds"] == 12


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_surface_shows_that_figure(claim, lang):
    t = Translator(lang)
    c = claim["claims"][0]
    e = c["effects"][1]
    figure, low, high = (shown("decode_speedup", e[k], t) for k in ("measured", "low", "high"))
    level = f"{100 * e['level']:.1f}%"
    table = table_rows(t, claim)[1]
    assert table[t("claims.col_measured")] == figure
    assert all(x in table[t("claims.col_range")] for x in (low, high, level))
    sentence = reason_text(t, c)
    assert all(x in sentence for x in (figure, low, high, level))
    assert f"{figure}" in rounds_sentence(t, e) and low in rounds_sentence(t, e)
    entry = entry_of(c, "2026-12-06 05:00:00", "measured", 0.5)
    assert entry["measured"] == e["measured"] and (entry["low"], entry["high"]) == (e["low"], e["high"])
    assert rows(t, {"K4": entry})[0][t("lesson.this_machine")] == figure
    exported = json.loads(as_json(t, claim))["claims"][0]["effects"][1]
    assert exported["measured"] == e["measured"] and exported["per_round"] == e["per_round"]
    assert exported["level"] == e["level"] and exported["looks"] == e["looks"]
    assert figure in as_csv(t, claim) and level in as_csv(t, claim)
    assert figure in as_html(t, claim)
