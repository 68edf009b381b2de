"""A verb's typed settings (:class:`VerbConfig`): the base of each verb's config model, from which
the sweep stage's params, the :mod:`srnet.api` call's keywords and the CLI's flags all come, and the
checks every one of them shares. It sits low (pydantic and :mod:`srnet.errors` only) so that a room
below the verbs (export) can type its own settings with it; it imports no torch.

A field's ``description`` is its flag's help; ``json_schema_extra`` names the flag (``flag``) or
its ``metavar`` when they are not ``--<field-name>`` (a bool that defaults to True is
``--no-<field-name>``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Self, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from srnet.errors import SrnetError


class VerbConfig(BaseModel):
    """A verb's settings (unknown keys refused)."""

    model_config = ConfigDict(extra="forbid")

    non_semantic: ClassVar[tuple[str, ...]] = ()
    """As a stage's params: settings left out of the stage's key (they change what is written beside
    the results, not the results), so a finished stage keeps its key when one is added or set."""
    added_later: ClassVar[dict[str, Any]] = {}
    """As a stage's params: settings added after studies were recorded -> their default: left out of
    the key while at it, so a recorded stage keeps its key."""

    @classmethod
    def resolve(cls, config: Self | None, settings: Mapping[str, Any]) -> Self:
        """``config`` (default: every field at its default) with the keywords ``settings`` set,
        validated: TypeError for an unknown keyword, one-line SrnetError for a bad value."""
        if config is not None and not isinstance(config, cls):
            raise TypeError(f"config: expected a {cls.__name__}, got {type(config).__name__}")
        for name, value in settings.items():
            if name not in cls.model_fields:
                raise TypeError(f"unexpected keyword argument '{name}' (settings: {list(cls.model_fields)})")
            check_number(flag_name(name, cls.model_fields[name]), cls.model_fields[name].annotation, value)
        try:
            return cls.model_validate({**(config.model_dump() if config else {}), **settings})
        except ValidationError as exc:
            raise SrnetError(setting_error(cls, exc)) from None


def _base_types(annotation: Any) -> set[Any]:
    """The plain types an annotation admits (``int | None`` -> {int, NoneType}; ``Annotated`` and
    list items unwrapped; a list also admits ``list``)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _base_types(args[0])
    if origin in (list, tuple, set) and args:
        return {origin, *_base_types(args[0])}
    if args:
        return set().union(*(_base_types(a) for a in args))
    return {annotation}


def check_number(flag: str, annotation: Any, value: Any) -> None:
    """A numeric setting given from Python takes numbers only: no bool, no text ("5") where an int
    or float is meant (pydantic's lax mode would take both); one line naming the setting."""
    types = _base_types(annotation)
    if not types & {int, float} or str in types:
        return
    items = value if isinstance(value, list | tuple) and types & {list, tuple} else [value]
    for item in items:
        if isinstance(item, bool | str):
            kind = "an integer" if int in types and float not in types else "a number"
            raise SrnetError(f"{flag} {item!r}: expected {kind}, got {type(item).__name__}")


def flag_name(name: str, field: FieldInfo) -> str:
    """The command-line flag of the setting ``name``."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    if "flag" in extra:
        return str(extra["flag"])
    return ("--no-" if field.default is True else "--") + name.replace("_", "-")


def setting_error(cls: type[VerbConfig], exc: ValidationError) -> str:
    """One line for the first bad setting, named by its flag: ``--examples -1: <what>``."""
    err = exc.errors()[0]
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "value_error" or not err["loc"]:  # a check's own message names the setting
        return msg
    name = str(err["loc"][0])
    flag = flag_name(name, cls.model_fields[name])
    return f"{flag}: required" if err["type"] == "missing" else f"{flag} {err['input']}: {msg}"


F = TypeVar("F", bound=Callable[..., Any])


def takes(config_type: type[VerbConfig]) -> Callable[[F], F]:
    """Show ``config_type``'s fields, typed and with their defaults, as the keyword-only parameters
    of the decorated API verb in place of its ``**settings`` (``help()``, ``inspect.signature``)."""

    def show(verb: F) -> F:
        signature = inspect.signature(verb)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        fields = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=field.annotation,
                                    default=inspect.Parameter.empty if field.is_required()
                                    else field.get_default(call_default_factory=True))
                  for name, field in config_type.model_fields.items()]
        verb.__signature__ = signature.replace(parameters=[*own, *fields])  # type: ignore[attr-defined]
        return verb

    return show
