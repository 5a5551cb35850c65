"""`llmviz class`: a class in one room from the command line, as the lesson's Start a class does.

    llmviz class start --url http://HOST:8501 [--lang zh] [--step 1.1.1]   # the projector's link and the join link
    llmviz class end CODE [--out summary.json]    # the summary, then every record deleted; the teacher key from
                                                  # LLMVIZ_CLASS_KEY, else standard input (asked, unechoed, on a
                                                  # terminal): never the command line, which `ps` shows to all
    llmviz class sweep                                                      # end every class idle past its time

The store is LLMVIZ_CLASS_STORE's (the app's): a SQLite file by default, Redis across machines.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import urllib.parse
from pathlib import Path

from llmviz.analysis import lesson_plan
from llmviz.analysis.chapter_check import CHAPTERS
from llmviz.classroom import classes
from llmviz.classroom.stores import open_store, store_url
from llmviz.errors import ConfigError, UnknownNameError


def add_parser(sub) -> None:
    p = sub.add_parser("class", help="a class in one room: start one (the projector's and the students' links), "
                       "end one, or end the idle ones")
    acts = p.add_subparsers(dest="action", required=True)
    start = acts.add_parser("start", help="a new class: its code, the projector's link (with the teacher key) and "
                            "the students' link")
    start.add_argument("--url", default="http://localhost:8501", help="the app's address as the room reaches it")
    start.add_argument("--lang", default="zh", choices=("zh", "en"))
    start.add_argument("--step", type=lesson_position, default=lesson_plan.STEP_IDS[0],
                       help="the lesson's step to start at: a step's id (1.2.3), a chapter (4.2: its first step) or "
                       f"{lesson_plan.END!r}, as the lesson's link takes it")
    end = acts.add_parser("end", help="end a class: its summary (to --out), then every record of it deleted")
    end.add_argument("code")
    end.add_argument("--out", type=Path, default=None, help="write the class's summary (JSON) here first")
    acts.add_parser("sweep", help="end every class idle past its time")


def lesson_position(text: str) -> str:
    """--step as the lesson's position (analysis/lesson_plan.py's rule, the lesson link's own): checked as the
    argument is read, so a step the lesson lacks is a usage error (exit 2) before any store is opened, never a class
    whose every student page fails."""
    try:
        return lesson_plan.position(text)
    except UnknownNameError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


KEY_ENV = "LLMVIZ_CLASS_KEY"


def teacher_key() -> str:
    """The teacher key (teach= in the projector's link): LLMVIZ_CLASS_KEY, else a line of standard input (asked
    without echo on a terminal)."""
    key = os.environ.get(KEY_ENV)
    if key is None:
        key = getpass.getpass("teacher key (teach= in the projector's link): ") if sys.stdin.isatty() else \
            sys.stdin.readline()
    key = key.strip()
    if not key:
        raise ConfigError(f"no teacher key: set {KEY_ENV}, or give it on standard input")
    return key


def links(url: str, code: str, key: str, lang: str, step: str) -> tuple[str, str]:
    """(the projector's link, the students' link) of a class on the app at `url`."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(f"--url is the app's address, http(s)://host:port, got {url!r}")
    base = url.rstrip("/")
    query = urllib.parse.urlencode({"lang": lang, "present": 1, "lesson": step, "room": code, "teach": key})
    return f"{base}/lesson?{query}", f"{base}/lesson?{urllib.parse.urlencode({'room': code, 'lang': lang})}"


def run(args) -> int:
    store = open_store(store_url())
    if args.action == "start":
        code, key = classes.start(store, step=args.step, steps=lesson_plan.POSITIONS)
        projector, join = links(args.url, code, key, args.lang, args.step)
        print(json.dumps({"code": code, "projector": projector, "join": join, "store": store_url()}, indent=1))
        return 0
    if args.action == "end":
        key = teacher_key()
        summary = classes.summary(store, args.code, key, chapters=CHAPTERS)
        if args.out is not None:
            args.out.write_text(json.dumps(summary, ensure_ascii=False, indent=1), encoding="utf-8")
        classes.end(store, args.code, key)
        print(json.dumps({"ended": summary["class"], "students": len(summary["students"]),
                          "predictions": len(summary["predictions"])}))
        return 0
    print(json.dumps({"ended": classes.sweep(store)}))
    return 0
