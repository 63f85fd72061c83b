"""Plain-text problem files: their data lines, and ``i j value`` entries."""

import os

import numpy as np


def data_lines(path, comments="#%"):
    """``(name, lines)``: the file's non-blank, non-comment lines, split in fields.

    ``path`` is a path or a file object; a line is a comment when its first
    non-blank character is one of ``comments``.
    """
    if hasattr(path, "read"):
        text = path.read()
        name = getattr(path, "name", "<file>")
    else:
        with open(os.fspath(path)) as f:
            text = f.read()
        name = os.fspath(path)
    lines = [
        line.split()
        for line in text.splitlines()
        if line.strip() and line.lstrip()[0] not in comments
    ]
    return name, lines


def header_counts(name, fields, what):
    """Two non-negative integers from a header line, or a clear ``ValueError``."""
    try:
        if len(fields) != 2:
            raise ValueError
        first, second = int(fields[0]), int(fields[1])
    except ValueError:
        raise ValueError(
            f"{name}: {what} must be two integers, got {' '.join(fields)!r}."
        ) from None
    if first < 0 or second < 0:
        raise ValueError(f"{name}: negative counts in {what}: {first} {second}.")
    return first, second


def parse_entries(name, lines, n, *, line_name="edge line", value_name="weights"):
    """0-based ``(rows, cols, values)`` of ``i j [value]`` lines, 1-based indices.

    A missing value means 1. Raises a ``ValueError`` naming the line for a
    malformed or non-numeric line, an index outside ``1..n`` or a non-finite
    value.
    """
    m = len(lines)
    rows = np.empty(m, dtype=np.int64)
    cols = np.empty(m, dtype=np.int64)
    values = np.ones(m)
    for k, fields in enumerate(lines):
        if len(fields) not in (2, 3):
            raise ValueError(
                f"{name}: {line_name} {k + 1} must be 'i j w' or 'i j', got "
                f"{' '.join(fields)!r}."
            )
        try:
            rows[k], cols[k] = int(fields[0]), int(fields[1])
            if len(fields) == 3:
                values[k] = float(fields[2])
        except ValueError:
            raise ValueError(
                f"{name}: {line_name} {k + 1} is not numeric: {' '.join(fields)!r}."
            ) from None
    if m and (min(rows.min(), cols.min()) < 1 or max(rows.max(), cols.max()) > n):
        raise ValueError(f"{name}: vertex indices must lie in 1..{n} (1-based).")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name}: {value_name} must be finite numbers.")
    return rows - 1, cols - 1, values
