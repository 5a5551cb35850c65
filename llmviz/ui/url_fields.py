"""A page's URL section: a typed dataclass whose fields each name their URL parameter, its check and how it is
written, read by one loop.

Each page family declares its own section beside its code (ui/compare/compare_url.py, ui/layouts/layouts_url.py,
ui/batch/batch_url.py, ui/memory_url.py, the lesson's in ui/lesson/lesson_steps.py): a frozen dataclass (its fields
typed, so an editor and a type checker see them) whose fields carry `url(...)` or `flag(...)`, and its `Section.of`.
The fields every page shares (the model, the prompt, the language, the presenter view, the step) are declared once,
in ui/settings.py, whose `Settings` nests each family's dataclass. `read` is the one parse-and-complain loop: a
value that does not parse, or parses to something its field refuses, is dropped and named (`name=value`), never
raised, and the link opens with the default. No streamlit, no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import MISSING, dataclass
from dataclasses import fields as dataclass_fields
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
    show: Callable[[Any], str] = str  # the value as the link writes it
    attr: str = ""  # the section dataclass's attribute that holds it ("" : the URL name)

    def read(self, raw: str) -> Any:
        """The value the link's `raw` text gives; Refused when the field's check refuses it."""
        value = (self.parse or type(self.default))(raw)
        if not self.check(value):
            raise Refused(value)
        return value


def url(name: str, check: Callable[[Any], bool] = lambda value: True, parse: Callable[[str], Any] | None = None,
        show: Callable[[Any], str] = str) -> dict:
    """A section dataclass field's metadata: its URL parameter `name`, its check, how it is read and written."""
    return {"url": (name, check, parse, show)}


def _flag(raw: str) -> bool:
    if raw not in ("0", "1"):
        raise ValueError(f"a flag is 0 or 1, got {raw!r}")
    return raw == "1"


def flag(name: str) -> dict:
    """A bool field's metadata: written 1 or 0 in the link (True and False inside)."""
    return url(name, lambda value: isinstance(value, bool), _flag, lambda value: "1" if value else "0")


@dataclass(frozen=True)
class Section:
    """A page family's fields, in the order its link writes them; `kind`: the dataclass that holds their values."""

    page: str
    fields: tuple[Field, ...]
    kind: type | None = None

    def __post_init__(self):
        for f in self.fields:  # each default is one the page itself would take back from a link
            if not f.check(f.default):
                raise ConfigError(f"URL section {self.page}: the default of {f.name} ({f.default!r}) fails its check")

    @classmethod
    def of(cls, page: str, kind: type) -> Section:
        """The section of a dataclass: each field that carries url()/flag() metadata, with the field's default."""
        out = []
        for f in dataclass_fields(kind):
            if "url" not in f.metadata:
                continue
            name, check, parse, show = f.metadata["url"]
            default = f.default if f.default is not MISSING else f.default_factory()
            out.append(Field(name, default, check, parse, show, f.name))
        return cls(page, tuple(out), kind)

    def build(self, values: Mapping[str, Any]):
        """The section's dataclass from {URL name: value} (a field not given keeps its default)."""
        return self.kind(**{f.attr: values[f.name] for f in self.fields if f.name in values})

    def written(self, obj) -> dict[str, str]:
        """{URL name: text} of each field of `obj` (a section's dataclass) that differs from its default."""
        return {f.name: f.show(getattr(obj, f.attr)) for f in self.fields if getattr(obj, f.attr) != f.default}


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
