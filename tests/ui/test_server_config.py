"""The server's settings (issue 24): no full garbage collection after every script run, both where the checkout
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
