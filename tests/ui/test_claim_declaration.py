"""A claim is one declaration: a toy claim declared in one new module (plus its catalogue
lines, in both languages) is measured, judged and shown by the Claims page, the CLI's JSON and the exports with no
other file touched, and its figure is the median of its per-round effects, recomputed here from the raw rounds."""

import json

import numpy as np
import pytest
from toy_claim import LINES
from ui_helpers import open_app, page_file

from llmviz.analysis import claim_spec


def by_hand(raw: dict) -> float:
    """The toy's effect from its raw rounds: the median over rounds of 32 tokens' time over 16's, minus 1."""
    ms = dict(zip(raw["lengths"], raw["prefill_ms"], strict=True))
    return float(np.median(np.array(ms[32]["all"]) / np.array(ms[16]["all"]))) - 1


def test_the_toy_is_declared_after_the_articles_eleven(toy_claim):
    assert claim_spec.ids() == (*(f"K{i}" for i in range(1, 12)), "K99")
    assert claim_spec.effect_kind("toy_doubling") == claim_spec.RATIO
    assert [c.id for c in claim_spec.measured_by("prefill_sweep")] == ["K1", "K99"]


def test_the_claims_page_measures_the_toy_and_exports_it(toy_claim, model_dirs):
    from llmviz.i18n.translator import Translator, translate
    from llmviz.ui.claims.claims_run import as_csv, as_html, as_json

    at = open_app(page_file("claims"), lang="zh", device="cpu")
    assert "K99" in at.multiselect(key="claims_ids").options[-1]  # offered with the article's eleven
    at.multiselect(key="claims_ids").set_value(["K99"]).run()
    next(b for b in at.button if b.label == translate("zh", "claims.run")).click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    rep = at.session_state["llmviz_claims_report"]
    (toy,) = rep["claims"]
    effect = toy["effects"][0]
    assert toy["id"] == "K99" and effect["name"] == "toy_doubling" and effect["article"] == 1.0
    assert effect["measured"] == pytest.approx(by_hand(rep["raw_fits"]["K99"]), rel=1e-9)
    assert effect["rounds"] >= 3 and toy["figures"]["ms_32"] > 0
    table = at.dataframe[0].value
    assert list(table[translate("zh", "claims.col_claim")]) == ["K99"]
    assert list(table[translate("zh", "claims.col_article")]) == [LINES["zh"]["claims.article.K99"]]
    assert [c.proto.id for c in at.get("plotly_chart") if c.proto.id.endswith("claims_fit_0")]  # a prefill sweep
    # one figure on every surface: the table's cell, the rounds' line under their chart, the JSON
    figure = f"×{effect['measured'] + 1:.2f}"
    assert list(table[translate("zh", "claims.col_measured")]) == [figure]
    assert [c for c in at.get("plotly_chart") if c.proto.id.endswith("claims_rounds_K99_toy_doubling")]
    line = next(c.value for c in at.caption if c.value.startswith(f"共 {effect['rounds']} 轮"))
    assert f"中位数 {figure}" in line and len(effect["per_round"]) == effect["rounds"]
    t = Translator("en")
    exported = json.loads(as_json(t, rep))
    assert [c["id"] for c in exported["claims"]] == ["K99"]
    assert exported["claims"][0]["effects"][0]["measured"] == pytest.approx(effect["measured"])
    assert "K99" in as_csv(t, rep) and LINES["en"]["claims.effect.toy_doubling"] in as_csv(t, rep)
    assert LINES["en"]["claims.article.K99"] in as_html(t, rep)


def test_the_cli_measures_the_toy(toy_claim, model_dirs, capsys):
    from llmviz.cli.main import main

    capsys.readouterr()
    assert main(["claims", "--quick", "--only", "k99", "--json", "--device", "cpu"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (toy,) = doc["claims"]
    assert toy["id"] == "K99" and toy["article"] == LINES["en"]["claims.article.K99"]
    assert toy["effects"][0]["name"] == "toy_doubling" and toy["verdict"] in claim_verdicts()
    assert toy["figures"]["ms_32"] > 0 and toy["reason"].startswith("toy doubling: ")


def claim_verdicts() -> set[str]:
    from llmviz.analysis.claims import CANNOT, CANNOT_TELL, DOES_NOT_HOLD, HOLDS

    return {HOLDS, DOES_NOT_HOLD, CANNOT_TELL, CANNOT}
