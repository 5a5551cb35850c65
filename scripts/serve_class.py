"""A whole class on one machine (issue 24): N app processes behind HAProxy, each browser session kept on one.

    scripts/serve-class --replicas 2 --port 8501 [--host 0.0.0.0] [--public]

One Streamlit process is bound by Python (its GIL): on a 2-core machine it leaves the second core idle. Here N
`streamlit run app.py` replicas listen on 127.0.0.1 (ports P+1 .. P+N) and HAProxy (the system's package:
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


def healthy(url: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
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
        self.haproxy = haproxy or shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists()
                                                               else None)
        if self.haproxy is None:
            raise SystemExit("serve-class needs HAProxy: apt-get install haproxy (Debian/Ubuntu), brew install haproxy")
        if replicas < 0 or (replicas == 0 and not backends):
            raise SystemExit("at least one replica here (--replicas) or one --backend elsewhere")
        self.port, self.host, self.public = port, host, public
        self.replica_ports = [port + i for i in range(1, replicas + 1)]
        self.backends = [f"127.0.0.1:{p}" for p in self.replica_ports] + list(backends)
        self.dir = log_dir or Path(tempfile.mkdtemp(prefix="llmviz-class-"))
        self.procs: list[subprocess.Popen] = []

    def _spawn(self, cmd: list[str], name: str, env: dict) -> subprocess.Popen:
        log = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115 (the child writes it until stop())
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def start(self, timeout_s: float = 120) -> Class:
        secret = os.environ.get("STREAMLIT_SERVER_COOKIE_SECRET") or secrets.token_hex(16)  # one for all replicas
        env = dict(os.environ, HF_HUB_OFFLINE=os.environ.get("HF_HUB_OFFLINE", "1"), PYTHONUNBUFFERED="1",
                   STREAMLIT_SERVER_COOKIE_SECRET=secret)
        if self.public:
            env["LLMVIZ_PUBLIC"] = "1"
        for i, p in enumerate(self.replica_ports, 1):
            self._spawn(replica_command(p), f"replica{i}", env | {"LLMVIZ_REPLICA": f"r{i}"})
        for p in self.replica_ports:
            if not healthy(f"http://127.0.0.1:{p}/_stcore/health", timeout_s):
                self.stop()
                raise SystemExit(f"replica on port {p} did not become healthy; its log is in {self.dir}")
        config = self.dir / "haproxy.cfg"
        config.write_text(haproxy_config(self.port, self.host, self.backends), encoding="utf-8")
        self._spawn([self.haproxy, "-f", str(config), "-db"], "haproxy", env)
        if not healthy(f"http://127.0.0.1:{self.port}/_stcore/health", 30):
            self.stop()
            raise SystemExit(f"HAProxy did not answer on port {self.port}; its log is in {self.dir}")
        return self

    @property
    def pids(self) -> list[int]:
        """The replicas' process ids (the balancer's last)."""
        return [p.pid for p in self.procs]

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(10)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    os.killpg(proc.pid, signal.SIGKILL)
        self.procs.clear()

    def __enter__(self) -> Class:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--port", type=int, default=8501, help="the balancer's port; replicas take the next ones")
    parser.add_argument("--host", default="127.0.0.1", help="where the balancer listens (0.0.0.0: the whole LAN)")
    parser.add_argument("--backend", action="append", default=[], help="HOST:PORT of a replica on another machine")
    parser.add_argument("--public", action="store_true", help="public mode on every replica (LLMVIZ_PUBLIC=1)")
    args = parser.parse_args()
    with Class(args.replicas, args.port, args.host, tuple(args.backend), args.public) as served:
        print(f"llmviz for a class: http://{args.host}:{args.port}/ -> {', '.join(served.backends)} "
              f"(pids {served.pids}; logs in {served.dir})", flush=True)
        try:
            while all(p.poll() is None for p in served.procs):
                time.sleep(1)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
