"""The Chinese training corpus: the zh_CN translation of the Python documentation.

Source: `python/python-docs-zh-cn`, branch 3.11, taken out with `git archive 3.11` into a folder of `.po` files
(nothing is downloaded here: the folder is an argument). Its translators contribute under the Documentation
Contribution Agreement in that repository's README (their work goes to the PSF under CC0), and the documentation
is distributed under the PSF License; the translators are credited in the TRANSLATORS file of its master branch.

One document per `.po` file, in sorted path order: the translated `msgstr` of each entry, in file order, joined
by blank lines. Dropped: fuzzy entries, obsolete ones, entries left untranslated, and entries with no Chinese
character (a code sample or a name copied as is). reST roles are reduced to their text (`:func:`len`` -> len,
`:ref:`标题 <target>`` -> 标题, `:meth:`~a.b.c`` -> c), inline literals to their content. Whole files are held out
by a hash of their path (about 2%), so a translation update never moves an entry between the two sides.
No torch here; polib (a training-only dependency) parses the files.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from llmviz.corpus import EOS, SEPARATOR
from llmviz.errors import ConfigError
from llmviz.files import read_regular

HELDOUT_PER_MILLE = 20  # ~2% of the files
MAX_PO_BYTES = 16 * 2**20  # per file; the branch's largest .po files hold well under 1 MiB
GIVE = "give the folder `git archive 3.11` of python-docs-zh-cn was extracted into"
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")  # CJK unified ideographs (+ ext. A, compatibility)
# :role:`text` or :domain:role:`text`; the text may be "title <target>" or start with ~ (last part) or ! (as is)
_ROLE = re.compile(r":[A-Za-z][\w.+-]*(?::[A-Za-z][\w.+-]*)?:`([^`]*)`")
_LITERAL = re.compile(r"``([^`]+)``")
_TITLED = re.compile(r"^(.*?)\s*<[^<>]*>$", re.S)


def role_text(inner: str) -> str:
    """What a reader sees of a role's content."""
    titled = _TITLED.match(inner)
    if titled and titled.group(1):
        return titled.group(1)
    if inner.startswith("~"):
        return inner[1:].rsplit(".", 1)[-1]
    return inner.removeprefix("!")


def plain(text: str) -> str:
    """reST roles and inline literals reduced to their text; line ends normalised; no document separator left."""
    text = _ROLE.sub(lambda m: role_text(m.group(1)), text)
    text = _LITERAL.sub(r"\1", text)
    return text.replace("\r\n", "\n").replace(EOS, "").strip()


def read_po(path: Path, name: str) -> str:
    """A .po file's text, refused with a one-line ConfigError unless it is a regular file (a FIFO would block the
    read forever) of at most MAX_PO_BYTES of UTF-8 text without NUL bytes (a binary file is not a translation)."""
    data = read_regular(path, MAX_PO_BYTES, "the .po file")
    if len(data) > MAX_PO_BYTES:
        raise ConfigError(f"{name} holds more than {MAX_PO_BYTES // 2**20} MiB: not a .po file of the translation")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{name} is not UTF-8 text (at byte {exc.start:,}): a binary file, not a .po file of the "
                          "translation") from exc
    if "\x00" in text:
        raise ConfigError(f"{name} holds NUL bytes: a binary file, not a .po file of the translation")
    if "\n" not in text:  # polib would take a one-line text for a path, and read that file instead
        raise ConfigError(f"{name} is a single line: not a .po file of the translation")
    return text


def entries(path: Path) -> list[str]:
    """The kept translations of one .po file, in file order; ConfigError for a file polib cannot parse."""
    import polib

    name = str(path)
    try:
        parsed = polib.pofile(read_po(path, name), encoding="utf-8")
    except OSError as exc:  # polib's "Syntax error in po file (line N)"
        raise ConfigError(f"{name} is not a .po file polib can read: {exc}") from exc
    kept = []
    for entry in parsed:
        if entry.obsolete or entry.fuzzy or not entry.translated():
            continue
        text = plain(entry.msgstr)
        if text and CJK.search(text):
            kept.append(text)
    return kept


def is_heldout(relative: str) -> bool:
    """Whether a file (its path inside the folder, with /) is held out: a hash rule, ~2% of the files."""
    digest = hashlib.sha256(relative.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 1000 < HELDOUT_PER_MILLE


@dataclass(frozen=True)
class ZhCorpus:
    train: list[str]
    heldout: list[str]
    heldout_files: list[str]  # which files were held out, by path
    sha256: str  # of SEPARATOR.join(every document), before the split
    files: int  # .po files read (documents: those with at least one kept entry)

    @property
    def chars(self) -> int:
        return sum(map(len, self.train)) + sum(map(len, self.heldout))


def po_files(folder: Path) -> list[Path]:
    """The .po files under `folder`, in sorted path order; ConfigError for a folder that is missing or not one, or
    that holds none."""
    if not folder.exists():
        raise ConfigError(f"{folder} does not exist: {GIVE}")
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder: {GIVE}")
    paths = sorted(folder.rglob("*.po"), key=lambda p: p.relative_to(folder).as_posix())
    if not paths:
        raise ConfigError(f"{folder} holds no .po files: {GIVE}")
    return paths


def build(folder: Path) -> ZhCorpus:
    """Every .po file under `folder` (an archive of the branch) as one document each, split by the hash rule;
    ConfigError (one line) for a folder or a file that is not what it should be, and for a folder whose files keep
    no Chinese text at all (malformed files polib reads as holding no entries), rather than an empty corpus."""
    folder = Path(folder)
    paths = po_files(folder)
    docs, names = [], []
    for path in paths:
        kept = entries(path)
        if kept:
            docs.append("\n\n".join(kept))
            names.append(path.relative_to(folder).as_posix())
    if not docs:
        raise ConfigError(f"no .po file under {folder} ({len(paths)} read) holds a translated entry with Chinese text "
                          f"(malformed files, or not the translation's): {GIVE}")
    sha = hashlib.sha256(SEPARATOR.join(docs).encode("utf-8")).hexdigest()
    held = [is_heldout(n) for n in names]
    return ZhCorpus(train=[d for d, h in zip(docs, held, strict=True) if not h],
                    heldout=[d for d, h in zip(docs, held, strict=True) if h],
                    heldout_files=[n for n, h in zip(names, held, strict=True) if h], sha256=sha, files=len(paths))


def heldout_note(corpus: ZhCorpus, file_sha256: str) -> str:
    """The README section of assets/corpus that says how heldout_zh.txt was made."""
    chars = sum(map(len, corpus.heldout))
    return f"""# Held-out split of the Chinese training corpus

`heldout_zh.txt` holds {len(corpus.heldout)} documents ({chars} characters), one per held-out `.po` file
({", ".join(f"`{n}`" for n in corpus.heldout_files)}), separated by a line that holds only `{EOS}`; the file ends
with one newline. sha256 of the file: `{file_sha256}`.

How it was made (`llmviz/training/corpus_zh.py`): the zh_CN translation of the Python documentation,
`python/python-docs-zh-cn`, branch 3.11, taken out with `git archive 3.11`; {corpus.files} `.po` files read with polib
in sorted path order; per file, the translated `msgstr` of each entry joined by blank lines (fuzzy, obsolete and
untranslated entries dropped, and entries with no Chinese character); reST roles reduced to their text and inline
literals to their content. A file is held out when the first 8 bytes of sha256(its path), as a big-endian
integer, modulo 1000 are below {HELDOUT_PER_MILLE}. The other {len(corpus.train)} documents are the training split (not
committed). sha256 of all documents joined by `\\n{EOS}\\n`: `{corpus.sha256}`.

Licence: the translators contribute under the Documentation Contribution Agreement in that repository's README (their
work is given to the PSF under CC0); the documentation is distributed under the Python Software Foundation License.
The translators are listed in the TRANSLATORS file of that repository's master branch.
"""


def main(argv=None) -> None:
    """`python -m llmviz.training.corpus_zh PO_FOLDER [--out assets/corpus]`: write heldout_zh.txt and its note."""
    import json

    from llmviz.corpus import write_documents
    from llmviz.paths import CORPUS
    from llmviz.training.command import Parser

    ap = Parser(prog="python -m llmviz.training.corpus_zh", description=main.__doc__)
    ap.add_argument("folder", type=Path, help="the folder `git archive 3.11` of python-docs-zh-cn was extracted into")
    ap.add_argument("--out", type=Path, default=CORPUS)
    args = ap.parse_args(argv)
    corpus = build(args.folder)
    if not corpus.heldout:  # the note and the file would describe an empty split
        raise ConfigError(f"no document under {args.folder} ({len(corpus.train)} kept) is held out (about 2% of the "
                          f"files are, by a hash of their path): {GIVE}, not a part of it")
    args.out.mkdir(parents=True, exist_ok=True)
    sha = write_documents(args.out / "heldout_zh.txt", corpus.heldout)
    (args.out / "README_zh.md").write_text(heldout_note(corpus, sha), encoding="utf-8")
    print(json.dumps({"files": corpus.files, "train": len(corpus.train), "heldout": corpus.heldout_files,
                      "chars": corpus.chars, "sha256": corpus.sha256, "heldout_sha256": sha}, ensure_ascii=False))


if __name__ == "__main__":
    from llmviz.training.command import run

    raise SystemExit(run(main))
