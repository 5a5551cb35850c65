"""A hub that answers the probe's HEAD at once and then drips each GET a byte a second: the
download's requests must each get their first bytes (hub_client.FIRST_BYTES) within hub_client.FIRST_BYTES_S, so
`llmviz generate --model nobody/x` exits 2 with one line (the typed ModelNotCachedError that names the mirror and
ModelScope) within 15 s instead of hanging; a transfer that is slow but progressing after its first bytes is not cut
off. Local servers on 127.0.0.1 only, as tests/engine/test_hub_unreachable.py."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hostile_helpers import time_limit

ROOT = Path(__file__).resolve().parents[2]
BODY = b'{"id": "nobody/x", "siblings": []}' * 20


class Hub(http.server.BaseHTTPRequestHandler):
    """HEAD at once; GET: `first` bytes at once, then the rest of `body` a chunk of `drip` bytes every `every` s."""

    protocol_version = "HTTP/1.1"
    body, first, drip, every = BODY, 0, 1, 1.0

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        try:
            self.wfile.write(self.body[:self.first])
            for i in range(self.first, len(self.body), self.drip):
                self.wfile.flush()
                time.sleep(self.every)
                self.wfile.write(self.body[i:i + self.drip])
        except OSError:  # the client gave up
            pass


def serve(handler) -> tuple[str, http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


@pytest.fixture
def dripping():
    url, server = serve(Hub)
    yield url
    server.shutdown()
    server.server_close()


def test_a_dripped_answer_times_out_at_the_bound(dripping):
    import httpx2

    from llmviz.engine.loading.hub_client import FirstBytesTransport

    with httpx2.Client(transport=FirstBytesTransport(seconds=1.0, first=2**14), timeout=None) as client:
        began = time.monotonic()
        with time_limit(10), pytest.raises(httpx2.ReadTimeout):  # unbounded, the drip would take 680 s
            client.get(f"{dripping}/api/models/nobody/x/revision/main").read()
        assert 0.9 < time.monotonic() - began < 3  # the bound, not the 680 s the drip would take
        assert client.head(f"{dripping}/api/models").status_code == 200  # an answer in time passes


def test_a_slow_transfer_past_its_first_bytes_goes_on():
    """64 KiB: its first 16 KiB at once, the rest 8 KiB every 0.4 s (2 s in all, twice the 1 s bound): read whole."""
    import httpx2

    from llmviz.engine.loading.hub_client import FirstBytesTransport

    body = bytes(range(256)) * 256
    url, server = serve(type("Slow", (Hub,), {"body": body, "first": 2**14, "drip": 2**13, "every": 0.4}))
    try:
        with httpx2.Client(transport=FirstBytesTransport(seconds=1.0, first=2**14), timeout=None) as client:
            began = time.monotonic()
            assert client.get(f"{url}/model.safetensors").content == body
            assert time.monotonic() - began > 1.5  # it did take longer than the bound
    finally:
        server.shutdown()
        server.server_close()


def run_generate(url: str, tmp_path: Path, seconds: float | None = None):
    """`llmviz generate --model nobody/x` in a fresh process with HF_ENDPOINT at `url` (and, given `seconds`, the
    first-bytes bound set to it); returns (the finished process, its wall time)."""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env.update(HF_ENDPOINT=url, HF_HOME=str(tmp_path / "hf"), PYTHONPATH=str(ROOT))
    argv = ["generate", "--model", "nobody/x", "--prompt", "hi"]
    code = ("import sys; from llmviz.engine.loading import hub_client as c; "
            f"c.FIRST_BYTES_S = {seconds}; from llmviz.cli.main import main; sys.exit(main({argv!r}))")
    command = [sys.executable, "-m", "llmviz", *argv] if seconds is None else [sys.executable, "-c", code]
    began = time.monotonic()
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    return done, time.monotonic() - began


def check_one_line(done, url: str, seconds: float) -> None:
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    line = lines[0]
    assert line.startswith("error: nobody/x is not in the local Hugging Face cache") and url in line, line
    assert f"within {seconds:g} s" in line and "HF_ENDPOINT" in line and "modelscope download --model nobody/x" in line


def test_the_cli_gives_up_on_a_dripping_hub_in_one_line(dripping, tmp_path):
    """With the bound at 1 s (so the default suite stays quick): the hub's two requests before any file (the agent
    registry huggingface_hub fetches once a day, the model's file list) each give up at it."""
    done, elapsed = run_generate(dripping, tmp_path, seconds=1.0)
    check_one_line(done, dripping, 1.0)
    assert elapsed < 15, f"{elapsed:.1f} s"


@pytest.mark.slow
def test_the_cli_gives_up_on_a_dripping_hub_within_15_s(dripping, tmp_path):
    """The shipped bound (5 s a request): 2 x 5 s and starting Python, under 15 s (it hung until killed before)."""
    from llmviz.engine.loading.hub_client import FIRST_BYTES_S

    done, elapsed = run_generate(dripping, tmp_path)
    check_one_line(done, dripping, FIRST_BYTES_S)
    assert elapsed < 15, f"{elapsed:.1f} s"
