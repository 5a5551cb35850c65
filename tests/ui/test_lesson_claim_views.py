"""What K5's and K7's steps draw under their Reveal (ui/lesson/lesson_claim_views.py): the article's batch padded,
its pad slots against the tokenizer's own counts; K7's workload served, its busy slots counted here from the run's
step records, and equal to what K7's own measurement (the claim's lab, run apart) reports."""

import pytest
from page_probes import charts, metrics
from plotly_data import array
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file

from llmviz.i18n.translator import translate

PAGE = page_file("lesson")

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the embedded model is not trained yet")


def z(key: str, **values) -> str:
    return translate("zh", key, **values)


def opened(position: str, claim: str):
    at = open_app(PAGE, lang="zh", lesson=position)
    at.session_state[f"lesson_view_{claim}"] = True  # the student opens the folded view
    at.run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    return at


def test_k5_draws_the_articles_batch_padded_in_front():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(EMBEDDED_WEIGHTS.parent))
    long, short = (len(tok(p)["input_ids"]) for p in ("济南的冬天", "人工智能"))
    assert long > short  # the article's two rows differ in length: one is padded
    at = opened("3.1.1", "K5")
    m, columns = metrics(at), long + 3  # the prefill's columns, then three decode steps
    assert (m[z("batch.rows")], m[z("batch.slots")]) == ("2", str(2 * columns))
    grid = array(charts(at)[z("batch.grid_title", steps=3)]["data"][0]["z"]) - 0.5  # the kinds: 0 prompt, 2 pad
    assert grid.shape == (2, columns)
    assert (grid[1, : long - short] == 2).all() and (grid[1, long - short : long] == 0).all()  # padded in front
    assert (grid[0, :long] == 0).all() and int(m[z("batch.wasted")]) >= long - short


@pytest.mark.slow  # K7's workload served twice, once by the page and once by the claim's lab: ~14 s on two cores
def test_k7_serves_the_claims_workload_and_counts_its_busy_slots():
    from llmviz import service
    from llmviz.analysis.claimdefs.k07_continuous import rule
    from llmviz.ui.serving.serving_run import BATCHING_KEY

    at = opened("3.2.1", "K7")
    assert at.button(key="lesson_k7_run").click().run() and not at.exception
    m = metrics(at)
    _, results = at.session_state[BATCHING_KEY]
    for name, result in results.items():  # busy slot-steps over slots x steps, counted from the records
        rows = [row for rec in map(as_dict, result["records"]) for row in rec["rows"]]  # (id, slot, fed, kind)
        busy = sum(1 for row in rows if row[2] > 0 and row[3] != "idle")
        share = busy / (result["slots"] * len(result["records"]))
        assert m[z("lesson.k7_used", sched=z(f"serving.sched.{name}"))] == f"{share:.1%}"
    raw = service.measure.claims("K7", quick=True, device="cpu")["claims"]["K7"]  # K7's own lab, run apart
    _, head = rule(raw)
    for name in ("static", "continuous"):
        assert m[z("lesson.k7_used", sched=z(f"serving.sched.{name}"))] == f"{head[name]:.1%}"
    gantt = charts(at)[z("serving.gantt", sched=z("serving.sched.continuous"))]
    assert len(array(gantt["data"][0]["z"])) == len(results["continuous"]["token_steps"])  # a row a request


def as_dict(record) -> dict:
    from dataclasses import asdict, is_dataclass

    return asdict(record) if is_dataclass(record) else record
