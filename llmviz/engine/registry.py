"""Registry: one table per kind of switch (KV layouts, KV dtypes, attention backends, dtypes).

The names each switch accepts are declared once in `llmviz/trace/config.py` (torch-free, so the UI can list
them); the engine module that implements them fills a Registry with exactly those names. An extension (a new
layout or backend) is one `declare` call: its declaration (llmviz.trace.extensions.Extension: name, labels, exact or
lossy, options, slot rule) joins that torch-free table and its implementation this registry, and `remove` undoes
it (a test's fixture). Asking for a name that is not there is an
UnknownNameError (a ConfigError) that lists the choices, never a silent fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from llmviz.errors import ConfigError, UnknownNameError
from llmviz.trace.extensions import Extension, Names

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, names: Names | Iterable[str]):
        self.kind = kind
        # the declared names, in the order the UI lists them (a table an extension's `declare` extends)
        self.names = names if isinstance(names, Names) else Names(kind, names)
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        if name not in self.names.recorded:
            raise ConfigError(f"{self.kind} {name!r} is not declared in llmviz/trace/config.py")
        if name in self._items:
            raise ConfigError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = item
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of `add`."""
        return lambda item: self.add(name, item)

    def declare(self, declared: Extension | str, item: T) -> T:
        """An extension in one call: its declaration joins the torch-free table (a bare name declares only the
        name: its label is the name, no slot rule), then its implementation this registry. Done at import or in a
        test's fixture, never per session (the tables are the process's)."""
        ext = self.names.add(declared)
        try:
            return self.add(ext.name, item)
        except ConfigError:
            self.names.remove(ext.name)
            raise

    def remove(self, name: str) -> None:
        """Undo `declare` (a test's registration); a stock name cannot be removed."""
        self.names.remove(name)
        self._items.pop(name, None)

    def get(self, name: str) -> T:
        if not isinstance(name, str) or name not in self._items:
            raise UnknownNameError(f"{self.kind}={name!r} is not one of {', '.join(self._items)}")
        return self._items[name]

    def missing(self) -> list[str]:
        """Declared names with no implementation (a test keeps this empty)."""
        return [n for n in self.names.recorded if n not in self._items]

    def __contains__(self, name: str) -> bool:
        return name in self._items

    def __iter__(self):
        return iter(self._items)
