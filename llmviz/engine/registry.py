"""Registry: one table per kind of switch (KV layouts, KV dtypes, attention backends, dtypes).

The names each switch accepts are declared once in `llmviz/trace/config.py` (torch-free, so the UI can list
them); the engine module that implements them fills a Registry with exactly those names. An extension (a new
layout or backend) is one `declare` call: it declares the name in that torch-free table and registers the
implementation, and `remove` undoes it (a test's fixture). Asking for a name that is not there is an
UnknownNameError (a ConfigError) that lists the choices, never a silent fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from llmviz.errors import ConfigError, UnknownNameError
from llmviz.trace.config import Names

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

    def declare(self, name: str, item: T, **how) -> T:
        """An extension in one call: its name joins the torch-free table (`how`: what that table keeps with it,
        e.g. a KV layout's slot rule), then its implementation this registry. Done at import or in a test's
        fixture, never per session (the tables are the process's)."""
        self.names.add(name, **how)
        try:
            return self.add(name, item)
        except ConfigError:
            self.names.remove(name)
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
