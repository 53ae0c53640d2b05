"""The declared validation of params dataclasses (`ident_framework.params`): every kind of
constraint refuses a value just past its bound and accepts the bound itself, the message names
the key, the bound, the unit and the value, rules run after the fields, and the plugin config
turns the message into the user's, with the config key."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from ident_framework.config.plugin_config import build_params
from ident_framework.errors import UserError
from ident_framework.params import Params, increasing, param, validate, within


def _b_above_a(params: Example) -> None:
    if not params.b > params.a:
        raise ValueError(f"b ({params.b}) must be above a ({params.a})")


@dataclass
class Example(Params):
    a: float = param(1.0, gt=0, unit="Nm")
    b: float = param(2.0, ge=0, le=10, unit="s")
    c: float = param(0.5, gt=0, lt=1)
    count: int = param(3, ge=1)
    mode: str = param("x", choices=("x", "y"))
    limit: float | None = param(None, ge=0)
    offset: float = param(0.0, finite=True, unit="m")
    speeds: list[float] = param(factory=lambda: [1.0, 2.0], each=True, length=2, ge=0)
    width: float | list[float] = param(0.1, one_or_list=True, ge=0, unit="rad/s")
    flag: bool = param(True)
    path: str | None = param(None, required=True, note="the file to read")
    bounds: list[float] = param(factory=lambda: [0.0, 5.0], each=True, length=2)
    rules = (_b_above_a, increasing("bounds"), within("b", "bounds"))


def make(**values) -> Example:
    return Example(**{"path": "log.csv", **values})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"a": 0.0}, "a must be > 0 Nm, got 0.0"),
        ({"a": math.inf}, "a must be > 0 Nm, got inf"),
        ({"a": "fast"}, "a must be a number, got 'fast'"),
        ({"a": True}, "a must be a number, got True"),
        ({"b": -0.5}, "b must be in [0, 10] s, got -0.5"),
        ({"b": 10.5}, "b must be in [0, 10] s, got 10.5"),
        ({"c": 1.0}, "c must be in (0, 1), got 1.0"),
        ({"c": 0.0}, "c must be in (0, 1), got 0.0"),
        ({"count": 0}, "count must be >= 1, got 0"),
        ({"count": 1.5}, "count must be an integer, got 1.5"),
        ({"mode": "z"}, "mode must be one of ['x', 'y'], got 'z'"),
        ({"limit": -1.0}, "limit must be >= 0 or null, got -1.0"),
        ({"offset": math.nan}, "offset must be a finite number in m, got nan"),
        ({"speeds": [1.0]}, "speeds must be a list of 2 numbers >= 0, got [1.0]"),
        ({"speeds": [1.0, -1.0]}, "speeds must be a list of 2 numbers >= 0, got [1.0, -1.0]"),
        (
            {"width": [0.1, -0.1]},
            "width must be >= 0 rad/s, one value or a list of them, got [0.1, -0.1]",
        ),
        ({"flag": "yes"}, "flag must be true or false, got 'yes'"),
        ({"path": None}, "path is required (the file to read)"),
        ({"path": ""}, "path is required (the file to read)"),
    ],
)
def test_each_constraint_refuses_past_its_bound_with_key_bound_unit_and_value(values, message):
    with pytest.raises(ValueError) as raised:
        make(**values)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "values",
    [
        {"a": 1e-12},
        {"b": 10.0, "bounds": [0.0, 10.0]},
        {"b": 5.0},  # the bounds' upper end: within holds at the bound
        {"c": 0.999},
        {"count": 1},
        {"mode": "y"},
        {"limit": None},
        {"limit": 0.0},
        {"offset": -3.0},
        {"speeds": [0.0, 0.0]},
        {"width": 0.0},
        {"width": [0.0, 0.2]},
        {"flag": False},
    ],
)
def test_each_constraint_accepts_its_bound(values):
    make(**values)


def test_whole_floats_become_ints_and_lists_plain_floats():
    example = make(count=4.0, speeds=(1, 2))
    assert example.count == 4 and isinstance(example.count, int)
    assert example.speeds == [1.0, 2.0] and all(isinstance(v, float) for v in example.speeds)


def test_rules_run_after_the_fields_in_order():
    with pytest.raises(ValueError, match=r"b \(0.5\) must be above a \(1.0\)"):
        make(b=0.5)
    with pytest.raises(ValueError, match=r"bounds must be \[lower, upper\] with lower < upper"):
        make(bounds=[5.0, 1.0])
    with pytest.raises(ValueError, match=r"b \(7.0\) must lie within bounds \[0.0, 5.0\]"):
        make(b=7.0)
    with pytest.raises(ValueError, match="a must be > 0 Nm"):  # the field before the rule
        make(a=-1.0, b=0.5)


def test_a_subclass_keeps_its_bases_checks_and_rules():
    def _count_even(params: Derived) -> None:
        if params.count % 2:
            raise ValueError(f"count must be even, got {params.count}")

    @dataclass
    class Derived(Example):
        extra: float = param(1.0, lt=2)
        rules = (_count_even,)

    Derived(path="x", count=2)
    with pytest.raises(ValueError, match="a must be > 0 Nm"):
        Derived(path="x", count=2, a=0.0)
    with pytest.raises(ValueError, match=r"b \(0.5\) must be above a"):
        Derived(path="x", count=2, b=0.5)
    with pytest.raises(ValueError, match="count must be even, got 3"):
        Derived(path="x")
    with pytest.raises(ValueError, match="extra must be < 2, got 3.0"):
        Derived(path="x", count=2, extra=3.0)


def test_the_plugin_config_names_the_key_and_the_plugin():
    with pytest.raises(UserError) as raised:
        build_params(Example, {"path": "log.csv", "b": 11}, "friction", "the plugin 'example'")
    assert str(raised.value) == (
        "friction.b must be in [0, 10] s, got 11.0 (the plugin 'example')."
    )


def test_declarations_on_a_plain_dataclass_run_through_the_plugin_config():
    @dataclass
    class Plain:  # a third-party schema that declares but does not derive from Params
        gain: float = param(1.0, gt=0, unit="Nm/A")

    Plain(gain=-1.0)  # no validation on its own ...
    with pytest.raises(UserError, match=r"source.gain must be > 0 Nm/A, got -1.0"):
        build_params(Plain, {"gain": -1.0}, "source", "the plugin 'plain'")  # ... but here
    with pytest.raises(ValueError, match="gain must be > 0 Nm/A"):
        validate(Plain(gain=-1.0))
