"""A claim's id is written where it is declared, and read from there everywhere else: its module in
llmviz/analysis/claimdefs/, the lesson step that places it (analysis/lesson_plan.py) and the glossary term that
names it (analysis/article.py). A literal "K7" anywhere else in the app is a second place to change when a claim is
added or renamed; this guard finds one, and a planted one shows it can."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLAIM_ID = re.compile(r"^K(1[01]|[1-9])$")  # the article's eleven
DECLARED_IN = ("llmviz/analysis/claimdefs/", "llmviz/analysis/lesson_plan.py", "llmviz/analysis/article.py")


def literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant that is exactly a claim id."""
    return [(n.lineno, n.value) for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and CLAIM_ID.match(n.value)]


def outside_declarations(files: dict[str, str]) -> list[str]:
    return [f"{path}:{line} {text!r}" for path, source in files.items()
            if not path.startswith(DECLARED_IN) for line, text in literals(source)]


def app_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
            for folder in ("llmviz", "app_pages") for p in sorted((ROOT / folder).rglob("*.py"))}


def test_a_planted_claim_id_is_found():
    files = app_sources()
    assert len(files) > 200 and "llmviz/ui/lesson/lesson_reveal.py" in files
    files["llmviz/ui/lesson/lesson_reveal.py"] += '\n\ndef _planted(cid):\n    return cid == "K7"\n'
    found = outside_declarations(files)
    assert len(found) == 1 and found[0].startswith("llmviz/ui/lesson/lesson_reveal.py:") and "'K7'" in found[0]
    # a docstring that mentions K7 in a sentence, a key built from an id, and K99 (a toy's) are not literals of one
    assert literals('"""K7 holds."""\nkey = f"lesson.predict_unit.{cid}"\ntoy = "K99"\n') == []


def test_no_claim_id_is_written_outside_its_declarations():
    assert outside_declarations(app_sources()) == []
