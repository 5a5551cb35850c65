"""Public mode: an allow-list of models (no path on the server can be named), upload limits, and
heavy measurements queued in one guarded object so one user cannot starve the others."""

from __future__ import annotations

import threading
import time

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file, rendered_text

from llmviz.errors import NotAllowedError, ServerBusyError
from llmviz.ui.public import DEFAULT_MODELS, HeavyGate, Policy

PUBLIC = {"LLMVIZ_PUBLIC": "1"}


def test_the_local_tool_is_not_public_and_allows_any_name():
    p = Policy.from_env({})
    assert not p.public and p.heavy_slots == 0
    p.check_model("/any/folder/on/this/machine")  # the local tool loads what its user names
    assert Policy.from_env({"LLMVIZ_PUBLIC": "0"}).public is False


def test_public_mode_allows_only_its_list():
    p = Policy.from_env({**PUBLIC, "LLMVIZ_ALLOWED_MODELS": " llmviz-tiny , HuggingFaceTB/SmolLM2-135M "})
    assert p.public and p.models == ("llmviz-tiny", "HuggingFaceTB/SmolLM2-135M")
    p.check_model("llmviz-tiny")
    for name in ("/etc", "../assets/llmviz-tiny", "assets/llmviz-tiny", "~/models/x", "gpt2", "LLMVIZ-TINY",
                 "llmviz-tiny/../../etc", "C:\\Windows", ""):
        with pytest.raises(NotAllowedError) as err:
            p.check_model(name)
        assert err.value.code == "model_not_allowed" and "llmviz-tiny" in str(err.value)
    assert Policy.from_env(PUBLIC).models == DEFAULT_MODELS  # the embedded models and the random shapes


@pytest.mark.parametrize("raw", ["-1", "0", "nan", "abc", "1e309", "inf"])
def test_a_bad_public_setting_keeps_the_strict_default(raw):
    p = Policy.from_env({**PUBLIC, "LLMVIZ_MAX_UPLOAD_MB": raw, "LLMVIZ_HEAVY_SLOTS": raw})
    assert (p.max_upload_mb, p.heavy_slots) == (8, 1)
    assert len(p.problems) == 2 and "LLMVIZ_MAX_UPLOAD_MB" in p.problems[0]


def test_upload_limit():
    p = Policy.from_env({**PUBLIC, "LLMVIZ_MAX_UPLOAD_MB": "0.5"})
    p.check_upload(500_000)
    with pytest.raises(NotAllowedError, match="holds 500,001 bytes; this server takes at most 500,000 bytes"):
        p.check_upload(500_001)
    with pytest.raises(NotAllowedError, match=r"holds 2\.5 MB"):
        p.check_upload(2_500_000)


def test_the_gate_runs_one_at_a_time_in_arrival_order():
    gate, order, inside, most = HeavyGate(1), [], [0], [0]
    lock = threading.Lock()

    def work(name: str) -> None:
        with gate.slot(name, wait_s=10):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                order.append(name)
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    threads = []
    for name in ("a", "b", "c", "d"):
        threads.append(threading.Thread(target=work, args=(name,)))
        threads[-1].start()
        time.sleep(0.01)  # arrive in this order
    for th in threads:
        th.join(10)
    assert order == ["a", "b", "c", "d"] and most[0] == 1
    assert not gate.queue and not gate.running  # nothing left behind


def test_the_gate_refuses_a_second_run_of_one_session_and_times_out():
    gate = HeavyGate(1)
    seen = []
    with gate.slot("a", wait_s=1):
        with pytest.raises(ServerBusyError) as err, gate.slot("a", wait_s=1):
            pass
        assert err.value.code == "busy_session"
        began = time.monotonic()
        with pytest.raises(ServerBusyError) as err, gate.slot("b", wait_s=0.3, on_wait=seen.append):
            pass
        assert err.value.code == "busy_server" and 0.25 < time.monotonic() - began < 10  # waited, then gave up
        assert seen and set(seen) == {0}  # b was first in the queue, behind the running one
    assert not gate.queue and not gate.running
    with gate.slot("b", wait_s=0):  # free again
        assert gate.running == {"b"}


def test_two_slots_run_two_at_once():
    gate, both = HeavyGate(2), threading.Barrier(2, timeout=5)

    def work(name):
        with gate.slot(name, wait_s=5):
            both.wait()  # raises BrokenBarrierError unless the two hold a slot at the same time

    threads = [threading.Thread(target=work, args=(n,)) for n in "ab"]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    assert not both.broken


needs_embedded = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the allow-list names the embedded model")


@needs_embedded
def test_a_public_page_refuses_a_path_in_the_link_and_offers_the_list(monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    at = open_app(model="/etc", prompt="The list of")
    shown = [e.value.replace("\\", "") for e in at.error]  # the names are escaped for markdown
    assert any("Not available on this server" in e and "llmviz-tiny" in e for e in shown), shown
    box = at.selectbox(key="home_model")
    assert list(box.options) == list(DEFAULT_MODELS) and box.value == DEFAULT_MODELS[0]
    assert any("Public server" in x for x in rendered_text(at))
    zh = open_app(page_file("decode"), model="../assets/llmviz-tiny", lang="zh")
    assert any("此服务器不提供该项" in e.value for e in zh.error), [e.value for e in zh.error]
    assert not zh.exception


@needs_embedded
def test_a_public_upload_over_the_limit_is_refused(monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    monkeypatch.setenv("LLMVIZ_MAX_UPLOAD_MB", "0.001")  # 1,000 bytes
    at = open_app(page_file("serving"))
    at.selectbox(key="serve_trace_w").set_value("upload").run()
    at.file_uploader(key="serve_upload_w").set_value(("big.json", b" " * 1001, "application/json")).run()
    assert not at.exception
    assert any("1,001 bytes" in e.value and "at most 1,000 bytes" in e.value for e in at.error), \
        [e.value for e in at.error]


@needs_embedded
def test_a_public_measurement_runs_through_the_gate(monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    at = open_app(page_file("serving"), prompt="The list of")
    next(b for b in at.button if b.label == "Run speculative decoding").click().run(timeout=240)
    assert not at.exception and not at.error
    assert at.session_state["llmviz_serve_spec"][1]["identical_outputs"]
