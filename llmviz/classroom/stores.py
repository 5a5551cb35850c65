"""A class store by its URL (issue 39; the app will read it from LLMVIZ_CLASS_STORE): SQLite or Redis."""

from __future__ import annotations

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
