"""QUBO and MAX-2-SAT files: OR-Library ``bqp``, plain ``i j q`` lists, DIMACS WCNF."""

import numpy as np
from scipy import sparse

from skderand._memory import check_fits_in_memory, csr_bytes, sparse_adjacency_bytes
from skderand._text_io import data_lines, header_counts, parse_entries

__all__ = ["read_qubo", "read_wcnf"]


def _matrix(n, rows, cols, values, symmetric):
    if symmetric:
        off = rows != cols
        rows, cols, values = (
            np.concatenate([rows, cols[off]]),
            np.concatenate([cols, rows[off]]),
            np.concatenate([values, values[off]]),
        )
    Q = sparse.coo_matrix((values, (rows, cols)), shape=(n, n)).tocsr()
    Q.sum_duplicates()
    Q.eliminate_zeros()
    return Q


def _check_announced(name, n, m, what, also_needs):
    check_fits_in_memory(
        sparse_adjacency_bytes(n, m) + also_needs(n, m),
        f"{name}: {what} announces {n:,} variables and {m:,} entries; reading "
        "it, and solving it from the command line,",
        "Check the variable count in the header 'n m'.",
    )


def _no_more(n, m):
    return 0


def read_qubo(path):
    """Read QUBO matrices from an OR-Library ``bqp`` file or a plain ``i j q`` list.

    Two formats, told apart by the first data line:

    - OR-Library (Beasley's ``bqpN.txt``): a line with the number of
      instances, then per instance a line ``n m`` and ``m`` lines ``i j q``
      (1-based), each unordered pair once and read symmetrically, ``Q[i, j] =
      Q[j, i] = q`` (so an off-diagonal entry counts twice in ``x^T Q x``).
    - A plain list: an optional header ``n m``, then lines ``i j q`` (1-based)
      that are the entries of ``Q`` as given, ``Q[i, j] += q``: an entry counts
      once in ``x^T Q x``, as a bias does in ``dimod``'s COO files. Without a
      header, ``n`` is the largest index.

    Blank lines and lines starting with ``#`` or ``%`` are ignored.

    Parameters
    ----------
    path : str, path-like or file object

    Returns
    -------
    matrices : list of scipy.sparse.csr_matrix
        One ``(n, n)`` matrix per instance (one for a plain list).

    Raises
    ------
    ValueError
        On a malformed line (naming it), an index outside ``1..n``, a
        non-finite coefficient, counts that disagree with a header, and,
        before anything is allocated, a header announcing more than the
        memory can hold.

    Examples
    --------
    >>> import io
    >>> from skderand.qubo import read_qubo
    >>> [Q] = read_qubo(io.StringIO("2 2\\n1 1 -1\\n1 2 3\\n"))
    >>> Q.toarray()
    array([[-1.,  3.],
           [ 0.,  0.]])
    """
    return _read_qubo(path)


def _read_qubo(path, also_needs=_no_more):
    """:func:`read_qubo`, refusing up front what ``also_needs(n, m)`` bytes more
    than the matrix would not leave room for (the command's fit)."""
    name, lines = data_lines(path)
    if not lines:
        raise ValueError(f"{name}: empty file, expected a QUBO.")
    if len(lines[0]) == 1:
        return _read_orlib(name, lines, also_needs)
    if len(lines[0]) == 2:
        n, m = header_counts(name, lines[0], "the header 'n m'")
        body = lines[1:]
        if len(body) != m:
            raise ValueError(
                f"{name}: the header announces {m} entries but {len(body)} follow."
            )
        _check_announced(name, n, m, "the header", also_needs)
    else:
        body = lines
        try:
            n = max(max(int(f[0]), int(f[1])) for f in body if len(f) == 3)
        except ValueError:
            n = 0  # parse_entries names the malformed line
        check_fits_in_memory(
            csr_bytes(n, 2 * len(body)) + also_needs(n, len(body)),
            f"{name}: the largest index is {n:,}; a {n:,} x {n:,} sparse matrix, and "
            "solving it from the command line,",
            "Check the indices, or give a header 'n m'.",
        )
    rows, cols, values = parse_entries(
        name, body, n, line_name="entry line", value_name="coefficients"
    )
    if n == 0:
        raise ValueError(f"{name}: the problem is empty (no variable).")
    return [_matrix(n, rows, cols, values, symmetric=False)]


def _read_orlib(name, lines, also_needs):
    try:
        count = int(lines[0][0])
    except ValueError:
        raise ValueError(
            f"{name}: the first line must be the number of instances or a header "
            f"'n m', got {lines[0][0]!r}."
        ) from None
    matrices, at = [], 1
    for instance in range(count):
        if at >= len(lines):
            raise ValueError(
                f"{name}: {count} instances announced, the file ends after {instance}."
            )
        n, m = header_counts(name, lines[at], f"instance {instance + 1}'s header")
        _check_announced(name, n, m, f"instance {instance + 1}'s header", also_needs)
        body = lines[at + 1 : at + 1 + m]
        if len(body) != m or any(len(fields) != 3 for fields in body):
            raise ValueError(
                f"{name}: instance {instance + 1} announces {m} lines 'i j q'; "
                f"{sum(len(f) == 3 for f in body)} follow."
            )
        rows, cols, values = parse_entries(
            name,
            body,
            n,
            line_name=f"instance {instance + 1}, entry line",
            value_name="coefficients",
        )
        matrices.append(_matrix(n, rows, cols, values, symmetric=True))
        at += 1 + m
    if at != len(lines):
        raise ValueError(
            f"{name}: {len(lines) - at} lines follow the {count} instances announced."
        )
    return matrices


def read_wcnf(path):
    """Read a weighted MAX-2-SAT instance in DIMACS WCNF format.

    The header ``p wcnf n_variables n_clauses [top]`` is followed by one
    clause a line: its weight, then its literals (``v`` or ``-v``, 1-based),
    ending with ``0``. Lines starting with ``c`` are comments. Hard clauses
    (weight ``top``) are read with that weight; only clauses of one or two
    literals are supported. The newer header-less format (``h`` for hard
    clauses) is read too, ``h`` meaning the sum of the soft weights plus one.

    Parameters
    ----------
    path : str, path-like or file object

    Returns
    -------
    clauses : list of tuple of int
        The literals of each clause.
    weights : ndarray of shape (n_clauses,)
    n_variables : int

    Raises
    ------
    ValueError
        On a clause of three or more literals, a literal naming a variable
        beyond the header's count, a missing ``0``, a malformed line, counts
        that disagree with the header, or a header announcing more than the
        memory can hold.

    Examples
    --------
    >>> import io
    >>> from skderand.qubo import read_wcnf
    >>> text = "p wcnf 2 3 10\\n3 1 2 0\\n1 -1 0\\n10 -2 0\\n"
    >>> clauses, weights, n = read_wcnf(io.StringIO(text))
    >>> clauses, weights.tolist(), n
    ([(1, 2), (-1,), (-2,)], [3.0, 1.0, 10.0], 2)
    """
    name, lines = data_lines(path, comments="c")
    if not lines:
        raise ValueError(f"{name}: empty file, expected WCNF clauses.")
    n, body = None, lines
    if lines[0][0] == "p":
        header = lines[0]
        if len(header) not in (4, 5) or header[1] != "wcnf":
            raise ValueError(
                f"{name}: the header must be 'p wcnf n_variables n_clauses [top]', "
                f"got {' '.join(header)!r}."
            )
        n, count = header_counts(name, header[2:4], "the header's counts")
        body = lines[1:]
        if len(body) != count:
            raise ValueError(
                f"{name}: the header announces {count} clauses but {len(body)} follow."
            )
        check_fits_in_memory(
            sparse_adjacency_bytes(n, 2 * count),
            f"{name}: the header announces {n:,} variables and {count:,} clauses; "
            "their Ising form",
            "Check the counts in the header 'p wcnf n m'.",
        )
    clauses, weights, hard = [], np.empty(len(body)), []
    for k, fields in enumerate(body):
        where = f"{name}: clause line {k + 1}"
        if fields[-1] != "0":
            raise ValueError(f"{where} must end with 0, got {' '.join(fields)!r}.")
        try:
            literals = tuple(int(f) for f in fields[1:-1])
            weights[k] = np.nan if fields[0] == "h" else float(fields[0])
        except ValueError:
            raise ValueError(f"{where} is not numeric: {' '.join(fields)!r}.") from None
        if fields[0] == "h":
            hard.append(k)
        if not 1 <= len(literals) <= 2:
            raise ValueError(
                f"{where} has {len(literals)} literals; only clauses of one or two "
                "literals (MAX-2-SAT) are supported."
            )
        if n is not None and max(abs(lit) for lit in literals) > n:
            raise ValueError(
                f"{where} names variable {max(abs(lit) for lit in literals)}, beyond "
                f"the header's {n} variables."
            )
        if 0 in literals:
            raise ValueError(f"{where} has a literal 0 before its end.")
        clauses.append(literals)
    if hard:
        weights[hard] = np.nansum(weights) + 1.0
    if not np.all(np.isfinite(weights)):
        raise ValueError(f"{name}: clause weights must be finite numbers.")
    if n is None:
        n = max(abs(lit) for clause in clauses for lit in clause)
    return clauses, weights, n
