"""A class store by its URL (issue 39): LLMVIZ_CLASS_STORE (the app and `llmviz class` read it), SQLite by default (a
file in the temporary folder, which the replicas of one machine share), or Redis across machines."""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path

from llmviz.classroom import classes
from llmviz.classroom.redis_store import RedisStore
from llmviz.classroom.sqlite_store import SqliteStore
from llmviz.classroom.store import Store
from llmviz.errors import ConfigError


def open_store(url: str) -> Store:
    """`sqlite:///path/to/class.db` (the default: one machine) or `redis://host:port/db` (several machines)."""
    if url.startswith("sqlite:///"):
        return SqliteStore(url.removeprefix("sqlite:///"))
    if url.startswith(("redis://", "rediss://")):
        return RedisStore(url)
    raise ConfigError(f"a class store is sqlite:///path or redis://host:port/db, got {url!r}")


STORE_ENV = "LLMVIZ_CLASS_STORE"


def store_url() -> str:
    """The class store this process uses: LLMVIZ_CLASS_STORE, else the default SQLite file."""
    return os.environ.get(STORE_ENV) or f"sqlite:///{Path(tempfile.gettempdir()) / 'llmviz-class' / 'class.db'}"


SWEEP_S = 60.0
log = logging.getLogger(__name__)


def sweep_every(store: Store, every_s: float = SWEEP_S) -> threading.Event:
    """End the classes past their time every `every_s` seconds in a daemon thread of this process (the app's, for
    its store), whatever its students do: a class nobody touches still ends on time, its records deleted. Each
    replica sweeps; a sweep is idempotent. Set the event returned to stop."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            try:
                classes.sweep(store)
            except Exception:  # a store out of reach now: the next sweep tries again
                log.exception("the class store's sweep failed")

    threading.Thread(target=loop, name="llmviz-class-sweep", daemon=True).start()
    return stop
