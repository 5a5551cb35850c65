"""A class store by its URL: LLMVIZ_CLASS_STORE (the app and `llmviz class` read it), SQLite by default (a
file in this user's private state folder, which the replicas of one machine share: private_dir), or Redis
across machines."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable

from llmviz.classroom import classes, private_dir
from llmviz.classroom.private_dir import STORE_ENV
from llmviz.classroom.redis_store import RedisStore
from llmviz.classroom.sqlite_store import SqliteStore
from llmviz.classroom.store import Store
from llmviz.errors import ConfigError


def open_store(url: str) -> Store:
    """`sqlite:///path/to/class.db` (the default: one machine) or `redis://host:port/db` (several machines). A SQLite
    store's folder and file are made and checked on every open (private_dir.prepare: UnsafeStoreError where another
    user could read, replace or redirect them)."""
    if url.startswith("sqlite:///"):
        return SqliteStore(private_dir.prepare(url.removeprefix("sqlite:///")))
    if url.startswith(("redis://", "rediss://")):
        return RedisStore(url)
    raise ConfigError(f"a class store is sqlite:///path or redis://host:port/db, got {url!r}")


def store_url() -> str:
    """The class store this process uses: LLMVIZ_CLASS_STORE, else the default SQLite file in this user's state
    folder (an earlier version's store in the temporary folder is noted once in the log, never used)."""
    if url := os.environ.get(STORE_ENV):
        return url
    private_dir.note_old_store()
    return f"sqlite:///{private_dir.default_store()}"


SWEEP_S = 60.0
log = logging.getLogger(__name__)


def sweep_every(opener: Callable[[], Store], every_s: float = SWEEP_S, name: str = "llmviz-class-sweep"
                ) -> threading.Event:
    """End the classes past their time every `every_s` seconds in a daemon thread of this process (the app starts
    one per process), whatever its students do: a class nobody touches still ends on time, its records deleted.
    The store is opened at the first sweep (`opener`), and again after a failure (a store out of reach now: the
    next sweep tries again). Each replica sweeps; a sweep is idempotent. Set the event returned to stop."""
    stop = threading.Event()

    def loop() -> None:
        held = None
        while not stop.wait(every_s):
            try:
                held = held or opener()
                classes.sweep(held)
            except Exception:
                held = None
                log.exception("the class store's sweep failed")

    threading.Thread(target=loop, name=name, daemon=True).start()
    return stop


def sweeper_name(url: str) -> str:
    """The sweep thread's name for a store (its URL's hash: a password in a Redis URL is not shown)."""
    return f"llmviz-class-sweep-{hashlib.sha256(url.encode('utf-8')).hexdigest()[:12]}"
