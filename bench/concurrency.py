"""Concurrent browser sessions on one server (Reliability): prints one JSON object. Not part of pytest.

    python bench/concurrency.py [--sessions 8] [--steps 10] [--tour decode,trace] [--out FILE]

One `streamlit run app.py` (AppServer) and one headless Chromium with a browser context per session, so each is
its own Streamlit session on the shared cached model. Every session has its own prompt, seed and temperature
(some greedy, some sampled) and walks the tour: a list of (page, action) entries, ENTRIES below; a new page
plugs in with one line there. On Decode all sessions wait at a barrier, then press Next --steps times at once
(asyncio: every page's clicks are in flight together, each session waiting for its own previous step); after
half of them each moves its temperature slider (Home: greedy; End: 2.0) and steps on. Every press is timed in
the browser, from the click event (a capture listener) to the first animation frame where the Step metric shows
the new step with the script idle. On Trace each session downloads its run (.zip) in the same session.

Then each session's tokens (the downloaded trace's sampled ids, and the token each step's caption shows) are
compared with the engine run alone, in this process, with that session's settings exactly as the app builds them
(Settings.engine_config, the seed included) and the temperature schedule the session followed. Reported: p50 /
p95 / max click-to-step latency for --sessions sessions and for 1 session alone on the same warm server,
exception boxes, server tracebacks, mismatches, timeouts (a deadlock shows as one), and the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from browser_kit import (  # noqa: E402
    CLICK_CLOCK,
    IDLE,
    METRIC_JS,
    SHOWN,
    AppServer,
    chromium_async,
    declared_pages,
    exceptions_async,
    metric_async,
    page_title_key,
    process_tree_rss,
    server_log,
    stepper_button,
    wait_idle_async,
)
from common import percentile as common_percentile  # noqa: E402

from llmviz.i18n.translator import translate  # noqa: E402
from llmviz.ui.lesson.lesson_steps import STEP_IDS  # noqa: E402

PROMPTS = ("The list of", "Return the", "This module provides", "The quick brown fox", "If the value is",
           "A new", "The default", "Each time the")
TEMPERATURES = (0.0, 0.7, 1.0, 0.0, 0.9, 1.3, 0.0, 0.5)  # greedy and sampled sessions side by side
WAIT_S = 120  # any one wait (a page, a step, a download); a longer one counts as a timeout
ERROR_BOX = '[data-testid="stAlertContentError"]'


def t(key: str, **kw) -> str:
    return translate("en", key, **kw)


@dataclass(frozen=True)
class Plan:
    """What one browser session does: its settings, its Next presses, and when and how its temperature moves."""

    index: int
    prompt: str
    seed: int
    temperature: float
    steps: int
    change_at: int  # Next presses before the temperature slider moves
    key: str  # pressed on the focused slider: "Home" (temperature 0, greedy) or "End" (2.0)

    @property
    def new_temperature(self) -> float:
        return 0.0 if self.key == "Home" else 2.0

    def query(self) -> dict:
        return {"prompt": self.prompt, "seed": self.seed, "temperature": self.temperature}


def plans(n: int, steps: int, first: int = 0) -> list[Plan]:
    out = []
    for i in range(first, first + n):
        temp = TEMPERATURES[i % len(TEMPERATURES)]
        out.append(Plan(i, PROMPTS[i % len(PROMPTS)], 11 + 7 * i, temp, steps, steps // 2,
                        "Home" if temp > 0 else "End"))
    return out


@dataclass
class Client:
    """One browser session (its own browser context) and what the harness saw in it."""

    plan: Plan
    page: Any
    base: str  # the server's root URL
    prompt_tokens: int  # what the tokenizer makes of the prompt (pages check they show it)
    barrier: asyncio.Barrier | None = None
    opened: bool = False
    latencies_ms: list[float] = field(default_factory=list)
    temperatures: list[float] = field(default_factory=list)  # what each computed step was set to draw with
    drawn: list[str | None] = field(default_factory=list)  # the token each step's caption on Decode shows
    checks: dict[str, bool] = field(default_factory=dict)  # per-page checks: "home: prompt tokens" -> ok
    seen: dict[str, Any] = field(default_factory=dict)  # what a failed check saw
    exceptions: list[str] = field(default_factory=list)
    error_boxes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the harness's own failures (a timeout among them)
    timeouts: int = 0
    trace: Any = None  # the run downloaded from Trace (RunTrace)
    server_threads: Any = None

    def check(self, name: str, ok: bool, seen: Any = None) -> None:
        self.checks[name] = ok
        if not ok:
            self.seen[name] = seen


# ---- actions: each opens its page in the session (a link first, the sidebar after) and checks something ----

URL_PATHS = {Path(file).stem: url for file, url in declared_pages()}
FILES = {Path(file).stem: file for file, _ in declared_pages()}


async def open_page(c: Client, stem: str) -> None:
    """The page `stem` in this session: first as a link with the session's settings, then through the sidebar
    (same Streamlit session, so its run is kept); waits for the page's title with the script idle."""
    path = URL_PATHS[stem]
    if not c.opened:
        await c.page.goto(f"{c.base}/{path}?{urllib.parse.urlencode(c.plan.query())}", timeout=WAIT_S * 1000)
        c.opened = True
    else:
        links = c.page.locator('[data-testid="stSidebarNav"] a[data-testid="stSidebarNavLink"]')
        hrefs = [urllib.parse.urlparse(h or "").path for h in await links.evaluate_all("a => a.map(x => x.href)")]
        await links.nth(hrefs.index(f"/{path}")).click()
    title = t(page_title_key(FILES[stem]))
    await c.page.wait_for_function(
        "([title]) => { const h = document.querySelector('[data-testid=\"stMain\"] h1');\n"
        f"  return document.querySelector('{IDLE}') !== null && h !== null && h.innerText.trim() === title; }}",
        arg=[title], polling=100, timeout=WAIT_S * 1000)
    await wait_idle_async(c.page, WAIT_S, settle_s=0.3)


async def wait_metric_async(page, label: str) -> str | None:
    """The metric's value once it is drawn (a page's first metric can lag its idle state while the browser loads
    the metric's code); None if it never shows."""
    try:
        await page.wait_for_function(f"([label]) => ({METRIC_JS})(label) !== null", arg=[label], polling=100,
                                     timeout=WAIT_S * 1000)
    except Exception as exc:
        if not is_timeout(exc):
            raise
    return await metric_async(page, label)


async def visit(c: Client, stem: str) -> None:
    """Open the page; the harness then counts its exception and error boxes (no other check)."""
    await open_page(c, stem)


async def home_prompt_tokens(c: Client, stem: str) -> None:
    """Home says this session's prompt and its token count (not another session's)."""
    await open_page(c, stem)
    want = t("home.prompt_tokens", prompt=c.plan.prompt, n=c.prompt_tokens).replace("**", "").split(".")[0]
    shown = await c.page.locator('[data-testid="stMain"]').inner_text()
    c.check("home: own prompt and token count", want in shown, shown[:300])


async def token_count(c: Client, stem: str) -> None:
    """Tokens shows this session's prompt's token count."""
    await open_page(c, stem)
    shown = await wait_metric_async(c.page, t("tokens.n_tokens"))
    c.check("tokens: own token count", shown == str(c.prompt_tokens), shown)


async def lesson_steps(c: Client, stem: str) -> None:
    """The lesson: its first step's panel counts this session's prompt tokens; Next twice reaches §1.1's third step,
    the URL naming it."""
    await open_page(c, stem)
    shown = await wait_metric_async(c.page, t("tokens.n_tokens"))
    c.check("lesson: own token count", shown == str(c.prompt_tokens), shown)
    for k in (1, 2):
        await c.page.locator(".st-key-lesson_next button").click(timeout=WAIT_S * 1000)
        await c.page.wait_for_function(
            "([want]) => new URLSearchParams(location.search).get('lesson') === want", arg=[STEP_IDS[k]],
            polling=100, timeout=WAIT_S * 1000)
        await wait_idle_async(c.page, WAIT_S, settle_s=0.3)
    c.check("lesson: the URL's step", f"lesson={STEP_IDS[2]}" in c.page.url, c.page.url)


DRAWN_JS = """() => {
  for (const c of document.querySelectorAll('[data-testid="stCaptionContainer"]')) {
    const m = c.innerText.match(/This step drew “([\\s\\S]*)” \\(with temperature/);
    if (m) return m[1];
  }
  return null;
}"""


async def drawn_token(page) -> str | None:
    return await page.evaluate(DRAWN_JS)


async def timed_next(c: Client) -> float:
    """Press Next once; ms from the click event to the frame showing the new step with the script idle."""
    label = t("decode.step")
    old = await metric_async(c.page, label)
    await c.page.evaluate(CLICK_CLOCK)
    await stepper_button(c.page, "next").click(timeout=WAIT_S * 1000)
    await c.page.wait_for_function(SHOWN, arg=[label, old], polling="raf", timeout=WAIT_S * 1000)
    ms = await c.page.evaluate("() => window.__llmvizShown - window.__llmvizClick")
    await wait_idle_async(c.page, WAIT_S, settle_s=0.2)  # no click lands while a rerun is still finishing
    return ms


async def move_temperature(c: Client) -> float:
    """Focus the Temperature slider and press the plan's key; wait until the URL carries the new value."""
    slider = c.page.locator('[data-testid="stSlider"]').filter(has_text=t("decode.temperature")).get_by_role("slider")
    await slider.focus()
    await slider.press(c.plan.key)
    want = str(c.plan.new_temperature)
    deadline = time.perf_counter() + WAIT_S
    while urllib.parse.parse_qs(urllib.parse.urlparse(c.page.url).query).get("temperature") != [want]:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the URL never showed temperature={want}: {c.page.url}")
        await c.page.wait_for_timeout(100)
    await wait_idle_async(c.page, WAIT_S, settle_s=0.3)
    return c.plan.new_temperature


async def step_decode(c: Client, stem: str) -> None:
    """Decode: (all sessions together after a barrier) Next x steps, the temperature moved halfway."""
    await open_page(c, stem)
    shown = await wait_metric_async(c.page, t("decode.step"))
    c.check("decode: opens at step 0", shown == "0", shown)
    c.temperatures, c.drawn = [c.plan.temperature], [await drawn_token(c.page)]
    if c.barrier is not None:
        await asyncio.wait_for(c.barrier.wait(), WAIT_S)
    temperature = c.plan.temperature
    for k in range(c.plan.steps):
        if k == c.plan.change_at:
            temperature = await move_temperature(c)
        c.latencies_ms.append(await timed_next(c))
        c.temperatures.append(temperature)
        c.drawn.append(await drawn_token(c.page))
    c.check("decode: the URL's step", f"step={c.plan.steps}" in c.page.url, c.page.url)


async def download_trace(c: Client, stem: str) -> None:
    """Trace: download this session's run (.zip) and keep it for the comparison with the engine alone."""
    from llmviz.trace.records import trace_from_zip

    await open_page(c, stem)
    async with c.page.expect_download(timeout=WAIT_S * 1000) as info:
        await c.page.locator('[data-testid="stDownloadButton"] button').click(timeout=WAIT_S * 1000)
    download = await info.value
    c.trace = trace_from_zip(Path(await download.path()).read_bytes())
    c.server_threads = c.trace.steps[-1].timings.get("threads")
    c.check("trace: own prompt and seed", c.trace.prompt == c.plan.prompt and c.trace.seed == c.plan.seed,
            [c.trace.prompt, c.trace.seed])


Action = Callable[[Client, str], Awaitable[None]]
# The harness: (page file stem, action), in tour order. A new page plugs in with one line (`visit` at least).
ENTRIES: list[tuple[str, Action]] = [
    ("home", home_prompt_tokens),
    ("lesson", lesson_steps),
    ("tokens", token_count),
    ("prefill", visit),
    ("decode", step_decode),
    ("layer", visit),
    ("compare", visit),
    ("kv_layouts", visit),
    ("batch", visit),
    ("serving", visit),
    ("memory", visit),
    ("claims", visit),
    ("trace", download_trace),
]
ACTIONS = dict(ENTRIES)
BENCH_TOUR = ("decode", "trace")


def missing_pages() -> list[str]:
    """Declared pages with no entry in ENTRIES (the coverage test wants none)."""
    return [stem for stem in URL_PATHS if stem not in ACTIONS]


# ---- running sessions at once ----

def is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError | asyncio.TimeoutError) or type(exc).__name__ == "TimeoutError"


async def run_client(browser, base: str, plan: Plan, tour: tuple[str, ...], barrier, prompt_tokens: int) -> Client:
    context = await browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    c = Client(plan, await context.new_page(), base, prompt_tokens, barrier)
    try:
        for stem in tour:
            await ACTIONS[stem](c, stem)
            c.exceptions += await exceptions_async(c.page)
            c.error_boxes += [(await e.inner_text())[:300] for e in await c.page.query_selector_all(ERROR_BOX)]
    except BaseException as exc:  # recorded, and the other sessions freed from the barrier
        c.timeouts += is_timeout(exc)
        c.errors.append(f"{type(exc).__name__}: {str(exc)[:400]}")
        if barrier is not None:
            await barrier.abort()
        if not isinstance(exc, Exception):
            raise
    finally:
        await context.close()
    return c


async def run_sessions(browser, server: AppServer, session_plans: list[Plan], tour, prompt_tokens: dict,
                       total_timeout_s: float) -> tuple[list[Client], float, int]:
    """Every plan as its own session, all at once; (clients, wall seconds, sessions still running at the limit)."""
    barrier = asyncio.Barrier(len(session_plans)) if len(session_plans) > 1 else None
    base = server.url().rstrip("/")
    began = time.perf_counter()
    tasks = [asyncio.create_task(run_client(browser, base, p, tour, barrier, prompt_tokens[p.prompt]))
             for p in session_plans]
    done, pending = await asyncio.wait(tasks, timeout=total_timeout_s)
    for task in pending:  # a deadlock (or a hang): counted, then cancelled (their contexts close)
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    clients = [task.result() for task in tasks if task in done]
    return clients, time.perf_counter() - began, len(pending)


# ---- the engine alone, and the comparison ----

def engine_alone(lm, plan: Plan, temperatures: list[float]):
    """The run this session should show: the app's own EngineConfig for these settings, stepped as the Decode
    page steps it (the sampling set before each step from the slider)."""
    from llmviz import service
    from llmviz.ui.settings import Settings

    s = Settings(prompt=plan.prompt, seed=plan.seed, temperature=plan.temperature)
    run = service.runs.start(lm, s.prompt, s.engine_config(lm.cfg.max_position_embeddings))
    run.step()  # the prefill
    for temp in temperatures[1:]:
        run.step(s.with_(temperature=temp).sampling())
    return run.trace


def compare_alone(lm, c: Client) -> dict:
    """Mismatches of one session against the engine alone: sampled ids (downloaded trace), the recorded
    temperatures, and the token labels the Decode captions showed."""
    from llmviz.analysis.tokens import token_label

    out: dict[str, Any] = {"session": c.plan.index}
    if not c.temperatures:
        return out
    ref = engine_alone(lm, c.plan, c.temperatures)
    want = [int(s.sampled[0]) for s in ref.steps]
    labels = [token_label(ref.tokens, i) for i in want]
    out["tokens_alone"] = want
    if c.trace is not None:
        got = [int(s.sampled[0]) for s in c.trace.steps]
        out["tokens_app"] = got
        out["ids_match"] = got == want
        out["engine_step_ms"] = [round(float(s.timings["total_ms"]), 2) for s in c.trace.steps[1:]
                                 if "total_ms" in s.timings]
        out["temperatures_match"] = [float(s.sampling["temperature"]) for s in c.trace.steps] == c.temperatures
    out["shown_match"] = c.drawn == labels
    if not out["shown_match"]:
        out["shown"], out["labels_alone"] = c.drawn, labels
    return out


def percentile(values: list[float], q: float) -> float | None:
    """common.percentile, in ms to one decimal."""
    value = common_percentile(values, q)
    return None if value is None else round(value, 1)


def summary(clients: list[Client], results: list[dict], wall_s: float, hung: int, n_plans: int) -> dict:
    ms = [v for c in clients for v in c.latencies_ms]
    mismatched = [r["session"] for r in results
                  if r.get("ids_match") is False or r.get("temperatures_match") is False or not r.get("shown_match", 1)]
    return {
        "sessions": n_plans,
        "steps_per_session": clients[0].plan.steps if clients else None,
        "clicks_timed": len(ms),
        "latency_ms": {"p50": percentile(ms, 50), "p95": percentile(ms, 95), "max": round(max(ms), 1) if ms else None,
                       "min": round(min(ms), 1) if ms else None},
        "engine_step_ms_p50": percentile([v for r in results for v in r.get("engine_step_ms", [])], 50),
        "wall_s": round(wall_s, 1),
        "exceptions": sum(len(c.exceptions) for c in clients),
        "exception_text": [e for c in clients for e in c.exceptions][:5],
        "error_boxes": [e for c in clients for e in c.error_boxes][:5],
        "mismatches": len(mismatched),
        "mismatched_sessions": mismatched,
        "id_checks": sum("ids_match" in r for r in results),
        "failed_page_checks": [f"session {c.plan.index}: {k} (saw {c.seen.get(k)!r})"
                               for c in clients for k, ok in c.checks.items() if not ok],
        "timeouts": sum(c.timeouts for c in clients) + hung,
        "sessions_hung_at_limit": hung,
        "harness_errors": [f"session {c.plan.index}: {e}" for c in clients for e in c.errors],
        "per_session": [{"session": c.plan.index, "prompt": c.plan.prompt, "seed": c.plan.seed,
                         "temperature": c.plan.temperature, "temperature_after": c.plan.new_temperature,
                         "change_at_step": c.plan.change_at + 1,
                         "median_ms": percentile(c.latencies_ms, 50),
                         **{k: r.get(k) for k in ("ids_match", "temperatures_match", "shown_match", "tokens_app")}}
                        for c, r in zip(clients, results, strict=True)],
    }


async def check(server: AppServer, sessions: int, steps: int, tour: tuple[str, ...], single: bool = True,
                total_timeout_s: float = 900, warm: bool = True) -> dict:
    """Warm the server (one session, 2 steps), run 1 session alone (unless single=False), then `sessions` at once;
    compare every session's tokens with the engine alone."""
    from llmviz import service
    from llmviz.trace.config import EngineConfig
    from llmviz.ui.settings import UI_THREADS

    service.models.use_cpu_threads(UI_THREADS)  # as the server does: the same kernels, so the same rounding
    lm = service.models.load("llmviz-tiny", EngineConfig(device="auto", dtype="fp32"))
    every = plans(max(sessions, 1) + 1, steps)
    prompt_tokens = {p.prompt: len(lm.tokenizer.encode(p.prompt)) for p in every}
    runs = {}
    async with chromium_async() as browser:
        warmed = []
        if warm:
            warmed, _, _ = await run_sessions(browser, server, plans(1, 2, first=sessions), ("decode",),
                                              prompt_tokens, total_timeout_s)
        rss_warm = process_tree_rss(server.proc.pid)
        if single:
            runs["one_session"] = await run_sessions(browser, server, plans(1, steps), tour, prompt_tokens,
                                                     total_timeout_s)
        runs["concurrent"] = await run_sessions(browser, server, plans(sessions, steps), tour, prompt_tokens,
                                                total_timeout_s)
    rss_end = process_tree_rss(server.proc.pid)
    out = {}
    for name, (clients, wall, hung) in runs.items():
        results = [compare_alone(lm, c) for c in clients]
        out[name] = summary(clients, results, wall, hung, 1 if name == "one_session" else sessions)
    log = server_log(server)
    out["server"] = {"tracebacks_in_log": log.count("Traceback"), "log_tail": log[-1500:] if "Traceback" in log else "",
                     "rss_mib_after_warmup": round(rss_warm / 2**20, 1), "rss_mib_end": round(rss_end / 2**20, 1)}
    threads = next((c.server_threads for clients, _, _ in runs.values() for c in clients if c.server_threads), None)
    out["threads"] = threads if threads is not None else UI_THREADS
    out["warmup_errors"] = [e for c in warmed for e in c.errors + c.exceptions]
    return out


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--steps", type=int, default=10, help="Next presses per session")
    parser.add_argument("--tour", default=",".join(BENCH_TOUR),
                        help=f"pages each session walks, in order (of: {', '.join(ACTIONS)}; 'all' for every one)")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args()
    tour = tuple(ACTIONS) if args.tour == "all" else tuple(s.strip() for s in args.tour.split(",") if s.strip())
    unknown = [s for s in tour if s not in ACTIONS]
    if unknown:
        parser.error(f"unknown pages {unknown}; known: {list(ACTIONS)}")
    load_before = os.getloadavg()
    with AppServer(timeout=120) as server:
        result = asyncio.run(check(server, args.sessions, args.steps, tour))
    load_after = os.getloadavg()
    concurrent = result["concurrent"]
    doc = {
        "benchmark": "concurrency",
        "model": "llmviz-tiny (embedded), device cpu, fp32, capture full (the app's UI runs)",
        "tour": list(tour),
        "timed": ("per Next press, in the browser: from the click event (capture listener) to the first animation "
                  "frame where the Step metric shows the new step and the app's script state is notRunning; each "
                  "session waits for its own previous step (closed loop), all sessions press at once after a "
                  "barrier; the server (streamlit run app.py), one headless Chromium (a context per session) and "
                  "this harness share the same machine"),
        "machine": {"cpu": cpu_model(), "cpus": os.cpu_count(), "device": "cpu",
                    "server_torch_threads": result["threads"], "python": platform.python_version(),
                    "load_average_1min_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
                    "note": "work of other processes on this machine shows in the load average"},
        "sessions": args.sessions, "steps": args.steps,
        "latency_ms_concurrent": concurrent["latency_ms"],
        "latency_ms_one_session": result["one_session"]["latency_ms"],
        "engine_step_ms_p50": {"concurrent": concurrent["engine_step_ms_p50"],
                               "one_session": result["one_session"]["engine_step_ms_p50"],
                               "what": "the engine's own timed region of each decode step in the server (the "
                                       "trace's timings.total_ms, capture full), read from the downloaded runs"},
        "exceptions": concurrent["exceptions"] + result["one_session"]["exceptions"],
        "mismatches": concurrent["mismatches"] + result["one_session"]["mismatches"],
        "timeouts": concurrent["timeouts"] + result["one_session"]["timeouts"],
        "server_tracebacks": result["server"]["tracebacks_in_log"],
        "ok": (concurrent["exceptions"] == concurrent["mismatches"] == concurrent["timeouts"] == 0
               and not concurrent["harness_errors"] and not concurrent["failed_page_checks"]
               and result["server"]["tracebacks_in_log"] == 0
               and (concurrent["id_checks"] == args.sessions or "trace" not in tour)),
        **result,
    }
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
