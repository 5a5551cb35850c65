"""The training corpus: English text that ships with CPython itself (PSF License).

Two sources, in this order:
  topics     - `pydoc_data.topics.topics`, the language reference sections `help("if")` shows;
  docstrings - module, class, function and method docstrings of the standard library.

Docstrings are gathered in a child Python process: importing a few hundred modules can print, warn,
spawn threads or crash, and none of that may touch the trainer. The child prints one JSON list.
Every step is deterministic (sorted names, first occurrence wins), so one CPython version always
gives the same corpus and the same sha256. No torch here.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from llmviz.corpus import (
    EOS,
    HELDOUT_PER_MILLE,
    MAX_NON_ASCII,
    MIN_CHARS,
    MIN_WORDS,
    SEPARATOR,
    clean,
    is_heldout,
    read_documents,
    topic_documents,
    write_documents,
)
from llmviz.errors import ConfigError
from llmviz.paths import CORPUS

# Top-level modules never imported: GUI, demos, tests, easter eggs, installers, Windows/mac only,
# deprecated packages that warn or write files on import, and private/C-accelerator twins.
SKIP_TOP = {
    "tkinter", "idlelib", "turtle", "turtledemo", "test", "antigravity", "this", "__main__", "lib2to3",
    "ensurepip", "venv", "distutils", "pydoc_data", "msilib", "winreg", "winsound", "msvcrt", "nt",
    "_winapi", "_msi", "_overlapped", "_pyrepl", "__phello__", "xxsubtype", "xxlimited", "xxlimited_35",
    "pydoc", "webbrowser", "idle", "sitecustomize", "usercustomize", "site", "readline", "curses",
}
# The child script: walk the stdlib, import quietly, print [[name, doc], ...] as JSON on stdout.
_CHILD = r"""
import importlib, inspect, io, json, os, pkgutil, sys, warnings
warnings.simplefilter("ignore")
skip_top = set(json.loads(sys.argv[1]))
def bad(name):
    parts = name.split(".")
    return (parts[0] in skip_top or any(p.startswith("_") or "test" in p or p == "__main__" for p in parts))
def load(name):
    real_out, real_err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = io.StringIO()
    try:
        return importlib.import_module(name)
    except BaseException:
        return None
    finally:
        sys.stdout, sys.stderr = real_out, real_err
names, seen = [], set()
for top in sorted(sys.stdlib_module_names):
    if bad(top):
        continue
    mod = load(top)
    if mod is None:
        continue
    names.append(top)
    for info in pkgutil.walk_packages(getattr(mod, "__path__", []) or [], top + ".", onerror=lambda n: None):
        if not bad(info.name):
            names.append(info.name)
out = []
def add(label, obj):
    doc = getattr(obj, "__doc__", None)
    if isinstance(doc, str) and id(doc) not in seen:
        seen.add(id(doc))
        out.append([label, doc])
for name in sorted(set(names)):
    mod = load(name)
    if mod is None:
        continue
    add(name, mod)
    for attr in sorted(vars(mod)):
        obj = vars(mod)[attr]
        if attr.startswith("_") or getattr(obj, "__module__", None) != name:
            continue
        if inspect.isclass(obj):
            add(f"{name}.{attr}", obj)
            for meth in sorted(vars(obj)):
                if not meth.startswith("_") or meth == "__init__":
                    add(f"{name}.{attr}.{meth}", vars(obj)[meth])
        elif callable(obj):
            add(f"{name}.{attr}", obj)
sys.__stdout__.write(json.dumps(out))
"""


@dataclass(frozen=True)
class Corpus:
    train: list[str]  # documents, in corpus order
    heldout: list[str]
    sha256: str  # of SEPARATOR.join(all documents), before the split
    python: str  # the CPython version the text came from

    @property
    def chars(self) -> int:
        return sum(map(len, self.train)) + sum(map(len, self.heldout))


def docstring_documents(timeout: float = 600.0) -> list[str]:
    """Raw standard-library docstrings, collected by a child interpreter (see _CHILD)."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", _CHILD, json.dumps(sorted(SKIP_TOP))], capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=timeout, check=True,
        env={"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "LC_ALL": "C.UTF-8", "TERM": "dumb"})
    return [doc for _, doc in json.loads(done.stdout)]


def build(sources: tuple[str, ...] = ("topics", "docstrings"), limit: int | None = None) -> Corpus:
    """Gather, clean, de-duplicate (first occurrence wins) and split. `limit` keeps the first N docs."""
    raw: list[str] = []
    if "topics" in sources:
        raw += topic_documents()
    if "docstrings" in sources:
        raw += docstring_documents()
    docs, seen = [], set()
    for doc in raw:
        text = clean(doc)
        if text is not None and text not in seen:
            seen.add(text)
            docs.append(text)
    docs = docs[:limit] if limit else docs
    sha = hashlib.sha256(SEPARATOR.join(docs).encode("utf-8")).hexdigest()
    heldout = [d for d in docs if is_heldout(d)]
    train = [d for d in docs if not is_heldout(d)]
    return Corpus(train, heldout, sha, sys.version.split()[0])


def notice(license_file: Path) -> str:
    """The NOTICE shipped next to a model trained on this corpus: the PSF License of its text."""
    head = (f"The training text of this model (pydoc topics and standard-library docstrings of CPython "
            f"{sys.version.split()[0]}) is Copyright (c) 2001-2023 Python Software Foundation; All Rights "
            "Reserved, and is used under the Python Software Foundation License. The model weights are derived "
            "from it; assets/corpus/heldout.txt is an excerpt of it.\n\n")
    if license_file.exists():
        return head + license_file.read_text(encoding="utf-8")
    return head + "The full licence text: https://docs.python.org/3/license.html\n"


def committed_heldout_sha256(corpus: Corpus) -> str:
    """sha256 of the committed assets/corpus/heldout.txt, after checking that this corpus holds out exactly it (a
    run on another CPython would hold out other documents: it must say so, not measure on another text)."""
    path = CORPUS / "heldout.txt"
    if read_documents(path) != corpus.heldout:
        raise ConfigError(f"this CPython's corpus ({corpus.python}) does not hold out the committed {path}: the "
                          "held-out figures would not be comparable")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_heldout(folder: Path, corpus: Corpus, tokenizer_note: str) -> str:
    """heldout.txt plus a README saying how it was made; returns the file's sha256."""
    folder.mkdir(parents=True, exist_ok=True)
    sha = write_documents(folder / "heldout.txt", corpus.heldout)
    (folder / "README.md").write_text(f"""# Held-out split of the llmviz-tiny training corpus

`heldout.txt` holds {len(corpus.heldout)} documents ({sum(map(len, corpus.heldout))} characters), separated by a
line that holds only `{EOS}`; the file ends with one newline. sha256 of the file: `{sha}`.

How it was made (`llmviz/training/corpus.py`, CPython {corpus.python}):
- pydoc topics (`pydoc_data.topics.topics`, by sorted key), then the module, class, function and method
  docstrings of the standard library, imported in a child process in sorted module order (tkinter, idlelib,
  turtle, turtledemo, test packages, antigravity, this, lib2to3, ensurepip, venv, distutils and private
  modules skipped, as is anything that fails to import);
- each text dedented, trailing spaces stripped, blank-line runs collapsed; texts under {MIN_CHARS} characters or
  {MIN_WORDS} words, or with more than {MAX_NON_ASCII:.0%} non-ASCII characters, dropped; duplicates dropped;
- a document is held out when the first 8 bytes of sha256(text), as a big-endian integer, modulo 1000 are
  below {HELDOUT_PER_MILLE} (~2%). The other {len(corpus.train)} documents are the training split (not committed).
- sha256 of the whole cleaned corpus (all documents joined by `\\n{EOS}\\n`): `{corpus.sha256}`.

The token stream the perplexity is measured on: each document encoded on its own ({tokenizer_note}), each
followed by the `{EOS}` id (0), concatenated, cut into non-overlapping windows of 512 tokens.

Licence: the text is from CPython's documentation and docstrings, under the Python Software Foundation
License (see `assets/llmviz-tiny/NOTICE`).
""")
    return sha


if __name__ == "__main__":  # python -m llmviz.training.corpus: print the corpus statistics
    c = build()
    print(f"python {c.python}: {len(c.train)} train + {len(c.heldout)} held-out documents, "
          f"{c.chars / 1e6:.2f} MB, sha256 {c.sha256}")
