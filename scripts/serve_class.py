"""A whole class on one machine (issue 24): N app processes behind HAProxy, each browser session kept on one.

    scripts/serve-class --replicas 2 --port 8501 [--host 0.0.0.0] [--public]

One Streamlit process is bound by Python (its GIL): on a 2-core machine it leaves the second core idle. Here N
`streamlit run app.py` replicas listen on 127.0.0.1 (free ports, chosen at start) and HAProxy (the system's package:
apt-get install haproxy) listens on P. A Streamlit session lives in one process (its websocket, its widgets, its
media files: a chart's image, a download), so HAProxy pins each browser to one replica with a cookie it inserts
(LLMVIZ_REPLICA) on the first answer; websockets pass through its HTTP mode. The replicas share nothing but the
read-only model files and one cookie secret (so a browser's XSRF token is valid on any of them). Public mode
(--public, LLMVIZ_PUBLIC=1) works per replica: its heavy gate (LLMVIZ_HEAVY_SLOTS, default 1) is one queue per
process, so N replicas run up to N x slots heavy measurements at once: size the slots to the cores.

Several machines: start `streamlit run app.py --server.address 0.0.0.0` on each with the same
STREAMLIT_SERVER_COOKIE_SECRET in the environment, and here list them with --backend HOST:PORT (--replicas 0 starts
none on this one); the balancer is the same. Ctrl-C stops everything.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from browser_kit import free_port  # noqa: E402 (the same script folder; it imports no browser)

COOKIE = "LLMVIZ_REPLICA"


def haproxy_config(port: int, host: str, backends: list[str]) -> str:
    """HAProxy's configuration: HTTP mode (websockets upgrade through it), round robin over the replicas, a cookie
    that keeps a browser on the replica that first answered it, health checks on Streamlit's own endpoint."""
    servers = "\n".join(f"  server r{i} {b} check inter 2s cookie r{i}" for i, b in enumerate(backends, 1))
    return f"""global
  maxconn 4096
defaults
  mode http
  timeout connect 5s
  timeout client 1h
  timeout server 1h
  timeout tunnel 1h
frontend class
  bind {host}:{port}
  default_backend replicas
backend replicas
  balance roundrobin
  cookie {COOKIE} insert indirect nocache httponly
  option httpchk GET /_stcore/health
{servers}
"""


def replica_command(port: int) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
            "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none", "--server.runOnSave", "false"]


def find_haproxy() -> str | None:
    """HAProxy's path (Debian puts it in /usr/sbin, which a user's PATH may lack), or None."""
    return shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)


def healthy(url: str, timeout_s: float, proc: subprocess.Popen | None = None) -> bool:
    """Whether `url` answers 200 within `timeout_s` (False at once when `proc` has ended)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.3)
    return False


class Class:
    """The replicas and the balancer, as child process groups; stop() ends them all."""

    def __init__(self, replicas: int, port: int, host: str = "127.0.0.1", backends: tuple[str, ...] = (),
                 public: bool = False, haproxy: str | None = None, log_dir: Path | None = None):
        self.haproxy = haproxy or find_haproxy()
        if self.haproxy is None:
            raise SystemExit("serve-class needs HAProxy: apt-get install haproxy (Debian/Ubuntu), brew install haproxy")
        if replicas < 0 or (replicas == 0 and not backends):
            raise SystemExit("at least one replica here (--replicas) or one --backend elsewhere")
        self.port, self.host, self.public = port, host, public
        self.replica_ports = [free_port() for _ in range(replicas)]  # free now: another server may hold port + 1
        self.backends = [f"127.0.0.1:{p}" for p in self.replica_ports] + list(backends)
        self.dir = log_dir or Path(tempfile.mkdtemp(prefix="llmviz-class-"))
        self.procs: list[subprocess.Popen] = []

    def _spawn(self, cmd: list[str], name: str, env: dict) -> subprocess.Popen:
        with open(self.dir / f"{name}.log", "wb") as log:  # the child keeps its own copy of the descriptor
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs.append(proc)
        return proc

    def start(self, timeout_s: float = 120) -> Class:
        try:
            return self._start(timeout_s)
        except BaseException:  # Ctrl-C while the replicas warm up, a refused port: no replica is left running
            self.stop()
            raise

    def _start(self, timeout_s: float) -> Class:
        secret = os.environ.get("STREAMLIT_SERVER_COOKIE_SECRET") or secrets.token_hex(16)  # one for all replicas
        env = dict(os.environ, HF_HUB_OFFLINE=os.environ.get("HF_HUB_OFFLINE", "1"), PYTHONUNBUFFERED="1",
                   STREAMLIT_SERVER_COOKIE_SECRET=secret)
        if self.public:
            env["LLMVIZ_PUBLIC"] = "1"
        replicas = [self._spawn(replica_command(p), f"replica{i}", env | {"LLMVIZ_REPLICA": f"r{i}"})
                    for i, p in enumerate(self.replica_ports, 1)]
        for p, proc in zip(self.replica_ports, replicas, strict=True):
            if not healthy(f"http://127.0.0.1:{p}/_stcore/health", timeout_s, proc):
                raise SystemExit(f"the replica on port {p} did not become healthy; its log is in {self.dir}")
        config = self.dir / "haproxy.cfg"
        config.write_text(haproxy_config(self.port, self.host, self.backends), encoding="utf-8")
        balancer = self._spawn([self.haproxy, "-f", str(config), "-db"], "haproxy", env)
        here = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        if not healthy(f"http://{here}:{self.port}/_stcore/health", 30, balancer):
            raise SystemExit(f"HAProxy did not answer on port {self.port}; its log is in {self.dir}")
        return self

    @property
    def pids(self) -> list[int]:
        """The replicas' process ids (the balancer's last)."""
        return [p.pid for p in self.procs]

    def stop(self) -> None:
        """End every child process group: TERM, then KILL after 10 s; each one reaped."""
        for proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()

    def __enter__(self) -> Class:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--port", type=int, default=8501, help="the balancer's port (the replicas take free ones)")
    parser.add_argument("--host", default="127.0.0.1", help="where the balancer listens (0.0.0.0: the whole LAN)")
    parser.add_argument("--backend", action="append", default=[], help="HOST:PORT of a replica on another machine")
    parser.add_argument("--public", action="store_true", help="public mode on every replica (LLMVIZ_PUBLIC=1)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `kill` stops the class as Ctrl-C does
    try:
        with Class(args.replicas, args.port, args.host, tuple(args.backend), args.public) as served:
            print(f"llmviz for a class: http://{args.host}:{args.port}/ -> {', '.join(served.backends)} "
                  f"(pids {served.pids}; logs in {served.dir})", flush=True)
            while all(p.poll() is None for p in served.procs):
                time.sleep(1)
            ended = next(p for p in served.procs if p.poll() is not None)
            raise SystemExit(f"{' '.join(map(str, ended.args[:3]))}... ended (exit {ended.returncode}); logs in "
                             f"{served.dir}; stopping the class")
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
