"""A static audit of the code the CLI and the pages reach (llmviz/engine/**, trace/**, labs/**, cli/**, service/**,
files.py): errors are typed (no bare builtin exception is raised), no remote code, no pickles.

One builtin is allowed where Python's protocol demands it: AttributeError raised by a module's `__getattr__`
(PEP 562: hasattr and getattr's default rely on that type)."""

from __future__ import annotations

import ast
import builtins
import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AUDITED = sorted([*(ROOT / "llmviz" / "engine").rglob("*.py"), *(ROOT / "llmviz" / "trace").rglob("*.py"),
                  *(ROOT / "llmviz" / "labs").rglob("*.py"), *(ROOT / "llmviz" / "cli").rglob("*.py"),
                  *(ROOT / "llmviz" / "service").rglob("*.py"), ROOT / "llmviz" / "files.py"])
PROTOCOL = {"__getattr__": {"AttributeError"}}  # function name -> the builtin its protocol requires it to raise
BUILTIN_EXCEPTIONS = {name for name in dir(builtins)
                      if isinstance(getattr(builtins, name), type) and issubclass(getattr(builtins, name),
                                                                                     BaseException)}


def _name(node: ast.AST) -> str:
    """`np.load` -> "np.load", `ValueError` -> "ValueError", anything else -> ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return ""


def _keyword(call: ast.Call, name: str):
    """The constant a keyword argument is given, `...` when it is not a constant, None when it is absent."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value.value if isinstance(kw.value, ast.Constant) else ...
    return None


def audit(source: str, path: str = "<snippet>") -> list[str]:
    """Every violation in one file, as 'path:line: what'."""
    found = []
    tree = ast.parse(source)
    allowed = {id(n): PROTOCOL[f.name] for f in ast.walk(tree)
               if isinstance(f, ast.FunctionDef) and f.name in PROTOCOL for n in ast.walk(f)}
    for node in ast.walk(tree):
        where = f"{path}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = _name(node.exc.func if isinstance(node.exc, ast.Call) else node.exc)
            if raised in BUILTIN_EXCEPTIONS and raised not in allowed.get(id(node), ()):
                found.append(f"{where}: raises a bare {raised}; raise a subclass of llmviz.errors.LlmvizError")
        if not isinstance(node, ast.Call):
            continue
        called = _name(node.func)
        remote = _keyword(node, "trust_remote_code")
        if remote is not None and remote is not False:
            found.append(f"{where}: trust_remote_code={remote!r}; it must be False (or left out)")
        if called in ("np.load", "numpy.load") and _keyword(node, "allow_pickle") is not False:
            found.append(f"{where}: {called} without allow_pickle=False")
        if called in ("torch.load",) and _keyword(node, "weights_only") is not True:
            found.append(f"{where}: torch.load without weights_only=True")
        if called in ("pickle.load", "pickle.loads", "joblib.load", "dill.load", "cloudpickle.load"):
            found.append(f"{where}: {called} unpickles")
        if called in ("eval", "exec"):
            found.append(f"{where}: {called}() of a string")
    return found


def test_the_audit_finds_what_it_looks_for():
    """The checks can fail: each planted violation is found, typed errors and safe calls pass."""
    bad = ("raise ValueError('x')\nraise KeyError\nraise RuntimeError(f'{1}')\nraise TypeError('t')\n"
           "raise Exception('e')\nf(trust_remote_code=True)\ng(trust_remote_code=flag)\nnp.load(p)\n"
           "np.load(p, allow_pickle=True)\ntorch.load(p)\npickle.loads(b)\neval('1')\n")
    assert len(audit(bad)) == 12
    assert len(audit("def __getattr__(name):\n    raise AttributeError(name)\n")) == 0
    assert len(audit("def __getattr__(name):\n    raise KeyError(name)\n")) == 1  # only what the protocol needs
    assert len(audit("def lookup(name):\n    raise AttributeError(name)\n")) == 1
    good = ("raise ConfigError('x')\nraise errors.TraceFormatError('t')\nraise\nraise exc\nraise damaged('w')\n"
            "f(trust_remote_code=False)\nnp.load(p, allow_pickle=False)\ntorch.load(p, weights_only=True)\n"
            "model.eval()\n")
    assert audit(good) == []


@pytest.mark.parametrize("path", AUDITED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_bare_exception_no_remote_code_no_pickle(path):
    assert audit(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))) == []


def test_the_audit_covers_the_engine_the_service_and_the_cli():
    names = {str(p.relative_to(ROOT)) for p in AUDITED}
    assert {"llmviz/service/runs.py", "llmviz/service/measure.py", "llmviz/cli/main.py", "llmviz/cli/serve.py",
            "llmviz/trace/records.py",
            "llmviz/engine/loading/model.py", "llmviz/engine/session.py", "llmviz/labs/compare.py",
            "llmviz/cli/generate.py", "llmviz/files.py"} <= names and len(names) > 60


def test_the_runtime_loader_refuses_remote_code_explicitly():
    """The loader's transformers calls say trust_remote_code=False and local_files_only=True themselves."""
    tree = ast.parse((ROOT / "llmviz" / "engine" / "loading" / "model.py").read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _name(n.func).endswith("from_pretrained")]
    assert len(calls) == 2
    assert all(_keyword(c, "trust_remote_code") is False and _keyword(c, "local_files_only") is True for c in calls)


def test_hub_downloads_no_pickle_and_no_code():
    from llmviz.engine.loading.hub import FILES

    for name in ("pytorch_model.bin", "model.pt", "model.pth", "model.ckpt", "weights.pkl", "modeling_evil.py",
                 "tf_model.h5", "flax_model.msgpack", "model.onnx"):
        assert not any(fnmatch.fnmatch(name, pattern) for pattern in FILES), name
    assert any(fnmatch.fnmatch("model-00001-of-00002.safetensors", p) for p in FILES)
