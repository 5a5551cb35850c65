"""What a hostile visitor can make a public server do, in parts. Prints one JSON object.

    python bench/hostile_load.py --part pages [--pages home,kv_layouts,...] [--out FILE]

Each part starts its own `streamlit run app.py` with LLMVIZ_PUBLIC=1 (one heavy slot) and drives it over Streamlit's
own websocket protocol (scripts/st_session.py: no browser on the server's cores).

- pages: every page of the app opened with the largest link the settings allow (gpt2-124m-random, the longest prompt
  its page takes, the most steps and prompts a link may ask for; on the KV layouts and Batch pages the most whose KV
  caches a public session's budget holds, asked of the engine: fitting_sizes), and the page's buttons a link's visitor
  can press for more work (Batch: "Run the prefill", "Run to the end" with 64 new tokens; KV layouts: "Next 8"), one
  fresh session each, one at a time. Per request: the server's CPU seconds (psutil: user + system of the server
  process and its children, before and after), those spent inside the heavy gate's slots (llmviz/ui/measure.slot
  writes one line per slot held to LLMVIZ_GATE_LOG: the process's CPU while the slot was held, exact with one session
  at a time) and the rest, outside the gate; the RSS after it and its growth. Target: under 2 s of CPU outside the
  gate each.

- sessions: --sessions (6) sessions opened at once on a Home link with gpt2-124m-random and a 505-token prompt; the
  server's RSS before, at its peak, with all open and after they close (bench/hostile_sessions.py). Target: each
  session's share within the session budget (64 MB).
- balancer: `scripts/serve-class --replicas 2` and 4,100 unfinished HTTP requests from one address; a real request from
  another answered, and how soon the held ones are closed (bench/hostile_balancer.py). Target: within 1 s.
- class: one client's 300 wrong codes, 60 joins and 32 rerunning sessions against --students honest ones, on
  serve-class --replicas 2 and on `streamlit run app.py` (bench/class_attack.py, which says how; not public mode).
  Target: every honest join succeeds, their prediction p95 under 0.5 s, 0 failures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "bench")]

import psutil  # noqa: E402
from browser_kit import AppServer  # noqa: E402
from common import machine  # noqa: E402
from st_session import StClient  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402

from llmviz.i18n.translator import translate  # noqa: E402
from llmviz.ui.batch.batch_run import PUBLIC_WORK  # noqa: E402
from llmviz.ui.layouts.layouts_url import KV_MAX_EXTRA, KV_MAX_SEQS  # noqa: E402
from llmviz.ui.settings import MAX_UI_SEQ  # noqa: E402

MODEL = "gpt2-124m-random"  # the largest model a public server allows by default
LINK_STEPS = 32  # a public link's step cap (LLMVIZ_LINK_STEPS' default)
BATCH_ROWS, BATCH_NEW = 8, 64  # the Batch page's most rows and new tokens (llmviz/ui/batch/batch_run.py)
TARGET_OUTSIDE_S = 2.0
WORDS = ("the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "ran", "to", "the", "old", "red", "house")


def progress(text: str) -> None:
    print(f"[hostile_load {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def prompt_of(tokens: int) -> str:
    """A prompt of exactly `tokens` tokens for the model's tokenizer (the embedded one's), found by adding words."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(ROOT / "assets" / "llmviz-tiny"), local_files_only=True)

    def count(n_words: int) -> int:
        return len(tok.encode(" ".join(WORDS[i % len(WORDS)] for i in range(n_words))))

    low, high = 1, tokens
    while low < high:  # the most words within `tokens` tokens (a word is at least one token)
        mid = (low + high + 1) // 2
        low, high = (mid, high) if count(mid) <= tokens else (low, mid - 1)
    return " ".join(WORDS[i % len(WORDS)] for i in range(low))


@dataclass
class Case:
    """One page opened with a link, then (optionally) buttons pressed, each request measured on its own."""

    name: str
    page: str  # the url path ("" = Home)
    query: dict
    presses: list = field(default_factory=list)  # button labels (English), pressed in order
    widgets: dict = field(default_factory=dict)  # number_input user key -> int value, set before the presses


def fitting_sizes() -> tuple[int, int, int]:
    """The largest KV layouts link (its max_seq_len, extra prompts) and Batch prompt whose KV caches a public
    session's budget holds (64 MB: the GPT-2 shape's 8 x 960-token batch needs 604 MB and is refused before it runs,
    so it is no longer the largest link): asked of the engine the pages call, with the page's own settings."""
    from llmviz import service
    from llmviz.errors import NotAllowedError
    from llmviz.trace.config import EngineConfig
    from llmviz.ui.layouts.layouts_run import layouts
    from llmviz.ui.public import Policy

    budget = Policy.from_env({"LLMVIZ_PUBLIC": "1"}).trace_budget_bytes
    lm = service.models.load(MODEL, EngineConfig(capture="off"))

    def accepted(start) -> bool:
        try:
            start()
        except NotAllowedError:
            return False
        return True

    def layouts_fit(kv_max: int, extra: int) -> bool:
        config = EngineConfig(capture="off", max_seq_len=kv_max, kv_block_size=4)
        prompts = [prompt_of(kv_max - LINK_STEPS - 1)] * (1 + extra)
        return accepted(lambda: service.runs.start_layouts(lm, prompts, config, layouts(), budget))

    shapes = sorted(((m, e) for m in KV_MAX_SEQS for e in range(KV_MAX_EXTRA + 1)),
                    key=lambda me: (-(me[0] - LINK_STEPS - 1) * (1 + me[1]), -me[0]))  # most prompt tokens first
    kv_max, extra = next(me for me in shapes if layouts_fit(*me))

    def batch_fits(tokens: int) -> bool:
        config = EngineConfig(capture="off", max_seq_len=tokens + BATCH_NEW + 1)
        return accepted(lambda: service.runs.start(lm, [prompt_of(tokens)] * BATCH_ROWS, config, budget))

    low, high = 1, PUBLIC_WORK // BATCH_ROWS - BATCH_NEW  # the most work a public batch may ask for
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if batch_fits(mid) else (low, mid - 1)
    return kv_max, extra, low


def cases() -> list[Case]:
    stepper = prompt_of(MAX_UI_SEQ - LINK_STEPS - 1)  # the run still takes every step a link may ask for
    kv_max, kv_extra, batch_tokens = fitting_sizes()
    kv = prompt_of(kv_max - LINK_STEPS - 1)
    batch = prompt_of(batch_tokens)
    too_big = prompt_of(2 * PUBLIC_WORK // BATCH_ROWS)
    run = {"model": MODEL, "prompt": stepper, "step": str(MAX_UI_SEQ), "temperature": "0", "lang": "en"}
    en = lambda key: translate("en", key)  # noqa: E731
    return [
        Case("home", "", run),
        Case("lesson_scores", "lesson", {**run, "lesson": "1.1.5"}),
        Case("lesson_cache_growth", "lesson", {**run, "lesson": "1.2.3"}),
        Case("lesson_memory", "lesson", {**run, "lesson": "4.1.2"}),
        Case("tokens", "tokens", run),
        Case("prefill", "prefill", run),
        Case("decode", "decode", run),
        Case("layer", "layer", run),
        Case("compare", "compare", {**run, "cmp_model": MODEL, "cmp_b": "kv-layout=paged", "cmp_steps": "128",
                                    "cmp_repeats": "10", "cmp_run": "1"}),
        Case("kv_layouts", "kv-layouts", {**run, "prompt": kv, "kv_prompts": "\n".join([kv] * kv_extra),
                                          "kv_max": str(kv_max), "kv_bs": "4", "kv_step": str(MAX_UI_SEQ)},
             presses=[en("layouts.next8")]),
        Case("batch", "batch", {**run, "batch": "\n".join([batch] * BATCH_ROWS)},
             presses=[en("batch.run"), en("batch.to_end")], widgets={"batch_max_new_w": BATCH_NEW}),
        Case("batch_past_bound", "batch", {**run, "batch": "\n".join([too_big] * BATCH_ROWS)},
             presses=[en("batch.run")]),  # refused before it runs: twice a public batch's work
        Case("serving", "serving", run),
        Case("memory", "memory", run),
        Case("claims", "claims", run),
        Case("trace", "trace", run),
    ]


class Server:
    """The server process (and its children): CPU seconds so far, RSS now, and the heavy gate's log."""

    def __init__(self, pid: int, gate_log: Path):
        self.proc, self.gate_log = psutil.Process(pid), gate_log

    def family(self) -> list[psutil.Process]:
        with contextlib.suppress(psutil.Error):
            return [self.proc, *self.proc.children(recursive=True)]
        return []

    def cpu_s(self) -> float:
        total = 0.0
        for p in self.family():
            with contextlib.suppress(psutil.Error):
                t = p.cpu_times()
                total += t.user + t.system
        return total

    def rss(self) -> int:
        total = 0
        for p in self.family():
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
        return total

    def gate(self) -> tuple[int, float]:
        """(slots held so far, CPU seconds inside them)."""
        if not self.gate_log.exists():
            return 0, 0.0
        lines = [json.loads(x) for x in self.gate_log.read_text().splitlines() if x.strip()]
        return len(lines), sum(x["cpu_s"] for x in lines)


def button_state(c: StClient, label: str) -> WidgetState:
    buttons = [e for e in c.elements.values() if e.kind == "button"]
    found = [e for e in buttons if e.proto.label == label]
    if not found:
        raise KeyError(f"no button {label!r}; buttons: {[e.proto.label for e in buttons]}")
    return WidgetState(id=found[0].widget_id, trigger_value=True), found[0].fragment_id


def set_number(c: StClient, key: str, value: int) -> None:
    """What a visitor typing `value` into the number box `key` sends with the next run."""
    found = [e for e in c.elements.values() if e.kind == "number_input" and e.widget_id.endswith(f"-{key}")]
    if not found:
        raise KeyError(f"no number box {key!r}")
    c.widgets[found[0].widget_id] = WidgetState(id=found[0].widget_id, int_value=value)


def page_text(c: StClient) -> list[str]:
    """The alerts the page shows now (what a visitor reads of a refusal, a wait or an error)."""
    out = []
    for e in c.elements.values():
        if e.kind in ("alert", "exception"):
            out.append(getattr(e.proto, "body", "") or getattr(e.proto, "message", ""))
    return [x[:200] for x in out if x]


async def measured(server: Server, what: str, request) -> dict:
    cpu0, rss0, (slots0, gate0) = server.cpu_s(), server.rss(), server.gate()
    started = time.perf_counter()
    error = None
    try:
        await request()
    except Exception as exc:  # reported, not raised: the next page is measured still
        error = f"{type(exc).__name__}: {exc}"[:300]
    wall = time.perf_counter() - started
    await asyncio.sleep(0.5)  # the last messages sent; the process settles
    cpu, (slots, gate) = server.cpu_s() - cpu0, server.gate()
    rss = server.rss()
    inside = gate - gate0
    return {"request": what, "wall_s": round(wall, 2), "server_cpu_s": round(cpu, 2),
            "inside_gate_cpu_s": round(inside, 2), "outside_gate_cpu_s": round(cpu - inside, 2),
            "slots_held": slots - slots0, "rss_mb": round(rss / 1e6), "rss_growth_mb": round((rss - rss0) / 1e6),
            "meets_target": error is None and cpu - inside < TARGET_OUTSIDE_S, "error": error}


async def run_case(server: Server, port: int, case: Case) -> list[dict]:
    c = StClient(port, case.page, urllib.parse.urlencode(case.query))
    out = [await measured(server, "open", c.open)]
    out[-1]["alerts"] = page_text(c)
    for key, value in case.widgets.items():
        set_number(c, key, value)
    for label in case.presses:
        async def press(label=label):
            state, fragment = button_state(c, label)
            await c._rerun([state], fragment)

        out.append(await measured(server, f"press {label}", press))
        out[-1]["alerts"] = page_text(c)
    await c.close()
    return out


async def warm(port: int) -> None:
    """The model load and the imports, untimed: a link's cost is what it asks beyond them."""
    for query in ({"model": MODEL, "prompt": "The list of", "lang": "en"}, {"lang": "en"}):
        c = StClient(port, "", urllib.parse.urlencode(query))
        await c.open()
        await c.close()


def pages_part(args) -> dict:
    wanted = set(args.pages.split(",")) if args.pages else None
    chosen = [c for c in cases() if wanted is None or c.name in wanted]
    log = Path(tempfile.mkdtemp(prefix="llmviz-gate-")) / "gate.jsonl"
    os.environ.update(LLMVIZ_PUBLIC="1", LLMVIZ_HEAVY_SLOTS="1", LLMVIZ_GATE_LOG=str(log),
                      STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL="2")  # a closed tab's session goes soon
    results = {}
    with AppServer(timeout=180) as app:
        server = Server(app.proc.pid, log)
        asyncio.run(warm(app.port))
        for case in chosen:
            progress(f"{case.name}")
            results[case.name] = asyncio.run(run_case(server, app.port, case))
            progress(f"{case.name}: {json.dumps(results[case.name])[:300]}")
            time.sleep(3)  # the closed session's state dropped (disconnectedSessionTTL 2 s)
    requests = [r for rows in results.values() for r in rows]
    return {"pages": results, "target_outside_gate_cpu_s": TARGET_OUTSIDE_S,
            "worst_outside_gate_cpu_s": max((r["outside_gate_cpu_s"] for r in requests), default=None),
            "target_met": all(r["meets_target"] for r in requests)}


def sessions_part(args) -> dict:
    """Finding 1: --sessions long-prompt GPT-2-shape sessions at once (bench/hostile_sessions.py)."""
    from hostile_sessions import sessions

    ttl = 5
    os.environ["LLMVIZ_PUBLIC"] = "1"
    with AppServer(timeout=180, extra=("--server.disconnectedSessionTTL", str(ttl))) as app:
        return asyncio.run(sessions(argparse.Namespace(sessions=args.sessions, tokens=505, ttl=ttl, settle=30),
                                    app.port, app.proc.pid))


def balancer_part(args) -> dict:
    """Finding 5: 4,100 unfinished requests from one address against serve-class (bench/hostile_balancer.py)."""
    from browser_kit import free_port
    from hostile_balancer import attack
    from serve_class import Class

    with Class(2, free_port()) as served:
        return {"replicas": 2, **attack(served.port, 4100)}


def class_part(args) -> dict:
    """Issue 47: one client (wrong codes, joins, 32 flooding sessions) against a class of honest students, on
    serve-class and on Streamlit's own bind (bench/class_attack.py)."""
    from class_attack import run

    return {serve: run(serve, args.students) for serve in ("class", "default")}


PARTS = {"pages": pages_part, "sessions": sessions_part, "balancer": balancer_part, "class": class_part}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=sorted(PARTS), required=True)
    parser.add_argument("--pages", default="", help="pages part: only these cases (names separated by commas)")
    parser.add_argument("--sessions", type=int, default=6, help="sessions part: how many at once")
    parser.add_argument("--students", type=int, default=30, help="class part: honest students")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args()
    result = {"benchmark": "hostile_load", "part": args.part, "machine": machine("cpu"),
              "served": "each run's own" if args.part == "class" else
              "one `streamlit run app.py`, LLMVIZ_PUBLIC=1, one heavy slot", **PARTS[args.part](args)}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
