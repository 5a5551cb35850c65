"""One hostile client against a class of honest students, over Streamlit's own websocket protocol (no
browsers: scripts/st_session.py). Prints one JSON object (also `python bench/hostile_load.py --part class`).

    python bench/class_attack.py [--serve class|default] [--students 30] [--out FILE]
    LLMVIZ_CLIENT_BUDGET=off python bench/class_attack.py ...   # "before": no budget, no fair turns

`--serve class`: scripts/serve-class, 2 replicas behind HAProxy; `--serve default`: one `streamlit run app.py` on
Streamlit's own bind (every address, one dual-stack socket: an IPv4 client arrives as ::ffff:a.b.c.d). Every client is
its own address of 127.0.0.0/8 (Linux answers for all of it): the projector 127.0.0.1, honest student i 127.0.0.(10+i),
the attacker ATTACKER. The projector starts a class at K4's step; then, at once:
- the attacker sends WRONG wrong join codes (half of them teacher links with a guessed key: every code check counts),
  CODE_SESSIONS at a time, a new session each (a session reads its link once), as fast as the answers come;
- the attacker opens JOINS sessions on the class's link at once (no cookie: each a new device);
- the attacker keeps FLOODS sessions rerunning the lesson as fast as they can until the honest students are done
  (`streamlit run` allows any number of sessions; HAProxy 600 connections an address);
- the honest students join over the first JOIN_SPREAD_S seconds, each from its own address, then each sets its
  prediction (a think time apart): `predict_s`, the slider set until its run (which stores it) finished.
Checked, from the class's store file: every honest student seated, each one's prediction stored as set; the seats the
attacker took. Targets: every honest join succeeds, predict p95 under 0.5 s, 0 failures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "bench")]

import psutil  # noqa: E402
from browser_kit import AppServer, free_port  # noqa: E402
from common import cpu_seconds, family_total, machine, percentile  # noqa: E402
from serve_class import Class  # noqa: E402
from st_session import StClient  # noqa: E402

from llmviz.classroom.classes import CODE_ALPHABET, CODE_LENGTH  # noqa: E402
from llmviz.classroom.stores import open_store  # noqa: E402
from llmviz.i18n.translator import translate  # noqa: E402

ATTACKER, WRONG, CODE_SESSIONS, JOINS, FLOODS = "127.0.0.66", 300, 4, 60, 32
JOIN_SPREAD_S, THINK_S = 10.0, 10.0
TARGETS = {"predict_p95_s": 0.5}
SAID = {"no_class": "class.error.no_class", "too_many": "class.error.too_many", "wait": "rate.wait",
        "too_many_seats": "class.error.too_many_seats"}


def query(c: StClient) -> dict:
    return {k: v[0] for k, v in urllib.parse.parse_qs(c.query_string).items()}


def answer(c: StClient) -> str:
    """What a refused client was told: the key of SAID whose text (before its first figure) is on the page."""
    said = " ".join(c.alerts() + c.texts())
    for name, key in SAID.items():
        if translate("en", key, seconds=0).split("0")[0][:40] in said:
            return name
    return "other"


async def wrong_codes(code: str, port: int, n: int, seed: int, out: dict) -> None:
    """n wrong codes, half of them as teacher links with a guessed key, one session each (a session reads its link
    once: a guesser opens the next link), one after another."""
    rng = random.Random(seed)
    for i in range(n):
        guess = "".join(rng.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        guess = guess if guess != code else guess[::-1]
        c = StClient(port, "lesson", f"lang=en&room={guess}" + ("&teach=a-guessed-key" if i % 2 else ""),
                     source=ATTACKER)
        try:
            await c.open()
            said = answer(c)
            out[said] = out.get(said, 0) + 1
        except Exception as exc:  # the attacker's failures are its own: counted apart
            out["errors"] = out.get("errors", 0) + 1
            out.setdefault("error_examples", []).append(f"{type(exc).__name__}: {exc}"[:160])
        finally:
            with contextlib.suppress(Exception):
                await c.close()


async def stuffing(code: str, port: int, out: dict) -> list[StClient]:
    async def one() -> StClient | None:
        c = StClient(port, "lesson", f"room={code}&lang=en", source=ATTACKER)
        try:
            await c.open()
        except Exception as exc:
            out.setdefault("errors", []).append(f"{type(exc).__name__}: {exc}"[:160])
            return None
        said = "seated" if query(c).get("me") else answer(c)
        out[said] = out.get(said, 0) + 1
        return c

    return [c for c in await asyncio.gather(*(one() for _ in range(JOINS))) if c is not None]


async def flood(port: int, stop: asyncio.Event, out: dict) -> None:
    c = StClient(port, "lesson", "lang=en&lesson=2.2.2", source=ATTACKER)
    try:
        await c.open()
        while not stop.is_set():
            await c.rerun()
            out["runs"] = out.get("runs", 0) + 1
            if answer(c) == "wait":
                out["waits"] = out.get("waits", 0) + 1
    except Exception as exc:
        out.setdefault("errors", []).append(f"{type(exc).__name__}: {exc}"[:160])
    finally:
        with contextlib.suppress(Exception):
            await c.close()


async def honest(i: int, code: str, port: int, t0: float, out: dict) -> None:
    rng = random.Random(1000 + i)
    record = out[i] = {"joined": False, "predict_s": None, "value": None, "failures": []}
    await asyncio.sleep(rng.uniform(0, JOIN_SPREAD_S))
    c = StClient(port, "lesson", f"room={code}&lang=en", source=f"127.0.0.{10 + i}")
    try:
        await c.open()
        record["me"] = query(c).get("me", "")
        record["joined"] = bool(record["me"])
        if not record["joined"]:
            record["failures"].append(f"not seated: {answer(c)}")
            return
        think = t0 + JOIN_SPREAD_S + rng.uniform(0, THINK_S) - time.perf_counter()  # all joined, then each thinks
        await asyncio.sleep(max(0.0, think))
        record["value"] = round(1.05 + 0.05 * rng.randrange(60), 2)  # never the slider's x1.00: no change there
        record["predict_s"] = await c.set("lesson_predict_K4", record["value"])
        if answer(c) == "wait":
            record["failures"].append("told to wait")
    except Exception as exc:
        record["failures"].append(f"{type(exc).__name__}: {exc}"[:200])
    finally:
        with contextlib.suppress(Exception):
            await c.close()


async def attacker(code: str, port: int, stop) -> dict:
    """The attacker's three parts at once, until `stop` (a multiprocessing.Event) is set and its parts are done."""
    codes_out: dict = {}
    joins_out: dict = {}
    flood_out: dict = {}
    halt = asyncio.Event()
    floods = [asyncio.create_task(flood(port, halt, flood_out)) for _ in range(FLOODS)]
    guessing = [asyncio.create_task(wrong_codes(code, port, WRONG // CODE_SESSIONS, k, codes_out))
                for k in range(CODE_SESSIONS)]
    stuffed = await stuffing(code, port, joins_out)
    while not stop.is_set():
        await asyncio.sleep(0.2)
    halt.set()
    await asyncio.gather(*floods, *guessing)
    for c in stuffed:
        with contextlib.suppress(Exception):
            await c.close()
    return {"wrong_codes": {"sent": WRONG, "answers": codes_out}, "joins": {"sent": JOINS, "answers": joins_out},
            "floods": {"sessions": FLOODS, **flood_out}}


def attacker_process(code: str, port: int, stop, results) -> None:
    """The attacker in a process of its own: its clients' parsing never delays the honest students' clocks."""
    results.put(asyncio.run(attacker(code, port, stop)))


async def attack(port: int, students: int, store_url: str, pids: list[int]) -> dict:
    import multiprocessing

    teacher = StClient(port, "lesson", "lang=en&lesson=2.2.2", source="127.0.0.1")
    await teacher.open()
    await teacher.click("class_start")
    code = query(teacher)["room"]
    spawn = multiprocessing.get_context("spawn")
    stop, results = spawn.Event(), spawn.Queue()
    hostile = spawn.Process(target=attacker_process, args=(code, port, stop, results), daemon=True)
    hostile.start()
    await asyncio.sleep(3.0)  # the attacker's process starts and opens its sessions first
    honest_out: dict = {}
    cpu0, began = family_total(pids, cpu_seconds), time.perf_counter()
    await asyncio.gather(*(honest(i, code, port, began, honest_out) for i in range(students)))
    elapsed, cpu = time.perf_counter() - began, family_total(pids, cpu_seconds) - cpu0
    stop.set()
    hostile_out = await asyncio.to_thread(results.get, True, 300)
    hostile.join(30)
    await teacher.close()
    store = open_store(store_url)
    seated = {s.id for s in store.students(code)}
    stored = store.predictions(code, "K4", 1)
    failures = [f"student {i}: {f}" for i, r in sorted(honest_out.items()) for f in r["failures"]]
    for i, r in sorted(honest_out.items()):
        if r["joined"] and r.get("me") not in seated:
            failures.append(f"student {i}: not in the store")
        if r["value"] is not None and stored.get(r.get("me")) != r["value"]:
            failures.append(f"student {i}: stored {stored.get(r.get('me'))}, set {r['value']}")
    honest_ids = {r.get("me") for r in honest_out.values()}
    hostile_out["joins"]["seats_in_store"] = len(seated - honest_ids)
    predicts = [r["predict_s"] for r in honest_out.values() if r["predict_s"] is not None]
    figures = {"honest_joined": sum(r["joined"] for r in honest_out.values()),
               "predict_p50_s": round(percentile(predicts, 50), 3) if predicts else None,
               "predict_p95_s": round(percentile(predicts, 95), 3) if predicts else None}
    return {"students": students, **figures, "failures": len(failures), "failure_examples": failures[:5],
            "attacker": {"address": ATTACKER, **hostile_out},
            "honest_seconds": round(elapsed, 1), "server_cpu_s": round(cpu, 1),
            "server_cpu_share": round(cpu / elapsed / (psutil.cpu_count() or 1), 2), "targets": TARGETS,
            "target_met": not failures and figures["honest_joined"] == students and predicts != [] and
            figures["predict_p95_s"] < TARGETS["predict_p95_s"]}


def run(serve: str, students: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="llmviz-attack-"))
    os.chmod(folder, 0o700)
    store_url = f"sqlite:///{folder / 'class.db'}"
    os.environ["LLMVIZ_CLASS_STORE"] = store_url  # the servers inherit it
    if serve == "class":
        port = free_port()
        with Class(2, port) as c:
            return {"served": "scripts/serve-class --replicas 2 (HAProxy)", **asyncio.run(
                attack(port, students, store_url, c.pids))}
    with AppServer(address=None, timeout=180) as server:
        return {"served": "streamlit run app.py (its own bind: every address, dual stack)", **asyncio.run(
            attack(server.port, students, store_url, [server.proc.pid]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", choices=("class", "default"), default="class")
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args()
    result = {"benchmark": "class_attack", "machine": machine("cpu"),
              "client_budget": os.environ.get("LLMVIZ_CLIENT_BUDGET", "default (serve-class: 1/2 a replica)"),
              **run(args.serve, args.students)}
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
