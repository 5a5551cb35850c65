"""The shape the pages keep: a page file is widgets and layout, 50-150 lines, and a verdict is decided
in llmviz/analysis only (one rule for every page, the CLI and the exports), never written by a ui/ module or a page.

The line rule was a ratchet while the long pages were split (decode.py 228, serving.py 188, prefill.py 174 lines):
OVER lists a page still over 150 lines with its length, a listed page may only shrink, and one back under 150 must
leave the list. The list is empty now: every page is within 150 lines. Each rule also runs on planted source to
show that it fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_PAGE_LINES = 150
OVER: dict[str, int] = {}  # page -> its lines, for a page over the limit while it is being split
VERDICTS = {"holds", "does_not_hold", "cannot_tell"}


def page_lines() -> dict[str, int]:
    return {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in sorted((ROOT / "app_pages").glob("*.py"))}


def over_the_line(lines: dict[str, int], over: dict[str, int]) -> list[str]:
    """What breaks the ratchet: a page over the limit that is not listed or grew, a listed one back under it."""
    wrong = [f"{page}: {n} lines (at most {over.get(page, MAX_PAGE_LINES)})" for page, n in lines.items()
             if n > over.get(page, MAX_PAGE_LINES)]
    return wrong + [f"{page}: {lines.get(page, 0)} lines, take it off the list" for page in over
                    if lines.get(page, 0) <= MAX_PAGE_LINES]


def test_no_page_file_grows_past_its_lines():
    assert over_the_line(page_lines(), OVER) == []


def test_the_line_rule_fails_on_a_grown_page_and_on_a_stale_entry():
    assert over_the_line({"a.py": 151, "b.py": 150}, {}) == ["a.py: 151 lines (at most 150)"]
    assert over_the_line({"a.py": 200}, {"a.py": 190, "b.py": 140}) == ["a.py: 200 lines (at most 190)",
                                                                          "b.py: 0 lines, take it off the list"]


def verdicts_written(source: str) -> list[int]:
    """Lines where code writes a verdict: a "verdict" key given a value in a dict or a subscript assignment, or a
    verdict's name returned or assigned."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            found += [k.lineno for k in node.keys if isinstance(k, ast.Constant) and k.value == "verdict"]
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Return) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            keyed = any(isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
                        and t.slice.value == "verdict" for t in targets)
            named = isinstance(node.value, ast.Constant) and node.value.value in VERDICTS
            if keyed or named:
                found.append(node.lineno)
    return sorted(found)


def found_in_ui(rule) -> dict[str, list]:
    """{file: what `rule(source)` finds} over llmviz/ui/, the pages and app.py (files where it finds nothing: none)."""
    files = [*sorted((ROOT / "llmviz" / "ui").rglob("*.py")), *sorted((ROOT / "app_pages").glob("*.py")),
             ROOT / "app.py"]
    return {str(p.relative_to(ROOT)): found for p in files if (found := rule(p.read_text(encoding="utf-8")))}


def test_no_ui_module_or_page_decides_a_verdict():
    written = found_in_ui(verdicts_written)
    assert written == {}, f"a verdict is analysis/claims.judge's alone: {written}"


def test_the_verdict_rule_fails_on_planted_code():
    planted = ('def decide(x):\n    if x > 1.2:\n        return "holds"\n    c = {}\n    c["verdict"] = "cannot_tell"\n'
               '    return {"id": "K3", "verdict": x}\n')
    assert verdicts_written(planted) == [3, 5, 6]
    assert verdicts_written('shown = c["verdict"] == "holds"\nbox = {"holds": 1}.get(c["verdict"])\n') == []


# What only the engine may reach: a run's engine session and what it holds, and a loaded model's tokenizer. A page
# moves a run through its handle (llmviz/service/runs.RunHandle) and asks service.models what a text's tokens are.
ENGINE_INSIDES = {"session", "_session", "sessions", "tokenizer", "sequences", "recorder"}


def engine_insides(source: str) -> list[tuple[int, str]]:
    """(line, attribute) where code reads one of ENGINE_INSIDES off an object."""
    return sorted((node.lineno, node.attr) for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Attribute) and node.attr in ENGINE_INSIDES)


def test_pages_touch_a_run_only_through_its_handle():
    reached = found_in_ui(engine_insides)
    assert reached == {}, f"a page moves a run by its RunHandle and tokenizes by service.models: {reached}"


def test_the_handle_rule_fails_on_planted_code():
    planted = ("run.session.rewind(3)\nrun.session.reseed(7)\nn = len(lm.tokenizer.encode(p))\n"
               "run.handle.step(sampling, seed)\nn = len(service.models.tokens(lm, p))\n")
    assert engine_insides(planted) == [(1, "session"), (2, "session"), (3, "tokenizer")]
