"""Simulated annealing for MAXCUT at array speed: colour classes and replicas.

Flipping vertex ``i`` changes the cut ``sum_{i<j} w_ij (1 - s_i s_j) / 2`` by
``s_i (W s)_i``. Vertices that share no edge do not change each other's gain, so
all vertices of one colour class of a proper colouring can be offered a flip at
once, with one sparse product ``W[class] @ S``; ``R`` independent replicas are
the columns of the ``n x R`` sign matrix ``S``, so that one product serves them
all and Python's overhead is paid per colour class, not per vertex.
"""

import numpy as np

__all__ = ["anneal", "greedy_colouring", "temper"]

# A class's rows of W are kept dense when that is small (a dense product skips
# scipy's per-call dispatch, which dominates on small graphs) or dense enough that
# BLAS beats the sparse kernel.
_DENSE_BLOCK_ENTRIES = 2**16
_DENSE_BLOCK_DENSITY = 0.25
# Integer weights whose absolute values sum to at most this run the chains in
# single precision: every product and sum of gains is then an integer below
# 2**24, exact in float32, and the products, the sweep's cost on dense graphs,
# are cheaper. Other weights keep double precision, exact to round-off. See
# doc/developers/maxcut_design.rst, "Single-precision chains".
_SINGLE_EXACT_MAX = 2**24
# One chain (one replica) takes its Metropolis thresholds from a pool of
# exponential draws made once (at least _POOL_MIN, _POOL_PER_VERTEX per vertex):
# each sweep reads n consecutive entries at a uniform offset instead of drawing
# them, a large part of a one-chain sweep. Several replicas keep fresh draws.
# See doc/developers/maxcut_design.rst, "Threshold pool".
_POOL_MIN = 2**20
_POOL_PER_VERTEX = 8


def greedy_colouring(adjacency):
    """A proper vertex colouring, greedy in order of decreasing degree.

    Each vertex takes the smallest colour none of its already coloured
    neighbours has (Welsh and Powell's order: at most ``max degree + 1``
    colours, few on sparse graphs). Ties in degree go to the smaller index.

    Returns
    -------
    classes : list of ndarray
        The vertices of each colour, sorted; no edge joins two vertices of the
        same class.
    """
    n = adjacency.shape[0]
    indptr = adjacency.indptr.tolist()
    indices = adjacency.indices.tolist()
    degree = np.diff(adjacency.indptr)
    order = np.lexsort((np.arange(n), -degree)).tolist()
    colour = [-1] * n
    for v in order:
        taken = {colour[u] for u in indices[indptr[v] : indptr[v + 1]] if u != v}
        c = 0
        while c in taken:
            c += 1
        colour[v] = c
    colour = np.asarray(colour, dtype=np.int64)
    return [np.flatnonzero(colour == c) for c in range(int(colour.max(initial=-1)) + 1)]


def _block(rows):
    """A CSR row block, or its dense array when that is cheaper to multiply."""
    size = rows.shape[0] * rows.shape[1]
    if size <= _DENSE_BLOCK_ENTRIES or rows.nnz >= _DENSE_BLOCK_DENSITY * size:
        return rows.toarray()
    return rows


def anneal(
    adjacency,
    spins,
    *,
    n_sweeps,
    n_replicas,
    temperatures,
    rng,
    classes=None,
):
    """Metropolis simulated annealing from ``spins`` over ``n_replicas`` replicas.

    Every replica starts at ``spins``; each sweep offers every vertex one flip,
    one colour class at a time, accepted with probability
    ``min(1, exp(gain / T))``, ``T`` falling geometrically from
    ``temperatures[0]`` to ``temperatures[1]`` over the sweeps.

    Parameters
    ----------
    adjacency : scipy.sparse.csr_matrix of shape (n, n)
        Symmetric weights, zero diagonal.
    spins : ndarray of shape (n,)
        The start, in {-1, +1}; not modified.
    n_sweeps : int
        Sweeps over all vertices (the budget: ``n_sweeps * n`` offered moves per
        replica, independent of the machine's speed).
    n_replicas : int
        Independent chains, run together as the columns of one matrix.
    temperatures : tuple of float
        ``(T_start, T_end)`` in the units of the weights.
    rng : numpy.random.Generator
        Source of the acceptance draws.
    classes : list of ndarray, optional
        Colour classes (:func:`greedy_colouring` if not given).

    Returns
    -------
    best : ndarray of shape (n,)
        The best cut seen over all replicas and sweeps (checked after every
        sweep), ``spins`` itself if nothing better was seen.
    best_gain : float
        Its cut minus the cut of ``spins``, accumulated from the accepted gains.
    """
    spins = np.asarray(spins, dtype=np.float64)
    order, spans, eps = _class_spans(adjacency, classes)
    S = np.repeat(spins[order][:, None].astype(_dtype(spans)), n_replicas, axis=1)
    gain_so_far = np.zeros(n_replicas)
    thresholds = _ThresholdPool(S.shape[0], S.dtype, rng) if n_replicas == 1 else None

    def chain():
        for temperature in np.geomspace(temperatures[0], temperatures[1], n_sweeps):
            _sweep(spans, S, temperature, gain_so_far, rng, thresholds)
            yield S, gain_so_far

    return _best_seen(chain(), spins, order, eps)


def temper(
    adjacency,
    spins,
    *,
    n_sweeps,
    n_replicas,
    temperatures,
    rng,
    classes=None,
):
    """Replica exchange (parallel tempering) from ``spins`` over a temperature ladder.

    Replica ``k`` runs Metropolis sweeps (as in :func:`anneal`) at the ``k``-th
    of ``n_replicas`` temperatures spaced geometrically from ``temperatures[0]``
    down to ``temperatures[1]``; all start at ``spins``. After every sweep the
    replicas at neighbouring temperatures ``T > T'`` (even pairs after even
    sweeps, odd pairs after odd ones) swap temperatures with probability
    ``min(1, exp((1/T' - 1/T) (C - C')))``, ``C`` and ``C'`` their cuts: the
    swap that keeps every replica's distribution the Boltzmann one at its
    temperature, so the colder replicas are fed the better cuts the hotter ones
    find. Swapping temperatures, not the replicas' signs, costs nothing.

    Parameters
    ----------
    adjacency : scipy.sparse.csr_matrix of shape (n, n)
        Symmetric weights, zero diagonal.
    spins : ndarray of shape (n,)
        The start, in {-1, +1}; not modified.
    n_sweeps : int
        Sweeps over all vertices in every replica (the budget, in moves).
    n_replicas : int
        Temperatures of the ladder, one replica each (at least 2).
    temperatures : tuple of float
        ``(T_hottest, T_coldest)`` in the units of the weights.
    rng : numpy.random.Generator
        Source of the acceptance draws.
    classes : list of ndarray, optional
        Colour classes (:func:`greedy_colouring` if not given).

    Returns
    -------
    best : ndarray of shape (n,)
        The best cut seen over all replicas and sweeps (checked after every
        sweep), ``spins`` itself if nothing better was seen.
    best_gain : float
        Its cut minus the cut of ``spins``, accumulated from the accepted gains.
    """
    if n_replicas < 2:
        raise ValueError(f"Tempering needs at least 2 replicas; got {n_replicas}.")
    spins = np.asarray(spins, dtype=np.float64)
    order, spans, eps = _class_spans(adjacency, classes)
    chain = _tempering_chain(
        spans, spins[order], n_sweeps, n_replicas, temperatures, rng
    )
    return _best_seen(((S, gains) for S, gains, _ in chain), spins, order, eps)


def _best_seen(states, spins, order, eps):
    """The best replica over a chain's states, in the caller's vertex order.

    ``states`` yields ``(S, gain_so_far)`` after every sweep, in the vertex
    order ``order`` of the colour classes; a replica replaces the best one only
    when it gains more than the round-off ``eps`` over it. Returns ``(best,
    best_gain)`` as :func:`anneal` and :func:`temper` do: ``spins`` and 0 when
    nothing better was seen.
    """
    best_gain = 0.0
    best = spins[order]
    for S, gain_so_far in states:
        leader = int(np.argmax(gain_so_far))
        if gain_so_far[leader] > best_gain + eps:
            best_gain = float(gain_so_far[leader])
            best = S[:, leader].copy()
    result = np.empty_like(spins)
    result[order] = best
    return result, best_gain


def _tempering_chain(spans, start, n_sweeps, n_replicas, temperatures, rng):
    """The states of :func:`temper`'s replicas, yielded after every sweep.

    Yields ``(S, gain_so_far, replica_at)``: the signs of every replica (in the
    vertex order of ``spans``; a view, updated by the next sweep), each
    replica's cut minus the start's, and the replica at each rung of the
    ladder, hottest first.
    """
    S = np.repeat(start[:, None].astype(_dtype(spans)), n_replicas, axis=1)
    gain_so_far = np.zeros(n_replicas)
    # Rung k of the ladder (hottest first) and the replica that holds it.
    rung_temperature = np.geomspace(temperatures[0], temperatures[1], n_replicas)
    rung_beta = 1.0 / rung_temperature
    replica_at = np.arange(n_replicas)
    temperature = rung_temperature.copy()
    for sweep in range(n_sweeps):
        _sweep(spans, S, temperature, gain_so_far, rng)
        # Rungs k (hotter) and k + 1 (colder); the cuts differ by the
        # accumulated gains, the common start cancelling.
        hot = np.arange(sweep % 2, n_replicas - 1, 2)
        a, b = replica_at[hot], replica_at[hot + 1]
        log_ratio = (rung_beta[hot + 1] - rung_beta[hot]) * (
            gain_so_far[a] - gain_so_far[b]
        )
        swap = hot[log_ratio + rng.standard_exponential(hot.size) >= 0.0]
        replica_at[swap], replica_at[swap + 1] = replica_at[swap + 1], replica_at[swap]
        temperature[replica_at] = rung_temperature
        yield S, gain_so_far, replica_at


def _class_spans(adjacency, classes):
    """Renumbering, per-class row blocks and the gain round-off of a sweep."""
    if classes is None:
        classes = greedy_colouring(adjacency)
    # Renumber the vertices class by class: each class is then a contiguous
    # block of rows of S, updated in place through a view (no gather/scatter),
    # and its rows of W a CSR row slice, built once.
    order = np.concatenate(classes)
    bounds = np.cumsum([0] + [idx.size for idx in classes])
    W = adjacency[order][:, order].tocsr()
    integral = np.array_equal(W.data, np.round(W.data))
    if integral and np.abs(W.data).sum() <= _SINGLE_EXACT_MAX:
        W = W.astype(np.float32)
    blocks = [_block(W[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    spans = list(zip(bounds[:-1], bounds[1:], blocks, strict=True))
    # Gains accumulate round-off: only an improvement above it counts as one.
    eps = 1e-9 * max(1.0, float(np.abs(W.data).max(initial=0.0)))
    return order, spans, eps


def _dtype(spans):
    """The precision the chains run in: that of the class blocks."""
    return spans[0][2].dtype


class _ThresholdPool:
    """The Metropolis thresholds ``-T E`` of a one-replica chain, from a pool.

    ``E ~ Exp(1)`` are drawn once (see ``_POOL_MIN``); each call reads ``n``
    consecutive entries at a uniformly drawn offset and scales them into a
    buffer reused across sweeps.
    """

    def __init__(self, n, dtype, rng):
        self.n = n
        size = max(_POOL_MIN, _POOL_PER_VERTEX * n)
        self.pool = rng.standard_exponential(size, dtype=dtype)
        self.rng = rng
        self.buffer = np.empty((n, 1), dtype=dtype)

    def __call__(self, temperature):
        start = int(self.rng.integers(self.pool.size - self.n + 1))
        entries = self.pool[start : start + self.n, None]
        return np.multiply(entries, -temperature, out=self.buffer)


def _sweep(spans, S, temperature, gain_so_far, rng, thresholds=None):
    """One Metropolis sweep of every replica (column of ``S``), class by class.

    ``temperature`` is a scalar or one per replica; ``S`` and ``gain_so_far``
    are updated in place. ``thresholds``, if given, is a :class:`_ThresholdPool`
    (one replica) that replaces the fresh draws.
    """
    # Metropolis: accept with probability min(1, exp(gain / T)), i.e. when
    # gain / T >= log(u) = -E for E ~ Exp(1) (never log(0)), i.e. when
    # gain >= -T E. The thresholds of the whole sweep are drawn at once: on
    # small graphs the sweep's cost is numpy calls per class, not arithmetic.
    if thresholds is not None:
        threshold = thresholds(S.dtype.type(temperature))
    else:
        threshold = rng.standard_exponential(S.shape, dtype=S.dtype)
        threshold *= -np.asarray(temperature, dtype=S.dtype)
    # A flip toggles the sign bit: an XOR on the bits of S (a masked negation
    # costs several times more on large classes).
    bits = S.view(f"u{S.itemsize}")
    sign_bit = 8 * S.itemsize - 1
    for a, b, block in spans:
        s = S[a:b]
        gain = block @ S
        gain *= s
        flip = gain >= threshold[a:b]
        # The accepted gains, column by column (einsum: half the time of a
        # masked reduction; with one column a dot product, half einsum's).
        if S.shape[1] == 1:
            gain_so_far += np.vdot(flip, gain)
        else:
            gain_so_far += np.einsum("ij,ij->j", gain, flip)
        np.bitwise_xor(
            bits[a:b],
            np.left_shift(flip, sign_bit, dtype=bits.dtype),
            out=bits[a:b],
        )
