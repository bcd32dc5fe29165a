"""A small typed name -> object registry with duplicate-name errors and did-you-mean hints."""
from __future__ import annotations

import difflib
from typing import Callable, Generic, Iterator, TypeVar

from usebench.errors import BenchError

T = TypeVar("T")


LISTED_NAMES = 20  # an unknown name's error lists the known ones up to this many


class UnknownNameError(BenchError, KeyError):
    """Raised for a name that is not registered; the message suggests close matches."""

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


class Registry(Generic[T]):
    """Maps names to registered objects (task adapters, method plugins)."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}
        # Wrapper families: "<prefix><name>" exists for every registered name the builder accepts (returns an
        # object for). Resolved at lookup, so it does not matter whether a wrapper or a base name came first.
        self._wrappers: dict[str, Callable[[T], T | None]] = {}
        self._wrapped: dict[str, T] = {}  # built wrappers, so a name always maps to the same object
        # Resolver families: "<prefix><anything>" is whatever ``resolve(anything)`` returns (names of an external
        # registry, e.g. `mteb:<TaskName>`); ``resolve`` raises UnknownNameError (with its own did-you-mean) for
        # names it does not know. Such names are not listed by ``names()``: there can be thousands.
        self._resolvers: dict[str, Callable[[str], T]] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: enrol ``obj`` under ``name``; a second use of the same name is an error."""

        def decorator(obj: T) -> T:
            self.add(name, obj)
            return obj

        return decorator

    def add(self, name: str, obj: T) -> None:
        if name in self._items or any(name.startswith(p) for p in (*self._wrappers, *self._resolvers)):
            raise BenchError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = obj

    def add_wrapper(self, prefix: str, build: Callable[[T], T | None]) -> None:
        """Enrol ``<prefix><name>`` = ``build(get(name))`` for every registered name where ``build`` returns an
        object (``None``: the wrapper does not apply to that entry)."""
        if prefix in self._wrappers:
            raise BenchError(f"{self.kind} wrapper {prefix!r} is registered twice")
        self._wrappers[prefix] = build

    def add_resolver(self, prefix: str, resolve: Callable[[str], T]) -> None:
        """Enrol every ``<prefix><rest>`` as ``resolve(rest)`` (built once per name, at first lookup)."""
        if prefix in self._resolvers or prefix in self._wrappers:
            raise BenchError(f"{self.kind} prefix {prefix!r} is registered twice")
        self._resolvers[prefix] = resolve

    def _resolve(self, name: str) -> T | None:
        """The object of a resolver name; None when no resolver prefix matches (unknown names raise)."""
        for prefix, resolve in self._resolvers.items():
            if name.startswith(prefix):
                if name not in self._wrapped:
                    self._wrapped[name] = resolve(name[len(prefix):])
                return self._wrapped[name]
        return None

    def _wrap(self, name: str) -> T | None:
        if name in self._wrapped:
            return self._wrapped[name]
        for prefix, build in self._wrappers.items():
            inner = name[len(prefix):]
            if name.startswith(prefix) and inner in self._items and (obj := build(self._items[inner])) is not None:
                self._wrapped[name] = obj
                return obj
        return None

    def get(self, name: str) -> T:
        if name in self._items:
            return self._items[name]
        resolved = self._resolve(name)
        if resolved is not None:
            return resolved
        wrapped = self._wrap(name)
        if wrapped is None:
            raise UnknownNameError(self.unknown_message(name))
        return wrapped

    def unknown_message(self, name: str) -> str:
        """The did-you-mean line; the known names listed only while they fit a line (108 tasks do not: the command
        that lists them is named instead)."""
        names = self.names()
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        if len(names) > LISTED_NAMES:
            return f"unknown {self.kind} {name!r}{hint} ({len(names)} known: `bench {self.kind}s` lists them)"
        return f"unknown {self.kind} {name!r}{hint} (known: {', '.join(names)})"

    def names(self) -> list[str]:
        wrapped = [p + n for p in self._wrappers for n in self._items if self._wrap(p + n) is not None]
        return sorted([*self._items, *wrapped])

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if any(name.startswith(p) for p in self._resolvers):
            try:
                return self._resolve(name) is not None
            except UnknownNameError:
                return False
        return name in self._items or self._wrap(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


# The two registries of the suite. Values: task adapter instances and method plugin objects.
# Plugins enrol with one explicit import line each in usebench/tasks/__init__.py and usebench/methods/__init__.py.
TASKS: Registry = Registry("task")
METHODS: Registry = Registry("method")
