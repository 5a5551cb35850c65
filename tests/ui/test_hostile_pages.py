"""Whatever a link carries, every page answers with a message or a result, never a traceback.

The harness covers every page app.py declares (a new page joins by being declared) with every URL setting
set to hostile values, and hostile prompts on the pages that run one. Each run: no exception, the bad
settings named in the session's language, and the page still drawn (its title shown).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_helpers import APP, EMBEDDED_WEIGHTS, declared_pages, open_app, shown

from llmviz.i18n.translator import translate
from llmviz.ui.settings import SECTIONS

BAD_NUMBERS = ("-1", "0", "1e308", "nan", "-inf", "abc", "99999999999999999999", "", "0x10", "１２")
ACCEPTABLE = ("0", "１２")  # in range for some settings (Python reads full-width digits as 12): not always named
OWN_MEANING = {"mem_tokens": "-1"}  # the link's word for the Memory page's empty tokens box: taken, not named
BAD_TEXT = ("../../../../etc/passwd", "\x00", "kv-layout=paged,,=", "%00%ff", "‮evil", "a" * 5000, "🦙" * 50,
            "None", "[]", "{\"a\": 1}")
NUMERIC = tuple(f.name for section in SECTIONS for f in section.fields if type(f.default) in (int, float, bool))
CHOICES = ("device", "dtype", "attn", "lang", "padding", "kv_bs", "kv_max", "kv_model", "cmp_model", "lesson")
TEXT = ("engine", "cmp_a", "cmp_b", "history", "kv_prompts", "kv_lengths", "batch")
PAGES = declared_pages()
TITLE_KEY = {"home": "home.title", "kv_layouts": "layouts.title"}  # a page's catalog title, where not <stem>.title


def hostile_params(round_: int) -> dict:
    """Round r: every numeric setting, every choice and every free-text setting set to a bad value, rotated so
    that over the rounds each setting meets each value."""
    params = {name: BAD_NUMBERS[(round_ + i) % len(BAD_NUMBERS)] for i, name in enumerate(NUMERIC)}
    params |= {name: BAD_TEXT[(round_ + i) % len(BAD_TEXT)] for i, name in enumerate(CHOICES + TEXT)}
    params.pop("lang")  # the session's language is checked separately: set it to a real one
    return params


def title_of(page: str, lang: str) -> str:
    stem = Path(page).stem
    return translate(lang, TITLE_KEY.get(stem, f"{stem}.title"))


def check(at, lang: str, page: str) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert any(title_of(page, lang) in t.value for t in at.title), f"{page} drew no title"


@pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the default model is the embedded one")
@pytest.mark.parametrize("page", PAGES)
def test_every_page_survives_a_hostile_link(page):
    from streamlit.testing.v1 import AppTest

    lang = "zh" if PAGES.index(page) % 2 else "en"
    params = hostile_params(PAGES.index(page))
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in {**params, "lang": lang}.items():
        at.query_params[key] = value
    at.run()  # the link is read on the session's first run, which names what it dropped
    warned = " ".join(shown(w.value) for w in at.warning)
    assert translate(lang, "error.url", items="")[:8] in warned, warned[:300]
    named = [name for name in NUMERIC if params[name] not in ACCEPTABLE and OWN_MEANING.get(name) != params[name]]
    assert len(named) >= 10 and all(f"{name}=" in warned for name in named), (named, warned[:400])
    check(at, lang, PAGES[0])
    if page != PAGES[0]:
        at.switch_page(page).run()
        check(at, lang, page)


@pytest.mark.slow
@pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the default model is the embedded one")
@pytest.mark.parametrize("round_", range(1, len(BAD_NUMBERS)))
@pytest.mark.parametrize("page", PAGES)
def test_every_page_survives_every_hostile_value(page, round_):
    at = open_app(page if page != PAGES[0] else None, **hostile_params(round_))
    check(at, "en", page)
