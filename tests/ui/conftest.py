"""Fixtures of the UI tests (helpers live in ui_helpers.py)."""

from __future__ import annotations

import pytest
from ui_helpers import EMBEDDED_WEIGHTS


@pytest.fixture(scope="session")
def app_model(request) -> str:
    """The embedded model when its weights are there; otherwise a small random Llama from model_dirs."""
    if EMBEDDED_WEIGHTS.exists():
        return "llmviz-tiny"
    return str(request.getfixturevalue("model_dirs")["llama_tied"])


@pytest.fixture
def class_store(tmp_path, monkeypatch):
    """A class store of the test's own (a SQLite file in its temporary folder), for the app it opens."""
    from llmviz.classroom.stores import STORE_ENV

    monkeypatch.setenv(STORE_ENV, f"sqlite:///{tmp_path / 'class.db'}")


@pytest.fixture(autouse=True)
def no_shared_runs():
    """Each test starts with a server holding no run of any claim (ui/claims/shared_runs.py): a page's run is
    kept on the server for the lesson and the other pages, and one test's run must not be another's reveal."""
    from llmviz.ui import server
    from llmviz.ui.lesson import lesson_measure

    server.latest_claims.clear()
    lesson_measure.flights.clear()
    yield


@pytest.fixture
def toy_claim(tmp_path, monkeypatch):
    """K99 declared in one module of its own, its catalogue lines beside it (tests/support/toy_claim.py)."""
    import toy_claim as toy

    yield toy.install(tmp_path, monkeypatch)
    toy.uninstall()
