"""The shape of the test tree: tests/ mirrors the package, shared helpers live in tests/support/,
and no test imports another test module.

A test that imports another (`from test_parity import TOL`) runs that module's tests' imports and fixtures
too, hides which helpers are shared, and breaks when either file moves; the helpers go in tests/support/
instead, which tests/conftest.py puts on sys.path. Each rule is a function run on the real tree and, to show
it can fail, on a bad tree planted in tmp_path.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Folders of tests/ that name no package of llmviz/, each with the reason it has none. Every other folder
# mirrors one (tests/ui/ covers llmviz/ui/ and the pages in app_pages/ that it drives).
NOT_MIRRORED = {
    "support": "the helpers the test folders share; it holds no tests",
    "hostile": "hostile inputs run through every interface at once: library, CLI and pages",
}


def skipped(parts: tuple[str, ...]) -> bool:
    """Caches Python and tools leave (__pycache__, .hypothesis, ...), no part of the tree."""
    return any(part == "__pycache__" or part.startswith(".") for part in parts)


def imports_of_test_modules(tests: Path) -> list[str]:
    """'file:line: module' for every import of a module named test_* under `tests`, nested imports included."""
    found = []
    for path in sorted(tests.rglob("*.py")):
        if skipped(path.relative_to(tests).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):  # `from test_x import y`, and `from . import test_x`
                names = [node.module] if node.module else [alias.name for alias in node.names]
            else:
                continue
            found += [f"{path.relative_to(tests).as_posix()}:{node.lineno}: {name}" for name in names
                      if name.split(".")[0].startswith("test_")]
    return found


def unmirrored_folders(tests: Path, package: Path) -> list[str]:
    """The folders under `tests` that name no package under `package` (a folder holding __init__.py), outside
    NOT_MIRRORED; and any test_*.py file in tests/support/, where only helpers belong."""
    wrong = []
    for folder in sorted(p for p in tests.rglob("*") if p.is_dir()):
        rel = folder.relative_to(tests)
        if skipped(rel.parts) or rel.parts[0] in NOT_MIRRORED:
            continue
        if not (package / rel / "__init__.py").is_file():
            wrong.append(f"tests/{rel.as_posix()}/ names no package llmviz/{rel.as_posix()}/")
    support = tests / "support"
    wrong += [f"tests/support/{p.name} is a test among the helpers" for p in sorted(support.glob("test_*.py"))]
    return wrong


def shared_basenames(tests: Path) -> list[str]:
    """Module names used by two files under `tests` (conftest.py aside). Pytest's rootdir import mode imports a
    file by its bare name, and tests/support/ is on sys.path: a second file of the same name would be the
    wrong module, or a collection error."""
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted(tests.rglob("*.py")):
        if skipped(path.relative_to(tests).parts) or path.name == "conftest.py":
            continue
        if path.stem in seen:
            clashes.append(f"{seen[path.stem].relative_to(tests)} and {path.relative_to(tests)}")
        seen.setdefault(path.stem, path)
    return clashes


def test_no_test_imports_another_test_module():
    assert imports_of_test_modules(ROOT / "tests") == []


def test_the_test_folders_mirror_the_package():
    assert unmirrored_folders(ROOT / "tests", ROOT / "llmviz") == []
    assert (ROOT / "app_pages").is_dir() and (ROOT / "llmviz" / "ui" / "__init__.py").is_file()  # what ui/ covers


def test_no_two_test_files_share_a_module_name():
    assert shared_basenames(ROOT / "tests") == []


def plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_import_rule_catches_a_planted_test_import(tmp_path):
    tests = plant(tmp_path / "tests", {
        "engine/test_a.py": "from test_parity import TOL\n",
        "ui/test_b.py": "import os\n\n\ndef test_x():\n    import test_tokens_page.sub as t\n",
        "ui/test_c.py": "from . import test_catalogs\n",
        "ui/test_d.py": "from parity import TOL\nfrom ui_helpers import open_app\nimport pytest_timeout\n",
    })
    assert imports_of_test_modules(tests) == ["engine/test_a.py:1: test_parity", "ui/test_b.py:5: test_tokens_page.sub",
                                          "ui/test_c.py:1: test_catalogs"]


def test_the_mirror_rule_catches_a_planted_folder(tmp_path):
    package = plant(tmp_path / "llmviz", {"engine/__init__.py": "", "engine/kv/__init__.py": "",
                                          "assets/readme.txt": ""})
    tests = plant(tmp_path / "tests", {
        "engine/test_a.py": "", "engine/kv/test_b.py": "", "support/helpers.py": "", "hostile/test_c.py": "",
        "misc/test_d.py": "", "assets/test_e.py": "", "engine/__pycache__/x.pyc": "",
        ".hypothesis/examples/x": "", "support/test_f.py": "",
    })
    assert unmirrored_folders(tests, package) == [
        "tests/assets/ names no package llmviz/assets/",  # a folder of llmviz/, but not a package
        "tests/misc/ names no package llmviz/misc/",
        "tests/support/test_f.py is a test among the helpers",
    ]


def test_the_name_rule_catches_a_planted_clash(tmp_path):
    tests = plant(tmp_path / "tests", {"conftest.py": "", "ui/conftest.py": "", "engine/test_trace.py": "",
                                       "trace/test_trace.py": "", "support/parity.py": "", "engine/parity.py": ""})
    assert shared_basenames(tests) == ["engine/parity.py and support/parity.py",
                                       "engine/test_trace.py and trace/test_trace.py"]
