"""The README names the article the app follows, and the concept map its IDs refer to is in the repository
(issue 10): every C/K ID cited in the code and the pages' text is one the map defines."""

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
    for path in [*ROOT.glob("llmviz/**/*.py"), *ROOT.glob("llmviz/ui/locales/*/*.json"), *ROOT.glob("app_pages/*.py"),
                 ROOT / "README.md"]:
        for found in re.findall(r"\b([CK]\d{1,2})\b", path.read_text(encoding="utf-8")):
            cited.setdefault(found, str(path.relative_to(ROOT)))
    unknown = {k: v for k, v in cited.items() if k not in defined_ids()}
    assert len(cited) > 20 and not unknown, unknown


def test_the_readme_names_the_article_and_links_the_map():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "大模型推理中的Prefill与Decode机制解析" in readme and "孔小哥" in readme
    assert "(docs/concepts.md)" in readme
