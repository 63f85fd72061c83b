"""One-flip tabu search for Ising problems, at array speed.

Maximize ``f(t) = offset + h^T t + t^T K t`` over ``t in {-1, 1}^n``, ``K``
symmetric with a zero diagonal. The field ``phi = h + 2 K t`` gives every
flip's exact gain at once, ``gain_i = -2 t_i phi_i``, and a flip of ``t_k``
changes the field by one row of ``K``: ``phi += 4 t_k K[k]`` (``t_k`` after
the flip). A move is a handful of vector operations on ``n`` entries (Glover's
one-flip tabu search; Palubeckis's multistart variant restarts it), done for
several phases at once as the rows of one array.
"""

import numpy as np
from scipy import sparse

# Tabu tenure: n / _TENURE_DIVISOR plus a uniform draw in [1, _TENURE_SPREAD],
# long enough that a flip cannot be undone at once, short enough that few
# variables are frozen; random so that no fixed period repeats.
_TENURE_DIVISOR = 100
_TENURE_SPREAD = 10
# A phase ends after this many moves per variable without improving its own
# best (at least _MIN_STALL moves).
_STALL_PER_VARIABLE = 5
_MIN_STALL = 1_000
# Up to this many phases run side by side, one row each (a new phase takes the
# row of one that ended): a move of all of them costs little more than a move
# of one, since at a few hundred variables the cost of a move is numpy's
# per-call overhead, not arithmetic.
_CHAINS = 32
# Bytes per variable and chain (spins, field, best spins, tenures and a move's
# temporaries), and the most the chains may hold together unless a single
# chain needs more.
_BYTES_PER_CHAIN_VARIABLE = 64
_CHAIN_STATE_BYTES = 2**28


def n_chains(n, n_phases):
    """How many of ``n_phases`` phases on ``n`` variables run side by side."""
    by_memory = _CHAIN_STATE_BYTES // (_BYTES_PER_CHAIN_VARIABLE * n)
    return max(1, min(_CHAINS, n_phases, by_memory))


def chain_state_bytes(n):
    """The most memory the chains on ``n`` variables hold (any number of phases)."""
    return _BYTES_PER_CHAIN_VARIABLE * n * n_chains(n, _CHAINS)


class _Rows:
    """Adds ``scale[c] * K[k[c]]`` to row ``c`` of the fields, for every chain ``c``."""

    def __init__(self, K):
        self.K = K
        if sparse.issparse(K):
            self.add_rows = self._add_sparse_rows

    def add_rows(self, fields, k, scale):
        fields += scale[:, None] * self.K[k]

    def _add_sparse_rows(self, fields, k, scale):
        # The stored entries of rows k, concatenated: positions into
        # indices / data, and the chain each belongs to.
        K = self.K
        lo, hi = K.indptr[k], K.indptr[k + 1]
        counts = hi - lo
        positions = np.repeat(lo - np.cumsum(counts) + counts, counts)
        positions += np.arange(positions.size)
        chain = np.repeat(np.arange(k.size), counts)
        # Within one chain's row the columns are distinct: no repeated index.
        fields[chain, K.indices[positions]] += (
            np.repeat(scale, counts) * K.data[positions]
        )


def coupling_matrix(J):
    """``K``: the symmetric part of ``J`` with a zero diagonal (dense or CSR)."""
    if sparse.issparse(J):
        K = sparse.csr_matrix((J + J.T) / 2.0)
        K.setdiag(0.0)
        K.eliminate_zeros()
        return K
    K = (np.asarray(J) + np.asarray(J).T) / 2.0
    np.fill_diagonal(K, 0.0)
    return K


def ising_value(h, K, offset, t):
    """``offset + h^T t + t^T K t``."""
    return float(offset + h @ t + t @ (K @ t))


class _Chains:
    """The state of the tabu chains that run side by side, one row each.

    Chain ``c``'s entry ``i`` is at ``c * n + i`` of the flattened rows: one
    ``take`` or ``put`` reads or writes the flipped entry of every chain.
    """

    def __init__(self, h, K, offset, starts, rng):
        n = h.size
        self.h, self.K, self.offset = h, K, offset
        self.t = np.array(starts, dtype=np.float64)
        self.field = h + 2.0 * (K @ self.t.T).T
        self.value = np.array([ising_value(h, K, offset, t) for t in self.t])
        self.best_t, self.best_value = self.t.copy(), self.value.copy()
        self.tolerance = 1e-9 * np.maximum(1.0, np.abs(self.value))
        self.tabu_until = np.zeros(self.t.shape, dtype=np.int64)
        self.last_gain = np.zeros(len(self.t), dtype=np.int64)
        self.row_start = n * np.arange(len(self.t))
        # Tenures drawn ahead, one per move and chain, used cyclically.
        self.tenures = n // _TENURE_DIVISOR + rng.integers(
            1, _TENURE_SPREAD + 1, size=(4096, len(self.t))
        )

    def restart(self, chain, t, move):
        """A new phase on ``chain`` from the spins ``t``."""
        h, K, offset = self.h, self.K, self.offset
        self.t[chain] = t
        self.field[chain] = h + 2.0 * (K @ t)
        value = ising_value(h, K, offset, t)
        self.value[chain] = self.best_value[chain] = value
        self.best_t[chain] = t
        self.tolerance[chain] = 1e-9 * max(1.0, abs(value))
        self.tabu_until[chain] = 0
        self.last_gain[chain] = move

    def keep(self, chains):
        """Only the chains in the boolean mask ``chains`` run on."""
        for name in ("t", "field", "value", "best_t", "best_value", "tolerance"):
            setattr(self, name, getattr(self, name)[chains])
        self.tabu_until = self.tabu_until[chains]
        self.last_gain = self.last_gain[chains]
        self.tenures = self.tenures[:, chains]
        self.row_start = self.row_start[: chains.sum()]

    def step(self, rows, move):
        """One move on every chain: the best flip that is not tabu, or by aspiration
        the best flip of all when it beats the chain's best.

        ``t * field`` is minimized instead of the gain ``-2 t field`` maximized.
        """
        slope = self.t * self.field
        flat = self.row_start + slope.argmin(axis=1)
        aspires = self.value - 2.0 * slope.take(flat) > self.best_value + self.tolerance
        allowed = np.where(self.tabu_until > move, np.inf, slope)
        flat = np.where(aspires, flat, self.row_start + allowed.argmin(axis=1))
        self.value -= 2.0 * slope.take(flat)
        flipped = -self.t.take(flat)
        self.t.put(flat, flipped)
        k = flat - self.row_start
        rows.add_rows(self.field, k, 4.0 * flipped)
        self.tabu_until.put(flat, move + self.tenures[move & 4095])
        gained = self.value > self.best_value + self.tolerance
        if gained.any():
            self.best_t[gained] = self.t[gained]
            self.best_value[gained] = self.value[gained]
            self.last_gain[gained] = move


def tabu_search(h, K, offset, start, *, n_restarts, rng, n_stall=None):
    """Multistart one-flip tabu search from ``start``; never worse than it.

    Parameters
    ----------
    h : ndarray of shape (n,)
    K : ndarray or scipy.sparse.csr_matrix of shape (n, n)
        Symmetric couplings with a zero diagonal (:func:`coupling_matrix`).
    offset : float
    start : ndarray of shape (n,)
        Spins in {-1, 1}; not modified.
    n_restarts : int
        Phases after the first, each from a uniformly random point: on dense
        problems, fresh starts explore more than perturbations of the best.
    rng : numpy.random.Generator
    n_stall : int, default=None
        Moves without improvement that end a phase; ``None`` means ``5 n``
        (at least 1,000).

    Returns
    -------
    t : ndarray of shape (n,)
    value : float
        Its exact value (recomputed, not accumulated).
    """
    n = start.size
    if n_stall is None:
        n_stall = max(_MIN_STALL, _STALL_PER_VARIABLE * n)
    rows = _Rows(K)

    def random_point():
        return np.where(rng.random(n) < 0.5, 1.0, -1.0)

    best = np.array(start, dtype=np.float64, copy=True)
    best_value = ising_value(h, K, offset, best)
    n_phases = n_restarts + 1
    starts = [best] + [random_point() for _ in range(n_chains(n, n_phases) - 1)]
    chains = _Chains(h, K, offset, starts, rng)
    n_started, move = len(starts), 0
    while len(chains.t):
        move += 1
        chains.step(rows, move)
        stalled = move - chains.last_gain >= n_stall
        if not stalled.any():
            continue
        for chain in np.flatnonzero(stalled):
            # Exact comparison: the phase accumulated its gains in floating point.
            value = ising_value(h, K, offset, chains.best_t[chain])
            if value > best_value:
                best, best_value = chains.best_t[chain].copy(), value
            if n_started < n_phases:
                chains.restart(chain, random_point(), move)
                n_started += 1
        running = move - chains.last_gain < n_stall
        if not running.all():
            # Phases ended with none left to start: drop their rows.
            chains.keep(running)
    return best, best_value
