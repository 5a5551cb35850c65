"""The server's settings: no full garbage collection after every script run, both where the checkout
serves the app (.streamlit/config.toml) and where `llmviz app` serves the installed package."""

import tomllib

from ui_helpers import ROOT

from llmviz.cli.app import command


def test_no_collection_after_every_run():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["runner"]["postScriptGC"] is False
    line = command(["--server.port", "8601"])
    at = line.index("--runner.postScriptGC")
    assert line[at + 1] == "false" and line[-2:] == ["--server.port", "8601"]  # the user's options come last, win


def test_the_collector_frees_a_cycle():
    """What the per-run collection did, done every GC_EVERY_S instead: a cycle nothing refers to is freed (the
    weak reference is the witness), after one round."""
    import gc
    import weakref

    from llmviz.ui.server import collect_forever

    class Node:
        pass

    gc.disable()  # so that only collect_forever can free it
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a
        witness = weakref.ref(a)
        del a, b
        assert witness() is not None
        collect_forever(0.0, rounds=1)
        assert witness() is None
    finally:
        gc.enable()


def test_the_app_starts_one_collector_thread(app_model):
    import threading

    from ui_helpers import open_app

    open_app(None, model=app_model)
    open_app(None, model=app_model)  # a second session: still one thread
    assert [t.name for t in threading.enumerate()].count("llmviz-gc") == 1
