"""Shared by the UI tests: the app, the pages app.py declares, the model to run, and AppTest text collection."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
EMBEDDED_WEIGHTS = ROOT / "assets" / "llmviz-tiny" / "model.safetensors"
PROMPT = "The quick brown fox"  # in the vocabulary of both the embedded and the random test models
LANGUAGE_SWITCH = "Language / 语言"  # the sidebar radio app.py draws: present when a page ran inside app.py


def declared_pages() -> list[str]:
    """The page files the app's frame hands to st.navigation (llmviz/ui/frame.py PAGES), in order (e.g.
    "app_pages/home.py")."""
    from llmviz.ui.frame import PAGES

    return [f"app_pages/{file}" for file, *_ in PAGES]


def page_file(stem: str) -> str:
    """The declared page file named `stem` ("trace" -> "app_pages/trace.py"), wherever app.py keeps it."""
    found = [p for p in declared_pages() if Path(p).stem == stem]
    assert len(found) == 1, f"app.py declares {len(found)} pages named {stem}: {declared_pages()}"
    return found[0]


def _figure_text(spec: dict) -> list[str]:
    """Titles, axis titles, legend names and annotations of a plotly figure spec."""
    texts = []
    layout = spec.get("layout", {})

    def title(node) -> None:
        value = node.get("title") if isinstance(node, dict) else None
        text = value.get("text") if isinstance(value, dict) else value
        if isinstance(text, str):
            texts.append(text)

    title(layout)
    for key, node in layout.items():
        if key.startswith(("xaxis", "yaxis", "coloraxis")):
            title(node)
            if isinstance(node, dict):
                title(node.get("colorbar", {}))
    texts += [a.get("text", "") for a in layout.get("annotations", []) if isinstance(a, dict)]
    for trace in spec.get("data", []):
        if isinstance(trace.get("name"), str):
            texts.append(trace["name"])
        title(trace.get("colorbar", {}) if isinstance(trace.get("colorbar"), dict) else {})
    return texts


def shown(markdown: str) -> str:
    """What a person reads of a markdown string: its backslash escapes undone (values from a link, a file or the
    engine are escaped where they render: llmviz/ui/markdown.py), and the WORD JOINERs that break a bare URL's
    autolink, which no one sees, left out."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def rendered_text(at) -> list[str]:
    """Every string a person reads on an AppTest page: text, alerts, metric and widget labels, chart titles."""
    texts: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "text", "info", "warning", "error",
                 "success", "exception", "toast"):
        texts += [str(e.value) for e in getattr(at, kind)]
    for metric in at.metric:
        texts += [str(metric.label), str(metric.value), str(metric.proto.help)]
    for kind in ("button", "download_button", "selectbox", "slider", "select_slider", "radio", "text_input",
                 "text_area", "number_input", "checkbox", "toggle", "multiselect", "file_uploader",
                 "button_group", "pills", "segmented_control"):
        for widget in getattr(at, kind):
            texts += [str(widget.proto.label), str(getattr(widget.proto, "help", ""))]
            texts += [str(o) for o in getattr(widget.proto, "options", [])]  # what a choice shows
    texts += [str(e.label) for e in at.expander] + [str(e.label) for e in at.tabs]
    for table in at.dataframe:  # headers and text cells
        frame = table.value
        texts += [str(c) for c in frame.columns]
        texts += [v for col in frame.columns for v in frame[col].tolist() if isinstance(v, str)]
    for chart in at.get("plotly_chart"):
        texts += _figure_text(json.loads(chart.proto.spec))
    for chart in at.get("graphviz_chart"):  # the labels of a DOT diagram, not its node ids
        texts += re.findall(r'label="([^"]*)"', chart.proto.spec)
    return [t for t in texts if t]


def settings(at):
    """The session's settings (what its URL says) in an AppTest."""
    return at.session_state["llmviz_settings"]


def open_app(page: str | None = None, **params):
    """The app in AppTest with these URL parameters, switched to `page` (e.g. "app_pages/decode.py")."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.run()
    if page is not None:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def table_with(at, column: str):
    """The first table (st.dataframe) on the page that has `column`: found by what it shows, not by its place
    among the page's tables (which moves when a table is added or taken away above it)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)
