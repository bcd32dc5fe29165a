"""A small typed name -> object registry with duplicate-name errors and did-you-mean hints."""
from __future__ import annotations

import difflib
from typing import Callable, Generic, Iterator, TypeVar

from benchmark.errors import BenchError

T = TypeVar("T")


class UnknownNameError(BenchError, KeyError):
    """Raised for a name that is not registered; the message suggests close matches."""

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


class Registry(Generic[T]):
    """Maps names to registered objects (task adapters, method plugins)."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: enrol ``obj`` under ``name``; a second use of the same name is an error."""

        def decorator(obj: T) -> T:
            self.add(name, obj)
            return obj

        return decorator

    def add(self, name: str, obj: T) -> None:
        if name in self._items:
            raise BenchError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = obj

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(self.unknown_message(name)) from None

    def unknown_message(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self._items), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        return f"unknown {self.kind} {name!r}{hint} (known: {', '.join(sorted(self._items))})"

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)


# The two registries of the suite. Values: task adapter instances and method plugin objects.
# Plugins enrol with one explicit import line each in tasks/__init__.py and methods/__init__.py.
TASKS: Registry = Registry("task")
METHODS: Registry = Registry("method")
