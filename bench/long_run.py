"""Long runs (Reliability): memory over many decode steps and many sessions. Prints one JSON object.

    python bench/long_run.py [--steps 1000] [--app-steps N] [--sessions 200] [--parts engine,app,sessions] [--out FILE]

Three parts, each reporting resident memory (psutil RSS) after a warm-up and at the end:

- engine: --steps decode steps in this process through the engine alone, with the app's UI EngineConfig
  (Settings.engine_config: capture full, max_seq_len 512 on the embedded model): when a run ends (its cache is full
  at 512 positions, or EOS) the session is dropped and another starts, as a user who starts again would.
  RSS of this process. Warm-up: the first --warmup-steps decode steps. Twice: the engine alone (every tensor
  kept), then with the app's per-session trace budget applied after every step as llmviz.ui.state.advance does.
- app: the same through the app's per-session code path, in one browser session on a live server: Next pressed
  --steps times on Decode; when the run ends (Next disabled, the "cache is full" notice shown), Home's run button
  starts another in the same session. RSS of the server (the streamlit process and its children).
- sessions: a fresh live server serves --sessions browser sessions one after another (a new browser context
  each: open Decode with its own prompt and seed, press Next --session-steps times, close the context). Server
  RSS after --warmup-sessions sessions and after all of them; then again after --settle-s seconds, since
  Streamlit keeps a closed session's state for server.disconnectedSessionTTL (120 s by default).

Targets: growth after warm-up <= 50 MB over the steps, <= 100 MB over the sessions (MB = 10**6 bytes).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "bench")]

import psutil  # noqa: E402
from browser_kit import AppServer, chromium_async, metric_async, process_tree_rss, stepper_button, wait_idle_async  # noqa: E402
from concurrency import PROMPTS, WAIT_S, Client, Plan, cpu_model, open_page, percentile, t, timed_next  # noqa: E402

TARGET_STEPS_MB, TARGET_SESSIONS_MB = 50, 100
PROMPT, SEED, TEMPERATURE = "The list of", 1, 0.7
MB, MIB = 10**6, 2**20


def progress(text: str) -> None:
    print(f"[long_run {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def mib(n: int) -> float:
    return round(n / MIB, 1)


def growth(before: int, after: int, target_mb: float) -> dict:
    return {"growth_mb": round((after - before) / MB, 1), "growth_mib": mib(after - before), "target_mb": target_mb,
            "meets_target": (after - before) / MB <= target_mb}


def trace_numpy_bytes(trace) -> int:
    """Bytes of every numpy array a run's trace holds (hook tensors, logits, lens)."""
    import numpy as np

    total = 0
    for step in trace.steps:
        for value in vars(step).values():
            if isinstance(value, np.ndarray):
                total += value.nbytes
        total += sum(r.array.nbytes for r in step.hooks if getattr(r, "array", None) is not None)
    return total


def malloc_trim() -> bool:
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


# ---- part 1: the engine alone ----

def engine_part(steps: int, warmup: int, every: int, budget: bool) -> dict:
    """budget=False: the engine alone, every tensor of the live run kept; True: after every step the app's
    per-session trace budget trims the run, as llmviz.ui.state.advance does (the newest step kept whole)."""
    from llmviz import service
    from llmviz.trace.budget import keep_bounded
    from llmviz.trace.config import EngineConfig
    from llmviz.ui.public import Policy
    from llmviz.ui.settings import UI_THREADS, Settings

    service.models.use_cpu_threads(UI_THREADS)
    me = psutil.Process()
    lm = service.models.load("llmviz-tiny", EngineConfig(device="auto", dtype="fp32"))
    s = Settings(prompt=PROMPT, seed=SEED, temperature=TEMPERATURE)
    config = s.engine_config(lm.cfg.max_position_embeddings)
    budget_bytes = Policy.from_env().trace_budget_bytes if budget else None
    gc.collect()
    rss_loaded = me.memory_info().rss
    session, done, generations, series, ends = None, 0, 0, [], []
    rss_warm = peak = trace_peak = 0
    began = time.perf_counter()
    while done < steps:
        if session is None or session.finished:
            if session is not None:
                ends.append({"steps": len(session.trace.steps), "finished": session.finished,
                             "rss_mib": mib(me.memory_info().rss)})
                trace_peak = max(trace_peak, trace_numpy_bytes(session.trace))
            session = service.runs.start(lm, s.prompt, config)  # the old run is dropped here
            session.step()  # the prefill
            generations += 1
            continue
        session.step()
        if budget_bytes is not None:  # what the app's state.advance does after each step
            keep_bounded(session.trace, budget_bytes, (len(session.trace.steps) - 1,), service.models.release_memory)
        done += 1
        rss = me.memory_info().rss
        peak = max(peak, rss)
        if done == min(warmup, steps):
            rss_warm = rss
        if done % every == 0 or done == steps:
            series.append([done, mib(rss)])
            progress(f"engine{' + budget' if budget else ''}: {done} steps, RSS {mib(rss)} MiB")
    seconds = time.perf_counter() - began
    rss_end = me.memory_info().rss
    trace_peak = max(trace_peak, trace_numpy_bytes(session.trace))
    held_steps = len(session.trace.steps)
    del session
    gc.collect()
    rss_dropped = me.memory_info().rss
    trimmed = malloc_trim()
    rss_trimmed = me.memory_info().rss
    return {
        "path": "llmviz.engine Session.step() in this process, Settings.engine_config (capture full, logit lens 5)"
                + (", then llmviz.trace.budget.keep_bounded after every step as the app's state.advance does "
                   "(shed, and malloc_trim every 16 steps)"
                   if budget else ", every tensor of the live run kept (no trace budget)"),
        "trace_budget_mb": budget_bytes / 1e6 if budget_bytes is not None else None,
        "config": {"max_seq_len": config.max_seq_len, "capture": config.capture, "prompt": PROMPT, "seed": SEED,
                   "temperature": TEMPERATURE, "threads": UI_THREADS},
        "decode_steps": done, "generations": generations, "ended_runs": ends, "seconds": round(seconds, 1),
        "warmup_steps": warmup, "rss_mib_model_loaded": mib(rss_loaded), "rss_mib_after_warmup": mib(rss_warm),
        "rss_mib_end": mib(rss_end), "rss_mib_peak": mib(peak),
        **growth(rss_warm, rss_end, TARGET_STEPS_MB),
        "steps_held_by_the_live_run_at_end": held_steps,
        "trace_numpy_mib_largest_run": mib(trace_peak),  # at its end, after any trimming
        "rss_mib_after_dropping_the_run": mib(rss_dropped),
        "rss_mib_after_malloc_trim": mib(rss_trimmed) if trimmed or rss_trimmed != rss_dropped else None,
        "series_step_rss_mib": series,
    }


# ---- part 2: one browser session on a live server ----

async def restart_run(c: Client) -> None:
    """Home's run button: the same settings, a fresh prefill, in the same session; then back to Decode."""
    await open_page(c, "home")
    await c.page.get_by_role("button", name=t("home.run"), exact=True).click(timeout=WAIT_S * 1000)
    await wait_idle_async(c.page, WAIT_S, settle_s=0.5)
    await open_page(c, "decode")


async def app_part(steps: int, warmup: int, every: int) -> dict:
    notice = t("decode.finished_max_seq_len")
    budget_notice = t("budget.notice", n=-999, mb=0).split("-999")[0]  # the words before the step count
    series, latencies, ends, budget_seen = [], [], [], []
    first_budget_notice = None
    rss_warm = peak = 0
    with AppServer(timeout=120) as server:
        pid = server.proc.pid
        async with chromium_async() as browser:
            context = await browser.new_context(viewport={"width": 1400, "height": 1000})
            plan = Plan(0, PROMPT, SEED, TEMPERATURE, steps, steps, "Home")
            c = Client(plan, await context.new_page(), server.url().rstrip("/"), 0)
            await open_page(c, "decode")
            began, done, generations = time.perf_counter(), 0, 1
            rss_start = process_tree_rss(pid)
            while done < steps:
                button = stepper_button(c.page, "next")
                if await button.is_disabled():  # the run ended: its cache is full (or EOS)
                    shown = await c.page.locator('[data-testid="stMain"]').inner_text()
                    ends.append({"step": await metric_async(c.page, t("decode.step")),
                                 "cache_full_notice_shown": notice in shown, "rss_mib": mib(process_tree_rss(pid))})
                    await restart_run(c)
                    generations += 1
                    continue
                latencies.append(await timed_next(c))
                done += 1
                if done % 10 == 0 or done == steps:
                    shown = budget_notice in await c.page.locator('[data-testid="stMain"]').inner_text()
                    budget_seen.append(shown)
                    if shown and first_budget_notice is None:
                        first_budget_notice = {"decode_steps": done, "generation": generations,
                                               "step": await metric_async(c.page, t("decode.step"))}
                rss = process_tree_rss(pid)
                peak = max(peak, rss)
                if done == min(warmup, steps):
                    rss_warm = rss
                if done % every == 0 or done == steps:
                    series.append([done, mib(rss)])
                    progress(f"app: {done} steps, server RSS {mib(rss)} MiB, last click {latencies[-1]:.0f} ms")
            seconds = time.perf_counter() - began
            rss_end = process_tree_rss(pid)
            exceptions = [(await e.inner_text())[:300] for e in await c.page.query_selector_all(
                '[data-testid="stException"]')]
            await context.close()
        log = Path(server.log.name).read_text(errors="replace")
    by_position = [{"steps": f"{i + 1}-{min(i + 100, len(latencies))}", "p50_ms": percentile(latencies[i:i + 100], 50)}
                   for i in range(0, len(latencies), 100)]
    return {
        "path": "the live app (streamlit run app.py), one Chromium page: Next on Decode; Home's run button "
                "when a run ends",
        "settings": {"prompt": PROMPT, "seed": SEED, "temperature": TEMPERATURE},
        "decode_steps": done, "generations": generations, "ended_runs": ends, "seconds": round(seconds, 1),
        "warmup_steps": warmup, "rss_mib_server_at_first_step": mib(rss_start),
        "rss_mib_after_warmup": mib(rss_warm), "rss_mib_end": mib(rss_end), "rss_mib_peak": mib(peak),
        **growth(rss_warm, rss_end, TARGET_STEPS_MB),
        "next_click_to_step_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95),
                                  "per_100_steps": by_position},
        "trace_budget_notice": {"first_seen": first_budget_notice, "checked_every": 10,
                                "shown_at_end": bool(budget_seen and budget_seen[-1])},
        "exceptions": exceptions, "server_tracebacks": log.count("Traceback"),
        "series_step_rss_mib": series,
    }


# ---- part 3: many sessions one after another ----

async def one_session(browser, base: str, i: int, steps: int) -> dict:
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        plan = Plan(i, PROMPTS[i % len(PROMPTS)], 1000 + i, 0.7 if i % 2 else 0.0, steps, steps, "Home")
        c = Client(plan, await context.new_page(), base, 0)
        await open_page(c, "decode")
        done = 0
        for _ in range(steps):
            if await stepper_button(c.page, "next").is_disabled():
                break  # the run ended (EOS drawn): a correct end, not a failure
            await timed_next(c)
            done += 1
        boxes = len(await c.page.query_selector_all('[data-testid="stException"]'))
        return {"ok": f"step={done}" in c.page.url and boxes == 0, "exceptions": boxes, "steps": done,
                "ended_early": done < steps}
    finally:
        await context.close()


async def sessions_part(sessions: int, steps: int, warmup: int, every: int, settle_s: float) -> dict:
    series, failures = [], []
    rss_warm = peak = 0
    with AppServer(timeout=120) as server:
        pid, base = server.proc.pid, server.url().rstrip("/")
        async with chromium_async() as browser:
            began = time.perf_counter()
            for i in range(sessions):
                try:
                    result = await one_session(browser, base, i, steps)
                    if not result["ok"]:
                        failures.append({"session": i, **result})
                except Exception as exc:  # recorded; the server is still measured
                    failures.append({"session": i, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
                rss = process_tree_rss(pid)
                peak = max(peak, rss)
                if i + 1 == min(warmup, sessions):
                    rss_warm = rss
                if (i + 1) % every == 0 or i + 1 == sessions:
                    series.append([i + 1, mib(rss)])
                    progress(f"sessions: {i + 1}, server RSS {mib(rss)} MiB, failures {len(failures)}")
            seconds = time.perf_counter() - began
            rss_end = process_tree_rss(pid)
        await asyncio.sleep(settle_s)  # past the disconnected-session TTL: closed sessions' state is dropped
        rss_settled = process_tree_rss(pid)
        log = Path(server.log.name).read_text(errors="replace")
    return {
        "path": "the live app, a new browser context per session: open Decode (own prompt and seed), Next x "
                f"{steps}, close",
        "sessions": sessions, "steps_each": steps, "seconds": round(seconds, 1), "warmup_sessions": warmup,
        "rss_mib_after_warmup": mib(rss_warm), "rss_mib_end": mib(rss_end), "rss_mib_peak": mib(peak),
        **growth(rss_warm, rss_end, TARGET_SESSIONS_MB),
        "settle_s": settle_s, "rss_mib_after_settle": mib(rss_settled),
        "growth_mb_after_settle": round((rss_settled - rss_warm) / MB, 1),
        "failed_sessions": failures, "server_tracebacks": log.count("Traceback"),
        "series_session_rss_mib": series,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000, help="decode steps (engine and app parts)")
    parser.add_argument("--app-steps", type=int, default=None, help="decode steps of the app part (default: --steps)")
    parser.add_argument("--warmup-steps", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--warmup-sessions", type=int, default=10)
    parser.add_argument("--session-steps", type=int, default=3, help="Next presses per session (sessions part)")
    parser.add_argument("--settle-s", type=float, default=130, help="wait after the last session, then RSS again")
    parser.add_argument("--parts", default="engine,app,sessions")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args()
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    load_before = os.getloadavg()
    doc: dict = {"benchmark": "long runs",
                 "model": "llmviz-tiny (embedded), cpu, fp32, the app's UI runs (capture full, max_seq_len 512)",
                 "rss": "psutil resident set size; MB = 10**6 bytes, MiB = 2**20",
                 "targets_mb": {"steps": TARGET_STEPS_MB, "sessions": TARGET_SESSIONS_MB},
                 "command": " ".join(["python", *sys.argv])}
    if "engine" in parts:
        doc["steps_engine"] = engine_part(args.steps, args.warmup_steps, every=50, budget=False)
        gc.collect()
        malloc_trim()  # each engine variant starts from a trimmed heap
        doc["steps_engine_budget"] = engine_part(args.steps, args.warmup_steps, every=50, budget=True)
    if "app" in parts:
        doc["steps_app"] = asyncio.run(app_part(args.app_steps or args.steps, args.warmup_steps, every=50))
    if "sessions" in parts:
        doc["sessions"] = asyncio.run(sessions_part(args.sessions, args.session_steps, args.warmup_sessions,
                                                    every=10, settle_s=args.settle_s))
    from llmviz.ui.settings import UI_THREADS

    doc["machine"] = {"cpu": cpu_model(), "cpus": os.cpu_count(), "device": "cpu", "torch_threads": UI_THREADS,
                      "python": platform.python_version(),
                      "load_average_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]}
    doc["summary"] = {name: {k: doc[name][k] for k in ("growth_mb", "target_mb", "meets_target")}
                      for name in ("steps_engine", "steps_engine_budget", "steps_app", "sessions") if name in doc}
    sizes = {"steps_engine": ("decode_steps", 1000), "steps_engine_budget": ("decode_steps", 1000),
             "steps_app": ("decode_steps", 1000), "sessions": ("sessions", 200)}
    for name, (key, issue_size) in sizes.items():
        if name in doc:
            doc["summary"][name].update({"measured_over": doc[name][key], "issue_size": issue_size,
                                         "full_size": doc[name][key] >= issue_size})
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
