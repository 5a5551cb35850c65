"""Drive the real app in headless Debian Chromium: shared by the browser test, the UI benchmark and the
screenshot script.

    with AppServer() as server, chromium() as browser:
        page = browser.new_page()
        page.goto(server.url("decode", model="llmviz-tiny"))
        wait_idle(page)

The server is `streamlit run app.py` in its own process group (killed on exit, always); the browser is
/usr/bin/chromium through the `playwright` package (never `playwright install`: it downloads a browser).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
EXCEPTION = '[data-testid="stException"]'

# The value of the st.metric whose label is `label` (None when the page has no such metric).
METRIC_JS = """(label) => {
  for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
    const l = m.querySelector('[data-testid="stMetricLabel"]');
    if (l && l.innerText.trim() === label) {
      const v = m.querySelector('[data-testid="stMetricValue"]');
      return v ? v.innerText.trim() : null;
    }
  }
  return null;
}"""


def stepper_button(page, name: str):
    """The Decode page's Previous / Next / Play buttons by their widget keys (dec_prev, dec_next, dec_play): their
    accessible names also hold the keyboard shortcut's hint ("Next ▶ Shortcut →"), and Play becomes Pause."""
    return page.locator(f".st-key-dec_{name} button")


def declared_pages() -> list[tuple[str, str]]:
    """(file, url path) of every page the app's frame declares (llmviz/ui/frame.py PAGES), in order; the default
    page lives at "" (the root)."""
    from llmviz.ui.frame import PAGES

    return [(f"app_pages/{file}", path) for file, _, _, path in PAGES]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AppServer:
    """`streamlit run app.py` on a free port, offline; `with` waits for /_stcore/health and kills it after."""

    def __init__(self, app: str = "app.py", port: int | None = None, wait: bool = True, timeout: float = 60,
                 extra: tuple = (), address: str | None = "127.0.0.1"):
        self.app, self.port, self.wait, self.timeout = app, port or free_port(), wait, timeout
        self.address = address  # None: Streamlit's own default bind (every address, IPv4 as ::ffff: on one socket)
        self.extra = tuple(extra)  # more `streamlit run` options, e.g. ("--server.disconnectedSessionTTL", "5")
        self.log = tempfile.NamedTemporaryFile("w+", prefix="llmviz-server-", suffix=".log", delete=False)  # noqa: SIM115
        self.proc: subprocess.Popen | None = None
        self.started = 0.0

    def url(self, page: str = "", **query) -> str:
        tail = f"?{urllib.parse.urlencode(query)}" if query else ""
        return f"http://127.0.0.1:{self.port}/{page}{tail}"

    def start(self) -> AppServer:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
        cmd = [sys.executable, "-m", "streamlit", "run", self.app, "--server.headless", "true",
               "--server.port", str(self.port), *(("--server.address", self.address) if self.address else ()),
               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", "--server.runOnSave",
               "false", *self.extra]
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        return self

    def wait_healthy(self) -> float:
        """Seconds from start() until /_stcore/health answers ok."""
        deadline = self.started + self.timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}:\n{self.output()}")
            with (contextlib.suppress(OSError, urllib.error.URLError),
                  urllib.request.urlopen(self.url("_stcore/health"), timeout=2) as answer):
                if answer.status == 200:
                    return time.perf_counter() - self.started
            time.sleep(0.1)
        raise TimeoutError(f"streamlit not healthy after {self.timeout} s:\n{self.output()}")

    def output(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)  # the group this server leads, nothing else
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()
        with contextlib.suppress(OSError):
            os.unlink(self.log.name)

    def __enter__(self) -> AppServer:
        self.start()
        try:
            if self.wait:
                self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def chromium(headless: bool = True):
    """A playwright Browser on Debian's /usr/bin/chromium; closed (and the driver stopped) on exit."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise FileNotFoundError(f"{CHROMIUM} is absent: apt-get install -y chromium fonts-noto-cjk")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=headless)
        try:
            yield browser
        finally:
            browser.close()


def wait_idle(page, timeout_s: float = 60, settle_s: float = 0.3) -> None:
    """Wait until the script has run and is idle: the state must stay 'notRunning' for settle_s."""
    deadline = time.perf_counter() + timeout_s
    while True:
        page.wait_for_selector(IDLE, state="attached", timeout=max(1, deadline - time.perf_counter()) * 1000)
        page.wait_for_timeout(settle_s * 1000)
        if page.query_selector(IDLE) is not None:
            return
        if time.perf_counter() > deadline:
            raise TimeoutError("the app never became idle")


def full_height(page, width: int, cap: int = 16000) -> int:
    """Grow the viewport to the app's content height (Streamlit scrolls an inner element, not the page)."""
    height = page.evaluate("""() => {
      const main = document.querySelector('[data-testid="stMain"]') || document.body;
      return Math.max(main.scrollHeight, document.body.scrollHeight);
    }""")
    height = min(max(int(height), 600), cap)
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_timeout(600)  # let plotly re-lay out at the new size
    return height


def metric(page, label: str) -> str | None:
    return page.evaluate(METRIC_JS, label)


def wait_metric_change(page, label: str, old: str | None, timeout_s: float = 30) -> str:
    """Wait until the metric shows a value other than `old` with the script idle; return the new value."""
    page.wait_for_function(
        "([label, old]) => { const metricOf = " + METRIC_JS + ";\n"
        "  const value = metricOf(label);\n"
        f"  return document.querySelector('{IDLE}') !== null && value !== null && value !== old; }}",
        arg=[label, old], polling="raf", timeout=timeout_s * 1000)
    return metric(page, label)


def wait_text(page, text: str, timeout_s: float = 20) -> None:
    """Wait until the page's main area holds `text` (a class's fragment asks the store every 1-2 s)."""
    page.wait_for_function("(t) => document.querySelector('[data-testid=stMain]').innerText.includes(t)", arg=text,
                           timeout=timeout_s * 1000)


def exceptions(page) -> list[str]:
    return [e.inner_text()[:500] for e in page.query_selector_all(EXCEPTION)]


# Every st.metric value whose label is `label`, in page order (the Compare page draws A's, then B's).
METRICS_JS = """(label) => {
  const out = [];
  for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
    const l = m.querySelector('[data-testid="stMetricLabel"]');
    if (l && l.innerText.trim() === label) {
      const v = m.querySelector('[data-testid="stMetricValue"]');
      out.push(v ? v.innerText.trim() : null);
    }
  }
  return out;
}"""


def wait_metric_count(page, label: str, count: int, timeout_s: float = 120) -> list[str]:
    """Wait until `count` metrics labelled `label` show with the script idle; return their values."""
    page.wait_for_function(
        "([label, count]) => { const all = " + METRICS_JS + ";\n"
        f"  return document.querySelector('{IDLE}') !== null && all(label).length >= count; }}",
        arg=[label, count], polling=250, timeout=timeout_s * 1000)
    return page.evaluate(METRICS_JS, label)


# ---- Async variants (many browser sessions driven at once from one thread: the concurrency harness) ----

@contextlib.asynccontextmanager
async def chromium_async(headless: bool = True):
    """An async playwright Browser on Debian's /usr/bin/chromium; one browser, a context per app session."""
    from playwright.async_api import async_playwright

    if not CHROMIUM.exists():
        raise FileNotFoundError(f"{CHROMIUM} is absent: apt-get install -y chromium fonts-noto-cjk")
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=headless)
        try:
            yield browser
        finally:
            await browser.close()


async def wait_idle_async(page, timeout_s: float = 60, settle_s: float = 0.3) -> None:
    """wait_idle for an async page."""
    deadline = time.perf_counter() + timeout_s
    while True:
        await page.wait_for_selector(IDLE, state="attached",
                                     timeout=max(1, deadline - time.perf_counter()) * 1000)
        await page.wait_for_timeout(settle_s * 1000)
        if await page.query_selector(IDLE) is not None:
            return
        if time.perf_counter() > deadline:
            raise TimeoutError("the app never became idle")


async def metric_async(page, label: str) -> str | None:
    return await page.evaluate(METRIC_JS, label)


async def exceptions_async(page) -> list[str]:
    return [(await e.inner_text())[:500] for e in await page.query_selector_all(EXCEPTION)]


def page_title_key(file: str) -> str:
    """The catalog key of a page's title: `heading(t, "<page>")` in its file gives "<page>.title"."""
    found = re.search(r'heading\(t, "([^"]+)"\)', (ROOT / file).read_text())
    return f"{found.group(1)}.title" if found else ""


def process_tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its children (psutil), e.g. the streamlit server's."""
    import psutil

    root = psutil.Process(pid)
    total = 0
    for proc in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total


def server_log(server: AppServer) -> str:
    """The server's whole log so far (AppServer.output() keeps only the tail)."""
    server.log.flush()
    return Path(server.log.name).read_text(errors="replace")


# ---- Click-to-shown timing (bench/ui_latency.py, bench/concurrency.py) ----
# CLICK_CLOCK arms a capture listener that stamps the click; SHOWN stamps the first frame where the metric
# `label` shows a value other than `old` and the app is idle.
CLICK_CLOCK = """() => {
  window.__llmvizClick = null;
  if (!window.__llmvizListening) {
    document.addEventListener('click', () => { window.__llmvizClick = performance.now(); }, true);
    window.__llmvizListening = true;
  }
}"""

SHOWN = ("([label, old]) => { const metricOf = " + METRIC_JS + ";\n"
         "  const value = metricOf(label);\n"
         f"  if (document.querySelector('{IDLE}') !== null && value !== null && value !== old) {{\n"
         "    window.__llmvizShown = performance.now(); return true; }\n"
         "  return false; }")
