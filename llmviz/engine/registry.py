"""Registry: one table per kind of switch (KV layouts, KV dtypes, attention backends, dtypes).

The names each switch accepts are declared once in `config.py` (torch-free, so the UI can list them);
the engine module that implements them fills a Registry with exactly those names. Asking for a name
that is not there is a ConfigError that lists the choices, never a silent fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from llmviz.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, names: Iterable[str]):
        self.kind = kind
        self.names = tuple(names)  # the declared names, in the order the UI lists them
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        if name not in self.names:
            raise ConfigError(f"{self.kind} {name!r} is not declared in llmviz/trace/config.py")
        if name in self._items:
            raise ConfigError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = item
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of `add`."""
        return lambda item: self.add(name, item)

    def get(self, name: str) -> T:
        if name not in self._items:
            raise ConfigError(f"{self.kind}={name!r} is not one of {', '.join(self._items)}")
        return self._items[name]

    def missing(self) -> list[str]:
        """Declared names with no implementation (a test keeps this empty)."""
        return [n for n in self.names if n not in self._items]

    def __contains__(self, name: str) -> bool:
        return name in self._items

    def __iter__(self):
        return iter(self._items)
