"""Find English catalog text where Chinese is shown: the literal English pieces of the message catalogs, and
which of them a list of rendered texts contains (used by the catalog and page tests in Chinese)."""

from __future__ import annotations

import re
import string

from llmviz.i18n.translator import catalog


def english_fragments() -> dict[str, str]:
    """{fragment: key}: the literal English pieces (between placeholders) that must not show in Chinese.

    Pieces of 3 characters or less, pieces without letters, and pieces that the Chinese catalog itself uses
    (shared terms such as "RoPE", "top-k", "head_dim") are left out.
    """
    en, zh = catalog("en"), catalog("zh")
    zh_text = "\n".join(zh.values())
    out = {}
    for key, value in en.items():
        if value == zh[key]:
            continue
        for literal, *_ in string.Formatter().parse(value):
            for piece in re.split(r"\*\*|`|\n", literal):
                piece = piece.strip(" \t.,:;()[]!?*-–—=×/")
                if len(piece) > 3 and re.search(r"[A-Za-z]{2,}", piece) and piece not in zh_text:
                    out.setdefault(piece, key)
    return out


def leaks(texts: list[str], fragments: dict[str, str]) -> dict[str, str]:
    """{fragment: key} of the fragments found in `texts` as whole words (so "Step" is not found in "Steps")."""
    joined = "\n".join(texts)
    found = {}
    for piece, key in fragments.items():
        if re.search(r"(?<![A-Za-z0-9_])" + re.escape(piece) + r"(?![A-Za-z0-9_])", joined):
            found[piece] = key
    return found


def latin_words(text: str) -> list[str]:
    """The Latin words a Chinese message shows as prose: code in backticks, {placeholders}, links' targets and URLs
    left out, and a gloss in full-width parentheses right after Chinese text (二值（binary）) left out too."""
    text = re.sub(r"`[^`]*`|\{[^}]*\}|\]\([^)]*\)|https?://\S+|<[a-z/][^>]*>", " ", text)  # and a tag (<br>)
    text = re.sub(r"(?<=[\u4e00-\u9fff])（[A-Za-z][A-Za-z -]*）", " ", text)
    return [w.strip(".-/") for w in re.findall(r"[A-Za-z][A-Za-z0-9_.+\-/]*", text)]
