"""The README names the article the app follows, and the concept map its IDs refer to is in the repository
: every C/K ID cited in the code and the pages' text is one the map defines."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "concepts.md"


def defined_ids() -> set[str]:
    """The IDs the map's tables define (a row starting `| C7 |`)."""
    return set(re.findall(r"^\|\s*([CK]\d+)\s*\|", MAP.read_text(encoding="utf-8"), flags=re.M))


def test_the_map_defines_c1_to_c22_and_k1_to_k11():
    assert defined_ids() == {f"C{i}" for i in range(1, 23)} | {f"K{i}" for i in range(1, 12)}


def test_every_cited_id_is_in_the_map():
    cited: dict[str, str] = {}
    for path in [*ROOT.glob("llmviz/**/*.py"), *ROOT.glob("llmviz/i18n/locales/*/*.json"), *ROOT.glob("app_pages/*.py"),
                 ROOT / "README.md"]:
        for found in re.findall(r"\b([CK]\d{1,2})\b", path.read_text(encoding="utf-8")):
            cited.setdefault(found, str(path.relative_to(ROOT)))
    unknown = {k: v for k, v in cited.items() if k not in defined_ids()}
    assert len(cited) > 20 and not unknown, unknown


def test_the_readme_names_the_article_and_links_the_map():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "大模型推理中的Prefill与Decode机制解析" in readme and "孔小哥" in readme
    assert "(docs/concepts.md)" in readme


def test_each_claim_cites_the_concepts_the_map_gives_it():
    """Issue 20: the claims' concept IDs are the map's (its claims table, `| K3 | C8, C9 | ...`), not the code's
    own guess; the map was checked against the article by hand (K1 is prefill attention, C3; K9 prefix sharing, C22)."""
    from llmviz.analysis.claim_spec import declared

    table = dict(re.findall(r"^\|\s*(K\d+)\s*\|\s*((?:C\d+(?:,\s*)?)+)\s*\|", MAP.read_text(encoding="utf-8"), re.M))
    assert len(table) == 11 and table["K9"] == "C22" and table["K10"] == "C14, C21"
    assert {k: ", ".join(c.concepts) for k, c in declared().items()} == table


def test_the_readmes_python_example_runs_and_prints_the_oracles_continuation(tmp_path):
    """The README's Python block, run as a user would (from another folder, the checkout on the path), prints the
    greedy continuation transformers itself gives on the embedded weights."""
    import os
    import subprocess
    import sys

    from parity import greedy_oracle
    from transformers import AutoTokenizer

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1 and "service.runs.run(" in blocks[0]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    prompt, n = re.search(r'"(.+?)", EngineConfig.*max_new_tokens=(\d+)', blocks[0]).groups()
    folder = ROOT / "assets" / "llmviz-tiny"
    _, out = greedy_oracle(folder, prompt, int(n))
    assert done.stdout.rstrip("\n") == AutoTokenizer.from_pretrained(folder).decode(out, skip_special_tokens=True)


def test_the_architecture_page_agrees_with_the_layering_rules_and_the_extension_points():
    """docs/architecture.md's table of layers is the layering test's rule rows, and the registration calls it names
    exist where it says."""
    import importlib

    from import_graph import PACKAGES

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.split("## What each kind")[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith(("base", "`")) and not cells[0].startswith("---"):
            name = "base" if cells[0].startswith("base") else re.sub(r"[`/]|\.py|llmviz/", "", cells[0].split(",")[0])
            name = "app_pages" if name == "app" else name
            rows[name] = set() if cells[2] == "—" else {c.strip() for c in cells[2].split(",")}
    assert rows == {name: set(row.may_import) for name, row in PACKAGES.items()}
    assert list(rows) == list(PACKAGES)  # the same order, lowest first
    for module, name in (("llmviz.engine.kv", "register_kv_layout"),
                         ("llmviz.engine.models.attention", "register_attention_backend"),
                         ("llmviz.ui.frame", "PAGES"), ("llmviz.cli.main", "COMMANDS"),
                         ("llmviz.trace.model_config", "SUPPORTED_MODEL_TYPES"), ("llmviz.engine.models", "FAMILIES"),
                         ("llmviz.engine.kv.codecs", "KV_CODECS"), ("llmviz.trace.config", "KV_DTYPES")):
        assert f"`{name}" in text and hasattr(importlib.import_module(module), name), (module, name)
