"""Table cells and tables as the reports print them: the summary, the closed loop's loop.md,
a sweep's comparison.md and the rehearsal's rehearsal.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

COMPACT = "compact"  # 4 significant digits; below 1e-3 (but not 0) 3 decimals in e-notation


def format_cell(value: Any, spec: str = "", missing: str = "") -> str:
    """One table cell: `missing` for None; a float with `spec` (format mini-language, e.g.
    ".4f", ">14.4f", "+.1f", or COMPACT; "" is str; nan and inf print as such); anything else
    (int, str, bool) as str."""
    if value is None:
        return missing
    if not isinstance(value, float):
        return str(value)
    if spec == COMPACT:
        return f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3e}"
    return format(value, spec) if spec else str(value)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table: header row, separator, one line per row of cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def aligned_table(
    first_header: str, names: Sequence[str], headers: Sequence[str], cells: Sequence[Sequence[str]]
) -> list[str]:
    """Rows of `cells` (one list per name) under `headers`: the names left-aligned in a first
    column headed `first_header`, the cells right-aligned, each column as wide as its widest
    entry plus two spaces."""
    widths = [max(len(h), *(len(row[i]) for row in cells)) + 2 for i, h in enumerate(headers)]
    first = max(len(first_header), *map(len, names)) + 1

    def line(name: str, texts: Sequence[str]) -> str:
        return name.ljust(first) + "".join(t.rjust(w) for t, w in zip(texts, widths, strict=True))

    return [line(first_header, headers)] + [
        line(n, row) for n, row in zip(names, cells, strict=True)
    ]
