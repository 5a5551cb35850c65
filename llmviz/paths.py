"""Where the app's own files are, found once: the asset folder (embedded models, the recorded demo,
held-out text, request traces, published configs, the icon) and the Streamlit pages.

A checkout keeps them at the repository root (`assets/`, `app_pages/`, beside `llmviz/`); an installed wheel
carries them inside the package (`llmviz/assets/`, `llmviz/app_pages/`: pyproject.toml maps the root folders
there). The installed place is looked at first, so a wheel never reads a checkout that happens to sit above it.
No torch, no streamlit: every layer may import this.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _found(name: str) -> Path:
    """The folder `name`: inside the installed package, else beside it in a checkout."""
    installed = PACKAGE / name
    return installed if installed.is_dir() else PACKAGE.parent / name


ASSETS = _found("assets")
APP_PAGES = _found("app_pages")
DEMO = ASSETS / "demo"
CORPUS = ASSETS / "corpus"
TRACES = ASSETS / "traces"
CONFIGS = ASSETS / "configs"
ICON = ASSETS / "ui" / "icon.png"  # served by this server: nothing is fetched offline
WEBAPP_SCRIPT = PACKAGE / "webapp" / "app.py"  # what `llmviz app` serves: runs llmviz/ui/frame.py
