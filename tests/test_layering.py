"""The import arrows of shared/design.md: dependencies point down only.

app_pages/, app.py -> viz -> analysis -> engine; torch only in engine; engine never imports the layers above it,
streamlit, plotly or transformers.models; analysis never imports torch, streamlit or plotly; viz never
imports streamlit.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH_FREE_ENGINE = {"llmviz.trace.records", "llmviz.trace.config", "llmviz.trace.hooks",
                     "llmviz.trace.switches", "llmviz.labs.presets", "llmviz.errors", "llmviz.engine",
                     "llmviz.engine.models",  # a package: reading a config needs no tensors (the memory calculator)
                     "llmviz.engine.platform.heap"}

RULES = {  # layer -> forbidden import prefixes
    "engine": ("llmviz.analysis", "llmviz.viz", "llmviz.service", "llmviz.cli", "streamlit", "plotly",
               "transformers.models"),
    "analysis": ("torch", "streamlit", "plotly", "transformers", "llmviz.viz", "llmviz.service"),
    "viz": ("torch", "streamlit", "transformers", "llmviz.service"),
    "ui": ("torch", "transformers"),
    "other": ("streamlit", "plotly", "transformers.models"),
}


def imports_of(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return names


def layer_of(path: Path) -> str:
    rel = path.relative_to(ROOT).as_posix()
    if rel.startswith("llmviz/engine/"):
        return "engine"
    for layer in ("analysis", "viz"):
        if rel.startswith(f"llmviz/{layer}/"):
            return layer
    if rel == "app.py" or rel.startswith("app_pages/") or rel.startswith("llmviz/ui/"):
        return "ui"
    return "other"


def sources() -> list[Path]:
    files = list((ROOT / "llmviz").rglob("*.py")) + list((ROOT / "app_pages").rglob("*.py"))
    return files + ([ROOT / "app.py"] if (ROOT / "app.py").exists() else [])


def hits(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_import_arrows_point_down():
    wrong = []
    for path in sources():
        layer = layer_of(path)
        for name in imports_of(path):
            for prefix in RULES[layer]:
                if hits(name, prefix):
                    wrong.append(f"{path.relative_to(ROOT)} ({layer}) imports {name}")
            if layer != "engine" and hits(name, "torch"):
                wrong.append(f"{path.relative_to(ROOT)} imports torch outside llmviz/engine")
            if layer in ("ui", "viz", "analysis") and hits(name, "llmviz.engine") and name.count(".") >= 2:
                module = ".".join(name.split(".")[:3])
                if module not in TORCH_FREE_ENGINE:
                    wrong.append(f"{path.relative_to(ROOT)} ({layer}) imports {module}: only the torch-free "
                                 "engine modules or llmviz.service")
    assert not wrong, "\n".join(wrong)


def test_torch_free_engine_modules_do_not_import_torch():
    for module in TORCH_FREE_ENGINE - {"llmviz.engine"}:
        path = ROOT / (module.replace(".", "/") + ".py")
        if not path.exists():  # a package: its __init__ and the modules it imports
            init = path.with_suffix("") / "__init__.py"
            path = init
            for name in imports_of(init):
                if hits(name, module) and name != module:
                    inner = ROOT / (".".join(name.split(".")[:4]).replace(".", "/") + ".py")
                    if inner.exists():
                        assert not [n for n in imports_of(inner) if hits(n, "torch") or hits(n, "transformers")], name
        assert not [n for n in imports_of(path) if hits(n, "torch") or hits(n, "transformers")], module


def test_the_checker_catches_a_wrong_arrow(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import streamlit\nfrom torch import nn\nfrom transformers.models.llama import LlamaModel\n")
    names = imports_of(bad)
    assert any(hits(n, "streamlit") for n in names) and any(hits(n, "torch") for n in names)
    assert any(hits(n, "transformers.models") for n in names)
