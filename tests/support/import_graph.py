"""The import graph of llmviz/, app_pages/ and app.py, and the rule row of each package (docs/architecture.md's
table as code): read by tests/test_layering.py and tests/test_docs.py.

Every import is read from the source, function-local ones included (a local import still runs and still ties two
modules together). `from a import b` names the module a.b when that is a module.
"""


from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Row:
    may_import: tuple[str, ...]  # the llmviz packages this one may import (itself always)
    forbidden: tuple[str, ...]  # third-party import prefixes it must not use


FRONT = ("torch", "transformers")  # what the Streamlit side never imports: it reaches torch through service
PACKAGES = {  # package -> its rule; keep in the order of docs/architecture.md, lowest first
    "base": Row((), ("torch", "transformers", "streamlit", "plotly")),  # llmviz/__init__, errors, paths, files, corpus
    "trace": Row(("base",), ("torch", "transformers", "streamlit", "plotly")),
    "i18n": Row(("base",), ("torch", "transformers", "streamlit", "plotly")),
    "analysis": Row(("trace", "base"), ("torch", "transformers", "streamlit", "plotly")),
    "classroom": Row(("base",), ("torch", "transformers", "streamlit", "plotly")),
    "engine": Row(("trace", "base"), ("streamlit", "plotly", "transformers.models")),
    "labs": Row(("engine", "analysis", "trace", "i18n", "base"), ("streamlit", "plotly", "transformers.models")),
    "training": Row(("labs", "engine", "analysis", "trace", "i18n", "base"), ("streamlit", "plotly")),
    "service": Row(("labs", "engine", "analysis", "trace", "i18n", "base"),
                   ("torch", "streamlit", "plotly", "transformers.models")),
    "viz": Row(("analysis", "i18n", "trace", "base"), ("torch", "transformers", "streamlit")),
    "cli": Row(("service", "classroom", "analysis", "i18n", "trace", "base"),
               ("torch", "transformers", "streamlit", "plotly")),
    "ui": Row(("service", "viz", "classroom", "analysis", "i18n", "trace", "base"), FRONT),
    "webapp": Row(("ui", "base"), FRONT),
    "app_pages": Row(("ui", "service", "viz", "analysis", "i18n", "trace", "base"), FRONT),
}
BASE = {"llmviz", "llmviz.errors", "llmviz.paths", "llmviz.files", "llmviz.corpus"}


def package_of(module: str) -> str:
    if module in BASE:
        return "base"
    if module == "app" or module.startswith("app_pages"):
        return "app_pages"
    if module == "llmviz.__main__":
        return "cli"
    name = module.split(".")[1]
    assert name in PACKAGES, f"{module}: llmviz/{name} has no rule row in tests/test_layering.py"
    return name


def sources() -> dict[str, str]:
    """{module name: source text} of everything the app and the package run."""
    files = list((ROOT / "llmviz").rglob("*.py")) + list((ROOT / "app_pages").glob("*.py")) + [ROOT / "app.py"]
    out = {}
    for path in files:
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path.read_text()
    return out


def imports_of(module: str, text: str, modules: set[str]) -> list[tuple[str, int]]:
    """(imported name, line) for every import in `text`; `from a import b` names a.b when that is a module."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this module's package
                is_package = module + ".__init__" in modules or any(m.startswith(module + ".") for m in modules)
                parent = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append((full if full in modules else base, node.lineno))
    return found


def graph(texts: dict[str, str]) -> dict[str, list[tuple[str, int]]]:
    modules = set(texts)
    return {m: imports_of(m, t, modules) for m, t in texts.items()}


def is_ours(name: str) -> bool:
    return name == "llmviz" or name.startswith(("llmviz.", "app_pages")) or name == "app"


def hits(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def wrong_arrows(g: dict[str, list[tuple[str, int]]]) -> list[str]:
    wrong = []
    for module, names in g.items():
        here = package_of(module)
        row = PACKAGES[here]
        for name, line in names:
            if is_ours(name):
                there = package_of(name)
                if there != here and there not in row.may_import:
                    wrong.append(f"{module}:{line} ({here}) imports {name} ({there})")
            elif any(hits(name, p) for p in row.forbidden):
                wrong.append(f"{module}:{line} ({here}) imports {name}, forbidden in {here}")
    return wrong


def circles(g: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), and modules that import themselves."""
    edges = {m: sorted({n for n, _ in names if n in g and n != m}) for m, names in g.items()}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:  # recursion depth is bounded by the module count (~200)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found + [[m] for m, names in g.items() if any(n == m for n, _ in names)]


# Inside llmviz/ui/: the shared floor (ui/*.py: state, settings, the frame, the server, errors, ...) and one
# subpackage per page family. A family imports the floor and the families listed here; the floor imports no family,
# except that ui/settings.py gathers each family's URL section (URL_SECTIONS), and a section imports only the floor.
UI_FAMILIES = {  # family -> the other families it may import; lowest first
    "claims": (),
    "decode": (), "prefill": (), "serving": (),
    "batch": ("claims",),  # the Batch page judges its sweep as the batch claim and shares that run
    "compare": ("claims",), "latency": ("claims",), "layouts": ("claims",),
    "lesson": ("claims", "latency", "serving", "batch"),  # K5's step draws the Batch page's grid
}
URL_SECTIONS = ("llmviz.ui.batch.batch_url", "llmviz.ui.compare.compare_url", "llmviz.ui.layouts.layouts_url",
                "llmviz.ui.lesson.lesson_steps")


def ui_family(module: str) -> str | None:
    """'core' for the floor of llmviz/ui/, the family's name for a module of a subpackage, None outside ui/."""
    if not hits(module, "llmviz.ui"):
        return None
    parts = module.split(".")
    return parts[2] if len(parts) > 3 else "core"


def wrong_ui_arrows(g: dict[str, list[tuple[str, int]]]) -> list[str]:
    wrong = []
    for module, names in g.items():
        here = ui_family(module)
        if here is None:
            continue
        if here != "core" and here not in UI_FAMILIES:
            wrong.append(f"{module}: ui family {here!r} has no row in UI_FAMILIES")
            continue
        for name, line in names:
            there = ui_family(name)
            if there is None or there == here:
                continue
            if module in URL_SECTIONS:
                allowed = there == "core"
            elif here == "core":
                allowed = name in URL_SECTIONS
            else:
                allowed = there == "core" or there in UI_FAMILIES[here]
            if not allowed:
                wrong.append(f"{module}:{line} (ui {here}) imports {name} (ui {there})")
    return wrong
