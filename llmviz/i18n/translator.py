"""Message catalogs: one per language (llmviz/i18n/locales/<lang>/*.json, merged), looked up by key.

Every label, caption and explanation of the app comes from here; tests check that both catalogs have
the same keys and that a page rendered in Chinese shows no English catalog string.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

LANGUAGES = {"en": "English", "zh": "简体中文"}
LOCALES = Path(__file__).resolve().parent / "locales"


@lru_cache(maxsize=len(LANGUAGES))
def catalog(lang: str) -> dict[str, str]:
    """All messages of one language (read once per process; never mutated)."""
    if lang not in LANGUAGES:
        raise KeyError(f"unknown language {lang!r}")
    messages: dict[str, str] = {}
    for path in sorted((LOCALES / lang).glob("*.json")):
        part = json.loads(path.read_text(encoding="utf-8"))
        clash = set(part) & set(messages)
        if clash:
            raise KeyError(f"{path.name} redefines {sorted(clash)[:3]}")
        messages.update(part)
    return messages


# English nouns the catalogs count: "1 tokens" becomes "1 token" after formatting (one rule for every message).
_COUNTED = ("token", "step", "position", "prompt", "row", "layer", "head", "request", "block", "round", "radian",
            "slot", "sequence", "character", "byte", "second", "time", "point", "length")
_ONE = re.compile(r"(?<![\d.,\-])\b1 (" + "|".join(_COUNTED) + r")s\b")


_DEVICE = re.compile(r"(cpu|cuda|mps)(:\d+)?")


def shown_device(value):
    """A device as a sentence names it: CPU, CUDA, CUDA:1, MPS (torch's lower-case names are for code and URLs);
    anything else as it is."""
    m = _DEVICE.fullmatch(value) if isinstance(value, str) else None
    return m[1].upper() + (m[2] or "") if m else value


def translate(lang: str, key: str, **values) -> str:
    """The message in `lang` with its values; a `device` value by its shown name (shown_device), in every
    language."""
    text = catalog(lang)[key]
    if not values:
        return text
    if "device" in values:
        values = {**values, "device": shown_device(values["device"])}
    text = text.format(**values)
    return _ONE.sub(r"1 \1", text) if lang == "en" else text


def timed(key: str, **values) -> dict:
    """What a measurement timed, for its result: the English sentence (JSON, the CLI) and the catalogue key with
    its values, so that a page shows it in its own language."""
    return {"what_was_timed": translate("en", key, **values), "timed": {"key": key, "values": values}}


class Translator:
    """`t("home.title")` in the language of one browser session."""

    def __init__(self, lang: str):
        self.lang = lang if lang in LANGUAGES else "en"

    def __call__(self, key: str, **values) -> str:
        return translate(self.lang, key, **values)

    def __contains__(self, key: str) -> bool:
        return key in catalog(self.lang)

    def timed(self, result: dict) -> str:
        """A result's "what was timed" in this language (results from before the key: their English sentence)."""
        described = result.get("timed")
        if described:
            return self(described["key"], **described["values"])
        return result.get("what_was_timed") or result.get("what_was_measured") or ""
