"""The lesson's side of a step: the step's own map is drawn from the student's run, and its shapes and
bytes are those of the engine's recorded tensors (not the arithmetic that drew it): the prompt's K and V as the
engine held them, the new token's row, and the cache after each decode step as its KV snapshot says; the whole
model's map a tab away; the chapter's recap on its last step (R) and the article's slips (S) on tabs a key opens."""

import base64
import re

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file

from llmviz.trace import hooks
from llmviz.ui.keys import script
from llmviz.ui.lesson.lesson_side import TABS_KEY, keys
from llmviz.ui.lesson.lesson_steps import STEPS
from llmviz.ui.state import RUN_KEY

PAGE = page_file("lesson")
BLOCK = re.compile(r'<g data-block="(\w+)" data-side="(\w+)" data-shape="\[([\d, ]+)\]">')

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the embedded model is not trained yet")


def step_map(at) -> list[tuple[str, str, tuple[int, ...]]]:
    """(block, side, shape) of the step's map: the first image, the first tab's."""
    url = at.get("image")[0].proto.imgs[0].url
    svg = base64.b64decode(url.split(",", 1)[1]).decode("utf-8")
    return [(b, side, tuple(int(x) for x in shape.split(", "))) for b, side, shape in BLOCK.findall(svg)]


def at_step(position: str):
    at = open_app(PAGE, lang="zh", lesson=position)
    assert not at.exception, [e.value for e in at.exception]
    return at, at.session_state[RUN_KEY].trace


def test_prefills_q_k_v_are_the_engines():
    at, trace = at_step("1.1.4")
    first = trace.steps[0]
    _, heads, n, hd = first.hook(hooks.q(0)).shape  # [b, heads, n, head_dim] as the engine holds it
    _, kv, _, _ = first.hook(hooks.k(0)).shape
    embed = tuple(first.hook("embed").shape[1:])
    assert step_map(at) == [("embed", "prefill", embed), ("q", "prefill", (n, heads, hd)),
                            ("k", "prefill", (n, kv, hd)), ("v", "prefill", (n, kv, hd))]


def test_the_new_row_beside_the_prompts_rows():
    at, trace = at_step("1.2.1")
    assert step_map(at) == [("embed", "prefill", tuple(trace.steps[0].hook("embed").shape[1:])),
                            ("embed", "decode", tuple(trace.steps[1].hook("embed").shape[1:]))]


def test_the_cache_grows_as_the_kv_snapshots_say():
    at, trace = at_step("1.2.3")
    kv = trace.steps[0].kv
    drawn = step_map(at)
    lengths = [s.kv["seq_len"] for s in trace.steps[:5]]  # the prompt, then after each of four decode steps
    assert drawn == [("cache", "prefill" if i == 0 else "decode", (n, kv["kv_heads"], kv["head_dim"]))
                     for i, n in enumerate(lengths)]
    assert lengths == list(range(lengths[0], lengths[0] + 5))


def test_the_caches_bytes_are_the_recorded_k_and_vs():
    at, trace = at_step("1.1.7")
    first = trace.steps[0]
    held = first.hook(hooks.k(0)).array.nbytes + first.hook(hooks.v(0)).array.nbytes  # one layer, as recorded
    url = at.get("image")[0].proto.imgs[0].url
    svg = base64.b64decode(url.split(",", 1)[1]).decode("utf-8")
    kib = held / 1024
    assert f">{kib:,.1f} KiB fp32<" in svg, (held, svg[-400:])


def step(position: str):
    return next(s for s in STEPS if s.id == position)


def test_the_slips_and_the_recap_are_tabs_a_key_opens():
    at, _ = at_step("1.1.7")  # per_layer: one slip
    assert [t.label for t in at.tabs] == ["本步的张量", "整个模型", "原文的疏漏（1）· S"]
    assert keys(step("1.1.7")) == {"g": "lesson_glossary", "m": f"{TABS_KEY}/0", "q": f"{TABS_KEY}/9",
                                   "s": f"{TABS_KEY}/2"}
    assert f'"s": "{TABS_KEY}/2"' in script(keys(step("1.1.7")))
    at, _ = at_step("1.1.3")  # no slip: two tabs, and S and R find none
    assert len(at.tabs) == 2 and keys(step("1.1.3"))["s"] == f"{TABS_KEY}/9"
    at, _ = at_step("1.1.8")  # §1.1's last step: its recap, then its slip
    assert [t.label for t in at.tabs][2:] == ["§1.1 小结 · Q", "原文的疏漏（1）· S"]
    assert keys(step("1.1.8")) == {"g": "lesson_glossary", "m": f"{TABS_KEY}/0", "q": f"{TABS_KEY}/2",
                                   "s": f"{TABS_KEY}/3"}


@pytest.mark.parametrize("bad", ["lesson_side/x", "a b/1", ""])
def test_a_key_names_a_plain_button_and_index(bad):
    with pytest.raises(ValueError):
        script({"s": bad})


def test_the_articles_shapes_are_one_click_away():
    """The switch runs the same step on gpt2-124m-random, whose width is the article's 768 (its config file), and
    back on the student's model."""
    import json

    from ui_helpers import ROOT

    width = json.loads((ROOT / "assets" / "gpt2-124m-random" / "config.json").read_text())["n_embd"]
    at, trace = at_step("1.2.1")
    home, n = at.session_state["llmviz_settings"].model, len(trace.prompt_ids)
    at.toggle(key="lesson_shapes").set_value(True).run()
    assert not at.exception and at.session_state["llmviz_settings"].model == "gpt2-124m-random"
    assert step_map(at) == [("embed", "prefill", (n, width)), ("embed", "decode", (1, width))]
    at.toggle(key="lesson_shapes").set_value(False).run()
    assert at.session_state["llmviz_settings"].model == home
    assert step_map(at)[1][2][1] != width
