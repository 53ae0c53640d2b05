"""Fast path of the CSV reader: the used columns of a clean file (UTF-8, comma or blanks, no
quoting or comments, rows as wide as the header, plain numbers) parsed by pyarrow, read as
numpy views of its buffers. Anything else gives None and `csv_log._load`'s `np.loadtxt` runs,
with its error messages. Values are the same doubles. Rationale: docs/design.md#csv-fast-path
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from ident_framework.data.csv_columns import CsvLayout
from ident_framework.parallel_work import usable_cores

# runs of blanks inside a line, and blanks at the start or end of a line (before \r?\n)
_BLANK_RUN = re.compile(rb"[ \t]+")
_EDGE_BLANKS = re.compile(rb"(?m)^ | (?=\r?$)")

BLOCK_BYTES = 1 << 24  # bytes read at a time when looking for line starts
THREADS_FROM_BYTES = 64 << 20  # pyarrow parses on its threads from this size of text on


def read_used_columns(
    layout: CsvLayout, usecols: list[int], rows: tuple[int, int] | None = None
) -> np.ndarray | None:
    """(rows, len(usecols)) float array of the data rows' `usecols` (0-based file columns, in
    that order), or None when the file needs the reference parser. `rows`: only data rows
    first..last-1 (0-based), read from their byte range alone (None when it has blank lines
    or cannot be found)."""
    try:
        if rows is None:
            raw = _file_text(layout.path, whitespace=layout.delimiter is None)
        else:
            raw = _row_bytes(layout, *rows)
    except OSError:
        return None
    skip = layout.header_line if rows is None else 0
    table = None if raw is None else _parse(raw, layout, usecols, skip)
    if table is None or (rows is not None and table.num_rows != rows[1] - rows[0]):
        return None
    n_rows, columns = table.num_rows, [table.column(f"c{column}") for column in usecols]
    del table  # the columns' buffers are freed one by one as they are copied
    out = _column_major(n_rows, columns)
    pa.default_memory_pool().release_unused()  # the parser's pages: back to the system
    return out


def _column_major(n_rows: int, columns: list[pa.ChunkedArray]) -> np.ndarray:
    """(rows, len(columns)) Fortran-ordered copy of the parsed `columns` (one copy each),
    emptying the list: a column's buffers go as soon as it is copied (memory of the table
    plus one column, not of two tables)."""
    out = np.empty((n_rows, len(columns)), order="F")
    for index in range(len(columns)):
        row = 0
        for chunk in columns[index].chunks:
            values = _values(chunk)
            out[row : row + len(values), index] = values
            row += len(values)
        columns[index] = None  # type: ignore[call-overload]
    return out


def _values(array: pa.Array) -> np.ndarray:
    """The float64 values of a pyarrow array without nulls, as a read-only view of its data
    buffer (`array.to_numpy(zero_copy_only=True)` without importing pandas)."""
    if array.type != pa.float64() or array.null_count:
        raise ValueError(f"expected float64 values without nulls, got {array.type}")
    return np.frombuffer(array.buffers()[1], np.float64, len(array), array.offset * 8)


def read_column_groups(layout: CsvLayout, groups: list[list[int]]) -> list[np.ndarray] | None:
    """Per group of 0-based file columns, the (rows, len(group)) C-ordered float array of every
    data row, parsed record batch by record batch straight into those arrays (no table, no
    column-major copy: memory of the arrays plus one batch); None unless the file is ASCII,
    comma separated and of STREAM_FROM_BYTES or more (then `read_used_columns`, faster on
    small files). Values are those of `read_used_columns`."""
    try:
        if layout.delimiter != "," or os.path.getsize(layout.path) < STREAM_FROM_BYTES:
            return None
    except OSError:
        return None
    names = [f"c{i}" for i in range(len(layout.names))]
    wanted = sorted({column for group in groups for column in group})
    try:
        ascii_text, newlines = _ascii_lines(layout.path)
        if not ascii_text:
            return None
        capacity = max(newlines + 1 - layout.header_line, 0)  # data rows are at most this
        out = [np.empty((capacity, len(group))) for group in groups]
        reader = pa_csv.open_csv(
            layout.path,
            read_options=pa_csv.ReadOptions(
                column_names=names, skip_rows=layout.header_line, block_size=STREAM_BLOCK_BYTES
            ),
            parse_options=_parse_options(","),
            convert_options=_convert_options([names[i] for i in wanted]),
        )
        row = 0
        for batch in reader:
            count = batch.num_rows
            if row + count > capacity:
                return None
            for array, group in zip(out, groups, strict=True):
                for i, column in enumerate(group):
                    array[row : row + count, i] = _values(batch.column(names[column]))
            row += count
    except (OSError, ValueError, pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    finally:
        pa.default_memory_pool().release_unused()  # the parser's pages: back to the system
    return [array[:row] for array in out]


STREAM_BLOCK_BYTES = 1 << 20  # text per record batch of `read_column_groups` (more: more held)
STREAM_FROM_BYTES = 64 << 20  # `read_column_groups` streams files from this size on


def _ascii_lines(path: str | Path, count_lines: bool = True) -> tuple[bool, int]:
    """(whether every byte of the file is below 128, its number of newlines; 0 unless
    `count_lines`), read BLOCK_BYTES at a time."""
    newlines = 0
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK_BYTES):
            if np.frombuffer(block, dtype=np.uint8).max() >= 128:
                return False, newlines
            if count_lines:
                newlines += block.count(b"\n")
    return True, newlines


def _file_text(path: str | Path, whitespace: bool) -> pa.NativeFile | bytes | None:
    """The file: opened for pyarrow to read block by block when it is ASCII and comma
    separated (checked block by block: neither is ever held whole, nor mapped into memory),
    else its whole bytes."""
    if not whitespace and _ascii_lines(path, count_lines=False)[0]:
        return pa.OSFile(str(path))
    with open(path, "rb") as handle:
        return handle.read()


def read_column_streamed(layout: CsvLayout, column: int) -> np.ndarray | None:
    """One column of every data row (e.g. the timestamps, s), parsed block by block (memory of
    that column only), or None when the file needs the reference parser."""
    if layout.delimiter != ",":
        return None
    names = [f"c{i}" for i in range(len(layout.names))]
    try:
        reader = pa_csv.open_csv(
            layout.path,
            read_options=pa_csv.ReadOptions(column_names=names, skip_rows=layout.header_line),
            parse_options=_parse_options(","),
            convert_options=_convert_options([names[column]]),
        )
        batches = [_values(batch.column(0)) for batch in reader]
    except (OSError, pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    return np.concatenate(batches) if batches else np.empty(0)


def _row_bytes(layout: CsvLayout, first: int, last: int) -> bytes | None:
    """The bytes of data rows first..last-1 (data row r is line header_line + r, 0-based,
    of a file without blank lines), or None when they cannot be delimited."""
    start, stop = line_starts(layout.path, [layout.header_line + first, layout.header_line + last])
    if start is None:
        return None
    with open(layout.path, "rb") as handle:
        handle.seek(start)
        raw = handle.read() if stop is None else handle.read(stop - start)
    if b"\n\n" in raw or b"\n\r\n" in raw or raw.startswith((b"\n", b"\r\n")):
        return None  # blank lines: rows and lines no longer correspond
    return raw


def line_starts(path: str, lines: list[int]) -> list[int | None]:
    """Byte offset at which each 0-based line index starts (None past the last line), found by
    counting newlines block by block (constant memory)."""
    wanted = sorted(set(lines))
    found: dict[int, int | None] = {line: 0 for line in wanted if line == 0}
    seen, offset = 0, 0  # newlines before the block, bytes before the block
    with open(path, "rb") as handle:
        while len(found) < len(wanted):
            block = handle.read(BLOCK_BYTES)
            if not block:
                break
            count = block.count(b"\n")
            inside = [line for line in wanted if line not in found and line <= seen + count]
            if inside:
                newlines = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
                for line in inside:
                    found[line] = offset + int(newlines[line - seen - 1]) + 1
            seen += count
            offset += len(block)
    size = offset
    return [found.get(line) if found.get(line) != size else None for line in lines]


def _parse_options(delimiter: str) -> pa_csv.ParseOptions:
    return pa_csv.ParseOptions(
        delimiter=delimiter, quote_char=False, double_quote=False, escape_char=False
    )


def _convert_options(wanted: list[str]) -> pa_csv.ConvertOptions:
    return pa_csv.ConvertOptions(
        include_columns=wanted,
        column_types={name: pa.float64() for name in wanted},
        null_values=[],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )


def _parse(
    raw: bytes | pa.NativeFile, layout: CsvLayout, usecols: list[int], skip_rows: int
) -> pa.Table | None:
    """pyarrow's table of the used columns (one thread below THREADS_FROM_BYTES of text), None
    when it refuses the text; a `pa.NativeFile` (an ASCII file) is read block by block."""
    delimiter = layout.delimiter or " "
    text: pa.Buffer | pa.NativeFile
    if isinstance(raw, pa.NativeFile):
        text = raw
    else:
        if not raw.isascii():
            try:
                raw.decode("utf-8-sig")
            except UnicodeDecodeError:
                return None
        if layout.delimiter is None:  # whitespace: one space between fields, none at the edges
            raw = _EDGE_BLANKS.sub(b"", _BLANK_RUN.sub(b" ", raw))
        text = pa.py_buffer(raw)
    names = [f"c{i}" for i in range(len(layout.names))]
    size = text.size() if isinstance(text, pa.NativeFile) else text.size
    threads = size >= THREADS_FROM_BYTES and usable_cores() > 1
    try:
        return pa_csv.read_csv(
            text,
            read_options=pa_csv.ReadOptions(
                column_names=names, skip_rows=skip_rows, use_threads=threads
            ),
            parse_options=_parse_options(delimiter),
            convert_options=_convert_options([names[i] for i in usecols]),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    finally:
        if isinstance(text, pa.NativeFile):
            text.close()
