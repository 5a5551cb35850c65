"""The class store's tests run against both stores: SQLite (a file, WAL) and a real redis-server (skipped
with the reason where it is absent)."""

from __future__ import annotations

import pytest
from redis_server import REDIS, absent, redis_server

from llmviz.classroom.stores import open_store


@pytest.fixture(params=["sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "sqlite":
        yield open_store(f"sqlite:///{tmp_path / 'class.db'}")
        return
    if REDIS is None:
        absent()  # a skip, or a failure where .ci/run found redis-server
    with redis_server(tmp_path) as url:
        yield open_store(url)
