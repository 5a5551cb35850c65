"""The training commands' errors: `python -m llmviz.training --zh-po FOLDER` and
`python -m llmviz.training.corpus_zh FOLDER` stop with one line on stderr and exit status 2, as the `llmviz` CLI does,
for a missing or empty folder, a binary, malformed or FIFO `.po` file and a corpus that would be empty, before the
trainer reads its English corpus or builds a model; nothing is written. No training runs here: every case stops at
the Chinese corpus, which the trainer now reads first."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cases import PO_FOLDERS, PO_HEADER

pytest.importorskip("polib", reason="polib (a training-only dependency, requirements.txt) is not installed")

from llmviz.training import corpus_zh
from llmviz.training.command import run

ROOT = Path(__file__).resolve().parents[2]
# What each message must say, by case: the fact about the folder or file that the person can act on.
SAYS = {"missing_folder": "does not exist", "empty_folder": "holds no .po files", "a_file_not_a_folder":
        "is not a folder", "binary_po": "not UTF-8 text (at byte 128)", "fifo_po": "is a FIFO", "folder_named_po":
        "is a folder", "po_with_nul": "NUL bytes", "po_one_line_naming_a_file": "a single line",
        "malformed_po_syntax": "Syntax error in po file (line 8)",  # the header's 5 lines, a blank, msgid, msgstr, xyz
        "malformed_po_read_as_empty": "no .po file under", "no_chinese_text": "no .po file under"}


def one_error_line(rc: int, out: str, err: str) -> str:
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: "), (rc, err)
    assert "Traceback" not in err and out == ""
    return lines[0]


def test_every_case_has_its_words():
    assert set(SAYS) == {c.name for c in PO_FOLDERS}


@pytest.mark.parametrize("case", PO_FOLDERS, ids=lambda c: c.name)
def test_the_trainer_stops_in_one_line_before_it_trains(case, tmp_path, capsys):
    from llmviz.training import train

    out = tmp_path / "model"
    rc = run(train.main, ["--smoke", "--zh-po", str(case.value(tmp_path)), "--out", str(out)])
    assert SAYS[case.name] in one_error_line(rc, *capsys.readouterr())
    assert not out.exists()  # it stopped before making the output folder: nothing trained


@pytest.mark.parametrize("case", PO_FOLDERS, ids=lambda c: c.name)
def test_the_corpus_command_stops_in_one_line(case, tmp_path, capsys):
    out = tmp_path / "corpus"
    rc = run(corpus_zh.main, [str(case.value(tmp_path)), "--out", str(out)])
    assert SAYS[case.name] in one_error_line(rc, *capsys.readouterr())
    assert not out.exists()


def heldout_name() -> str:
    """A file name the hash rule holds out, found with hashlib here (the rule as its note states it)."""
    return next(f"library/m{i}.po" for i in range(10_000)
                if int.from_bytes(hashlib.sha256(f"library/m{i}.po".encode()).digest()[:8], "big") % 1000 < 20)


def po(text: str) -> str:
    return PO_HEADER + f'msgid "x"\nmsgstr "{text}"\n'


def test_a_good_folder_writes_its_held_out_split(tmp_path, capsys):
    folder, out = tmp_path / "po", tmp_path / "corpus"
    (folder / "library").mkdir(parents=True)
    (folder / heldout_name()).write_text(po("留出的文档。"), encoding="utf-8")
    (folder / "tutorial.po").write_text(po("训练用的文档。"), encoding="utf-8")
    assert run(corpus_zh.main, [str(folder), "--out", str(out)]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["files"] == 2 and said["train"] == 1 and said["heldout"] == [heldout_name()]
    assert (out / "heldout_zh.txt").read_text(encoding="utf-8") == "留出的文档。\n"  # one document, one newline


def test_a_folder_holding_nothing_out_writes_nothing(tmp_path, capsys):
    """A folder whose files all train (a part of the archive) would write an empty heldout_zh.txt: refused."""
    folder, out = tmp_path / "po", tmp_path / "corpus"
    folder.mkdir()
    (folder / "tutorial.po").write_text(po("训练用的文档。"), encoding="utf-8")
    rc = run(corpus_zh.main, [str(folder), "--out", str(out)])
    assert "is held out" in one_error_line(rc, *capsys.readouterr()) and not out.exists()


def test_the_trainers_entry_point_and_its_usage_errors(tmp_path, capsys, monkeypatch):
    """`python -m llmviz.training` is llmviz/training/__main__.main (as the subprocess test below runs it): a bad
    folder and a usage error each one line and status 2."""
    from llmviz.training import __main__ as entry

    folder = next(c for c in PO_FOLDERS if c.name == "fifo_po").value(tmp_path)
    for argv, says in ((["--smoke", "--zh-po", str(folder), "--out", str(tmp_path / "m")], "is a FIFO"),
                       (["--preset", "nope"], "invalid choice: 'nope'"), (["--minutes", "soon"], "invalid float")):
        monkeypatch.setattr(sys, "argv", ["python -m llmviz.training", *argv])
        assert says in one_error_line(entry.main(), *capsys.readouterr())
    assert not (tmp_path / "m").exists()


ENTRY_POINTS = {  # argv after python -> what its one line must say
    "corpus_zh-fifo": (["-m", "llmviz.training.corpus_zh", "{folder}"], "is a FIFO"),
    "corpus_zh-usage": (["-m", "llmviz.training.corpus_zh"], "required: folder"),
    "training-fifo": (["-m", "llmviz.training", "--smoke", "--zh-po", "{folder}", "--out", "{out}"], "is a FIFO"),
}


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_the_entry_points_exit_2_with_one_line(name, tmp_path):
    """The real commands in a fresh process: a FIFO .po (the case that could hang) or a usage error."""
    argv, says = ENTRY_POINTS[name]
    folder = next(c for c in PO_FOLDERS if c.name == "fifo_po").value(tmp_path)
    argv = [a.format(folder=folder, out=tmp_path / "model") for a in argv]
    done = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert says in one_error_line(done.returncode, done.stdout, done.stderr)
    assert not (tmp_path / "model").exists()
