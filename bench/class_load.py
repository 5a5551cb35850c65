"""A class on one server: N emulated students over Streamlit's own websocket protocol (no browsers:
scripts/st_session.py), each from its own loopback address (a class on a LAN: bench/common.student_address), opening
a page and pressing its Next K times with a think time. Prints one JSON object.

    python bench/class_load.py [--students 30] [--clicks 10] [--think 1.0] [--page decode|lesson]
                               [--replicas N | --url http://127.0.0.1:8501 --pid PID ...]
    python bench/class_load.py --class --students 60 --replicas 2   # a class in one room (bench/class_mode.py)

By default it starts one `streamlit run app.py` and measures that process; with --replicas N, N replicas behind
HAProxy (scripts/serve-class) and all of them; with --url it drives a running server and measures --pid's.

Timed, per click, in the student's client: from sending the rerun (the button's trigger, as the frontend sends it,
with the fragment the button lives in) to the run's script_finished. Each click is checked: on Decode the "Step"
metric goes up by exactly one; on the lesson the URL's position moves to the next step. Think times are uniform in
[0.5, 1.5] x --think, seeded per student. The students open the page together (those times are reported apart),
then all start clicking. Server CPU seconds (user + system) and peak RSS come from psutil over the clicking phase.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "bench")]

from browser_kit import AppServer, free_port  # noqa: E402
from common import machine, percentile, student_address  # noqa: E402
from serve_class import Class  # noqa: E402
from st_session import StClient  # noqa: E402

from llmviz.i18n.translator import translate  # noqa: E402
from llmviz.ui.lesson.lesson_steps import POSITIONS  # noqa: E402

NEXT = {"decode": "dec_next", "lesson": "lesson_next"}
TARGET_P95_S = 1.0


def position(c: StClient, page: str) -> str:
    """Where the student is: Decode's Step metric, or the lesson's position in the URL."""
    if page == "decode":
        return c.metrics().get(translate("en", "decode.step"), "?")
    return (urllib.parse.parse_qs(c.query_string).get("lesson") or [POSITIONS[0]])[0]


def advanced(page: str, before: str, after: str) -> bool:
    if page == "decode":
        return before.isdigit() and after == str(int(before) + 1)
    return before in POSITIONS and POSITIONS.index(before) + 1 < len(POSITIONS) and \
        after == POSITIONS[POSITIONS.index(before) + 1]


async def student(i: int, args, host: str, port: int, opened: asyncio.Barrier, out: dict) -> None:
    rng = random.Random(i)
    c = StClient(port, args.page, "lang=en", host=host, source=student_address(i, host))
    record = out.setdefault(i, {"open_s": None, "clicks_s": [], "failures": []})
    try:
        record["open_s"] = await c.open()
    except Exception as exc:  # counted, not raised: one failed student does not stop the class
        record["failures"].append(f"open: {type(exc).__name__}: {exc}"[:200])
    await opened.wait()
    if record["failures"]:
        await c.close()
        return
    try:
        for _ in range(args.clicks):
            await asyncio.sleep(args.think * rng.uniform(0.5, 1.5))
            before = position(c, args.page)
            record["clicks_s"].append(await c.click(NEXT[args.page]))
            if not advanced(args.page, before, position(c, args.page)):
                record["failures"].append(f"{before} -> {position(c, args.page)}")
    except Exception as exc:
        record["failures"].append(f"click: {type(exc).__name__}: {exc}"[:200])
    finally:
        await c.close()


class Watch:
    """CPU seconds and peak RSS of the server processes (and their children), sampled every 0.25 s."""

    def __init__(self, pids: list[int]):
        self.procs = [psutil.Process(p) for p in pids]
        self.peak_rss = 0
        self.cpu0 = self.cpu()

    def family(self) -> list[psutil.Process]:
        out = []
        for p in self.procs:
            with contextlib.suppress(psutil.Error):  # a process that ended counts for nothing
                out += [p, *p.children(recursive=True)]
        return out

    def cpu(self) -> float:
        total = 0.0
        for p in self.family():
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        return total

    async def sample(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            rss = 0
            for p in self.family():
                with contextlib.suppress(psutil.Error):
                    rss += p.memory_info().rss
            self.peak_rss = max(self.peak_rss, rss)
            await asyncio.sleep(0.25)


async def run_class(args, host: str, port: int, pids: list[int]) -> dict:
    warm_s = 0.0
    for _ in range(max(1, len(pids))):  # the model load and imports, on each replica (round robin), untimed
        warm = StClient(port, args.page, "lang=en", host=host)
        warm_s = max(warm_s, await warm.open())
        await warm.close()
    out: dict = {}
    opened = asyncio.Barrier(args.students + 1)
    tasks = [asyncio.create_task(student(i, args, host, port, opened, out)) for i in range(args.students)]
    await opened.wait()
    watch, stop = Watch(pids), asyncio.Event()
    sampler = asyncio.create_task(watch.sample(stop))
    load0, began = os.getloadavg(), time.perf_counter()
    psutil.cpu_percent(percpu=True)
    await asyncio.gather(*tasks)
    wall, per_core = time.perf_counter() - began, psutil.cpu_percent(percpu=True)
    stop.set()
    await sampler
    clicks = [s for r in out.values() for s in r["clicks_s"]]
    opens = [r["open_s"] for r in out.values() if r["open_s"] is not None]
    failures = [f"student {i}: {f}" for i, r in sorted(out.items()) for f in r["failures"]]
    cpu_s = watch.cpu() - watch.cpu0
    return {
        "students": args.students, "clicks_each": args.clicks, "think_s": args.think, "page": args.page,
        "warm_open_s": round(warm_s, 3), "open_p50_s": round(statistics.median(opens), 3) if opens else None,
        "open_max_s": round(max(opens), 3) if opens else None,
        "clicks": len(clicks), "p50_s": round(statistics.median(clicks), 3) if clicks else None,
        "p95_s": round(percentile(clicks, 95), 3) if clicks else None,
        "max_s": round(max(clicks), 3) if clicks else None,
        "failures": len(failures), "failure_examples": failures[:5],
        "clicks_per_s": round(len(clicks) / wall, 2), "wall_s": round(wall, 1),
        "server_cpu_s": round(cpu_s, 2), "server_cpu_ms_per_click": round(1000 * cpu_s / max(1, len(clicks)), 1),
        "server_peak_rss_mb": round(watch.peak_rss / 2**20), "loadavg_1m": [round(os.getloadavg()[0], 2), load0[0]],
        "cpu_percent_per_core": per_core, "target_p95_s": TARGET_P95_S,
        "target_met": bool(clicks) and percentile(clicks, 95) < TARGET_P95_S and not failures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--clicks", type=int, default=10)
    parser.add_argument("--think", type=float, default=1.0, help="mean seconds between a student's clicks")
    parser.add_argument("--page", choices=sorted(NEXT), default="decode")
    parser.add_argument("--replicas", type=int, default=0, help="N replicas behind HAProxy (default: one process)")
    parser.add_argument("--url", default=None, help="a running server or balancer (default: start one here)")
    parser.add_argument("--pid", type=int, nargs="*", default=[], help="with --url: the server processes to watch")
    parser.add_argument("--class", dest="lesson_class", action="store_true",
                        help="a class in one room: the projector, predictions, the class's own requests")
    args = parser.parse_args()
    if args.lesson_class:
        return class_main(args)
    if args.students < 1 or args.clicks < 1 or args.think < 0:
        parser.error("students and clicks must be at least 1, think at least 0")
    if args.page == "lesson" and args.clicks >= len(POSITIONS):
        parser.error(f"the lesson has {len(POSITIONS)} positions: at most {len(POSITIONS) - 1} clicks")
    if args.url:
        parsed = urllib.parse.urlparse(args.url)
        result = asyncio.run(run_class(args, parsed.hostname, parsed.port or 80, args.pid))
        served = {"url": args.url, "processes": len(args.pid)}
    elif args.replicas:
        port = free_port()
        with Class(args.replicas, port) as cls:
            result = asyncio.run(run_class(args, "127.0.0.1", port, cls.pids[:-1]))
        served = {"url": f"scripts/serve-class --replicas {args.replicas} (HAProxy in front)",
                  "processes": args.replicas}
    else:
        with AppServer(timeout=120) as server:
            result = asyncio.run(run_class(args, "127.0.0.1", server.port, [server.proc.pid]))
        served = {"url": "one `streamlit run app.py` started here", "processes": 1}
    print(json.dumps({"benchmark": "class_load", "machine": machine("cpu"), "served": served,
                      "timed": "client-side, per click: the rerun sent until its script_finished (Streamlit's "
                               "websocket protocol, no browser); clients and server on the same machine",
                      **result}, indent=2))


def class_main(args) -> None:
    """--class: the projector and N students through one class store (a SQLite file in a temporary folder, which the
    replicas inherit), on one process or --replicas N behind HAProxy."""
    import tempfile

    from class_mode import run_lesson_class

    with tempfile.TemporaryDirectory() as folder:
        store_url = f"sqlite:///{folder}/class.db"
        os.environ["LLMVIZ_CLASS_STORE"] = store_url
        if args.replicas:
            port = free_port()
            with Class(args.replicas, port):
                result = asyncio.run(run_lesson_class(args.students, args.think, "127.0.0.1", port, store_url))
            served = {"url": f"scripts/serve-class --replicas {args.replicas} (HAProxy in front)",
                      "processes": args.replicas}
        else:
            with AppServer(timeout=120) as server:
                result = asyncio.run(run_lesson_class(args.students, args.think, "127.0.0.1", server.port,
                                                      store_url))
            served = {"url": "one `streamlit run app.py` started here", "processes": 1}
    print(json.dumps({"benchmark": "class_load --class", "machine": machine("cpu"), "served": served,
                      "timed": "client-side: a prediction set until its run finished; the last one stored until the "
                               "projector's count showed it (polled every 1 s, as its fragment); the first prompt "
                               "sent until the teacher's run of the class's requests finished (Streamlit's "
                               "websocket protocol, no browser); clients and server on the same machine",
                      **result}, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
