"""`llmviz class`: start prints the code, the projector's link with the teacher key and the students'
link without it; a class started here is the app's (one store); end reads the teacher key from LLMVIZ_CLASS_KEY or
standard input (never the command line, which `ps` shows), writes the summary and deletes the class; a wrong or
missing key is one line and exit 2."""

import io
import json
import urllib.parse

import pytest

from llmviz.analysis.lesson_plan import CHAPTERS, END, POSITIONS, STEP_IDS, STEPS, position_of
from llmviz.classroom import classes
from llmviz.classroom.stores import STORE_ENV, open_store
from llmviz.cli.lesson_class import KEY_ENV
from llmviz.cli.main import main


def test_start_then_end(tmp_path, monkeypatch, capsys):
    url = f"sqlite:///{tmp_path / 'class.db'}"
    monkeypatch.setenv(STORE_ENV, url)
    assert main(["class", "start", "--url", "http://10.0.0.5:8501/", "--lang", "zh"]) == 0
    out = json.loads(capsys.readouterr().out)
    code = out["code"]
    key = out["projector"].split("teach=")[1].split("&")[0]
    assert out["projector"] == f"http://10.0.0.5:8501/lesson?lang=zh&present=1&lesson=1.1.1&room={code}&teach={key}"
    assert out["join"] == f"http://10.0.0.5:8501/lesson?room={code}&lang=zh" and key not in out["join"]
    store = open_store(url)
    classes.join(store, code, "10.0.0.9")  # the app's students join the same class
    assert main(["class", "end", code, "--key", key]) == 2  # not on the command line
    assert "unrecognized arguments" in capsys.readouterr().err and store.get(code) is not None
    monkeypatch.setenv(KEY_ENV, "wrong")
    assert main(["class", "end", code]) == 2
    assert "not yours" in capsys.readouterr().err  # a wrong key reads as a wrong code
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    assert main(["class", "end", code]) == 2
    assert KEY_ENV in capsys.readouterr().err and store.get(code) is not None
    monkeypatch.setattr("sys.stdin", io.StringIO(key + "\n"))  # `llmviz class end CODE < key.txt`
    assert main(["class", "end", code, "--out", str(tmp_path / "s.json")]) == 0
    assert json.loads(capsys.readouterr().out) == {"ended": code, "students": 1, "predictions": 0}
    assert json.loads((tmp_path / "s.json").read_text())["class"] == code and store.get(code) is None
    assert main(["class", "start", "--url", "ftp://x"]) == 2


def started(capsys) -> tuple[str, str]:
    """(the code, the projector's lesson=) of the class a `class start` just printed."""
    out = json.loads(capsys.readouterr().out)
    return out["code"], urllib.parse.parse_qs(urllib.parse.urlparse(out["projector"]).query)["lesson"][0]


@pytest.mark.parametrize("step", ["9.9.9", "1.1.9", "9.9", "1.1.1<script>", "", "END", " 1.1.1"])
def test_a_step_the_lesson_lacks_is_a_usage_error_and_no_class(step, tmp_path, monkeypatch, capsys):
    """Issue 47: `--step 9.9.9` started a class whose every student page then failed. Now it is argparse's exit 2,
    one line naming the forms a step takes and some of the lesson's own ids, and the store holds no class."""
    url = f"sqlite:///{tmp_path / 'class.db'}"
    monkeypatch.setenv(STORE_ENV, url)
    assert main(["class", "start", "--step", step]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and "\n" not in err
    assert err.startswith(f"error: python -m llmviz class start: argument --step: no lesson step {step!r}")
    assert all(f"{x}," in err for x in (STEP_IDS[0], STEP_IDS[-1])) and "chapter 1.1 to 5" in err and "'end'" in err
    assert open_store(url).codes() == []


@pytest.mark.parametrize("step, position", [("2.2.3", "2.2.3"), ("5.4", "5.4"), ("end", "end"), ("4.2", "4.2.1"),
                                            ("5", "5.1")])
def test_a_lesson_position_starts_the_class_there(step, position, tmp_path, monkeypatch, capsys):
    """A step's id or `end` as given; a chapter as the lesson's link opens it, its first step: the class's record
    and the projector's link hold the position every student page can open."""
    url = f"sqlite:///{tmp_path / 'class.db'}"
    monkeypatch.setenv(STORE_ENV, url)
    assert main(["class", "start", "--step", step]) == 0
    code, linked = started(capsys)
    assert open_store(url).get(code).step == linked == position
    assert position_of(position) == POSITIONS.index(position)  # what a student page does with it


def test_the_command_takes_exactly_the_lessons_positions(monkeypatch):
    """The list --step is checked against is the lesson's own object (the UI reads the same one), every position and
    chapter of it is taken, and a step added to the lesson is taken with no other edit."""
    from llmviz.analysis import lesson_plan
    from llmviz.cli.main import parser
    from llmviz.ui.lesson import lesson_steps

    assert lesson_steps.POSITIONS is lesson_plan.POSITIONS and lesson_steps.STEPS is lesson_plan.STEPS

    def parsed(step: str) -> str:
        return parser().parse_args(["class", "start", "--step", step]).step

    assert [parsed(p) for p in POSITIONS] == list(POSITIONS)
    assert [parsed(c) for c in CHAPTERS] == [next(s.id for s in STEPS if s.section == c) for c in CHAPTERS]
    assert parser().parse_args(["class", "start"]).step == STEP_IDS[0]  # the default: the lesson's first step
    added = lesson_plan.Step("5.5", "claim", "compare", claim="K10")
    monkeypatch.setattr(lesson_plan, "STEPS", (*STEPS, added))
    monkeypatch.setattr(lesson_plan, "STEP_IDS", (*STEP_IDS, "5.5"))
    monkeypatch.setattr(lesson_plan, "POSITIONS", (*STEP_IDS, "5.5", END))
    assert parsed("5.5") == "5.5"
