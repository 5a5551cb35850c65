"""Every way serve-class stops leaves nothing behind: its temporary folder (logs, HAProxy's
configuration, the jail) is gone and its children have ended after Ctrl-C, `kill`, a closed terminal, a child that
died, and a start that failed or was interrupted; HAProxy is started without the cookie secret in its environment.

A stand-in HAProxy (tests/support/balancer_helpers.py: it records its pid and environment, then answers on the
configured port) lets this run in the default suite; test_balancer_load.py does the same with the real one.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from balancer_helpers import ROOT, fake_haproxy, started

sys.path.insert(0, str(ROOT / "scripts"))
from browser_kit import free_port
from serve_class import Class

SECRET = "not-for-haproxy-0123456789abcdef"


def as_in_a_terminal() -> None:
    """SIGINT and SIGHUP at their default dispositions (Python turns the first into KeyboardInterrupt), as a terminal
    starts serve-class: run in its process before it starts (Popen's preexec_fn). A suite run as a background job
    ignores SIGINT, and under nohup SIGHUP; a child inherits that across exec, so serve-class would never see the
    Ctrl-C these tests send. (serve-class keeps the SIGINT it inherits: whoever starts it so means Ctrl-C to pass.)"""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def serve_class(tmp_path):
    """Start scripts/serve-class (its shell entry point) with the stand-in HAProxy first on PATH: (the process, the
    line it printed once the class answered). One the test left running is stopped after it."""
    bin_dir, procs = tmp_path / "bin", []
    fake_haproxy(bin_dir)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env |= {"PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "STREAMLIT_SERVER_COOKIE_SECRET": SECRET}

    def start() -> tuple[subprocess.Popen, str]:
        procs.append(subprocess.Popen([str(ROOT / "scripts" / "serve-class"), "--replicas", "0", "--backend",
                                       "127.0.0.1:9", "--port", str(free_port())], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      preexec_fn=as_in_a_terminal))
        line = procs[-1].stdout.readline()
        assert "llmviz for a class" in line, line
        return procs[-1], line

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(20)


@pytest.mark.parametrize("how, code", [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129), ("child ends", 1)])
def test_every_stop_removes_the_folder_and_ends_the_children(serve_class, tmp_path, how, code):
    proc, line = serve_class()
    folder = re.search(r"logs in (\S+)\)", line).group(1)
    record = started(tmp_path / "bin" / "started.json")
    assert os.path.isdir(folder) and sorted(os.listdir(folder))[:2] == ["haproxy.cfg", "haproxy.log"]
    assert SECRET not in str(record["env"]) and "STREAMLIT_SERVER_COOKIE_SECRET" not in record["env"]
    if how == "child ends":
        os.kill(record["pid"], signal.SIGKILL)  # HAProxy dies: the class notices within a second and stops
    else:
        proc.send_signal(getattr(signal, how))
    assert proc.wait(20) == code, proc.stderr.read()
    assert not os.path.exists(folder) and gone(record["pid"])
    if how == "child ends":
        assert "haproxy ended (exit -9)" in proc.stderr.read()


def test_a_failed_start_says_why_and_removes_the_folder(tmp_path):
    script, _ = fake_haproxy(tmp_path / "bin", "fail")
    c = Class(0, free_port(), backends=("127.0.0.1:9",), haproxy=str(script))
    with pytest.raises(SystemExit) as exc:
        c.start()
    assert "cannot bind socket" in str(exc.value)  # HAProxy's alert, copied before its log went with the folder
    assert c.dir is not None and not c.dir.exists()


def test_a_taken_port_is_refused_before_anything_starts(tmp_path):
    script, record = fake_haproxy(tmp_path / "bin")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        c = Class(0, taken.getsockname()[1], backends=("127.0.0.1:9",), haproxy=str(script))
        with pytest.raises(SystemExit, match=r"port \d+ on 127.0.0.1 is taken"):
            c.start()
    assert not record.exists() and not c.dir.exists()  # no HAProxy was started, no folder is left


def test_ctrl_c_while_the_class_starts_removes_the_folder(tmp_path):
    script, record = fake_haproxy(tmp_path / "bin", "hang")  # it never answers: start() waits until the Ctrl-C
    c = Class(0, free_port(), backends=("127.0.0.1:9",), haproxy=str(script))
    while_waiting = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    # this process's Ctrl-C as in a terminal, also when the suite runs under nohup or as a background job (ignored)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        while_waiting.start()
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            c.start()
        while_waiting.join()
    finally:
        while_waiting.cancel()  # never a Ctrl-C after the handler is put back
        signal.signal(signal.SIGINT, signal.SIG_DFL if before is None else before)
    assert time.monotonic() - t0 < 15
    assert not c.dir.exists() and gone(started(record)["pid"])


def test_a_folder_the_caller_names_is_kept(tmp_path):
    script, _ = fake_haproxy(tmp_path / "bin")
    logs = tmp_path / "logs"
    logs.mkdir()
    with Class(0, free_port(), backends=("127.0.0.1:9",), haproxy=str(script), log_dir=logs):
        pass
    assert (logs / "haproxy.log").exists() and (logs / "haproxy.cfg").exists()
