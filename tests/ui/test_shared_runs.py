"""One run of a claim's workload on every surface (ui/claims/shared_runs.py): the rule that picks
the newest, most precise run (ui/public.finer) on hand-made cases; the KV layouts page's sweep recognised as K3's
workload by its settings; then, in AppTest on the embedded model, the Batch page's K5 run kept on the server and
labelled with its time and rounds, the lesson's Reveal reading that run and saying so, and a finer run measured
since replacing it in the lesson (with the time of the one it replaces) and named under the Batch page's verdict."""

from __future__ import annotations

import copy
import time

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file, rendered_text
from ui_helpers import shown as unescaped

from llmviz.analysis.claim_effects import rounds_judged
from llmviz.labs.claims import layouts_judged_as
from llmviz.trace.config import KV_LAYOUTS
from llmviz.ui import server
from llmviz.ui.lesson import lesson_measure
from llmviz.ui.public import FRESH_S, LatestClaims, finer


def run(rounds: int, at: float) -> dict:
    return {"claim": {"id": "K5", "effects": [{"name": "x", "rounds": rounds}], "verdict": "holds"}, "at": at,
            "when": "w", "source": "lesson"}


@pytest.mark.parametrize(("new", "old", "expected"), [
    (run(9, 100.0), None, True),  # nothing held
    (run(9, 100.0), run(18, 50.0), False),  # fresh, on fewer rounds: the finer one stays
    (run(18, 50.0), run(9, 100.0), True),  # an older run on more rounds, both fresh: more rounds win
    (run(9, 100.0), run(9, 50.0), True),  # equal rounds: the newer
    (run(9, 50.0), run(9, 100.0), False),
    (run(3, 100.0 + FRESH_S), run(30, 99.0), True),  # the held one stale: any newer run
    (run(30, 99.0 - FRESH_S), run(3, 100.0), False),  # a stale run never replaces a fresh one
    (run(0, 100.0), run(0, 50.0), True),  # counted claims (no rounds): the newer
])
def test_the_newest_most_precise_run(new, old, expected):
    assert finer(new, old, now=max(new["at"], old["at"] if old else 0) + 1.0) is expected


def test_the_store_keeps_a_finer_run_only():
    latest, now = LatestClaims(), time.time()
    assert latest.keep("K5", run(18, now - 5))
    assert not latest.keep("K5", run(9, now))  # newer, but on half the rounds
    assert rounds_judged(latest.get("K5")["claim"]) == 18
    assert latest.keep("K5", run(18, now))
    assert latest.get("K5")["at"] == now


def layouts_result(**changes) -> dict:
    """A KV layouts page's sweep as the page runs it on the GPT-2 shape with the page's defaults (max_seq 2,048,
    so the layout claim is judged at 512 and 2,040 tokens: labs/claims.layout_lengths)."""
    base = {"model": "gpt2-124m-random", "dtype": "float32", "steps": 8, "block_size": 16, "attn_backend": "sdpa",
            "seed": 0, "layouts": list(KV_LAYOUTS), "max_seq": 2048,
            "lengths": [64, 256, 512, 1024, 1536, 2040]}
    return base | changes


def test_a_layouts_sweep_is_k3s_workload_only_with_k3s_settings():
    assert layouts_judged_as(layouts_result()) == "K3"
    assert layouts_judged_as(layouts_result(lengths=[512, 2040])) == "K3"  # the two it is judged at
    for off in ({"model": "llmviz-tiny"}, {"dtype": "bfloat16"}, {"steps": 4}, {"block_size": 32},
                {"attn_backend": "eager"}, {"seed": 7}, {"layouts": ["paged"]}, {"lengths": [64, 256, 512]}):
        assert layouts_judged_as(layouts_result(**off)) is None, off


def texts_of(at) -> list[str]:
    return [unescaped(x) for x in rendered_text(at)]


def click(at, label: str) -> None:
    next(b for b in at.button if b.label == label).click().run(timeout=180)
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="K5 is judged on the embedded model")
def test_the_batch_page_and_the_lesson_share_one_run_and_say_which(monkeypatch):
    from llmviz.i18n.translator import translate

    monkeypatch.setenv(lesson_measure.AHEAD_ENV, "0")
    server.latest_claims.clear()
    lesson_measure.flights.clear()
    page = open_app(page_file("batch"), model="llmviz-tiny", lang="en")
    click(page, "Measure batch 1, 2, 4, 8")
    result = page.session_state["llmviz_batch_sweep"][1]
    held = server.latest_claims().get("K5")
    assert held is not None and held["source"] == "batch" and held["at"] == result["at"]
    assert held["when"] == result["when"]
    rounds = rounds_judged(held["claim"])
    assert rounds == len(result["sizes"][0]["prefill_ms"]["all"]) == 6  # the page's 6 rounds, one look
    this_run = f"This run: the “Batching” page, at {result['when']}, on 6 rounds."
    assert this_run in texts_of(page)
    # the rounds behind the page's figure, as the Claims page and the Reveal draw them: six, their median the figure
    assert [e.label for e in page.expander].count("The rounds behind it") == 1
    effect = held["claim"]["effects"][0]
    ratios = sorted(v + 1 for v in effect["per_round"])
    assert len(ratios) == 6 and effect["measured"] + 1 == pytest.approx((ratios[2] + ratios[3]) / 2)
    assert any(x.startswith("6 rounds, from ") for x in texts_of(page))

    # the lesson's Reveal on K5 reads that run (no measurement of its own) and says which it is
    lesson = open_app(page_file("lesson"), model="llmviz-tiny", lesson="3.1.1", lang="en")
    lesson.button(key="lesson_reveal_K5").click().run(timeout=120)
    assert not lesson.exception, [e.value for e in lesson.exception]
    shown = lesson.session_state[lesson_measure.REVEALED_KEY]["K5"]
    assert (shown["source"], shown["run_source"], shown["at"]) == ("server", "batch", result["at"])
    assert shown["measured"] == held["claim"]["effects"][0]["measured"]
    assert this_run in texts_of(lesson)

    # a finer run of the workload since (18 rounds, here made by hand from the page's judged claim)
    finer_run = copy.deepcopy(held)
    for e in finer_run["claim"]["effects"]:
        e["rounds"] = 18
    finer_run |= {"at": time.time(), "when": "2026-12-06 09:00:00", "source": "lesson"}
    assert server.latest_claims().keep("K5", finer_run)
    lesson.run()
    shown = lesson.session_state[lesson_measure.REVEALED_KEY]["K5"]
    assert (shown["run_source"], shown["replaced"], shown["replaced_by"], shown["rounds"]) == \
        ("lesson", result["when"], "finer", 18)
    texts = texts_of(lesson)
    assert any(x.startswith(f"Shown now: a more precise run of the same workload than the one revealed at "
                            f"{result['when']}.") for x in texts), texts
    assert "This run: the lesson's measurement, at 2026-12-06 09:00:00, on 18 rounds." in texts
    # a run on as many rounds, measured later: newer, not more precise, and said so
    newer = copy.deepcopy(finer_run) | {"at": time.time() + 1, "when": "2026-12-06 09:05:00"}
    assert server.latest_claims().keep("K5", newer)
    lesson.run()
    shown = lesson.session_state[lesson_measure.REVEALED_KEY]["K5"]
    assert (shown["replaced"], shown["replaced_by"]) == ("2026-12-06 09:00:00", "newer")
    assert any(x.startswith("Shown now: a newer run of the same workload than the one revealed at 2026-12-06 09:00:00.")
               for x in texts_of(lesson))
    finer_run = newer
    # and the Batch page, drawn again, keeps its own figures and names the finer run with its verdict
    page.run()
    verdict = translate("en", "claims.verdict." + finer_run["claim"]["verdict"])
    assert any(x.startswith("A more precise run of the same workload is on the server: This run: the lesson's "
                            "measurement, at 2026-12-06 09:05:00, on 18 rounds.") and x.endswith(f"{verdict}.")
               for x in texts_of(page))
    server.latest_claims.clear()
    lesson_measure.flights.clear()
