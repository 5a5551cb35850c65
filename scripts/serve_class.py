"""A whole class on one machine: N app processes behind HAProxy, each browser session kept on one.

    scripts/serve-class --replicas 2 --port 8501 [--host 0.0.0.0] [--public] [--logs DIR]

One Streamlit process is bound by Python (its GIL): on a 2-core machine it leaves the second core idle. Here N
`streamlit run app.py` replicas listen on 127.0.0.1 (free ports, chosen at start) and HAProxy (the system's package:
apt-get install haproxy) listens on P. A Streamlit session lives in one process (its websocket, its widgets, its
media files: a chart's image, a download), so HAProxy pins each browser to one replica with a cookie it inserts
(LLMVIZ_REPLICA) on the first answer; websockets pass through its HTTP mode. The replicas share nothing but the
read-only model files and one cookie secret (so a browser's XSRF token is valid on any of them). Public mode
(--public, LLMVIZ_PUBLIC=1) works per replica: its heavy gate (LLMVIZ_HEAVY_SLOTS, default 1) is one queue per
process, so N replicas run up to N x slots heavy measurements at once: size the slots to the cores.

Several machines: start `streamlit run app.py --server.address 0.0.0.0` on each with the same
STREAMLIT_SERVER_COOKIE_SECRET in the environment and LLMVIZ_TRUSTED_PROXIES set to this balancer's address as they
see it (else each of them counts every student as the balancer, one client, for the join and rerun limits), and here
list them with --backend HOST:PORT (--replicas 0 starts none on this one); the balancer is the same. The replicas
started here trust 127.0.0.1, HAProxy's address, and nothing else (llmviz/classroom/clients.py).
HAProxy's limits (timeouts, connections per client address) and the account it runs as are in
scripts/class_balancer.py; it never sees the cookie secret. Ctrl-C, `kill` or a closed terminal stops everything and
removes the temporary folder (logs, configuration); --logs DIR keeps the logs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from browser_kit import free_port  # noqa: E402 (the same script folder; it imports no browser)
from class_balancer import COOKIE, MAXCONN, account_for, haproxy_config, haproxy_env, maxconn_for  # noqa: E402

__all__ = ["COOKIE", "Class", "find_haproxy"]
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


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


def port_free(host: str, port: int) -> bool:
    """Whether HAProxy can bind host:port: bound here for a moment, with SO_REUSEADDR as HAProxy binds (a port
    left in TIME_WAIT is free; one another process listens on is not)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def log_tail(path: Path, lines: int = 15) -> str:
    """The end of a child's log, for a message printed after its folder is gone."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").rstrip().splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:]) or "(empty log)"


@contextlib.contextmanager
def held_signals():
    """Ctrl-C, TERM and HUP wait until the block is done (blocked in this thread, then delivered; serve-class has
    one thread): one in the middle of a stop would leave replicas running or the folder behind."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def end_group(proc: subprocess.Popen) -> None:
    """TERM a child's process group, KILL it after 10 s; reaped either way."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class Class:
    """The replicas and the balancer, as child process groups; stop() ends them all and removes the temporary
    folder this class made (its logs, HAProxy's configuration and jail); a `log_dir` the caller names is kept."""

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
        self.temporary = log_dir is None
        self.dir = log_dir  # a temporary one is made by start(), where stop() is sure to remove it
        self.procs: list[subprocess.Popen] = []
        self.names: list[str] = []
        self.maxconn = MAXCONN  # what HAProxy holds at once; less where `ulimit -Hn` is low (see _write_config)

    def _spawn(self, cmd: list[str], name: str, env: dict) -> subprocess.Popen:
        with open(self.dir / f"{name}.log", "wb") as log:  # the child keeps its own copy of the descriptor
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs.append(proc)
        self.names.append(name)
        return proc

    def start(self, timeout_s: float = 120) -> Class:
        try:
            with held_signals():  # a TERM between making the folder and naming it would lose it
                if self.dir is None:
                    self.dir = Path(tempfile.mkdtemp(prefix="llmviz-class-"))
            return self._start(timeout_s)
        except BaseException:  # Ctrl-C while the replicas warm up, a refused port: nothing is left behind
            self.stop()
            raise

    def _start(self, timeout_s: float) -> Class:
        if not port_free(self.host, self.port):  # else the health check below would reach whoever holds it
            raise SystemExit(f"port {self.port} on {self.host or '0.0.0.0'} is taken (another class or server?); "
                             "choose another with --port")
        secret = os.environ.get("STREAMLIT_SERVER_COOKIE_SECRET") or secrets.token_hex(16)  # one for all replicas
        env = dict(os.environ, HF_HUB_OFFLINE=os.environ.get("HF_HUB_OFFLINE", "1"), PYTHONUNBUFFERED="1",
                   STREAMLIT_SERVER_COOKIE_SECRET=secret, LLMVIZ_TRUSTED_PROXIES="127.0.0.1")
        if self.public:
            env["LLMVIZ_PUBLIC"] = "1"
        if replicas := len(self.replica_ports):  # round robin splits a class between them: each holds its share of
            env.setdefault("LLMVIZ_CLIENT_BUDGET", f"{1 / replicas:.3g}")  # the budget a client address may spend
        replicas = [self._spawn(replica_command(p), f"replica{i}", env | {"LLMVIZ_REPLICA": f"r{i}"})
                    for i, p in enumerate(self.replica_ports, 1)]
        for i, (p, proc) in enumerate(zip(self.replica_ports, replicas, strict=True), 1):
            if not healthy(f"http://127.0.0.1:{p}/_stcore/health", timeout_s, proc):
                raise SystemExit(f"the replica on port {p} did not become healthy; the end of its log:\n"
                                 f"{log_tail(self.dir / f'replica{i}.log')}")
        balancer = self._spawn([self.haproxy, "-f", str(self._write_config()), "-db"], "haproxy",
                               haproxy_env(os.environ))
        here = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        if not healthy(f"http://{here}:{self.port}/_stcore/health", 30, balancer) or balancer.poll() is not None:
            raise SystemExit(f"HAProxy did not answer on port {self.port}; the end of its log:\n"
                             f"{log_tail(self.dir / 'haproxy.log')}")
        return self

    def _write_config(self) -> Path:
        """HAProxy's configuration in the class's folder; as root, with an empty, read-only jail beside it."""
        account, jail = account_for(os.geteuid()), None
        if account is not None:
            jail = self.dir / "jail"
            jail.mkdir(mode=0o555, exist_ok=True)
        self.maxconn = maxconn_for(resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        config = self.dir / "haproxy.cfg"
        config.write_text(haproxy_config(self.port, self.host, self.backends, maxconn=self.maxconn, account=account,
                                         jail=str(jail) if jail else None), encoding="utf-8")
        return config

    @property
    def pids(self) -> list[int]:
        """The replicas' process ids (the balancer's last)."""
        return [p.pid for p in self.procs]

    def ended(self) -> str | None:
        """None while every child runs; else which one ended, its exit status and the end of its log."""
        for proc, name in zip(self.procs, self.names, strict=True):
            if proc.poll() is not None:
                tail = log_tail(self.dir / f"{name}.log")
                return f"{name} ended (exit {proc.returncode}); the end of its log:\n{tail}"
        return None

    def stop(self) -> None:
        """End every child process group, then remove the temporary folder; signals held meanwhile (a second
        Ctrl-C while the replicas shut down would leave them running). Safe to call twice."""
        with held_signals():
            for proc in reversed(self.procs):
                end_group(proc)
            self.procs.clear()
            self.names.clear()
            if self.temporary and self.dir is not None:
                shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Class:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def exit_on(signum: int, frame) -> None:
    """`kill` (TERM) and a closed terminal (HUP) stop the class as Ctrl-C does, through the same `with`."""
    sys.exit(128 + signum)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--port", type=int, default=8501, help="the balancer's port (the replicas take free ones)")
    parser.add_argument("--host", default="127.0.0.1", help="where the balancer listens (0.0.0.0: the whole LAN)")
    parser.add_argument("--backend", action="append", default=[], help="HOST:PORT of a replica on another machine")
    parser.add_argument("--public", action="store_true", help="public mode on every replica (LLMVIZ_PUBLIC=1)")
    parser.add_argument("--logs", type=Path, help="keep the logs in this folder (default: a temporary one, "
                                                  "removed on stop)")
    args = parser.parse_args()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, exit_on)
    if args.logs:
        args.logs.mkdir(parents=True, exist_ok=True)
    try:
        with Class(args.replicas, args.port, args.host, tuple(args.backend), args.public, log_dir=args.logs) as c:
            print(f"llmviz for a class: http://{args.host}:{args.port}/ -> {', '.join(c.backends)} "
                  f"(pids {c.pids}; logs in {c.dir})", flush=True)
            if c.maxconn < MAXCONN:
                print(f"note: HAProxy holds {c.maxconn} connections at most here, not {MAXCONN}: the hard limit on "
                      f"open files (ulimit -Hn) is {resource.getrlimit(resource.RLIMIT_NOFILE)[1]}", file=sys.stderr)
            while (ended := c.ended()) is None:
                time.sleep(1)
            raise SystemExit(f"{ended}\nstopping the class")
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGINT)  # as the shell reports a Ctrl-C, and as TERM and HUP exit


if __name__ == "__main__":
    main()
