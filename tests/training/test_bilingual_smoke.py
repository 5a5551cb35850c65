"""The bilingual trainer end to end in seconds: `--smoke --zh-po FOLDER` on a few .po files written
here trains a model whose card gives bits per character in both languages, the character baselines, which
characters of 济南的冬天 are tokens, and Chinese samples; transformers loads it and agrees with its tokenizer."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("polib", reason="polib (a training-only dependency, requirements.txt) is not installed")

ROOT = Path(__file__).resolve().parents[2]
LINES = {"library/a.po": ["列表是可变的序列，通常用于存放同类项目的集合。", "南方的天气很好。"],
         "tutorial.po": ["在交互式解释器中输入代码，然后按回车键。", "南方的冬天不冷，天气温和。"]}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    po = tmp_path_factory.mktemp("po")
    for name, lines in LINES.items():
        (po / name).parent.mkdir(parents=True, exist_ok=True)
        body = '# Translators:\n# Wang Wu <wu@example.org>, 2024\n# \nmsgid ""\nmsgstr ""\n"Language: zh_CN\\n"\n'
        body += '"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        body += "".join(f'msgid "Line {i}."\nmsgstr "{zh}"\n\n' for i, zh in enumerate(lines * 6))
        (po / name).write_text(body, encoding="utf-8")
    (po / "TRANSLATORS").write_text("# The latest translators list is in each po file.\n\nLi Si\nZhang San\n",
                                    encoding="utf-8")
    out = tmp_path_factory.mktemp("train") / "tiny-zh"
    done = subprocess.run([sys.executable, "-m", "llmviz.training", "--smoke", "--zh-po", str(po), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, json.loads((out / "card.json").read_text())


def test_the_card_has_the_bilingual_figures(trained):
    _, card = trained
    assert all(math.isfinite(card["bits_per_char"][k]) and card["bits_per_char"][k] > 0 for k in ("en", "zh"))
    assert set(card["zh_baselines_bits_per_char"]) == {"unigram", "bigram"}
    ex = card["example"]  # counted by hand in LINES (x6): 南 2, 的 4, 冬 1, 天 3 per copy, 济 never; smoke cjk_min 2
    assert ex["training_counts"] == {"济": 0, "南": 12, "的": 24, "冬": 6, "天": 18}
    assert ex["whole_characters"] == ["南", "的", "冬", "天"] and ex["as_bytes"] == ["济"] and ex["tokens"] == 3 + 4
    assert "济南的冬天" in [s["prompt"] for s in card["samples"]]


def test_transformers_reads_the_chinese_characters_as_the_card_says(trained):
    from transformers import AutoTokenizer

    out, card = trained
    hf = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert len(hf.encode("济南的冬天", add_special_tokens=False)) == card["example"]["tokens"]
    assert hf.decode(hf.encode("南方的冬天", add_special_tokens=False)) == "南方的冬天"


def test_the_notice_and_readme_credit_the_translators_and_give_the_figures(trained):
    out, card = trained
    notice = (out / "NOTICE").read_text(encoding="utf-8")
    assert "Documentation Contribution Agreement" in notice and "CC0" in notice
    assert "Translators of the zh_CN Python documentation (3 names" in notice
    assert all(f"  {name}\n" in notice for name in ("Li Si", "Wang Wu", "Zhang San"))  # file + .po header, no email
    assert "wu@example.org" not in notice and "PYTHON SOFTWARE FOUNDATION LICENSE" in notice
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert f"| this model | **{card['bits_per_char']['en']:.3f}** | **{card['bits_per_char']['zh']:.3f}** |" in readme
    assert "UTF-8 bytes, one token each: 济 (0)" in readme and "at least 2 times" in readme
    assert "Li Si, Wang Wu, Zhang San." in readme  # the card credits the translators too
    zh = [s for s in card["samples"] if "valid_utf8" in s]
    assert zh[0]["prompt"] == "济南的冬天" and all(s["text"].startswith(s["prompt"]) for s in zh)
