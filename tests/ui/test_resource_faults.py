"""Resource faults: a model folder deleted while cached, a device this machine lacks, out of memory
while loading: a message in the session's language, and a working app afterwards."""

from __future__ import annotations

import shutil

import pytest
from ui_helpers import open_app, page_file

PROMPT = "The quick brown fox"


def click(at, label: str) -> None:
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, [e.value for e in at.exception]


def kv_length(at) -> int:
    return int(next(m.value for m in at.metric if m.label == "KV cache length"))


def test_a_model_folder_deleted_while_cached(model_dirs, tmp_path):
    folder = tmp_path / "doomed"
    shutil.copytree(model_dirs["llama_gqa_rope3"], folder)
    at = open_app(page_file("decode"), model=str(folder), prompt=PROMPT)
    first = kv_length(at)
    shutil.rmtree(folder)
    click(at, "Next ▶")  # the loaded model is cached in memory: stepping goes on
    assert kv_length(at) == first + 1 and not at.error
    at = open_app(page_file("decode"), model=str(folder), prompt=PROMPT, dtype="bf16")  # a new load: the folder is gone
    assert not at.exception
    assert any("Model not found" in e.value for e in at.error), [e.value for e in at.error]
    at = open_app(page_file("decode"), model=str(model_dirs["llama_gqa_rope3"]), prompt=PROMPT)
    assert not at.error and kv_length(at) == first  # the app works afterwards


def test_cuda_asked_on_a_machine_without_it(model_dirs):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU: the device is there")
    for lang, headline in (("en", "This device is not available here"), ("zh", "本机没有该设备")):
        at = open_app(page_file("decode"), model=str(model_dirs["llama_gqa_rope3"]), prompt=PROMPT, device="cuda",
                      lang=lang)
        assert not at.exception
        assert any(headline in e.value for e in at.error), [e.value for e in at.error]
    at = open_app(page_file("decode"), model=str(model_dirs["llama_gqa_rope3"]), prompt=PROMPT, device="cpu")
    assert not at.error and kv_length(at) > 0


def test_out_of_memory_while_loading(model_dirs, monkeypatch):
    import torch

    from llmviz.engine.loading import model as loading

    real = loading.build

    def boom(*args, **kwargs):  # the allocator gives up while the weights are placed on the device
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(loading, "build", boom)
    folder = str(model_dirs["mistral"])  # not loaded by another test of this module: the cache misses
    at = open_app(page_file("decode"), model=folder, prompt=PROMPT, dtype="bf16")
    assert not at.exception
    assert any("The device ran out of memory" in e.value and "try dtype fp16/bf16" in e.value for e in at.error), \
        [e.value for e in at.error]
    monkeypatch.setattr(loading, "build", real)
    at = open_app(page_file("decode"), model=folder, prompt=PROMPT, dtype="bf16")
    assert not at.error and kv_length(at) > 0


UNEXPECTED = [(RuntimeError("expected size 4 but got 5"), "en", "Something went wrong"),
              (KeyError("layers.9.q"), "zh", "出现了意外错误"),
              (TypeError("unsupported operand"), "en", "Something went wrong (TypeError: unsupported operand)"),
              (RuntimeError("CPU out of memory"), "en", "The device ran out of memory")]  # the engine types it


@pytest.mark.parametrize("error,lang,headline", UNEXPECTED)
def test_an_unexpected_engine_error_is_a_message_not_a_traceback(model_dirs, monkeypatch, error, lang, headline):
    monkeypatch.delenv("LLMVIZ_RAISE_UNEXPECTED")
    at = open_app(page_file("decode"), model=str(model_dirs["gpt2"]), prompt=PROMPT, lang=lang)
    # the engine's model under the run's handle: the fault is injected inside it
    model = at.session_state["llmviz_run"].handle._session.lm.model

    def boom(*args, **kwargs):
        raise error

    monkeypatch.setattr(model, "forward", boom)
    next(b for b in at.button if b.label in ("Next ▶", "下一步 ▶")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(headline in e.value for e in at.error), [e.value for e in at.error]
    monkeypatch.undo()
    at = open_app(page_file("decode"), model=str(model_dirs["gpt2"]), prompt=PROMPT)
    assert not at.error and kv_length(at) > 0
