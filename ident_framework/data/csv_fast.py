"""Fast path of the CSV reader: the used columns of a clean file, parsed by pyarrow's
multi-threaded CSV reader (~10x numpy's `loadtxt` on a 10^5-row RTDE log).

It takes only what `np.loadtxt` (the reference path in `csv_log._load`) would take: UTF-8
text, one delimiter (comma, or runs of spaces/tabs), no quoting, no comment lines, every
data row as wide as the header, every used cell a plain number (nan/inf included, as
`float()` reads them). Anything else returns None and the reference path runs, so every
error message (file, row, line, column) stays the reference path's. Values are the same
doubles: both parsers round correctly.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from ident_framework.data.csv_columns import CsvLayout

# runs of blanks inside a line, and blanks at the start or end of a line (before \r?\n)
_BLANK_RUN = re.compile(rb"[ \t]+")
_EDGE_BLANKS = re.compile(rb"(?m)^ | (?=\r?$)")


def read_used_columns(layout: CsvLayout, usecols: list[int]) -> np.ndarray | None:
    """(rows, len(usecols)) float array of the data rows' `usecols` (0-based file columns, in
    that order), or None when the file needs the reference parser (see the module doc)."""
    try:
        with open(layout.path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    if not raw.isascii():
        try:
            raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            return None
    delimiter = layout.delimiter
    if delimiter is None:  # whitespace separated: one space between fields, none at the edges
        raw = _EDGE_BLANKS.sub(b"", _BLANK_RUN.sub(b" ", raw))
        delimiter = " "
    names = [f"c{i}" for i in range(len(layout.names))]
    wanted = [names[i] for i in usecols]
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(raw),
            read_options=pa_csv.ReadOptions(column_names=names, skip_rows=layout.header_line),
            parse_options=pa_csv.ParseOptions(
                delimiter=delimiter, quote_char=False, double_quote=False, escape_char=False
            ),
            convert_options=pa_csv.ConvertOptions(
                include_columns=wanted,
                column_types={name: pa.float64() for name in wanted},
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    if table.num_rows == 0:
        return np.empty((0, len(usecols)))
    return np.column_stack([table.column(name).to_numpy() for name in wanted])
