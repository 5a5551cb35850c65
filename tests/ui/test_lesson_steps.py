"""The lesson's registry of steps: in the article's order, every item of the article's sections there,
every slip and claim one the app keeps, and the URL position that reopens a step (a hostile one falls back)."""

import pytest

from llmviz.analysis.article import SLIP_IDS
from llmviz.analysis.claim_spec import declared
from llmviz.ui.lesson.lesson_steps import CHAPTERS, END, POSITIONS, STEP_IDS, STEPS, position_of
from llmviz.ui.settings import Settings


def test_the_steps_follow_the_articles_sections_in_order():
    assert len(set(STEP_IDS)) == len(STEP_IDS)
    order = [CHAPTERS.index(s.section) for s in STEPS]
    assert order == sorted(order) and set(order) == set(range(len(CHAPTERS)))  # every chapter has a step
    for chapter in CHAPTERS:  # within a chapter: 1, 2, 3, ...
        numbers = [int(s.id.rsplit(".", 1)[1]) for s in STEPS if s.section == chapter]
        assert numbers == list(range(1, len(numbers) + 1)), chapter


def test_every_claim_is_revealed_once_and_every_slip_is_known():
    assert sorted((s.claim for s in STEPS if s.claim), key=lambda k: int(k[1:])) == list(declared())
    assert {slip for s in STEPS for slip in s.slips} == set(SLIP_IDS)  # every slip, and only known ones


@pytest.mark.parametrize("text, shown, problems", [
    ("1.2.3", "1.2.3", []), ("5.2", "5.2", []), ("end", END, []), ("4.2", "4.2.1", []), ("5", "5.1", []),
    ("1.1", "1.1.1", []),
    ("9.9", "1.1.1", ["lesson='9.9'"]), ("1.1.1<script>", "1.1.1", ["lesson='1.1.1<script>'"]),
])
def test_a_link_opens_its_step_and_a_hostile_one_the_first(text, shown, problems):
    s, found = Settings.from_query({"lesson": text})
    assert s.lesson.at == shown and found == problems
    assert position_of(s.lesson.at) == POSITIONS.index(shown)
    assert Settings.from_query(s.to_query())[0].lesson.at == shown


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_step_has_its_words_citing_its_section(lang):
    from llmviz.i18n.translator import translate

    for step in STEPS:
        title, says = translate(lang, f"lesson.{step.id}.title"), translate(lang, f"lesson.{step.id}.says")
        assert title and says.startswith(f"§{step.section}"), step.id


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_cited_id_has_a_name(lang):
    """The IDs a step cites (C17, K4) are named on it, in both languages: the concept map's names."""
    from llmviz.i18n.translator import catalog

    messages = catalog(lang)
    cited = {c for s in STEPS for c in s.concepts}
    assert cited == {f"C{i}" for i in range(1, 23)} | {f"K{i}" for i in range(1, 12)}  # the whole map, in order
    assert all(messages.get(f"concept.{c}", "").strip() for c in cited)
