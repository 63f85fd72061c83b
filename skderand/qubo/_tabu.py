"""One-flip tabu search for Ising problems, at array speed.

Maximize ``f(t) = offset + h^T t + t^T K t`` over ``t in {-1, 1}^n``, ``K``
symmetric with a zero diagonal. The field ``phi = h + 2 K t`` gives every
flip's exact gain at once, ``gain_i = -2 t_i phi_i``, and a flip of ``t_k``
changes the field by one row of ``K``: ``phi += 4 t_k K[k]`` (``t_k`` after
the flip). A move is a handful of vector operations on ``n`` entries (Glover's
one-flip tabu search; Palubeckis's multistart variant restarts it).
"""

import numpy as np
from scipy import sparse
from scipy.linalg import blas

# Tabu tenure: n / _TENURE_DIVISOR plus a uniform draw in [1, _TENURE_SPREAD],
# long enough that a flip cannot be undone at once, short enough that few
# variables are frozen; random so that no fixed period repeats.
_TENURE_DIVISOR = 100
_TENURE_SPREAD = 10
# A phase ends after this many moves per variable without improving its own
# best (at least _MIN_STALL moves).
_STALL_PER_VARIABLE = 5
_MIN_STALL = 1_000


class _Rows:
    """Adds a multiple of ``K[k]`` to the field in place (dense or CSR ``K``)."""

    def __init__(self, K):
        self.K = K
        if sparse.issparse(K):
            self.add_row = self._add_sparse_row
        else:
            # BLAS axpy: y += a x in one call, without a temporary row.
            self._axpy = blas.get_blas_funcs("axpy", (K,))

    def add_row(self, phi, k, scale):
        self._axpy(self.K[k], phi, a=scale)

    def _add_sparse_row(self, phi, k, scale):
        lo, hi = self.K.indptr[k], self.K.indptr[k + 1]
        phi[self.K.indices[lo:hi]] += scale * self.K.data[lo:hi]


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


def _phase(rows, h, K, t, value, n_stall, rng):
    """One tabu phase from ``t`` (changed in place); returns its best ``(t, value)``.

    ``t * phi`` is minimized instead of the gain ``-2 t phi`` maximized; a
    tabu variable carries ``+inf`` in ``penalty`` until its tenure ends.
    """
    n = t.size
    phi = h + 2.0 * (K @ t)
    best_t, best_value = t.copy(), value
    slope, scores = np.empty(n), np.empty(n)
    penalty = np.zeros(n)
    tabu_until = np.zeros(n, dtype=np.int64)
    expiring = {}
    tenures = n // _TENURE_DIVISOR + rng.integers(1, _TENURE_SPREAD + 1, size=4096)
    tolerance = 1e-9 * max(1.0, abs(value))
    move, last_gain_move = 0, 0
    while move - last_gain_move < n_stall:
        np.multiply(t, phi, out=slope)
        k = int(slope.argmin())
        # Aspiration: the best flip is taken, tabu or not, when it beats the
        # phase's best; otherwise the best flip that is not tabu.
        if value - 2.0 * slope[k] <= best_value + tolerance:
            np.add(slope, penalty, out=scores)
            k = int(scores.argmin())
        value -= 2.0 * slope[k]
        t[k] = -t[k]
        rows.add_row(phi, k, 4.0 * t[k])
        end = move + int(tenures[move & 4095])
        tabu_until[k] = end
        penalty[k] = np.inf
        expiring.setdefault(end, []).append(k)
        move += 1
        for j in expiring.pop(move, ()):
            if tabu_until[j] == move:
                penalty[j] = 0.0
        if value > best_value + tolerance:
            best_t[:], best_value = t, value
            last_gain_move = move
    return best_t, best_value


def ising_value(h, K, offset, t):
    """``offset + h^T t + t^T K t``."""
    return float(offset + h @ t + t @ (K @ t))


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
    best = np.array(start, dtype=np.float64, copy=True)
    best_value = ising_value(h, K, offset, best)
    for phase in range(n_restarts + 1):
        t = np.where(rng.random(n) < 0.5, 1.0, -1.0) if phase else best.copy()
        t, _ = _phase(rows, h, K, t, ising_value(h, K, offset, t), n_stall, rng)
        # Exact comparison: the phase accumulated its gains in floating point.
        value = ising_value(h, K, offset, t)
        if value > best_value:
            best, best_value = t, value
    return best, best_value
