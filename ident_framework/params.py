"""Validation declared on the fields of a params dataclass (a config section's schema).

    @dataclass
    class WlsParams(Params):
        min_sigma: float = param(1e-3, gt=0, unit="Nm")
        solver: str = param("qr", choices=("qr", "svd"))
        rules = (_trace_above_sigma,)  # cross-field rules: functions of the instance

`validate` (run on every construction by `Params.__post_init__`) checks each declared field,
then the class's `rules` (its bases' first). A broken constraint raises ValueError naming the
field, the bound, the unit and the value (`min_sigma must be > 0 Nm, got 0.0`), which
`config/plugin_config.py` turns into the config key's message. A rule raises ValueError with
its own message and may normalise fields; `within` and `increasing` make the common ones.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

__all__ = ["Check", "Params", "increasing", "param", "validate", "within"]

CHECK = "ident_framework.check"  # the key of a field's Check in its metadata


@dataclasses.dataclass(frozen=True)
class Check:
    """One field's declared constraint (see `param` for the meaning of each part)."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    integer: bool = False
    flag: bool = False
    finite: bool = False
    choices: tuple[Any, ...] | None = None
    each: bool = False
    one_or_list: bool = False
    length: int | None = None
    nonempty: bool = False
    null: bool = False
    required: bool = False
    unit: str = ""
    note: str = ""
    convert: Callable[[Any], Any] | None = None

    @property
    def numeric(self) -> bool:
        bounds = (self.gt, self.ge, self.lt, self.le)
        return self.integer or self.finite or any(b is not None for b in bounds)

    def bound(self) -> str:  # '> 0', 'in (0, 1]', '' (no bound)
        low, low_open = (self.gt, True) if self.gt is not None else (self.ge, False)
        high, high_open = (self.lt, True) if self.lt is not None else (self.le, False)
        if low is not None and high is not None:
            left, right = "(" if low_open else "[", ")" if high_open else "]"
            return f"in {left}{_num(low)}, {_num(high)}{right}"
        if low is not None:
            return f"{'>' if low_open else '>='} {_num(low)}"
        if high is not None:
            return f"{'<' if high_open else '<='} {_num(high)}"
        return ""

    def describe(self, value: Any = None) -> str:
        """What a valid value is, in words ('in (0, 1] s or null'); for a single `value` of
        the wrong type only what type it must be ('an integer', 'a number')."""
        if self.flag:
            return "true or false"
        one, many = ("an integer", "integers") if self.integer else ("a number", "numbers")
        if not self.each and self.choices is None and not _is_number(value, self.integer):
            if value is not None or not self.null:
                return one
        bound, unit = self.bound(), self.unit
        detail = f"{bound} {unit}".strip() if bound else (f"in {unit}" if unit else "")
        if self.choices is not None:
            single, items = f"one of {list(self.choices)}", f"values from {list(self.choices)}"
        else:
            finite = "an integer" if self.integer else "a finite number"
            single = detail if bound else f"{finite} {detail}".rstrip()
            items = f"{many} {detail}".rstrip()
        null = " or null" if self.null else ""
        if self.one_or_list:
            core = f"an integer {detail}" if self.integer and bound else single
            text = f"{core}, one value or a list of them" + (f",{null}" if null else "")
        elif self.each:
            size = f"{self.length} " if self.length is not None else ""
            text = f"{'a non-empty' if self.nonempty else 'a'} list of {size}{items}{null}"
        else:
            text = single + null
        return text + (f" ({self.note})" if self.note else "")

    def accepts(self, value: Any) -> bool:
        if self.one_or_list and not _is_list(value):
            return self._accepts_one(value)
        if self.each:  # (set for one_or_list too)
            if not _is_list(value) or (self.length is not None and len(value) != self.length):
                return False
            if (self.nonempty or self.one_or_list) and len(value) == 0:
                return False
            return all(self._accepts_one(item) for item in value)
        return self._accepts_one(value)

    def _accepts_one(self, value: Any) -> bool:
        if self.flag:
            return isinstance(value, bool | np.bool_)
        if self.choices is not None:
            return isinstance(value, str | int | float | type(None)) and value in self.choices
        if not self.numeric:
            return True
        if not _is_number(value, self.integer) or not math.isfinite(value):
            return False
        return not (
            (self.gt is not None and not value > self.gt)
            or (self.ge is not None and not value >= self.ge)
            or (self.lt is not None and not value < self.lt)
            or (self.le is not None and not value <= self.le)
        )


def param(
    default: Any = dataclasses.MISSING,
    *,
    factory: Callable[[], Any] | Any = dataclasses.MISSING,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
    finite: bool = False,
    choices: Sequence[Any] | None = None,
    each: bool = False,
    one_or_list: bool = False,
    length: int | None = None,
    nonempty: bool = False,
    null: bool | None = None,
    required: bool = False,
    unit: str = "",
    note: str = "",
    convert: Callable[[Any], Any] | None = None,
) -> Any:
    """A dataclass field (`default` or `factory`, as `dataclasses.field`) with its constraint:

    - `gt`, `ge`, `lt`, `le`: bounds; a bounded value must be a finite number (not a bool);
      `finite`: a finite number, no bound. An `int` (or `list[int]`) field takes whole numbers
      only (3.0 becomes 3), a `bool` field true or false only;
    - `choices`: one of these values;
    - `each`: the constraint holds for every item of a list (`length`: exactly that many;
      `nonempty`: at least one); `one_or_list`: one value or a non-empty list of them;
    - `null`: None is accepted too (the default when `default` is None);
    - `required`: None, "" and [] are refused ("path is required (<note>)");
    - `unit` ("Nm", "rad/s") and `note` (a short explanation) go into the message;
    - `convert`: a function of the value, run before the check, whose result replaces it.
    """
    check = Check(
        gt=gt, ge=ge, lt=lt, le=le, finite=finite,
        choices=tuple(choices) if choices is not None else None,
        each=each or one_or_list, one_or_list=one_or_list, length=length, nonempty=nonempty,
        null=(default is None and not required) if null is None else null,
        required=required, unit=unit, note=note, convert=convert,
    )  # fmt: skip
    if factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=factory, metadata={CHECK: check})
    return dataclasses.field(default=default, metadata={CHECK: check})


def validate(params: Any) -> None:
    """Check every declared field of the dataclass instance `params` (in field order), then
    run the `rules` of its class and its bases (bases first). ValueError on the first break."""
    for field in dataclasses.fields(params):
        check = field.metadata.get(CHECK)
        if check is None:
            continue
        value = getattr(params, field.name)
        if check.required and (value is None or (isinstance(value, str | list) and not value)):
            note = f" ({check.note})" if check.note else ""
            raise ValueError(f"{field.name} is required{note}")
        if check.convert is not None and value is not None:
            value = check.convert(value)
            object.__setattr__(params, field.name, value)
        if value is None and check.null:
            continue
        if not check.integer and _is_int(field.type):
            check = dataclasses.replace(check, integer=True)
        elif not check.flag and str(field.type) in ("bool", str(bool)):
            check = dataclasses.replace(check, flag=True)
        if not check.accepts(value):
            raise ValueError(f"{field.name} must be {check.describe(value)}, got {_shown(value)}")
        if check.each and check.numeric:  # plain floats (ints for int fields)
            kind = int if check.integer else float
            plain = [kind(v) for v in value] if _is_list(value) else kind(value)
            object.__setattr__(params, field.name, plain)
        elif check.integer:
            object.__setattr__(params, field.name, int(value))
    for rule in rules_of(type(params)):
        rule(params)


def rules_of(cls: type) -> list[Callable[[Any], None]]:
    """The rules `cls` and its bases declare (each class's own `rules`), bases first."""
    rules = (rule for klass in reversed(cls.__mro__) for rule in klass.__dict__.get("rules", ()))
    return list(dict.fromkeys(rules))


def declares_checks(cls: type) -> bool:
    """Whether the dataclass `cls` declares any field constraint or rule."""
    return bool(rules_of(cls)) or any(CHECK in f.metadata for f in dataclasses.fields(cls))


def increasing(*names: str) -> Callable[[Any], None]:
    """A rule: each of the list fields `names` (e.g. [lower, upper] bounds) strictly increases."""

    def rule(params: Any) -> None:
        for name in names:
            values = list(getattr(params, name))
            if any(low >= high for low, high in zip(values, values[1:], strict=False)):
                raise ValueError(f"{name} must be [lower, upper] with lower < upper, got {values}")

    rule.__name__ = f"increasing_{'_'.join(names)}"
    return rule


def within(name: str, bounds: str, *, when: str | None = None) -> Callable[[Any], None]:
    """A rule: the number `name` lies within the [lower, upper] list field `bounds` (only when
    the field `when` is true, if given): "v_s (5.0) must lie within v_s_bounds [0.002, 2.0]"."""

    def rule(params: Any) -> None:
        value, (low, high) = getattr(params, name), getattr(params, bounds)
        if (when is None or getattr(params, when)) and not low <= value <= high:
            raise ValueError(f"{name} ({value}) must lie within {bounds} {[low, high]}")

    rule.__name__ = f"{name}_within_{bounds}"
    return rule


class Params:
    """Base of a params dataclass: validates the declarations (`validate`) on construction.
    A subclass lists its cross-field rules in `rules`."""

    rules: ClassVar[tuple[Callable[[Any], None], ...]] = ()

    def __post_init__(self) -> None:
        validate(self)


def _is_number(value: Any, integer: bool) -> bool:
    """A real number (not a bool; numpy's count); `integer`: a whole one (3 or 3.0)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return False
    return not integer or not math.isfinite(value) or float(value).is_integer()


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple | np.ndarray)


def _is_int(annotation: Any) -> bool:
    """Whether a field annotation (a string under `from __future__ import annotations`) is
    int, list[int] or int | list[int] (| None): its values must be whole numbers."""
    if annotation is int:
        return True
    text = str(annotation).replace(" ", "").replace("|None", "").replace("Optional[int]", "int")
    return text in ("int", "list[int]", "int|list[int]")


def _num(value: float) -> str:
    """A bound as written in messages: 0, 0.05, 1e-06."""
    return str(int(value)) if float(value).is_integer() else str(value)


def _shown(value: Any) -> str:
    """A value as the message shows it: strings quoted, numbers (numpy's too) as plain ones."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return str([v.item() if isinstance(v, np.generic) else v for v in value])
    return repr(value) if isinstance(value, str) else str(value)
