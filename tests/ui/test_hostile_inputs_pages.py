"""The hostile-input catalogue (tests/support/cases.py) through the pages: every prompt typed into
Home, every damaged trace file uploaded on the Trace page, every request trace uploaded on the Serving page.
Each gets a correct result or a message under its typed error's headline, never an exception, and the page
works afterwards. The library and the CLI run the same catalogue (tests/hostile/).

Lone surrogates cannot reach a page: the browser sends widget values and links as UTF-8, which cannot hold
them (the library refuses them, tests/hostile/test_library.py).
"""

from __future__ import annotations

import pytest
from cases import ERROR, PROMPTS, REQUEST_TRACES, TRACE_FILES
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file

from llmviz.i18n.translator import translate

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the catalogue's expectations are the "
                                "embedded model's")

TYPED = [c for c in PROMPTS if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in c.value)]


def headline(error: str, lang: str = "en") -> str:
    return translate(lang, f"error.{error}")


def run_prompt(at, text: str):
    at.text_area(key="home_prompt").set_value(text).run()
    next(b for b in at.button if b.label == "Load and run the prefill").click().run(timeout=180)
    assert not at.exception, [e.value for e in at.exception]
    return at


def check_prompt(case) -> None:
    at = run_prompt(open_app(), case.value)
    errors = [e.value for e in at.error]
    if case.expect == ERROR:
        assert any(headline(case.error) in e for e in errors), (case.name, errors)
    else:
        assert not errors, (case.name, errors)
        run = at.session_state["llmviz_run"]
        assert run.trace.prompt == case.value and len(run.trace.prompt_ids) > 0  # the prompt as typed, tokenized
    run_prompt(at, "The list of")  # the page works afterwards
    assert not at.error and at.session_state["llmviz_run"].trace.prompt == "The list of"


@pytest.mark.parametrize("case", TYPED, ids=lambda c: c.name)
def test_every_hostile_prompt_on_home(case):
    check_prompt(case)


@pytest.fixture(scope="module")
def valid_zip():
    from llmviz.engine.loading.model import load_model
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig
    from llmviz.trace.records import trace_to_zip

    session = Session(load_model("llmviz-tiny"), "The list of", EngineConfig(capture="meta"))
    session.generate(3)
    return trace_to_zip(session.trace)


def test_every_damaged_trace_file_on_the_trace_page(valid_zip):
    at = open_app(page_file("trace"), lang="zh")
    for case in TRACE_FILES:
        at.file_uploader(key="trace_upload").set_value((f"{case.name}.zip", case.value(valid_zip),
                                                       "application/zip")).run(timeout=120)
        assert not at.exception, (case.name, [e.value for e in at.exception])
        errors = [e.value for e in at.error]
        if case.expect == ERROR:
            assert any(headline(case.error, "zh") in e for e in errors), (case.name, errors)
        else:
            assert not errors and at.session_state["llmviz_run"].trace.prompt == "The list of", case.name
    at.file_uploader(key="trace_upload").set_value(("good.zip", valid_zip, "application/zip")).run()
    assert not at.error and len(at.session_state["llmviz_run"].trace.steps) == 3  # works afterwards


def test_every_request_trace_on_the_serving_page():
    at = open_app(page_file("serving"))
    at.selectbox(key="serve_trace_w").set_value("upload").run()
    for case in REQUEST_TRACES:
        at.file_uploader(key="serve_upload_w").set_value((f"{case.name}.json", case.value, "application/json")).run()
        assert not at.exception, (case.name, [e.value for e in at.exception])
        if any(b.label == "Run static and continuous" for b in at.button):  # the file was read: run it
            next(b for b in at.button if b.label == "Run static and continuous").click().run(timeout=240)
            assert not at.exception, (case.name, [e.value for e in at.exception])
        errors = [e.value for e in at.error]
        if case.expect == ERROR:
            assert any(headline(case.error) in e for e in errors), (case.name, errors)
        else:
            assert not errors, (case.name, errors)
            assert at.session_state["llmviz_serve_batching"][1]["continuous"]["outputs"]
