"""The Chinese corpus reader: one document per .po file, translated text only, roles reduced to text,
whole files held out by a hash of their path; the committed held-out files are the ones their notes describe."""

import hashlib
import re

import pytest

from llmviz.corpus import read_documents
from llmviz.paths import CORPUS

polib = pytest.importorskip("polib", reason="polib (a training-only dependency, requirements.txt) is not installed")

from llmviz.training import corpus_zh  # noqa: E402

PO = r'''msgid ""
msgstr ""
"Language: zh_CN\n"
"Content-Type: text/plain; charset=UTF-8\n"

msgid "Use :func:`len` here."
msgstr "在此使用 :func:`len`。"

msgid "See :ref:`the tutorial <tut-intro>` and :meth:`~str.upper`."
msgstr "参见 :ref:`教程 <tut-intro>` 和 :meth:`~str.upper`，以及 ``x = 1``。"

#, fuzzy
msgid "A fuzzy one."
msgstr "模糊的翻译。"

msgid "Left untranslated."
msgstr ""

msgid "print(x)"
msgstr "print(x)"

#~ msgid "Gone."
#~ msgstr "已删除。"

msgid "Last\nline."
msgstr "最后\n"
"一行：:pep:`8`。"
'''


def test_a_po_file_becomes_one_document_of_its_translations(tmp_path):
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "demo.po").write_text(PO, encoding="utf-8")
    (tmp_path / "empty.po").write_text('msgid ""\nmsgstr ""\n"Language: zh_CN\\n"\n', encoding="utf-8")
    corpus = corpus_zh.build(tmp_path)
    assert corpus.files == 2  # the file with nothing kept is read, and gives no document
    docs = corpus.train + corpus.heldout
    # by hand: fuzzy, untranslated, copied (no Chinese) and obsolete entries dropped; roles read as their text
    assert docs == ["在此使用 len。\n\n参见 教程 和 upper，以及 x = 1。\n\n最后\n一行：8。"]
    joined = "\n<|endoftext|>\n".join(docs)
    assert corpus.sha256 == hashlib.sha256(joined.encode("utf-8")).hexdigest()


def test_whole_files_are_held_out_by_a_hash_of_their_path():
    names = [f"library/module{i}.po" for i in range(20_000)]
    held = [n for n in names if corpus_zh.is_heldout(n)]
    rule = [n for n in names if int.from_bytes(hashlib.sha256(n.encode()).digest()[:8], "big") % 1000 < 20]
    assert held == rule and 0.015 < len(held) / len(names) < 0.025  # about 2%


def test_the_committed_heldout_files_are_what_their_notes_say():
    for text_file, note in (("heldout.txt", "README.md"), ("heldout_zh.txt", "README_zh.md")):
        data = (CORPUS / text_file).read_bytes()
        said = re.search(r"sha256 of the file: `([0-9a-f]{64})`", (CORPUS / note).read_text(encoding="utf-8"))
        assert said and hashlib.sha256(data).hexdigest() == said.group(1), text_file  # training never rewrites it
    # the English split is byte-identical to the one the English-only model was evaluated on
    assert hashlib.sha256((CORPUS / "heldout.txt").read_bytes()).hexdigest().startswith("6a8612103f85")
    docs = read_documents(CORPUS / "heldout_zh.txt")
    assert len(docs) == 7 and all(corpus_zh.CJK.search(d) for d in docs)
    assert not any(re.search(r":[a-z]+:`|``", d) for d in docs)  # roles and literals reduced to their text
