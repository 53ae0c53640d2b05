"""Two runs' documents (parameters.yaml, metrics.json, summary.txt) compared value by value:
the scale-out and windowed runs against the single run on the same data."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import yaml


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, leaf) of every leaf of a nested dict/list document."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}/{key}")
    elif isinstance(value, list) and value and isinstance(value[0], (dict, list)):
        for k, item in enumerate(value):
            yield from leaves(item, f"{path}[{k}]")
    else:
        yield path, value


def without_tiny_numbers(text: str) -> str:
    """`text` with numbers below 1e-10 in magnitude written as 0."""
    return re.sub(r"-?\d+(\.\d+)?e-(1[0-9]|[2-9]\d)", "0", text)


def assert_same_documents(one: Any, other: Any, skip: tuple[str, ...] = ()) -> None:
    """Same leaves (paths, those starting with `skip` left out) and values: numbers within
    1e-9 relative (1e-12 absolute), strings with numbers below 1e-10 as 0, a base parameter's
    `combination` in either order of its terms, the rest equal."""
    a = {p: v for p, v in leaves(one) if not p.startswith(skip)}
    b = {p: v for p, v in leaves(other) if not p.startswith(skip)}
    assert sorted(a) == sorted(b), set(a) ^ set(b)
    for path, value in a.items():
        if isinstance(value, float) or (
            isinstance(value, list) and value and isinstance(value[0], float)
        ):
            np.testing.assert_allclose(b[path], value, rtol=1e-9, atol=1e-12, err_msg=path)
        elif isinstance(value, list) and value and isinstance(value[0], str):  # e.g. 1e-14
            assert [without_tiny_numbers(t) for t in b[path]] == [
                without_tiny_numbers(t) for t in value
            ], path
        elif path.endswith("/combination"):  # terms of equal |coefficient|: either order
            assert sorted(b[path].split()) == sorted(value.split()), path
        else:
            assert b[path] == value, path


def assert_same_runs(one: Path, other: Path, metrics_skip: tuple[str, ...]) -> None:
    """Two run directories with the same files, and the same parameters.yaml, metrics.json
    (paths starting with `metrics_skip` left out) and summary.txt (`assert_same_documents`)."""

    def files(run: Path) -> set[str]:
        return {str(p.relative_to(run)) for p in run.rglob("*") if p.is_file()}

    assert files(other) == files(one), files(other) ^ files(one)
    documents = [yaml.safe_load((r / "parameters.yaml").read_text()) for r in (one, other)]
    assert_same_documents(*documents)
    documents = [json.loads((r / "metrics.json").read_text()) for r in (one, other)]
    assert_same_documents(*documents, skip=metrics_skip)
    summaries = [without_tiny_numbers((r / "summary.txt").read_text()) for r in (one, other)]
    assert summaries[1] == summaries[0]
