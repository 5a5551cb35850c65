"""The import arrows of docs/architecture.md: one rule row per package, dependencies point down only, no circle.

Every import of llmviz/, app_pages/ and app.py is read from the source (function-local ones included, since a
local import still runs and still ties two modules together). A module's package is its row in PACKAGES; an
import of another llmviz package must be one the row allows, and a third-party import must not be one the row
forbids. Then the module graph must have no circle, and the allowed arrows between packages form no circle either.
The last tests plant a wrong arrow and a circle in a copy of the real sources and show the checker reports both.
"""

from import_graph import (
    PACKAGES,
    ROOT,
    UI_FAMILIES,
    circles,
    graph,
    package_of,
    sources,
    ui_family,
    wrong_arrows,
    wrong_ui_arrows,
)


def test_every_package_has_a_rule_and_the_rules_point_down():
    assert {package_of(m) for m in sources()} <= set(PACKAGES)
    order = list(PACKAGES)  # lowest first: a package may only import packages listed before it
    for name, row in PACKAGES.items():
        for below in row.may_import:
            assert order.index(below) < order.index(name), f"{name} may import {below}, listed above it"


def test_import_arrows_point_down():
    wrong = wrong_arrows(graph(sources()))
    assert not wrong, "\n".join(wrong)


def test_nothing_imports_in_a_circle():
    found = circles(graph(sources()))
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_ui_families_import_the_floor_and_the_families_below_them():
    """ui/ is a floor of shared modules and one subpackage per page family; every family has its row."""
    g = graph(sources())
    assert {ui_family(m) for m in g} - {None, "core"} == set(UI_FAMILIES)
    order = list(UI_FAMILIES)
    for name, below in UI_FAMILIES.items():
        assert all(order.index(b) < order.index(name) for b in below), name
    wrong = wrong_ui_arrows(g)
    assert not wrong, "\n".join(wrong)


def test_the_ui_checker_reports_planted_arrows():
    g = planted("llmviz.ui.serving.serving_run", "from llmviz.ui.lesson import lesson_end")
    assert [w for w in wrong_ui_arrows(g) if w.startswith("llmviz.ui.serving.serving_run:")]
    g = planted("llmviz.ui.state", "from llmviz.ui.serving import serving_run")  # the floor imports no family
    assert [w for w in wrong_ui_arrows(g) if w.startswith("llmviz.ui.state:")]
    g = planted("llmviz.ui.compare.compare_url", "from llmviz.ui.claims import claims_run")  # a section: floor only
    assert [w for w in wrong_ui_arrows(g) if w.startswith("llmviz.ui.compare.compare_url:")]
    g = planted("llmviz.ui.lesson.lesson_end", "from llmviz.ui.latency import roofline_view")  # allowed: below it
    assert not [w for w in wrong_ui_arrows(g) if w.startswith("llmviz.ui.lesson.lesson_end:")]


def planted(module: str, line: str) -> dict[str, list[tuple[str, int]]]:
    """The real sources with a function-local import added to `module`."""
    texts = sources()
    texts[module] += f"\n\ndef _planted():\n    {line}\n"
    return graph(texts)


def test_the_checker_reports_a_planted_wrong_arrow():
    g = planted("llmviz.trace.hooks", "from llmviz.ui import frame")
    assert [w for w in wrong_arrows(g) if w.startswith("llmviz.trace.hooks:") and "llmviz.ui.frame (ui)" in w]
    g = planted("llmviz.analysis.roofline", "import torch")
    assert [w for w in wrong_arrows(g) if w.startswith("llmviz.analysis.roofline:") and "torch" in w]
    g = planted("app_pages.decode", "from llmviz.engine.session import Session")
    assert [w for w in wrong_arrows(g) if w.startswith("app_pages.decode:") and "(engine)" in w]


def test_the_checker_reports_a_planted_circle():
    # session imports capture; capture importing session back (inside a function) closes a circle
    g = planted("llmviz.engine.capture", "from llmviz.engine import session")
    # an arrow inside one package: only the circle check can see it
    assert not [w for w in wrong_arrows(g) if w.startswith("llmviz.engine.capture:")]
    assert any({"llmviz.engine.capture", "llmviz.engine.session"} <= set(c) for c in circles(g))
    g = planted("llmviz.ui.markdown", "from llmviz.ui import markdown")
    assert ["llmviz.ui.markdown"] in circles(g)


def test_no_file_of_llmviz_is_over_400_lines():
    """Small, named pieces: a file past 400 lines holds more than one concept; split it."""
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "llmviz").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, long
