"""bench/class_load.py --class: a class in one room over Streamlit's own websocket protocol, no browsers.
A projector starts a class at K4's step; N students join from its link, each from its own loopback address (a class
on a LAN; every limit counts a client by its address: bench/common.student_address), and each sets a prediction (a
think time apart); the projector asks for its counts every PROJECTOR_POLL_S, as its fragment does; then at §3.2 every
student sends a prompt, the teacher approves them and runs the class's requests.

Timed, in the clients: `submit_s`, a prediction's slider set until its run (which stores it) finished; the
projector's lag, the last prediction stored until the projector's count first shows every student; `workload_s`,
the first prompt sent until the teacher's run (both schedulers, the Gantt drawn) finished. Checked: every
prediction and every result is in the class's store (read from its file), every student's count on the projector.
"""

from __future__ import annotations

import asyncio
import random
import time
import urllib.parse

from common import percentile, student_address
from st_session import StClient

from llmviz.classroom.stores import open_store
from llmviz.i18n.translator import translate
from llmviz.ui.lesson.lesson_class import TEACHER_POLL_S as PROJECTOR_POLL_S  # its status fragment's

TARGETS = {"submit_p95_s": 0.5, "projector_lag_s": 2.0, "workload_s": 60.0}


def query(c: StClient) -> dict:
    return {k: v[0] for k, v in urllib.parse.parse_qs(c.query_string).items()}


async def student(i: int, code: str, port: int, host: str, out: dict) -> StClient:
    c = StClient(port, "lesson", f"room={code}&lang=en", host=host, source=student_address(i, host))
    await c.open()
    out[i] = {"joined": bool(query(c).get("me")), "submit_s": None, "stored_at": None, "failures": []}
    return c


async def predict(i: int, c: StClient, think: float, out: dict) -> None:
    await asyncio.sleep(think * random.Random(i).uniform(0, 1))
    try:
        sent = time.perf_counter()
        value = round(1.05 + 0.05 * random.Random(i).randrange(60), 2)  # never the slider's x1.00: no change there
        out[i]["submit_s"] = await c.set("lesson_predict_K4", value)
        out[i]["stored_at"] = sent  # sent, not its run finished: the lag counts from before it could be stored
    except Exception as exc:  # counted, not raised
        out[i]["failures"].append(f"predict: {type(exc).__name__}: {exc}"[:200])


async def projector_sees(teacher: StClient, n: int, timeout_s: float = 120) -> float:
    """The moment the projector's count first shows all n students predicted: its fragment rerun every poll, the
    polls running on their own clock from the start of the predictions (as a browser's timer does)."""
    want = translate("en", "class.answered", n=n, joined=n)
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        began = time.perf_counter()
        for fragment in teacher.fragments():
            await teacher.rerun(fragment)
        if any(want in text for text in teacher.texts()):
            return time.perf_counter()
        await asyncio.sleep(max(0.0, PROJECTOR_POLL_S - (time.perf_counter() - began)))
    raise TimeoutError(f"the projector never showed {want!r}")


async def prompt(i: int, c: StClient, out: dict) -> None:
    try:
        await c.rerun()  # the student's page follows the teacher to §3.2 (as its fragment's next poll does)
        await c.set("class_prompt", ["The list of", "济南的冬天", "人工智能", "Return the"][i % 4])
        await c.click("class_send")
    except Exception as exc:
        out[i]["failures"].append(f"prompt: {type(exc).__name__}: {exc}"[:200])


async def run_lesson_class(students: int, think: float, host: str, port: int, store_url: str) -> dict:
    teacher = StClient(port, "lesson", "lang=en&lesson=2.2.2", host=host)
    await teacher.open()
    await teacher.click("class_start")
    q = query(teacher)
    code = q["room"]
    out: dict = {}
    clients = await asyncio.gather(*(student(i, code, port, host, out) for i in range(students)))
    watching = asyncio.create_task(projector_sees(teacher, students))
    await asyncio.gather(*(predict(i, c, think, out) for i, c in enumerate(clients)))
    last = max((r["stored_at"] for r in out.values() if r["stored_at"]), default=time.perf_counter())
    try:
        seen = await watching
    except TimeoutError as exc:  # counted as a failure, with what the projector showed
        seen = None
        out.setdefault(-1, {"failures": [], "joined": True})["failures"].append(str(exc))
    for _ in range(4):  # the projector to §3.2 by Next (2.2.3, 3.1.1, 3.1.2, 3.2.1): the class's step moves with it
        await teacher.click("lesson_next")
    began = time.perf_counter()
    await asyncio.gather(*(prompt(i, c, out) for i, c in enumerate(clients)))
    await teacher.rerun()  # the projector's list of the class's requests, now full
    await teacher.click("class_approve")
    await teacher.click("class_run")
    workload = time.perf_counter() - began
    store = open_store(store_url)
    stored = store.predictions(code, "K4", 1)
    results = [store.result(code, query(c).get("me", "")) for c in clients]
    failures = [f"student {i}: {f}" for i, r in sorted(out.items()) for f in r["failures"]]
    failures += [f"student {i}: not joined" for i, r in sorted(out.items()) if not r["joined"]]
    if len(stored) != students:
        failures.append(f"{len(stored)} predictions stored of {students}")
    failures += [f"student {i}: no result" for i, r in enumerate(results) if r is None]
    for c in (teacher, *clients):
        await c.close()
    submits = [r["submit_s"] for r in out.values() if r.get("submit_s") is not None]
    figures = {"submit_p50_s": round(percentile(submits, 50), 3) if submits else None,
               "submit_p95_s": round(percentile(submits, 95), 3) if submits else None,
               "projector_lag_s": None if seen is None else round(seen - last, 3), "workload_s": round(workload, 2)}
    return {"students": students, "think_s": think, **figures, "failures": len(failures),
            "failure_examples": failures[:5], "projector_poll_s": PROJECTOR_POLL_S, "targets": TARGETS,
            "target_met": not failures and all(figures[k] is not None and figures[k] < v for k, v in TARGETS.items())}
