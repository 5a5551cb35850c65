"""llmviz/service/, the one lazy door into the engine: importing it imports no torch; the engine's classes come
on first access; engine_available() tells a replay-only install (no torch) apart without importing anything."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from llmviz import service

ROOT = Path(__file__).resolve().parents[2]
# Run in a fresh interpreter: this process has imported torch already. BLOCK makes torch and transformers
# unimportable, as in a replay-only install.
BLOCK = textwrap.dedent("""
    import sys

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "transformers"):
                raise ImportError(f"blocked in this test: {name}")
            return None

    sys.meta_path.insert(0, Block())
""")


def fresh(code: str, block: bool = False) -> dict:
    """The JSON a fresh interpreter prints after running `code` (torch blocked if `block`)."""
    script = (BLOCK if block else "") + textwrap.dedent(code)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_service_imports_no_torch():
    doc = fresh("""
        import json, sys
        import llmviz.service
        print(json.dumps(sorted(m for m in sys.modules
                                if m.split(".")[0] in ("torch", "transformers") or m.startswith(("llmviz.engine",
                                                                                                  "llmviz.labs")))))
    """)
    assert doc == []


def test_the_cli_parser_imports_no_torch():
    """`llmviz --help` and every command's parser come up without the engine (it loads when a command runs)."""
    doc = fresh("""
        import json, sys
        from llmviz.cli.main import parser
        parser().format_help()
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers"))))
    """)
    assert doc == []


def test_without_torch_the_service_imports_and_says_so():
    doc = fresh("""
        import json
        from llmviz import service

        def error_of(call):
            try:
                call()
            except Exception as exc:
                return type(exc).__name__
            return None

        print(json.dumps({
            "available": service.engine_available(),
            "class": error_of(lambda: service.LoadedModel),
            "load": error_of(lambda: service.models.load(None, service.EngineConfig())),
            "presets": "kv-fp16" in service.measure.presets({"num_heads": 8, "num_kv_heads": 8}),  # a torch-free door
            "embedded": service.EMBEDDED_MODEL,
        }))
    """, block=True)
    assert doc == {"available": False, "class": "ImportError", "load": "ImportError", "presets": True,
                   "embedded": "llmviz-tiny"}


def test_engine_classes_come_on_first_access():
    from llmviz.engine.loading.model import LoadedModel
    from llmviz.labs.compare import CompareConfig
    from llmviz.service import LoadedModel as FromService

    assert FromService is LoadedModel and service.CompareConfig is CompareConfig
    assert not hasattr(service, "Session")  # a run is handed out as a RunHandle (service/runs.py), never a Session
    assert service.engine_available() is True  # this test environment has torch and transformers


def test_every_exported_name_resolves_and_others_are_attribute_errors():
    missing = [name for name in service.__all__ if getattr(service, name, None) is None]
    assert missing == []
    assert not hasattr(service, "no_such_door")
    with pytest.raises(AttributeError, match="no_such_door"):
        _ = service.no_such_door
