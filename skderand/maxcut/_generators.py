"""Weighted graphs for MAXCUT benchmarks.

Erdos-Renyi random graphs with +1 or +-1 weights (the kind of Gset's G1-G13),
and three kinds whose hardness differs from them: 2-D toroidal grids
(with +-1 weights, the Ising spin glass of Gset's G48-G50 and G57-G62), planar
graphs (Delaunay triangulations of random points, with +1 or +-1 weights) and
sparse random regular graphs. Each returns the symmetric CSR adjacency.
"""

import numpy as np

from skderand._random import seeded_generator
from skderand.maxcut._graph_io import _edges_to_adjacency

__all__ = [
    "delaunay_graph",
    "erdos_renyi_graph",
    "random_regular_graph",
    "toroidal_grid_graph",
]


def _weights(n_edges, signed, rng):
    if signed:
        return np.where(rng.random(n_edges) < 0.5, -1.0, 1.0)
    return np.ones(n_edges)


def erdos_renyi_graph(n_vertices, density, *, signed=False, random_state=None):
    """A random graph: each of the ``n (n - 1) / 2`` pairs is an edge with
    probability ``density``, independently.

    Gset's G1-G5 are such graphs with weights 1 and G6-G13 (and their larger
    relatives) with weights +-1.

    Parameters
    ----------
    n_vertices : int
        Number of vertices, at least 2.
    density : float in [0, 1]
        Probability of each edge.
    signed : bool, default=False
        Weights +-1 with equal probability instead of 1.
    random_state : int, RandomState instance or None, default=None
        Seeds the edges and the signs.

    Returns
    -------
    adjacency : scipy.sparse.csr_matrix of shape (n_vertices, n_vertices)

    Examples
    --------
    >>> from skderand.maxcut import erdos_renyi_graph
    >>> A = erdos_renyi_graph(200, 0.05, signed=True, random_state=0)
    >>> A.shape, 900 < A.nnz // 2 < 1100, sorted(set(A.data.tolist()))
    ((200, 200), True, [-1.0, 1.0])
    """
    if not 2 <= n_vertices:
        raise ValueError(f"A graph needs n_vertices >= 2; got {n_vertices}.")
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"density must be in [0, 1]; got {density}.")
    rng = seeded_generator(random_state)
    n_pairs = n_vertices * (n_vertices - 1) // 2
    n_edges = int(rng.binomial(n_pairs, density))
    # Pairs by their index k in the row-major upper triangle; numpy draws a
    # small sample of a huge range without materializing the range.
    k = np.sort(rng.choice(n_pairs, size=n_edges, replace=False))
    # Row i of the triangle starts at offset(i) = i (2 n - i - 1) / 2: invert
    # that quadratic in floating point, then correct a rounding off-by-one with
    # exact integers.
    rows = np.floor(
        (2 * n_vertices - 1 - np.sqrt((2 * n_vertices - 1) ** 2 - 8.0 * k)) / 2
    ).astype(np.int64)

    def offset(i):
        return i * (2 * n_vertices - i - 1) // 2

    rows -= offset(rows) > k
    rows += offset(rows + 1) <= k
    cols = k - offset(rows) + rows + 1
    weights = _weights(n_edges, signed, rng)
    return _edges_to_adjacency(n_vertices, rows, cols, weights)


def toroidal_grid_graph(n_rows, n_cols, *, signed=True, random_state=None):
    """The ``n_rows x n_cols`` grid with wrap-around edges (a torus).

    Vertex ``r * n_cols + c`` is joined to its right and lower neighbours
    (cyclically); each of the ``2 n_rows n_cols`` edges gets weight 1, or a
    random sign with ``signed=True``.

    Parameters
    ----------
    n_rows, n_cols : int
        Grid shape, each at least 3 (so that no edge is doubled).
    signed : bool, default=True
        Weights +-1 with equal probability (a 2-D spin glass) instead of 1.
    random_state : int, RandomState instance or None, default=None
        Seeds the signs.

    Returns
    -------
    adjacency : scipy.sparse.csr_matrix of shape (n_rows * n_cols,) * 2

    Examples
    --------
    >>> from skderand.maxcut import toroidal_grid_graph
    >>> A = toroidal_grid_graph(4, 5, random_state=0)
    >>> A.shape, A.nnz // 2, sorted(set(A.data.tolist()))
    ((20, 20), 40, [-1.0, 1.0])
    """
    if n_rows < 3 or n_cols < 3:
        raise ValueError(
            f"A toroidal grid needs at least 3 rows and 3 columns; got {n_rows} x "
            f"{n_cols}."
        )
    rng = seeded_generator(random_state)
    r, c = np.divmod(np.arange(n_rows * n_cols), n_cols)
    right = r * n_cols + (c + 1) % n_cols
    down = ((r + 1) % n_rows) * n_cols + c
    vertex = r * n_cols + c
    rows = np.concatenate([vertex, vertex])
    cols = np.concatenate([right, down])
    return _edges_to_adjacency(
        n_rows * n_cols, rows, cols, _weights(rows.size, signed, rng)
    )


def delaunay_graph(n_vertices, *, signed=False, random_state=None):
    """The Delaunay triangulation of uniform random points in the unit square.

    A planar graph with about ``3 n`` edges, like Gset's G14-G21 (which are
    planar with +1 and +-1 weights).

    Parameters
    ----------
    n_vertices : int
        Number of points, at least 3.
    signed : bool, default=False
        Weights +-1 with equal probability instead of 1.
    random_state : int, RandomState instance or None, default=None
        Seeds the points and the signs.

    Returns
    -------
    adjacency : scipy.sparse.csr_matrix of shape (n_vertices, n_vertices)

    Examples
    --------
    >>> from skderand.maxcut import delaunay_graph
    >>> A = delaunay_graph(100, random_state=0)
    >>> A.shape, bool(2 * 100 - 3 <= A.nnz // 2 <= 3 * 100 - 6)
    ((100, 100), True)
    """
    from scipy.spatial import Delaunay

    if n_vertices < 3:
        raise ValueError(f"A triangulation needs at least 3 points; got {n_vertices}.")
    rng = seeded_generator(random_state)
    triangles = Delaunay(rng.random((n_vertices, 2))).simplices
    pairs = np.concatenate(
        [triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [0, 2]]]
    )
    pairs = np.unique(np.sort(pairs, axis=1), axis=0)
    weights = _weights(pairs.shape[0], signed, rng)
    return _edges_to_adjacency(n_vertices, pairs[:, 0], pairs[:, 1], weights)


def random_regular_graph(n_vertices, degree=3, *, signed=False, random_state=None):
    """A uniform-looking random ``degree``-regular simple graph.

    The configuration model: ``degree`` stubs per vertex are paired at random;
    the stubs of pairs that form self-loops or repeated edges are paired again
    together with as many randomly chosen good pairs, until the graph is simple.

    Parameters
    ----------
    n_vertices : int
        Number of vertices; ``n_vertices * degree`` must be even and
        ``degree < n_vertices``.
    degree : int, default=3
        Degree of every vertex.
    signed : bool, default=False
        Weights +-1 with equal probability instead of 1.
    random_state : int, RandomState instance or None, default=None
        Seeds the pairing and the signs.

    Returns
    -------
    adjacency : scipy.sparse.csr_matrix of shape (n_vertices, n_vertices)

    Examples
    --------
    >>> import numpy as np
    >>> from skderand.maxcut import random_regular_graph
    >>> A = random_regular_graph(50, 3, random_state=0)
    >>> np.unique(np.diff(A.indptr)).tolist(), A.nnz // 2
    ([3], 75)
    """
    if degree < 1 or degree >= n_vertices or (n_vertices * degree) % 2:
        raise ValueError(
            "A degree-regular graph needs 1 <= degree < n_vertices and "
            f"n_vertices * degree even; got n_vertices={n_vertices}, degree={degree}."
        )
    rng = seeded_generator(random_state)
    stubs = rng.permutation(np.repeat(np.arange(n_vertices), degree))
    pairs = stubs.reshape(-1, 2)
    while True:
        low, high = pairs.min(axis=1), pairs.max(axis=1)
        key = low.astype(np.int64) * n_vertices + high
        _, first = np.unique(key, return_index=True)
        bad = np.ones(len(pairs), dtype=bool)
        bad[first] = False  # the first copy of a repeated edge may stay
        bad |= low == high
        n_bad = int(bad.sum())
        if n_bad == 0:
            break
        # Re-pair the bad stubs with those of as many random good pairs, so that
        # the bad ones are not stuck together.
        good = np.flatnonzero(~bad)
        redo = np.concatenate(
            [
                np.flatnonzero(bad),
                rng.choice(good, min(n_bad, good.size), replace=False),
            ]
        )
        pairs[redo] = rng.permutation(pairs[redo].ravel()).reshape(-1, 2)
    weights = _weights(len(pairs), signed, rng)
    return _edges_to_adjacency(n_vertices, pairs[:, 0], pairs[:, 1], weights)
