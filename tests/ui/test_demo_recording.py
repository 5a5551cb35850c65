"""The recorded default demos: each shipped file is what the engine computes now for
the app's default run in its language, and the stepper shows it, labelled as a recording, where no model can
load."""

import numpy as np
import pytest
from ui_helpers import open_app, page_file

from llmviz.i18n.translator import translate
from llmviz.trace.hooks import all_hook_names
from llmviz.trace.records import trace_from_zip
from llmviz.ui.demo import DEMO_PATHS, DEMO_STEPS
from llmviz.ui.settings import LANGS, Settings
from llmviz.ui.state import RUN_KEY


def test_there_is_a_recording_per_language():
    assert set(DEMO_PATHS) == set(LANGS) and all(p.is_file() for p in DEMO_PATHS.values())


@pytest.mark.parametrize("lang, prompt", [("en", "The list of"), ("zh", "济南的冬天")])
def test_the_recording_is_the_default_run_as_the_engine_computes_it_now(lang, prompt):
    """If the engine's hooks or numbers change, re-record: python scripts/record_demo.py."""
    import sys

    path = DEMO_PATHS[lang]
    sys.path.insert(0, str(path.parents[2] / "scripts"))
    from record_demo import record

    shipped, now = trace_from_zip(path.read_bytes()), record(lang)
    default = Settings.fresh(lang)
    assert shipped.prompt == default.prompt == prompt and shipped.seed == default.seed
    assert shipped.model_card["name"] == default.model and len(shipped.steps) == DEMO_STEPS + 1
    assert shipped.output_ids == now.output_ids
    layers = shipped.model_card["config"]["num_layers"]
    assert {r.name for r in shipped.steps[3].hooks} == set(all_hook_names(layers))  # every hook, the new ones too
    assert np.allclose(shipped.steps[5].logits, now.steps[5].logits, atol=1e-4)


def test_the_stepper_replays_it_where_no_model_loads():
    at = open_app(page_file("decode"), model="/no/such/model")
    assert any(translate("en", "error.ModelNotFoundError") in e.value for e in at.error)
    next(b for b in at.button if b.label == translate("en", "demo.open")).click().run()
    assert not at.exception and not at.error
    run = at.session_state[RUN_KEY]
    assert run.key is None and run.handle is None
    assert any("This is a recording, not a live run" in i.value for i in at.info)
    for expected in (1, 2, 3):
        next(b for b in at.button if b.label == "Next ▶").click().run()
        assert at.session_state[RUN_KEY].cursor == expected
    assert {m.label: m.value for m in at.metric}["Step"] == "3"


def test_the_chinese_interface_replays_the_chinese_recording():
    at = open_app(page_file("decode"), model="/no/such/model", lang="zh")
    next(b for b in at.button if b.label == translate("zh", "demo.open")).click().run()
    assert not at.exception
    run = at.session_state[RUN_KEY]
    assert run.key is None and run.trace.prompt == "济南的冬天"
