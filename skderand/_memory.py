"""Memory estimates, so that a request too large to fit is refused up front.

A tiny file or a few feature vectors can announce a problem whose arrays need
far more memory than the machine has; allocating blindly would end in the
kernel's out-of-memory killer (or a ``MemoryError`` deep inside numpy) instead
of a message. The estimates here are computed before anything proportional to
the announced size is allocated.
"""

import os

_GIB = 2.0**30
# scipy stores sparse indices as int32 while they fit, else int64.
_INT32_LIMIT = 2**31 - 1
_FLOAT_BYTES = 8


def available_memory():
    """Bytes of memory available to a new allocation, or ``None`` if unknown.

    Linux's ``MemAvailable`` (free memory plus what the page cache can give
    back); elsewhere the free physical pages; ``None`` where neither exists.
    """
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def index_bytes(n_vertices, n_entries):
    """Bytes of one sparse index: scipy's choice of int32 or int64."""
    return 4 if max(n_vertices, n_entries) <= _INT32_LIMIT else 8


def sparse_adjacency_bytes(n_vertices, n_edges):
    """Peak bytes of building the symmetric CSR adjacency of an edge list.

    The COO triplets of both orientations (two int64 index arrays and the
    weights) coexist with the CSR result (``n + 1`` row pointers, column indices,
    weights): the row pointers are what a vertex costs even without edges.
    """
    nnz = 2 * n_edges
    index = index_bytes(n_vertices, nnz)
    coo = nnz * (8 + 8 + _FLOAT_BYTES)
    csr = (n_vertices + 1) * index + nnz * (index + _FLOAT_BYTES)
    return coo + csr


def format_bytes(n_bytes):
    """``'26.8 GiB'``: a size for an error message."""
    if n_bytes >= _GIB:
        return f"{n_bytes / _GIB:.1f} GiB"
    return f"{n_bytes / 2**20:.1f} MiB"


def check_fits_in_memory(needed, what, alternatives=""):
    """Raise ``ValueError`` naming ``needed`` bytes if more than is available.

    A ``ValueError`` (not ``MemoryError``): the request is refused before any
    allocation, as an input the machine cannot take.

    Parameters
    ----------
    needed : int
        Estimated bytes.
    what : str
        What needs them, completing "... would need X".
    alternatives : str, default=""
        Appended to the message: what the user can do instead.
    """
    available = available_memory()
    if available is None or needed <= available:
        return
    message = (
        f"{what} would need about {format_bytes(needed)} of memory, more than the "
        f"{format_bytes(available)} available."
    )
    if alternatives:
        message += " " + alternatives
    raise ValueError(message)


def csr_bytes(n_vertices, n_entries):
    """Bytes of an ``n x n`` CSR matrix with ``n_entries`` stored entries."""
    index = index_bytes(n_vertices, n_entries)
    return (n_vertices + 1) * index + n_entries * (index + _FLOAT_BYTES)


def maxcut_fit_bytes(n_vertices, n_entries, rank):
    """Bytes a MAXCUT fit needs beyond the working memory of its active part.

    Validation copies the adjacency and forms ``A - A.T`` (about three CSR
    matrices); the fitted ``labels_``, ``mu_`` and ``sdp_vectors_`` (``rank``
    columns) have a row per vertex, edges or not.
    """
    per_vertex = _FLOAT_BYTES * (2 + rank)
    return 3 * csr_bytes(n_vertices, n_entries) + n_vertices * per_vertex


def dense_affinity_bytes(n_samples):
    """Peak bytes of a dense ``n x n`` affinity turned into the fit's sparse graph.

    The dense float64 matrix, its CSR conversion (value and int32 column index
    per entry) and the validation's copy and ``A - A.T`` of that CSR matrix.
    """
    entries = n_samples * n_samples
    return entries * _FLOAT_BYTES + 3 * csr_bytes(n_samples, entries)
