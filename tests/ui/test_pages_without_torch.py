"""Every page renders from a loaded trace in a process where importing torch (or transformers) is blocked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from ui_helpers import APP, PROMPT, ROOT, declared_pages, page_file

from llmviz import service
from llmviz.trace.config import EngineConfig
from llmviz.ui.settings import Settings

DECODE, LESSON = page_file("decode"), page_file("lesson")
SCRIPT = textwrap.dedent("""
    import json, sys

    attempts = []

    class BlockTorch:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "transformers"):
                attempts.append(name)
                raise ImportError(f"blocked in this test: {name}")
            return None

    sys.meta_path.insert(0, BlockTorch())
    root, app, folder, pages, decode = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]
    lesson = sys.argv[6]
    sys.path.insert(0, root)

    from streamlit.testing.v1 import AppTest

    from llmviz.trace.records import load_trace
    from llmviz.i18n.translator import catalog
    from llmviz.ui.state import Run

    trace = load_trace(folder)
    at = AppTest.from_file(app, default_timeout=60)
    at.query_params["model"] = "/no/such/model"  # nothing may try to load a model
    at.query_params["prompt"] = "not the prompt of the trace"
    at.session_state["llmviz_run"] = Run(None, trace, None, 0)
    at.run()
    en = catalog("en")
    report = {"pages": {}}

    def metrics():
        return {m.label: m.value for m in at.metric}

    for page in pages:
        at.switch_page(page).run()
        entry = {"exceptions": [e.message for e in at.exception], "errors": [e.value for e in at.error],
                 "titles": [t.value for t in at.title], "metrics": metrics(),
                 "info": [i.value for i in at.info], "radios": [r.label for r in at.radio]}
        if page == decode:
            steps = []
            for label in (en["decode.next"], en["decode.next"], en["decode.prev"]):
                [b for b in at.button if b.label == label][0].click().run()
                steps.append([metrics().get(en["decode.kv_len"]), [e.message for e in at.exception]])
            entry["steps"] = steps
        report["pages"][page] = entry
    at.switch_page(lesson).run()
    walk = []
    while True:  # every step of the lesson, Next after Next, on the recording
        reveal = [b.disabled for b in at.button if (b.key or "").startswith("lesson_reveal_")]
        walk.append({"at": at.session_state["llmviz_settings"].lesson.at,
                     "exceptions": [e.message for e in at.exception],
                     "errors": [e.value for e in at.error], "warnings": [w.value for w in at.warning],
                     "reveal_disabled": reveal, "metrics": metrics(),
                     "off": any(en["lesson.reveal_off"] in c.value for c in at.caption)})
        if at.button(key="lesson_next").disabled:
            break
        at.button(key="lesson_next").click().run()
    report["lesson"] = walk
    run = at.session_state["llmviz_run"]
    report.update(key=run.key, cursor=run.cursor, steps=len(run.trace.steps), attempts=attempts,
                  loaded=sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers")))
    print("REPORT " + json.dumps(report))
""")


@pytest.fixture(scope="module")
def saved_trace(app_model, tmp_path_factory):
    """A live run of 4 steps, made in this (torch) process with the app's own settings, saved to a folder."""
    settings = Settings(model=app_model, prompt=PROMPT)
    lm = service.models.load(app_model, EngineConfig(device=settings.device, dtype=settings.dtype))
    trace = service.runs.run(lm, PROMPT, settings.engine_config(lm.cfg.max_position_embeddings), 4)
    assert len(trace.steps) == 4
    return trace, trace.save(tmp_path_factory.mktemp("trace"))


@pytest.fixture(scope="module")
def report(saved_trace):
    _, folder = saved_trace
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT), APP, str(folder), json.dumps(declared_pages()),
                           DECODE, LESSON],
                          capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("REPORT "))


def test_torch_never_loads(report):
    assert report["loaded"] == []


@pytest.mark.parametrize("page", declared_pages())
def test_every_page_renders_from_the_trace(report, page):
    entry = report["pages"][page]
    assert entry["exceptions"] == [] and entry["errors"] == [], entry
    assert entry["titles"], entry  # the page drew its body, not only a message


def test_the_run_stays_the_replayed_trace(report, saved_trace):
    trace, _ = saved_trace
    assert report["key"] is None and report["steps"] == len(trace.steps)


def test_pages_show_the_traces_numbers(report, saved_trace):
    trace, _ = saved_trace
    pages = report["pages"]
    config = trace.model_card["config"]
    assert pages[page_file("home")]["metrics"]["Layers"] == str(config["num_layers"])
    assert pages[page_file("trace")]["metrics"]["Steps recorded"] == str(len(trace.steps))
    assert pages[page_file("trace")]["metrics"]["Prompt tokens"] == str(len(trace.prompt_ids))


def test_decode_steps_through_the_recorded_steps(report, saved_trace):
    trace, _ = saved_trace
    kv = [str(step.kv["seq_len"]) for step in trace.steps]
    steps = report["pages"][DECODE]["steps"]
    assert steps == [[kv[1], []], [kv[2], []], [kv[1], []]]  # Next, Next, Previous: recorded, not recomputed


def test_the_lesson_runs_from_the_recording(report, saved_trace):
    """Every step drawn from the recorded run (no exception, no error box); the measured steps say why Reveal is
    off. The prompt's token count is the recording's, not the link's prompt."""
    from llmviz.ui.lesson.lesson_steps import POSITIONS, STEPS

    trace, _ = saved_trace
    walk = report["lesson"]
    assert [s["at"] for s in walk] == list(POSITIONS)
    assert [(s["at"], s["exceptions"], s["errors"]) for s in walk] == [(p, [], []) for p in POSITIONS]
    assert walk[0]["metrics"]["Tokens"] == str(len(trace.prompt_ids))
    claims = {s.id for s in STEPS if s.claim}
    for s in walk:
        if s["at"] in claims:
            assert s["reveal_disabled"] == [True] and s["off"], s
        else:
            assert s["reveal_disabled"] == [], s
