"""`llmviz app [streamlit options]`: serve the app from wherever the package is installed, from any folder
. It runs `streamlit run llmviz/webapp/app.py` with the settings of the checkout's
.streamlit/config.toml (no file watcher, no usage statistics, headless, no collection after every run), then the
options given, which win."""

from __future__ import annotations

import importlib.util
import os
import sys

from llmviz.errors import ConfigError
from llmviz.paths import WEBAPP_SCRIPT

SCRIPT = WEBAPP_SCRIPT
DEFAULTS = ("--server.headless", "true", "--server.fileWatcherType", "none", "--server.runOnSave", "false",
            "--browser.gatherUsageStats", "false", "--runner.postScriptGC", "false")


def add_parser(sub) -> None:
    sub.add_parser("app", help="serve the app (streamlit run) from the installed package; options after `app` "
                   "go to streamlit, e.g. `llmviz app --server.port 8601`", add_help=False)


def command(options: list[str]) -> list[str]:
    """The command line that serves the app with these streamlit options."""
    return [sys.executable, "-m", "streamlit", "run", str(SCRIPT), *DEFAULTS, *options]


def run(options: list[str]) -> int:
    """Replace this process with the Streamlit server (its signals and exit status are the server's). `options` are
    the words after `app`, unparsed: they are streamlit's, so main() hands them here before argparse sees them."""
    if importlib.util.find_spec("streamlit") is None:
        raise ConfigError("the app needs streamlit: pip install -r requirements.txt (or pip install llmviz)")
    if not SCRIPT.is_file():
        raise ConfigError(f"this llmviz install has no app script ({SCRIPT}): reinstall it")
    argv = command(options)
    os.execv(argv[0], argv)
    return 0  # not reached
