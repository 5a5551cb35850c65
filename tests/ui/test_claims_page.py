"""The Claims page (issue 11) in AppTest: a quick run of three claims (the kv-fp16 compare serves K2 and K4; K9
counts KV blocks), its table and verdicts in both languages, the exports; the whole quick run of all eleven is
behind the slow marker."""

import json

import pytest
from ui_helpers import open_app, page_file

from llmviz.ui.i18n import translate


def run_claims(at, ids: list[str]):
    at.multiselect(key="claims_ids").set_value(ids).run()
    next(b for b in at.button if b.label == translate(at.lang, "claims.run")).click().run(timeout=600)
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_quick_run_shows_each_claims_verdict_and_exports(lang):
    at = open_app(page_file("claims"), lang=lang, device="cpu")
    at.lang = lang
    assert any(translate(lang, "claims.none_yet") in i.value for i in at.info)
    run_claims(at, ["K2", "K4", "K9"])
    table = at.dataframe[0].value
    assert list(table[translate(lang, "claims.col_claim")]) == ["K2", "K4", "K4", "K9"]  # K4 has two effects
    verdicts = {translate(lang, f"claims.verdict.{v}") for v in ("holds", "does_not_hold", "cannot_measure")}
    assert set(table[translate(lang, "claims.col_verdict")]) <= verdicts
    k9 = next(s.value for s in at.success if s.value.startswith("**K9"))
    assert translate(lang, "claims.verdict.holds") in k9
    downloads = {d.proto.label: d for d in at.get("download_button")}
    assert set(downloads) == {translate(lang, f"claims.download_{k}") for k in ("json", "csv", "html")}
    kept = at.session_state["llmviz_claims_report"]
    assert [c["id"] for c in kept["claims"]] == ["K2", "K4", "K9"]
    k4 = kept["claims"][1]
    assert k4["effects"][0]["measured"] == 0.5  # bf16 KV allocates exactly half the fp32 bytes
    assert not at.get("plotly_chart")  # K1 was not asked for: no sweep figure


@pytest.mark.slow
def test_the_whole_quick_run():
    """All eleven claims measured and judged on the page, K1's fit drawn (about two minutes on 2 CPU cores)."""
    at = open_app(page_file("claims"), device="cpu")
    at.lang = "en"
    run_claims(at, [f"K{i}" for i in range(1, 12)])
    kept = at.session_state["llmviz_claims_report"]
    assert [c["id"] for c in kept["claims"]] == [f"K{i}" for i in range(1, 12)]
    assert all(c["verdict"] in ("holds", "does_not_hold") for c in kept["claims"])  # a CPU measures them all
    assert all("measured" in e for c in kept["claims"] for e in c["effects"])
    assert len(at.get("plotly_chart")) == 1 and any("Prefill ms ≈" in m.value for m in at.markdown)
    assert json.loads(json.dumps(kept["claims"][0]["figures"]))["longest"] == 510
