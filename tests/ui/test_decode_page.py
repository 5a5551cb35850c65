"""Decode page (C5, C6, C18): real steps from the engine, shown and navigated through AppTest."""

import json

import numpy as np
import pytest
from plotly_data import array
from streamlit.testing.v1 import AppTest
from ui_helpers import open_app, shown

from llmviz.analysis.sampling import distribution, stored_logits
from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.trace.config import EngineConfig, SamplingConfig

PROMPT = "The quick brown fox"


def open_decode(folder, **params) -> AppTest:
    return open_app("app_pages/decode.py", model=folder, prompt=PROMPT, **params)


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def step_shown(at) -> str:
    shown = metrics(at)
    return f"{shown['Step']} ({shown['Phase']})"


def button(at, label: str):
    return next(b for b in at.button if b.label == label)


def click(at, label: str) -> None:
    button(at, label).click().run()
    assert not at.exception, [e.value for e in at.exception]


def engine_tokens(folder, n_steps: int, **sampling) -> tuple[list[int], int]:
    lm = load_model(str(folder))
    cfg = EngineConfig(capture="full", sampling=SamplingConfig(**sampling))
    session = Session(lm, PROMPT, cfg)
    session.generate(n_steps)
    return session.trace.output_ids, session.sequences[0].prompt_len


def test_next_steps_and_grows_the_cache(model_dirs):
    folder = model_dirs["llama_gqa_rope3"]
    at = open_decode(folder)
    tokens, n = engine_tokens(folder, 4)
    assert metrics(at)["KV cache length"] == str(n)
    assert step_shown(at) == "0 (prefill)"
    assert button(at, "◀ Previous").disabled  # nothing before the prefill
    click(at, "Next ▶")
    assert not button(at, "◀ Previous").disabled  # enabled on the very rerun that shows step 1
    for _ in range(2):
        click(at, "Next ▶")
    shown = metrics(at)
    assert step_shown(at) == "3 (decode)" and shown["KV cache length"] == str(n + 3)
    assert shown["Tokens generated"] == "4"
    assert at.query_params["step"] in ("3", ["3"])
    run = at.session_state["llmviz_run"]
    assert run.trace.output_ids == tokens  # the page's run is the engine's run, token for token
    grid = json.loads(at.get("plotly_chart")[2].proto.spec)
    assert "kvgrid" in at.get("plotly_chart")[2].proto.id
    assert array(grid["data"][0]["z"]).shape == (2, n + 3)  # [kv_heads, positions]: one new column per step


def test_play_and_pause_and_a_replayed_press(model_dirs):
    """Play sets the fragment's timer, Pause stops it (each read in a callback); Play takes its first step at once,
    then one per tick, Pause none. A press that undoes the change of under a second ago is taken for Streamlit's
    replay of the press before (llmviz/ui/decode/decode_controls._play) and dropped; a later one counts."""
    at = open_decode(model_dirs["llama_gqa_rope3"])
    click(at, "Play")
    assert at.session_state["dec_playing"] is True and at.session_state["dec_ticking"] is True
    assert [b.label for b in at.button if b.key == "dec_play"] == ["Pause"] and step_shown(at) == "1 (decode)"
    click(at, "Pause")  # within the second: a replay
    assert at.session_state["dec_playing"] is True
    at.session_state["dec_pressed_at"] = at.session_state["dec_pressed_at"] - 1.5  # the press was 1.5 s ago
    click(at, "Pause")
    assert at.session_state["dec_playing"] is False and at.session_state["dec_ticking"] is False
    assert [b.label for b in at.button if b.key == "dec_play"] == ["Play"]


def test_previous_shows_the_recorded_step_without_recomputing(model_dirs):
    at = open_decode(model_dirs["gpt2"])
    for _ in range(2):
        click(at, "Next ▶")
    run = at.session_state["llmviz_run"]
    recorded = len(run.trace.steps)
    earlier_token = int(run.trace.steps[1].sampled[0])
    click(at, "◀ Previous")
    assert step_shown(at) == "1 (decode)"
    assert len(run.trace.steps) == recorded  # nothing recomputed
    assert int(run.step.sampled[0]) == earlier_token
    from llmviz.analysis.tokens import token_label

    drew = f"drew “{token_label(run.trace.tokens, earlier_token)}”"
    assert any(drew in shown(c.value) for c in at.caption), [c.value for c in at.caption]
    click(at, "Next ▶")  # shows the recorded step 2 again, no new step
    assert len(run.trace.steps) == recorded and step_shown(at) == "2 (decode)"
    click(at, "Reset")
    assert step_shown(at) == "0 (prefill)" and button(at, "◀ Previous").disabled


def test_a_link_opens_at_its_step(model_dirs):
    folder = model_dirs["qwen2"]
    at = open_decode(folder, step=4, temperature=0)
    tokens, n = engine_tokens(folder, 5, temperature=0.0)
    assert step_shown(at) == "4 (decode)" and metrics(at)["KV cache length"] == str(n + 4)
    assert at.session_state["llmviz_run"].trace.output_ids == tokens


@pytest.mark.parametrize("temperature,top_k", [(1.0, 0), (0.5, 3)])
def test_sliders_reshape_the_shown_distribution(model_dirs, temperature, top_k):
    at = open_decode(model_dirs["llama_tied"])
    at.slider(key="dec_temperature").set_value(temperature).run()
    at.slider(key="dec_top_k").set_value(top_k).run()
    step = at.session_state["llmviz_run"].step
    want = distribution(*stored_logits(step), temperature, top_k, 1.0, include=int(step.sampled[0]))
    chart = next(c for c in at.get("plotly_chart") if "dist" in c.proto.id)
    shown = array(json.loads(chart.proto.spec)["data"][1]["y"])
    assert np.allclose(shown, want.probs)
    click(at, "Next ▶")  # the sliders govern the next token: it was drawn with these settings
    assert at.session_state["llmviz_run"].step.sampling["top_k"] == top_k


def test_out_of_memory_shows_a_message_and_the_page_recovers(model_dirs, monkeypatch):
    import torch

    at = open_decode(model_dirs["gpt2"])
    # the engine's model under the run's handle: the fault is injected inside it
    model = at.session_state["llmviz_run"].handle._session.lm.model

    def boom(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(model, "forward", boom)
    click(at, "Next ▶")
    assert any("The device ran out of memory" in e.value for e in at.error)
    assert step_shown(at) == "0 (prefill)"
    monkeypatch.undo()
    click(at, "Next ▶")
    assert step_shown(at) == "1 (decode)" and not at.error


@pytest.mark.parametrize("capture", ["meta", "off"])
def test_a_trace_without_tensors_replays_what_it_holds(model_dirs, capture):
    from llmviz.ui.state import RUN_KEY, Run

    lm = load_model(str(model_dirs["mistral"]))
    trace = Session(lm, PROMPT, EngineConfig(capture=capture, stop_at_eos=False)).generate(3)
    at = AppTest.from_file(open_app.__globals__["APP"], default_timeout=120)
    at.session_state[RUN_KEY] = Run(None, trace, None, 0)
    at.run()
    at.switch_page("app_pages/decode.py").run()
    for _ in range(2):
        click(at, "Next ▶")
    assert step_shown(at) == "2 (decode)"
    assert metrics(at)["KV cache length"] == str(trace.steps[2].kv["seq_len"])
    assert any("capture level " + capture in w.value for w in at.warning)
    dist = next(c for c in at.get("plotly_chart") if "dist" in c.proto.id)  # drawn from the stored logits
    assert array(json.loads(dist.proto.spec)["data"][0]["y"]).max() > 0
    assert not any("kvgrid" in c.proto.id for c in at.get("plotly_chart"))


def test_a_link_replays_a_run_whose_sliders_moved_halfway(model_dirs):
    """Same seed, same run: the link records the steps drawn with other settings than the sliders now hold."""
    folder = model_dirs["llama_tied"]
    at = open_decode(folder, temperature=1.0)
    for _ in range(2):
        click(at, "Next ▶")
    at.slider(key="dec_temperature").set_value(0.0).run()  # greedy from step 3 on
    for _ in range(2):
        click(at, "Next ▶")
    at.slider(key="dec_top_k").set_value(5).run()  # and top-k 5 for the next one
    click(at, "Next ▶")
    first = at.session_state["llmviz_run"].trace
    params = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert params["history"] and params["step"] == "5"
    again = open_app("app_pages/decode.py", **params)
    second = again.session_state["llmviz_run"].trace
    assert second.output_ids == first.output_ids
    assert [s.sampling for s in second.steps] == [s.sampling for s in first.steps]
    assert {s.sampling["temperature"] for s in first.steps} == {1.0, 0.0}


def test_history_round_trip():
    from llmviz.ui.settings import decode_history, encode_history

    per_step = [(1.0, 50, 1.0)] * 3 + [(0.0, 50, 1.0)] * 2 + [(0.7, 5, 0.9)]
    text = encode_history(per_step, now=(0.7, 5, 0.9))
    assert text == "0-2:1,50,1;3-4:0,50,1"
    assert decode_history(text) == {i: per_step[i] for i in range(5)}
    with pytest.raises(ValueError):
        decode_history("0-x:1,50,1")


def test_the_seed_box_falls_back_to_the_runs_seed_not_to_zero(model_dirs):
    """Issue 19 (found by bench/concurrency.py): under load a browser that lost the seed box's state sent the box's
    default back as a change, and the run was resampled with seed 0. The box's default is the run's seed, so a
    fallback is no change; a seed typed in still applies."""
    at = open_decode(model_dirs["gpt2"], seed=46)
    next(b for b in at.button if b.label.startswith("Next")).click().run()
    box = at.number_input(key="dec_seed")
    assert box.value == 46 and box.proto.default == 46  # a browser falling back to the default sends 46: no change
    box.set_value(7).run()
    assert at.session_state["llmviz_settings"].seed == 7 and not at.exception


@pytest.mark.parametrize("layout, says", [
    ("contiguous", "reserves max_seq_len slots per sequence up front"),
    ("paged", "only the last block has unused slots"),
    ("dynamic", "nothing is reserved"),
])
def test_the_cache_caption_says_what_its_own_layout_reserves(model_dirs, layout, says):
    """Issue 22: the caption no longer says every layout preallocates; its bytes are the run's own snapshot."""
    at = open_decode(model_dirs["llama_gqa_rope3"], engine=f"kv-layout={layout}")
    click(at, "Next ▶")
    caption = next(c.value for c in at.caption if c.value.startswith("This step grew every layer's cache"))
    assert says in shown(caption)  # the layout's line, escaped as markdown where it renders
    kv = at.session_state["llmviz_run"].step.kv
    assert kv["layout"] == layout and f"Bytes used {kv['bytes_used']:,} of {kv['bytes_allocated']:,}" in caption
    if layout == "dynamic":
        assert kv["bytes_used"] == kv["bytes_allocated"]  # exactly the tokens held
    elif layout == "contiguous":
        assert kv["bytes_allocated"] > kv["bytes_used"]  # the reserved rows
