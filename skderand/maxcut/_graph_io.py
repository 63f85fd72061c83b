"""Weighted graphs in and out: the Gset edge-list format and networkx graphs.

The Gset format (Helmberg and Rendl's ``rudy`` output) is plain text: a header
line ``n m`` (vertices, edges), then ``m`` lines ``i j w`` with 1-based vertex
indices and a weight, one line per undirected edge.
"""

import os

import numpy as np
from scipy import sparse

from skderand._memory import check_fits_in_memory, sparse_adjacency_bytes
from skderand._text_io import data_lines, header_counts, parse_entries

__all__ = ["graph_to_adjacency", "read_gset", "write_gset"]


def _edges_to_adjacency(n, rows, cols, weights):
    """Symmetric CSR adjacency; repeated pairs add up, self-loops are dropped."""
    keep = rows != cols
    rows, cols, weights = rows[keep], cols[keep], weights[keep]
    adjacency = sparse.coo_matrix(
        (
            np.concatenate([weights, weights]),
            (np.concatenate([rows, cols]), np.concatenate([cols, rows])),
        ),
        shape=(n, n),
    ).tocsr()
    adjacency.sum_duplicates()
    adjacency.eliminate_zeros()
    return adjacency


def read_gset(path):
    """Read a graph in the Gset ``n m`` / ``i j w`` edge-list format.

    Parameters
    ----------
    path : str, path-like or file object
        The file to read. Lines ``i j`` without a weight mean weight 1; blank
        lines and lines starting with ``#`` or ``%`` are ignored.

    Returns
    -------
    adjacency : scipy.sparse.csr_matrix of shape (n, n)
        The symmetric weighted adjacency matrix (float64). Self-loops are
        dropped and repeated pairs add up.

    Raises
    ------
    ValueError
        On a malformed header or line, an index outside ``1..n``, a non-finite
        weight, or an edge count that disagrees with the header; and, before any
        allocation, when the adjacency the header announces would need more memory
        than is available (every announced vertex costs a row pointer, even
        without edges).

    See Also
    --------
    write_gset : Write a graph in the same format.

    Examples
    --------
    >>> import io
    >>> from skderand.maxcut import read_gset
    >>> A = read_gset(io.StringIO("3 2\\n1 2 1\\n2 3 -2\\n"))
    >>> A.toarray()
    array([[ 0.,  1.,  0.],
           [ 1.,  0., -2.],
           [ 0., -2.,  0.]])
    """
    name, lines = data_lines(path)
    if not lines:
        raise ValueError(f"{name}: empty file, expected a header line 'n m'.")
    n, m = header_counts(name, lines[0][:2], "the first line 'n m'")
    body = lines[1:]
    if len(body) != m:
        raise ValueError(
            f"{name}: the header announces {m} edges but {len(body)} edge lines follow."
        )
    check_fits_in_memory(
        sparse_adjacency_bytes(n, m),
        f"{name}: the header announces {n:,} vertices and {m:,} edges; their sparse "
        "adjacency",
        "Check the vertex count in the header 'n m'.",
    )
    rows, cols, weights = parse_entries(name, body, n)
    return _edges_to_adjacency(n, rows, cols, weights)


def write_gset(path, adjacency):
    """Write a symmetric weighted adjacency matrix in the Gset edge-list format.

    Parameters
    ----------
    path : str, path-like or file object
        Destination.
    adjacency : array-like or sparse matrix of shape (n, n)
        Symmetric weights; the diagonal is ignored. Integral weights are written
        as integers, others with ``repr`` precision.

    See Also
    --------
    read_gset : Read the format back.

    Examples
    --------
    >>> import io
    >>> import numpy as np
    >>> from skderand.maxcut import write_gset
    >>> out = io.StringIO()
    >>> write_gset(out, np.array([[0, 2], [2, 0]]))
    >>> print(out.getvalue(), end="")
    2 1
    1 2 2
    """
    A = sparse.coo_matrix(adjacency)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"adjacency must be square, got shape {A.shape}.")
    upper = sparse.triu(A, k=1).tocsr()
    upper.sum_duplicates()
    upper.eliminate_zeros()
    upper = upper.tocoo()
    order = np.lexsort((upper.col, upper.row))
    rows, cols = upper.row[order] + 1, upper.col[order] + 1
    data = np.asarray(upper.data[order], dtype=np.float64)
    integral = bool(np.all(data == np.round(data)))
    lines = [f"{A.shape[0]} {data.size}"]
    for i, j, w in zip(rows, cols, data, strict=True):
        lines.append(f"{i} {j} {int(w) if integral else repr(float(w))}")
    text = "\n".join(lines) + "\n"
    if hasattr(path, "write"):
        path.write(text)
    else:
        with open(os.fspath(path), "w") as f:
            f.write(text)


def _is_networkx_graph(obj):
    """True for a networkx graph, without importing networkx when it is absent."""
    module = type(obj).__module__ or ""
    return module.split(".")[0] == "networkx" and hasattr(obj, "adj")


def graph_to_adjacency(graph, weight="weight"):
    """The symmetric sparse adjacency of a networkx graph (rows in node order).

    Parameters
    ----------
    graph : networkx.Graph
        An undirected graph. Missing edge weights count as 1; self-loops are
        dropped.
    weight : str, default="weight"
        Edge attribute holding the weight.

    Returns
    -------
    adjacency : scipy.sparse.csr_matrix of shape (n, n)
        Rows and columns follow ``list(graph.nodes)``.

    Examples
    --------
    >>> import networkx as nx
    >>> from skderand.maxcut import graph_to_adjacency
    >>> graph = nx.Graph([("a", "b", {"weight": 2.0}), ("b", "c", {"weight": -1.0})])
    >>> graph_to_adjacency(graph).toarray()
    array([[ 0.,  2.,  0.],
           [ 2.,  0., -1.],
           [ 0., -1.,  0.]])
    """
    if not _is_networkx_graph(graph):
        raise TypeError(f"expected a networkx graph, got {type(graph).__name__}.")
    if graph.is_directed():
        raise ValueError("MAXCUT needs an undirected graph; got a directed one.")
    nodes = list(graph.nodes)
    index = {node: k for k, node in enumerate(nodes)}
    edges = list(graph.edges(data=weight, default=1.0))
    rows = np.array([index[u] for u, _, _ in edges], dtype=np.int64)
    cols = np.array([index[v] for _, v, _ in edges], dtype=np.int64)
    weights = np.array([w for _, _, w in edges], dtype=np.float64)
    if not np.all(np.isfinite(weights)):
        raise ValueError("Edge weights contain NaN or infinity.")
    return _edges_to_adjacency(len(nodes), rows, cols, weights)
