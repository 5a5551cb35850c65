"""A page's URL section: a table of fields, each with its default and its check, read by one loop.

Each page family declares its own section beside its code (ui/compare/compare_url.py, ui/layouts/layouts_url.py,
ui/batch/batch_url.py, the lesson's in ui/lesson/lesson_steps.py); the fields every page shares (the model, the
prompt, the language, the presenter view, the step) are declared once, in ui/settings.py, which builds `Settings`
from all the sections. `read` is the one parse-and-complain loop: a value that does not parse, or parses to
something its field refuses, is dropped and named (`name=value`), never raised, and the link opens with the
default. No streamlit, no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from llmviz.errors import ConfigError

BAD = (TypeError, ValueError, ConfigError)  # what a field's parse or check may raise on a hostile value


class Refused(ValueError):
    """A value that parsed and that its field's check refused (it is named as parsed: kv_bs=5, not '5')."""


@dataclass(frozen=True)
class Field:
    """One URL parameter: `name` as written in the link, its `default`, `parse` (raw text -> value; default: the
    default's type) and `check` (the parsed value -> whether the page takes it)."""

    name: str
    default: Any
    check: Callable[[Any], bool] = lambda value: True
    parse: Callable[[str], Any] | None = None

    def read(self, raw: str) -> Any:
        """The value the link's `raw` text gives; Refused when the field's check refuses it."""
        value = (self.parse or type(self.default))(raw)
        if not self.check(value):
            raise Refused(value)
        return value


@dataclass(frozen=True)
class Section:
    """A page family's fields, in the order its link writes them."""

    page: str
    fields: tuple[Field, ...]

    def __post_init__(self):
        for f in self.fields:  # each default is one the page itself would take back from a link
            if not f.check(f.default):
                raise ConfigError(f"URL section {self.page}: the default of {f.name} ({f.default!r}) fails its check")


def one_of(allowed: Collection) -> Callable[[Any], bool]:
    return lambda value: value in allowed


def between(low, high) -> Callable[[Any], bool]:
    return lambda value: low <= value <= high


def parses(fn: Callable[[Any], Any]) -> Callable[[Any], bool]:
    """A check that `fn(value)` raises nothing a hostile value may raise."""

    def check(value) -> bool:
        try:
            fn(value)
        except BAD:
            return False
        return True

    return check


def read(sections: Iterable[Section], params: Mapping[str, str]) -> tuple[dict, list[str]]:
    """The one loop: {field: value} for the parameters every section takes, and "name=value" for each it refused
    (the raw text when it did not parse, the parsed value when the field's check refused it)."""
    values, problems = {}, []
    for section in sections:
        for f in section.fields:
            if f.name not in params:
                continue
            raw = params[f.name]
            try:
                values[f.name] = f.read(raw)
            except Refused as exc:
                problems.append(f"{f.name}={exc.args[0]!r}")
            except BAD:
                problems.append(f"{f.name}={raw!r}")
    return values, problems
