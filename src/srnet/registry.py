"""One registry helper for every kind of plug-in (pruning methods, losses, objectives, stage
kinds, attacks, tasks, bias features): registration by name with a duplicate check, lookup with a
one-line error that lists the known names, help text from each class's docstring, and validation
of a class's ``params_model`` with a one-line error naming the parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from srnet.errors import SrnetError

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Plug-ins of one ``kind`` (e.g. "loss"), by name; a read-only mapping.

    Classes register with the :meth:`register` decorator; ready-made objects (a task, a bias
    feature set) with :meth:`add`.
    """

    def __init__(self, kind: str, attribute: str = "name") -> None:
        self.kind = kind
        self.attribute = attribute
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Class decorator: add the class under ``name`` (and set its ``attribute`` to ``name``)."""

        def add(cls: T) -> T:
            self.add(name, cls)
            setattr(cls, self.attribute, name)
            return cls

        return add

    def add(self, name: str, item: T) -> T:
        """Add ``item`` under ``name`` as it is (nothing is set on it); ValueError for a duplicate."""
        if name in self._items:
            raise ValueError(f"{self.kind} '{name}' is already registered")
        self._items[name] = item
        return item

    def remove(self, name: str) -> T:
        """Take ``name`` out (KeyError when absent); returns what it held (inside :meth:`scoped`,
        a test swaps a built-in this way)."""
        return self._items.pop(name)

    @contextmanager
    def scoped(self) -> Iterator[Registry[T]]:
        """Within the block, registrations (and removals) are temporary: on exit the registry
        holds exactly what it held on entry (a test registers a toy plug-in this way)."""
        saved = dict(self._items)
        try:
            yield self
        finally:
            self._items.clear()
            self._items.update(saved)

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._items)

    def listing(self, separator: str = ", ") -> str:
        """The registered names, sorted, as one string (for help texts)."""
        return separator.join(self.names())

    def get(self, name: str, *default: Any) -> T:  # type: ignore[override]
        """The plug-in registered under ``name``; SrnetError naming the known ones otherwise
        (or, like ``dict.get``, ``default`` when one is given)."""
        if name not in self._items:
            if default:
                return default[0]
            raise SrnetError(f"unknown {self.kind} '{name}'; known: {self.names()}")
        return self._items[name]

    def help(self, name: str) -> str:
        """The first line of the class's docstring."""
        doc = self.get(name).__doc__ or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""

    def params(self, name: str, values: Mapping[str, Any] | BaseModel | None) -> BaseModel:
        """``values`` validated by the class's ``params_model`` (an instance of it as it is);
        one-line SrnetError otherwise."""
        model: type[BaseModel] = self.get(name).params_model
        if isinstance(values, model):
            return values
        try:
            return model.model_validate(dict(values or {}))
        except ValidationError as exc:
            raise SrnetError(describe_error(f"{self.kind} '{name}'", model, exc)) from None

    def has_param(self, key: str) -> bool:
        """Whether ``key`` is a parameter of some registered class (a field of its ``params_model``)."""
        return any(key in item.params_model.model_fields for item in self._items.values())

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def describe_error(owner: str, model: type[BaseModel], exc: ValidationError) -> str:
    """One line for the first error of ``exc``: the parameter, its value and what is wrong."""
    error = exc.errors()[0]
    field = ".".join(str(p) for p in error["loc"]) or "(parameters)"
    if error["type"] == "extra_forbidden":
        known = ", ".join(model.model_fields) or "none"
        return f"{owner}: unknown parameter '{field}' (known: {known})"
    message = error["msg"].removeprefix("Value error, ")
    return f"{owner}: parameter '{field}' = {error.get('input')!r}: {message}"
