"""A real redis-server for the class store's tests: Debian's `redis-server` (apt, as `.ci/run` installs
it), on a free port, in a temporary folder, saving nothing; killed after. None where it is absent."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from browser_kit import free_port

REDIS = shutil.which("redis-server") or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None)
ABSENT = "redis-server is absent (apt-get install -y redis-server, as .ci/run does as root)"
EXPECTED = "LLMVIZ_EXPECT_REDIS"  # set by .ci/run when the machine has redis-server: then the tests must find it


def absent() -> None:
    """Where redis-server is not found: a skip with the reason, or, where .ci/run found it (EXPECTED set), a failure:
    a store test that silently skipped there would hide a broken lookup."""
    import pytest

    if os.environ.get(EXPECTED):
        pytest.fail(f"{ABSENT}; {EXPECTED} says this machine has it")
    pytest.skip(ABSENT)


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """Start one; yield its URL (redis://127.0.0.1:port/0)."""
    port = free_port()
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait(timeout=10)
