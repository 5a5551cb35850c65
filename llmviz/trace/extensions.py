"""An extension is one declaration: a KV layout or an attention backend says, torch-free, who it is.

`Extension` is that declaration: its name (written in switch specs and links), its label and one line about it in
each language it knows (English required; another language falls back to English), whether it is exact (the
stock arithmetic up to float rounding) or lossy, the EngineConfig options it reads (the paged layout's block
size) and a KV layout's slot rule (what analysis/predict prices it at). No torch: the pages read it.

Each setting's `Names` table holds its declarations, in the order the pages list them. Every reader takes a name's
words from here: the pages' choices and captions (`label_in`, `about_in`), the CLI's help, the Compare page's
switch list, `switches.lossy_changes`. The engine registers its implementation against a declaration
(llmviz.engine.kv.register_kv_layout, llmviz.engine.models.attention.register_attention_backend); stock and
out-of-tree extensions are declared the same way. An out-of-tree module is named in LLMVIZ_EXTENSIONS (or an
entry point of group `llmviz.extensions`) and imported by `load_plugins` when the app or the CLI starts, before a
link or a flag is read.
"""

from __future__ import annotations

import importlib
import math
import os
import re
from collections.abc import Callable, Iterable, KeysView, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from types import MappingProxyType

from llmviz.errors import ConfigError, UnknownNameError

NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,39}")  # fits a switch spec ("kv-layout=NAME,attn=NAME") and a URL
OPTIONS = ("kv_block_size", "kv_pool_blocks")  # the EngineConfig fields an extension may read beyond its name
PLUGINS_ENV, PLUGINS_GROUP = "LLMVIZ_EXTENSIONS", "llmviz.extensions"

# How a KV layout's cache takes memory (C8, C9): all of max_seq's slots up front, a copy of the whole cache a row
# longer at every step, fixed-size blocks from a pool as it grows, or the sliding window's slots overwritten.
GROWTHS = ("reserves", "copies", "blocks", "window")

# (held, max_seq, window, block) -> the token slots one layer's cache takes for one sequence holding `held` tokens,
# of which it keeps the last `window` (0: all); `block` is the paged layout's block size (C8, C9, C20).
SlotRule = Callable[[int, int, int, int], int]


def _words(value, what: str, name: str) -> Mapping[str, str]:
    """A language -> text mapping with English (a bare string is English), read-only."""
    words = {"en": value} if isinstance(value, str) else value
    if not isinstance(words, Mapping) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                                 for k, v in words.items()):
        raise ConfigError(f"{name}: its {what} is a text, or a mapping of language -> non-empty text, got {value!r}")
    if what == "label" and "en" not in words:
        raise ConfigError(f"{name}: its label needs English ('en'), the language every other one falls back to")
    return MappingProxyType(dict(words))


@dataclass(frozen=True)
class Extension:
    """One choice of a setting (a KV layout, an attention backend, a KV dtype), declared once."""

    name: str
    label: Mapping[str, str] | str = ""  # language -> its name on the pages; "" or absent: the name itself
    about: Mapping[str, str] | str = field(default_factory=dict)  # language -> one line on what it does
    exact: bool = True  # False: a run with it may give other logits than the stock choice (a lossy approximation)
    options: tuple[str, ...] = ()  # the EngineConfig fields it reads beyond its name (OPTIONS)
    slots: SlotRule | None = None  # a KV layout's slot rule; None: pricing it is refused
    derived: str = ""  # not a choice: how a run comes to record it (the ring)
    # what it does, read by the pages' sentences and the memory calculator instead of its name:
    scores: bool | None = None  # an attention backend: whether it builds the [rows, keys] score matrix in memory
    growth: str = ""  # a KV layout: how its cache takes memory as a sequence grows (GROWTHS)

    def __post_init__(self):
        if not isinstance(self.name, str) or not NAME.fullmatch(self.name):
            raise ConfigError(f"a name is 1-40 of a-z, 0-9, '_', '.', '-' (it is written in switch specs and "
                              f"links), got {self.name!r}")
        object.__setattr__(self, "label", _words(self.label or self.name, "label", self.name))
        object.__setattr__(self, "about", _words(self.about, "about", self.name) if self.about else
                           MappingProxyType({}))
        if not isinstance(self.exact, bool) or not isinstance(self.derived, str):
            raise ConfigError(f"{self.name}: exact is True or False and derived a text")
        if not isinstance(self.options, tuple) or any(o not in OPTIONS for o in self.options):
            raise ConfigError(f"{self.name}: options is a tuple of {', '.join(OPTIONS)}, got {self.options!r}")
        if self.slots is not None and not callable(self.slots):
            raise ConfigError(f"{self.name}: slots is a rule (held, max_seq, window, block) -> slots")
        if self.scores not in (None, True, False):
            raise ConfigError(f"{self.name}: scores is True (it builds the score matrix), False or None")
        if self.growth and self.growth not in GROWTHS:
            raise ConfigError(f"{self.name}: growth is one of {', '.join(GROWTHS)}, got {self.growth!r}")

    def label_in(self, lang: str) -> str:
        return self.label.get(lang) or self.label["en"]

    def about_in(self, lang: str) -> str:
        """One line about it in `lang` (English where it has no such line; "" where it has none at all)."""
        return self.about.get(lang) or self.about.get("en", "")


class Names(KeysView):
    """The declarations one setting accepts, in the order the pages list them (iteration and `in` give the
    names of the choices), and the ones a run records without choosing them (`derived`).

    One table per setting, read by EngineConfig's validation, switch-spec parsing, the CLI's choices, the trace
    checker and the pages. It is extended at import or registration time only (`add`; an engine Registry's
    `declare`), and `remove` undoes a test's registration; never per session: Streamlit sessions are threads of
    one process and share it. The declarations it is built with are stock and cannot be removed. A live view of
    the names (a KeysView), so widgets and argparse take it as they take a tuple, and see a name added later."""

    __eq__ = object.__eq__  # one table per setting: equal only to itself (a KeysView would compare as a set)
    __hash__ = object.__hash__

    def __init__(self, kind: str, declared: Iterable[Extension | str] = ()):
        super().__init__({})  # self._mapping: the choices' declarations, in order
        self.kind = kind
        self._derived: dict[str, Extension] = {}
        for item in declared:
            self.add(item)
        self._stock = frozenset(self.recorded)

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and name in self._mapping

    def __repr__(self) -> str:
        return f"Names({self.kind!r}, {list(self)!r})"

    @property
    def recorded(self) -> tuple[str, ...]:
        """Every name a trace or an engine registry may hold: the choices, then the derived ones."""
        return (*self._mapping, *self._derived)

    def add(self, declared: Extension | str) -> Extension:
        ext = declared if isinstance(declared, Extension) else Extension(declared)
        if ext.name in self.recorded:
            raise ConfigError(f"{self.kind} {ext.name!r} is declared twice")
        (self._derived if ext.derived else self._mapping)[ext.name] = ext
        return ext

    def remove(self, name: str) -> None:
        """Undo an `add` (a test's registration); a stock name stays."""
        if name in self._stock:
            raise ConfigError(f"{self.kind} {name!r} is declared in llmviz/trace/extensions.py: it cannot be removed")
        if name not in self.recorded:
            raise UnknownNameError(f"{self.kind} {name!r} is not declared")
        (self._mapping if name in self else self._derived).pop(name)

    def describe(self, name: str) -> Extension:
        """The declaration of a name a run may record; UnknownNameError otherwise."""
        if isinstance(name, str) and name in self.recorded:
            return self._mapping.get(name) or self._derived[name]
        raise UnknownNameError(f"{self.kind} {name!r} is not declared: the choices are {', '.join(self)}")

    def check(self, value, field: str | None = None) -> str:
        """`value` if a setting may take it; else an UnknownNameError listing the choices (and, for a derived
        name, how it is chosen)."""
        if value in self:
            return value
        how = f" ({value} is {self._derived[value].derived})" if isinstance(value, str) and value in self._derived \
            else ""
        raise UnknownNameError(f"{field or self.kind}={value!r} is not one of {', '.join(self)}{how}")

    def having(self, **properties) -> tuple[str, ...]:
        """The choices whose declarations have these properties (having(growth="blocks")), in order."""
        return tuple(n for n in self if all(getattr(self._mapping[n], k) == v for k, v in properties.items()))

    def slots(self, name: str) -> SlotRule:
        """A layout's slot rule (llmviz/analysis/predict.layer_slots prices it), or an UnknownNameError."""
        rule = self.describe(name).slots if isinstance(name, str) and name in self.recorded else None
        if rule is None:
            what = "was registered without a slot rule" if name in self.recorded else "is not declared"
            priced = ", ".join(n for n in self.recorded if self.describe(n).slots is not None)
            raise UnknownNameError(f"{self.kind} {name!r} {what}: the ones priced are {priced}")
        return rule


def row_slots(held: int, max_seq: int, window: int, block: int) -> int:
    """A preallocated row: max_seq slots, or the window's when it is shorter (a ring)."""
    return min(max_seq, window) if window else max_seq


def kept_slots(held: int, max_seq: int, window: int, block: int) -> int:
    """Exactly the positions kept (the growing layout)."""
    return min(held, window) if window else held


def block_slots(held: int, max_seq: int, window: int, block: int) -> int:
    """The whole blocks the kept positions touch (a window not aligned to blocks straddles one more)."""
    first = max(0, held - window) if window else 0
    return (math.ceil(held / block) - first // block) * block


def load_plugins(env: Mapping[str, str] | None = None) -> list[str]:
    """Import the out-of-tree extensions (their modules declare and register themselves): the modules named in
    LLMVIZ_EXTENSIONS (comma-separated), then the entry points of group `llmviz.extensions`. Once per process,
    before a link or a flag is read (Python imports a module once). The problems, one line each: a module that
    is not there or fails is named, never a traceback, and the others still load."""
    names = [n.strip() for n in (os.environ if env is None else env).get(PLUGINS_ENV, "").split(",") if n.strip()]
    problems = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # any import error of someone else's module: reported, the app goes on
            problems.append(f"{PLUGINS_ENV}: {name}: {type(exc).__name__}: {exc}")
    for point in entry_points(group=PLUGINS_GROUP):
        try:
            point.load()
        except Exception as exc:
            problems.append(f"entry point {point.name} ({point.value}): {type(exc).__name__}: {exc}")
    return problems
