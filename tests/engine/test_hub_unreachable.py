"""A hub id when the hub cannot be reached (users in mainland China): a typed error within seconds that
names both other ways in (a mirror through HF_ENDPOINT, a ModelScope download into a folder), in English and
Chinese. Tested against endpoints on 127.0.0.1 only: one that refuses, one that accepts and never answers (before
this check, a download waited on the silent one for minutes)."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmviz.i18n.translator import Translator

ROOT = Path(__file__).resolve().parents[2]
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


@pytest.fixture
def silent_endpoint():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)  # accepts connections (the kernel does), never reads or answers
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    srv.close()


def closed_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there now: refused


@pytest.mark.parametrize("kind", ["silent", "refused"])
def test_the_cli_says_both_ways_in_within_seconds(kind, request, tmp_path):
    url = request.getfixturevalue("silent_endpoint") if kind == "silent" else closed_endpoint()
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env.update(HF_ENDPOINT=url, HF_HOME=str(tmp_path / "hf"), PYTHONPATH=str(ROOT))
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "llmviz", "generate", "--model", MODEL, "--prompt", "济南的冬天"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - began
    assert done.returncode != 0 and "Traceback" not in done.stderr
    said = done.stdout + done.stderr
    assert url in said and "HF_ENDPOINT" in said and f"modelscope download --model {MODEL}" in said
    assert elapsed < 20, f"{elapsed:.1f} s"  # 3 s of probing, the rest is starting Python and torch


def test_the_page_message_names_both_ways_in_each_language():
    params = {"name": MODEL, "endpoint": "https://huggingface.co", "seconds": "3", "folder": "Qwen2.5-0.5B-Instruct"}
    for lang, words in (("en", ("mirror", "ModelScope")), ("zh", ("镜像", "ModelScope"))):
        text = Translator(lang)("errdetail.model_hub_unreachable", **params)
        assert "HF_ENDPOINT=https://hf-mirror.com" in text and all(w in text for w in words)
        assert f"modelscope download --model {MODEL} --local_dir ./Qwen2.5-0.5B-Instruct" in text


def test_the_probe_needs_an_answer_not_just_a_connection(silent_endpoint, monkeypatch):
    from llmviz.engine.loading import hub

    monkeypatch.setenv("HF_ENDPOINT", silent_endpoint)
    began = time.monotonic()
    assert hub.hub_reachable(timeout=1.0) is False  # the TCP connect succeeds; no HTTP answer comes
    assert time.monotonic() - began < 5
    monkeypatch.setenv("HF_ENDPOINT", closed_endpoint())
    assert hub.hub_reachable(timeout=1.0) is False


def test_the_probe_counts_any_http_answer(monkeypatch):
    """A hub that answers, with any status (this one 404s everything), is there: the download may go ahead."""
    import http.server
    import threading

    from llmviz.engine.loading import hub

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # 501 to every method
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        assert hub.hub_reachable(timeout=2.0) is True
    finally:
        server.shutdown()
        server.server_close()
