"""The package installs as the ecosystem expects: pyproject.toml lists every package, and a wheel
built from the checkout carries the engine, the UI, the locales, the pages and the assets, so that an install
outside the checkout generates text and serves the app.

The wheel is built from a copy of the checkout's files (the build writes build/ beside them) with the running
environment's setuptools, and installed with --no-deps into a fresh environment that sees this one's
site-packages for the dependencies (torch is not installed twice). That the installed copy runs, not the
checkout, is checked from llmviz.__file__ and llmviz.paths.ASSETS as the installed interpreter reports them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest
from parity import greedy_oracle

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SOURCES = ("llmviz", "app_pages", "assets", "pyproject.toml", "README.md", "LICENSE")
PROMPT, NEW = "The list of", 4


def test_pyproject_lists_every_package_and_maps_the_root_folders():
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "llmviz").rglob("__init__.py")}
    setup = PROJECT["tool"]["setuptools"]
    assert set(setup["packages"]) == found | {"llmviz.app_pages", "llmviz.assets"}
    assert setup["package-dir"] == {"llmviz.app_pages": "app_pages", "llmviz.assets": "assets"}
    assert PROJECT["project"]["scripts"] == {"llmviz": "llmviz.cli:main"}
    pins = {line.split("==")[0].lower() for line in (ROOT / "requirements.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#")}
    declared = {d.split(">")[0].split("<")[0].split("=")[0].strip().lower() for d in PROJECT["project"]["dependencies"]}
    assert declared <= pins and {"torch", "transformers", "streamlit", "plotly", "safetensors"} <= declared


def _setuptools_builds_wheels() -> bool:
    if importlib.util.find_spec("setuptools") is None:
        return False
    import setuptools

    return tuple(int(x) for x in setuptools.__version__.split(".")[:2]) >= (70, 1)  # bdist_wheel built in


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin/ folder of a fresh environment holding the wheel built from this checkout."""
    if not _setuptools_builds_wheels():
        pytest.skip("building the wheel needs setuptools >= 70.1 in this environment (requirements.txt pins it)")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, src / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree
                                         else {}))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(src)],
                   check=True, cwd=tmp, timeout=300)
    wheel = next((tmp / "dist").glob("llmviz-*.whl"))
    env = tmp / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    subprocess.run([*pip, "--python", str(env / "bin" / "python"), "install", "--no-deps", str(wheel)], check=True,
                   timeout=300)
    out = subprocess.run([str(env / "bin" / "python"), "-c", "import site; print(site.getsitepackages()[0])"],
                         check=True, capture_output=True, text=True, cwd=tmp).stdout.strip()
    (Path(out) / "deps-from-the-test-env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return env / "bin"


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "HF_HUB_OFFLINE": "1", "LLMVIZ_AUTO_DEVICE": "cpu"}


def test_the_installed_wheel_runs_outside_the_checkout(installed, tmp_path):
    where = subprocess.run([str(installed / "python"), "-c", "import llmviz, llmviz.paths as p; "
                            "print(llmviz.__file__); print(p.ASSETS); print(p.APP_PAGES)"],
                           check=True, capture_output=True, text=True, cwd=tmp_path, env=_env()).stdout.split("\n")
    env_root = installed.parent.resolve()
    for line in where[:3]:
        assert Path(line).resolve().is_relative_to(env_root), where  # the installed copy, not the checkout
    assert (Path(where[1]) / "llmviz-tiny" / "model.safetensors").is_file()
    assert (Path(where[2]) / "decode.py").is_file()
    done = subprocess.run([str(installed / "llmviz"), "generate", "--prompt", PROMPT, "--max-new-tokens", str(NEW),
                           "--temperature", "0", "--json"], capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    ids, out = greedy_oracle(ROOT / "assets" / "llmviz-tiny", PROMPT, NEW)
    assert doc["model"] == "llmviz-tiny" and doc["prompt_ids"] == ids and doc["output_ids"] == out


@pytest.mark.slow
def test_llmviz_app_serves_from_the_installed_package(installed, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([str(installed / "llmviz"), "app", "--server.port", str(port),
                               "--server.address", "127.0.0.1"], cwd=tmp_path, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, health = time.monotonic() + 120, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    health = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert health == "ok", server.stdout.read().decode() if server.poll() is not None else "no answer"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            assert r.status == 200 and b"<div id=\"root\">" in r.read()
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
