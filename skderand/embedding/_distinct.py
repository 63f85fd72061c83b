"""The distinct rows of a data set: exact duplicates found by hashing.

Private helper of :class:`~skderand.embedding.LearnedJLTransformer`: a copy of a
row has no ratio with the row, and its ratio with any other row is the row's,
so the worst case over pairs is that of the distinct rows, and the fit sees only
those (see ``LearnedJLTransformer.fit``).
"""

import numpy as np
from scipy import sparse

from skderand.embedding._pairs import BLOCK_ELEMENTS


def _entry_hashes(bits, columns):
    """One wrapping 64-bit hash per entry, from its bits and its column.

    A multiplicative hash (wrapping uint64 arithmetic, by odd multipliers):
    each entry's bits, mixed with its column index, hash to one 64-bit number,
    and a row's hash is the wrapping sum over its entries. Equal rows hash
    equally; unequal rows that collide are told apart by an exact comparison.
    (Array arithmetic on unsigned integers wraps silently: no error state to
    change.)
    """
    column_mix = np.uint64(0x9E3779B97F4A7C15)
    entry_mix = np.uint64(0xBF58476D1CE4E5B9)
    mixed = bits.astype(np.uint64) ^ (columns.astype(np.uint64) * column_mix)
    mixed *= entry_mix
    # A shift folds the high bits, which the products fill, into the low.
    mixed ^= mixed >> np.uint64(31)
    return mixed


def _unsigned(values):
    """The bits of float32 or float64 values as unsigned integers of their width."""
    return values.view(np.uint32 if values.dtype == np.float32 else np.uint64)


def _row_hashes(X):
    """A 64-bit hash of each row of ``X`` (dense, or canonical CSR)."""
    n, d = X.shape
    if sparse.issparse(X):
        hashes = _entry_hashes(_unsigned(X.data), X.indices)
        sums = np.concatenate([[np.uint64(0)], np.cumsum(hashes, dtype=np.uint64)])
        return sums[X.indptr[1:]] - sums[X.indptr[:-1]]
    out = np.empty(n, dtype=np.uint64)
    columns = np.arange(d)
    # By blocks of rows: the entries' hashes take the memory of the block only.
    step = max(1, BLOCK_ELEMENTS // max(d, 1))
    for a in range(0, n, step):
        block = _unsigned(np.ascontiguousarray(X[a : a + step]))
        hashes = _entry_hashes(block, columns[None, :])
        out[a : a + step] = hashes.sum(axis=1, dtype=np.uint64)
    return out


def _row(X, i):
    """Row ``i`` of ``X`` in a form that compares exactly with ``==``."""
    if sparse.issparse(X):
        a, b = X.indptr[i], X.indptr[i + 1]
        return X.indices[a:b].tobytes() + X.data[a:b].tobytes()
    return X[i].tobytes()


def distinct_rows(X):
    """Indices of the first copy of each distinct row of ``X``, in order.

    ``X`` is a dense array or a CSR/CSC matrix of float32 or float64 (entries
    compare by their bits: ``0.0`` and ``-0.0`` differ, and the pair they make
    is coincident anyway). Returns None when every row is distinct (the
    common case, without a copy of ``X``). Costs one pass over the entries
    and a sort of ``n`` hashes; only rows whose hashes collide are compared.
    """
    n = X.shape[0]
    if n < 2:
        return None
    if sparse.issparse(X):
        # Canonical rows (sorted column indices, no repeated or explicit zero
        # entries), so that equal rows store equal arrays. CSR input usually
        # is, and is read in place; otherwise a copy is made canonical (the
        # user's matrix is not touched).
        X = sparse.csr_array(X)
        if not X.has_canonical_format or not X.data.all():
            X = X.copy()
            X.sum_duplicates()
            X.eliminate_zeros()
    hashes = _row_hashes(X)
    order = np.argsort(hashes, kind="stable")
    sorted_hashes = hashes[order]
    first = np.concatenate([[True], sorted_hashes[1:] != sorted_hashes[:-1]])
    if first.all():
        return None
    keep = np.ones(n, dtype=bool)
    # The runs of equal hashes: within each, rows (in their original order, as
    # the sort is stable) are compared with the distinct rows of the run so far.
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], n)
    runs = ends - starts >= 2
    for a, b in zip(starts[runs], ends[runs], strict=True):
        seen = set()
        for i in order[a:b]:
            row = _row(X, i)
            if row in seen:
                keep[i] = False
            else:
                seen.add(row)
    if keep.all():
        return None
    return np.flatnonzero(keep)
