"""Trace files are written atomically (a killed write leaves no half file), and a run writes nothing outside a
temporary folder or the one the user names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import llmviz.trace.records as trace_module
from llmviz.engine.session import Session
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.records import load_trace

ROOT = Path(__file__).resolve().parents[2]


class Killed(BaseException):
    """What a signal handler raising mid-write looks like to the writer (no `except Exception` stops it)."""


@pytest.fixture(scope="module")
def traces(tiny):
    config = EngineConfig(sampling=SamplingConfig(temperature=0), capture="meta")
    return Session(tiny, "The list of", config).generate(3), Session(tiny, "Return the value", config).generate(5)


def _half_then(exc):
    """np.savez_compressed that writes the first entries of the archive, then dies."""
    real = np.savez_compressed

    def write(file, **arrays):
        real(file, **dict(list(arrays.items())[:2]))
        file.flush()
        raise exc
    return write


@pytest.mark.parametrize("exc", [Killed(), OSError(28, "No space left on device")], ids=["killed", "disk-full"])
def test_a_write_that_dies_midway_leaves_no_file(traces, tmp_path, monkeypatch, exc):
    first, _ = traces
    monkeypatch.setattr(trace_module.np, "savez_compressed", _half_then(exc))
    with pytest.raises(type(exc)):
        first.save(tmp_path / "t")
    assert list((tmp_path / "t").iterdir()) == []  # no arrays.npz, no trace.json, no temporary file


def test_a_write_that_dies_midway_keeps_the_previous_trace_whole(traces, tmp_path, monkeypatch):
    first, second = traces
    first.save(tmp_path / "t")
    before = {p.name: p.read_bytes() for p in (tmp_path / "t").iterdir()}
    monkeypatch.setattr(trace_module.np, "savez_compressed", _half_then(Killed()))
    with pytest.raises(Killed):
        second.save(tmp_path / "t")
    assert {p.name: p.read_bytes() for p in (tmp_path / "t").iterdir()} == before
    assert load_trace(tmp_path / "t").output_ids == first.output_ids


def test_a_kill_between_the_two_files_leaves_each_file_whole(traces, tmp_path, monkeypatch):
    """Killed after arrays.npz is in place but before trace.json is: each file is a complete one (the new
    arrays, the old JSON), none is half written, and no temporary file is left."""
    first, second = traces
    first.save(tmp_path / "t")
    old_json = (tmp_path / "t" / "trace.json").read_bytes()
    real_replace, calls = os.replace, []

    def replace(src, dst):
        calls.append(Path(dst).name)
        if Path(dst).name == "trace.json":
            raise Killed()
        real_replace(src, dst)

    monkeypatch.setattr(trace_module.os, "replace", replace)
    with pytest.raises(Killed):
        second.save(tmp_path / "t")
    assert calls == ["arrays.npz", "trace.json"]
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["arrays.npz", "trace.json"]
    assert (tmp_path / "t" / "trace.json").read_bytes() == old_json
    with np.load(tmp_path / "t" / "arrays.npz", allow_pickle=False) as npz:  # the new arrays, complete
        np.testing.assert_array_equal(npz["s4.sampled"], second.steps[4].sampled)


def test_a_trace_with_a_surrogate_in_a_path_still_saves_as_utf8(traces, tmp_path):
    """A model path from undecodable command-line bytes holds a lone surrogate: the JSON escapes it."""
    first, _ = traces
    first.model_card = {**first.model_card, "path": "/models/caf\udce9"}
    try:
        first.save(tmp_path / "t")
        text = (tmp_path / "t" / "trace.json").read_bytes().decode("utf-8")
        assert json.loads(text)["model_card"]["path"] == "/models/caf\udce9"
        assert load_trace(tmp_path / "t").model_card["path"] == "/models/caf\udce9"
    finally:
        first.model_card = {**first.model_card, "path": "assets/llmviz-tiny"}


def test_a_run_writes_only_where_it_is_told(tmp_path):
    """The CLI in a fresh process with its home, caches, temp folder and working folder all empty: afterwards
    the named --out folder holds trace.json and arrays.npz, and every other folder is as empty as before."""
    folders = {name: tmp_path / name for name in ("cwd", "home", "hf", "tmp", "cache")}
    for folder in folders.values():
        folder.mkdir()
    assets = {p: p.stat().st_mtime_ns for p in (ROOT / "assets").rglob("*") if p.is_file()}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folders["home"]),
           "HF_HOME": str(folders["hf"]), "TMPDIR": str(folders["tmp"]), "XDG_CACHE_HOME": str(folders["cache"]),
           "HF_HUB_OFFLINE": "1", "LLMVIZ_AUTO_DEVICE": "cpu", "PYTHONPATH": str(ROOT),
           "PYTHONDONTWRITEBYTECODE": "1", "TOKENIZERS_PARALLELISM": "false"}
    out = subprocess.run([sys.executable, "-m", "llmviz", "trace", "--prompt", "The list of", "--steps", "2",
                          "--capture", "full", "--threads", "1", "--out", str(tmp_path / "named")],
                         cwd=folders["cwd"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in (tmp_path / "named").iterdir()) == ["arrays.npz", "trace.json"]
    for name, folder in folders.items():
        left = [str(p.relative_to(folder)) for p in folder.rglob("*")]
        if name == "tmp":  # torch's import of dynamo makes its (empty) cache folder in the system temp folder
            left = [p for p in left if not (p.startswith("torchinductor_") and (folder / p).is_dir())]
        assert left == [], name
    assert {p: p.stat().st_mtime_ns for p in (ROOT / "assets").rglob("*") if p.is_file()} == assets
    assert len(load_trace(tmp_path / "named").steps) == 3
