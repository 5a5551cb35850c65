"""Home page: the model card shows the engine's numbers; bad input gets a clear message, never a traceback."""

import re

import pytest
from streamlit.testing.v1 import AppTest
from ui_helpers import open_app, shown

from llmviz.engine.loading.model import load_model
from llmviz.ui.chrome import literal


def open_home(**params) -> AppTest:
    return open_app(**params)


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def test_model_card_and_token_count(model_dirs):
    folder = model_dirs["qwen2"]
    lm = load_model(str(folder))
    prompt = "This module provides functions"
    at = open_home(model=folder, prompt=prompt)
    shown = metrics(at)
    c = lm.cfg
    assert shown["Parameters"] == f"{lm.parameters:,}"
    assert shown["Layers"] == str(c.num_layers) and shown["head_dim"] == str(c.head_dim)
    assert shown["Heads / KV heads"] == f"{c.num_heads} / {c.num_kv_heads}"
    assert shown["Vocabulary"] == f"{c.vocab_size:,}" and shown["Positions"] == "RoPE"
    n = len(lm.tokenizer.encode(prompt))
    assert any(f"**{n} tokens**" in m.value for m in at.markdown)


def test_run_button_applies_the_widgets(model_dirs):
    at = open_home(model=model_dirs["gpt2"], prompt="Return the")
    at.text_area(key="home_prompt").set_value("The quick brown fox jumps").run()
    next(b for b in at.button if b.label == "Load and run the prefill").click().run()
    assert not at.exception
    assert at.session_state["llmviz_run"].trace.prompt == "The quick brown fox jumps"
    assert at.query_params["prompt"] in ("The quick brown fox jumps", ["The quick brown fox jumps"])
    assert metrics(at)["Positions"] == "learned"


@pytest.mark.parametrize("params,needle", [
    ({"prompt": "   "}, "Prompt problem"),
    ({"prompt": "word " * 400}, "this run holds 256"),
    ({"model": "./no/such/folder"}, "Model not found"),
    ({"model": "someone/not-cached-model"}, "offline"),
    ({"device": "cuda"}, "This device is not available here"),
    ({"dtype": "fp64"}, "not valid and were ignored"),
])
def test_bad_input_gets_a_message(model_dirs, params, needle):
    import torch

    if params.get("device") == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    params = {"model": model_dirs["gpt2"], "prompt": "hello", **params}
    at = open_home(**params)
    texts = [e.value for e in at.error] + [w.value for w in at.warning]
    assert any(needle in text for text in texts), texts


def test_kv_cache_that_does_not_fit(model_dirs, monkeypatch):
    import llmviz.engine.platform.memory as memory

    monkeypatch.setattr(memory, "free_bytes", lambda device: 10_000)
    at = open_home(model=model_dirs["llama_tied"], prompt="hello")
    assert any("does not fit in memory" in e.value and "shorter max_seq_len" in shown(e.value) for e in at.error)


def test_an_example_prompt_runs_at_once(model_dirs):
    at = open_home(model=model_dirs["gpt2"], prompt="Return the")
    at.pills(key="home_example").set_value("济南的冬天").run()
    assert not at.exception
    run = at.session_state["llmviz_run"]
    assert run.trace.prompt == "济南的冬天" and at.text_area(key="home_prompt").value == "济南的冬天"
    n = len(run.trace.prompt_ids)
    assert any(f"**{n} tokens**" in m.value for m in at.markdown)


@pytest.mark.parametrize("params,needle", [
    ({"prompt": "   "}, "提示词为空"),
    ({"prompt": "word " * 400}, "最多容纳 256 个"),
    ({"model": "./no/such/folder"}, "既不是本机上的文件夹"),
    ({"model": "someone/not-cached-model"}, "尚未下载"),
])
def test_common_errors_are_explained_in_chinese(model_dirs, params, needle):
    params = {"model": model_dirs["gpt2"], "prompt": "hello", "lang": "zh", **params}
    at = open_home(**params)
    errors = [e.value for e in at.error]
    assert any(needle in e for e in errors), errors
    for error in errors:  # no English left in the detail, apart from names and shared terms
        detail = error.split("**")[-1]
        for kept in (literal(str(params["model"])), str(params["model"]), "token", "Hugging Face", "ID"):
            detail = detail.replace(kept, "")
        assert not re.search("[A-Za-z]", detail), error


def test_engine_switches_reach_the_stepper(model_dirs):
    folder = model_dirs["llama_gqa_rope3"]  # 2 layers, 2 KV heads of 16
    at = open_home(model=folder, prompt="The quick brown fox", engine="kv-dtype=fp16,kv-layout=paged")
    run = at.session_state["llmviz_run"]
    kv = run.trace.steps[0].kv
    n = len(run.trace.prompt_ids)
    assert (kv["layout"], kv["kv_dtype"]) == ("paged", "fp16")
    assert kv["bytes_used"] == n * 2 * 2 * 16 * 2 * 2  # tokens x layers x kv heads x head_dim x K,V x 2 bytes
    at = open_home(model=folder, prompt="The quick brown fox", engine="kv-heads=1")
    assert at.session_state["llmviz_run"].trace.model_card["config"]["num_kv_heads"] == 1


@pytest.mark.parametrize("engine,needle", [("warp=9", "not valid and were ignored"),
                                           ("dtype=fp16", "with its own box"),
                                           ("kv-heads=3", "must divide")])
def test_bad_engine_switches_get_a_message(model_dirs, engine, needle):
    at = open_home(model=model_dirs["llama_gqa_rope3"], prompt="hello", engine=engine)
    texts = [e.value for e in at.error] + [w.value for w in at.warning]
    assert any(needle in x for x in texts), texts
