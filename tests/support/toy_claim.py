"""A toy claim, K99, declared in one module of its own (its catalogue lines beside it), as an extension would add
one: the claim declaration tests and the lesson's toy steps place it (tests/ui/conftest.py's toy_claim fixture)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

TOY = '''
from llmviz.analysis.claim_spec import EMBEDDED, RATIO, ClaimSpec, EffectSpec, Lab
from llmviz.analysis.claims import speedup


def rule(f):
    ms = dict(zip(f["lengths"], f["prefill_ms"], strict=True))
    return {"toy_doubling": speedup(ms[32], ms[16])}, {"ms_16": ms[16]["median"], "ms_32": ms[32]["median"]}


CLAIM = ClaimSpec(
    id="K99", concepts=("C3",), article="a toy: 16 tokens to 32 doubles the prefill",
    effects=(EffectSpec("toy_doubling", RATIO, 1.0, bounded=True),),
    lab=Lab("prefill_sweep", EMBEDDED, {"quick": (8, 16, 32), "full": (8, 16, 32), "control": lambda n: (16, 32)}),
    rule=rule, predicted="toy_doubling", step_map={"prefill": ("ids", "scores")},
)
'''
LINES = {"en": {"claims.article.K99": "a toy: 16 tokens to 32 doubles the prefill",
                "claims.effect.toy_doubling": "toy doubling", "concept.K99": "a toy claim"},
         "zh": {"claims.article.K99": "玩具：提示从 16 个 token 到 32 个，预填充时间翻倍",
                "claims.effect.toy_doubling": "玩具翻倍", "concept.K99": "玩具声明"}}


def install(tmp_path: Path, monkeypatch, extra_lines: dict | None = None) -> str:
    """K99 in a module of its own beside the real ones, and its catalogue lines (and `extra_lines`, {lang: {key:
    text}}) in a copy of the locales; undo with `uninstall`."""
    import llmviz.analysis.claimdefs as package
    from llmviz.analysis import claim_spec

    folder = tmp_path / "claims"
    folder.mkdir()
    (folder / "k99_toy.py").write_text(TOY, encoding="utf-8")
    add_lines(tmp_path, monkeypatch, {lang: {**lines, **(extra_lines or {}).get(lang, {})}
                                      for lang, lines in LINES.items()})
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    monkeypatch.setattr("llmviz.labs.claims.QUICK_BUDGET_S", 3.0)  # a batch or a few: the suite's time
    claim_spec.declared.cache_clear()
    return "K99"


def add_lines(tmp_path: Path, monkeypatch, lines: dict) -> None:
    """`lines` ({lang: {key: text}}) as a catalogue file of their own in a copy of the locales the app reads."""
    from llmviz.i18n import translator

    locales = tmp_path / "locales"
    shutil.copytree(translator.LOCALES, locales)
    for lang, entries in lines.items():
        (locales / lang / "toy.json").write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr(translator, "LOCALES", locales)
    translator.catalog.cache_clear()


def uninstall() -> None:
    from llmviz.analysis import claim_spec
    from llmviz.i18n import translator

    claim_spec.declared.cache_clear()
    translator.catalog.cache_clear()
    sys.modules.pop(f"{claim_spec.PACKAGE}.k99_toy", None)
