"""`llmviz class` (issue 39): start prints the code, the projector's link with the teacher key and the students'
link without it; a class started here is the app's (one store); end reads the teacher key from LLMVIZ_CLASS_KEY or
standard input (never the command line, which `ps` shows), writes the summary and deletes the class; a wrong or
missing key is one line and exit 2."""

import io
import json

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
    assert "teacher" in capsys.readouterr().err
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    assert main(["class", "end", code]) == 2
    assert KEY_ENV in capsys.readouterr().err and store.get(code) is not None
    monkeypatch.setattr("sys.stdin", io.StringIO(key + "\n"))  # `llmviz class end CODE < key.txt`
    assert main(["class", "end", code, "--out", str(tmp_path / "s.json")]) == 0
    assert json.loads(capsys.readouterr().out) == {"ended": code, "students": 1, "predictions": 0}
    assert json.loads((tmp_path / "s.json").read_text())["class"] == code and store.get(code) is None
    assert main(["class", "start", "--url", "ftp://x"]) == 2
