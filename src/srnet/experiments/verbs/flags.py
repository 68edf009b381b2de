"""A verb's flags built from its settings model (the config of its declaration), as
transformers' ``HfArgumentParser`` builds them from a dataclass: the flag's name, type, default and
help come from the field, so a setting is written once."""

from __future__ import annotations

import argparse
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from srnet.errors import SrnetError
from srnet.io import load_yaml
from srnet.settings import VerbConfig, flag_name


def add_config_flags(p: argparse.ArgumentParser, config_type: type[VerbConfig]) -> None:
    """One flag per field of ``config_type``, in field order."""
    for name, field in config_type.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        flag, (kind, item) = flag_name(name, field), _kind(field.annotation)
        kwargs: dict[str, Any] = {"dest": name, "help": (field.description or "").replace("%", "%%")}
        if kind is not bool:
            kwargs["metavar"] = extra.get("metavar", flag.removeprefix("--").upper().replace("-", "_"))
        if field.is_required():
            kwargs["required"] = True
        else:
            kwargs["default"] = default = field.get_default(call_default_factory=True)
            if default is not None and kind is not bool and default not in ([], {}):
                kwargs["help"] += f" (default: {_shown(default)})"
        if kind is bool:
            kwargs["action"] = "store_false" if kwargs["default"] is True else "store_true"
        elif kind is dict:  # KEY=VALUE items, read by config_values
            kwargs.update(action="append", default=[])
        elif kind is list:
            kwargs.update(nargs="+", type=item)
        else:
            kwargs["type"] = kind
        p.add_argument(flag, **kwargs)


def config_values(args: argparse.Namespace, config_type: type[VerbConfig]) -> dict[str, Any]:
    """The flags of ``config_type``'s fields that the user gave, as the keywords of its API verb
    (a flag left at its default is left out, so the settings know which ones were set: e.g.
    ``--recovery-epochs`` alone is not "given with --recovery-factor")."""
    values = {}
    for name, field in config_type.model_fields.items():
        value = getattr(args, name)
        if not field.is_required() and _left_at_default(value, field):
            continue
        is_dict = _kind(field.annotation)[0] is dict
        values[name] = _key_values(flag_name(name, field), value) if is_dict else value
    return values


def _left_at_default(value: Any, field: Any) -> bool:
    """Whether argparse left ``value`` at the field's default: the default object itself (a typed
    or appended value is a new object), or a bool flag at its default."""
    default = field.get_default(call_default_factory=False)
    if isinstance(value, bool):
        return value == default
    return value is default or (value == [] and _kind(field.annotation)[0] is dict)


def _key_values(flag: str, items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items as a dict, each value read as YAML."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SrnetError(f"{flag} {item!r}: expected KEY=VALUE")
        out[key] = load_yaml(value, f"{flag} {key}")
    return out


def _kind(annotation: Any) -> tuple[Any, type | None]:
    """The flag's type of a field's annotation (``X | None`` -> X; ``int | Literal[word]`` -> a
    number or that word) and, for a list, its items'."""
    if get_origin(annotation) in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        if int in options and any(get_origin(a) is Literal for a in options):
            return _int_or_word, None
        annotation = options[0]
    origin = get_origin(annotation)
    if origin is list:
        item = get_args(annotation)[0]
        return list, get_args(item)[0] if get_origin(item) is Annotated else item
    return (origin or annotation), None


def _int_or_word(text: str) -> int | str:
    """A flag that takes a number or a word (``--length 128``, ``--length auto``)."""
    return int(text) if text.lstrip("-").isdigit() else text


def _shown(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)
