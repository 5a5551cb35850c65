"""An extension is one declaration, read by every page: the toy KV layout "chunked" and the toy attention
backend "online" (tests/support/toy_extensions.py), registered from here, chosen through the link, and every
declared page opened with them, in English and in Chinese. Before, the Memory page crashed on a layout it
had no catalog line for (KeyError 'memory.layout_chunked') and greyed its block-size box for anything but paged;
a fresh app dropped `?attn=<toy>` as invalid when the extension loaded with the engine. Values are checked by hand:
the chunked cache's slots are ceil(tokens / block) * block, its bytes those slots times the bytes of a token."""

import json
import math
import os
import subprocess
import sys

import pytest
from toy_extensions import CHUNKED, ONLINE, registered
from ui_helpers import APP, PROMPT, ROOT, declared_pages, open_app, page_file, rendered_text, shown

from llmviz.analysis.kv_memory import human
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS
from llmviz.ui.settings import Settings

MODEL = "llmviz-tiny"
SUPPORT = ROOT / "tests" / "support"


@pytest.fixture
def toys():
    with registered() as backend:
        yield backend
    assert CHUNKED.name not in KV_LAYOUTS.recorded and ONLINE.name not in ATTN_BACKENDS


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_page_opens_with_the_toy_layout_and_backend(toys, lang):
    at = open_app(None, model=MODEL, prompt=PROMPT, lang=lang, attn=ONLINE.name, engine="kv-layout=chunked")
    assert not any("attn" in w.value or "engine" in w.value for w in at.warning)  # the link's values are choices
    run = at.session_state["llmviz_run"]
    assert run.trace.engine_config["attn_backend"] == ONLINE.name and toys.calls > 0
    assert {s.kv["layout"] for s in run.trace.steps} == {CHUNKED.name}
    for page in declared_pages():
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
    at.switch_page(page_file("decode")).run()
    caption = " ".join(shown(c.value) for c in at.caption)
    assert CHUNKED.about_in(lang) in caption  # the cache's line is its declaration's, in the page's language


def test_the_memory_page_prices_the_toy_layout_by_its_rule_with_its_block_box(toys):
    at = open_app(page_file("memory"))
    box = at.selectbox(key="mem_layout")
    assert list(box.options)[-1] == CHUNKED.label_in("en") and CHUNKED.about_in("en") in shown(box.proto.help)
    box.set_value(CHUNKED.name).run()
    assert not at.number_input(key="mem_block").proto.disabled  # its declaration reads the block size
    at.selectbox(key="mem_dtype").set_value("fp32").run()
    for key, value in (("mem_tokens", 10), ("mem_block", 4)):
        at.number_input(key=key).set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    cfg = json.loads((ROOT / "assets" / MODEL / "config.json").read_text())
    per_token = cfg["num_hidden_layers"] * 2 * cfg["num_key_value_heads"] * (
        cfg["hidden_size"] // cfg["num_attention_heads"]) * 4  # K and V, every layer, fp32
    assert metrics["KV per sequence"] == human(math.ceil(10 / 4) * 4 * per_token)  # 3 chunks of 4 slots
    at.selectbox(key="mem_layout").set_value("dynamic").run()
    assert at.number_input(key="mem_block").proto.disabled  # the growing layout reads no block size


def test_the_memory_page_in_chinese_names_the_toy_layout_in_chinese(toys):
    at = open_app(page_file("memory"), lang="zh")
    assert CHUNKED.label_in("zh") in at.selectbox(key="mem_layout").options
    assert not [t for t in rendered_text(at) if "chunked" in t]  # its name is not shown where a label exists


def test_the_compare_switch_list_gives_the_toys_lines(toys):
    at = open_app(page_file("compare"))
    table = next(t.value for t in at.table if "switch" in t.value.columns).set_index("switch")
    assert ONLINE.name in table.loc["attn", "values"] and CHUNKED.name in table.loc["kv-layout", "values"]
    assert ONLINE.about_in("en") in table.loc["attn", "what"]
    assert CHUNKED.about_in("en") in table.loc["kv-layout", "what"]
    assert table.loc["attn", "exact?"] == "exact"  # both declared exact


FRESH_APP = """
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.query_params.update(model=sys.argv[2], prompt=sys.argv[3], attn="online")
before = "llmviz.engine" in sys.modules
at.run()
box = at.selectbox(key="home_attn")
print(json.dumps({"engine_before": before, "exception": [str(e.value) for e in at.exception],
                  "options": list(box.options), "value": box.value, "warnings": [w.value for w in at.warning],
                  "ran": at.session_state["llmviz_run"].trace.engine_config["attn_backend"]}))
"""


def fresh_app(plugins: str) -> dict:
    env = {**os.environ, "LLMVIZ_EXTENSIONS": plugins,
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(SUPPORT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", FRESH_APP, APP, MODEL, PROMPT], env=env, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_fresh_app_keeps_a_plugin_backend_from_the_link():
    """A new server process, the plugin named in LLMVIZ_EXTENSIONS, the engine not imported yet: the link's
    attn=online is a choice from the first run, labelled in its own words, and the run uses it."""
    got = fresh_app("toy_plugin")
    assert got["engine_before"] is False and got["exception"] == []
    assert got["options"] == ["eager", "sdpa", "flash", "Online softmax"] and got["value"] == ONLINE.name
    assert not any("attn" in w for w in got["warnings"]) and got["ran"] == ONLINE.name


def test_a_plugin_that_fails_is_named_in_the_sidebar_and_the_link_value_dropped():
    got = fresh_app("no_such_llmviz_plugin")
    default = Settings().attn  # the link's value dropped: the default backend runs
    assert got["exception"] == [] and got["value"] == default and got["ran"] == default
    assert any("no_such_llmviz_plugin" in shown(w) and "ModuleNotFoundError" in w for w in got["warnings"])
    assert any("attn='online'" in shown(w) for w in got["warnings"])  # the link's value, named as today
