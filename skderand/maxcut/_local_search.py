"""Cut values and deterministic local search on a sparse symmetric graph.

Flipping vertex ``i`` changes the cut ``sum_{i<j} w_ij (1 - s_i s_j) / 2`` by
``s_i (W s)_i``; both searches keep the field ``W s`` and update it along the
flipped vertex's row only, so a move costs ``O(deg + n)``.
"""

import numpy as np

# Tabu tenures are drawn uniformly from [n // _TENURE_MIN_DIVISOR,
# n // _TENURE_MAX_DIVISOR] moves, 1% to 5% of the vertices: long enough that
# a flipped vertex cannot flip straight back and the search cannot cycle
# between a few cuts, short enough that at most a few percent of the vertices
# are frozen at any time; random within the range so that no fixed period
# repeats.
_TENURE_MIN_DIVISOR = 100
_TENURE_MAX_DIVISOR = 20


def cut_value(adjacency, spins):
    """``sum_{i<j} w_ij [s_i != s_j]`` for ``spins`` in {-1, +1}."""
    spins = np.asarray(spins, dtype=np.float64)
    total = adjacency.sum() / 2.0
    return float(0.5 * (total - 0.5 * spins @ (adjacency @ spins)))


def _gain_eps(adjacency):
    # A gain must beat round-off in the field to count, or two vertices could
    # trade a zero-gain flip back and forth forever.
    return 1e-9 * max(1.0, float(np.abs(adjacency.data).max(initial=0.0)))


def one_flip(adjacency, spins):
    """Flip the vertex with the largest positive gain until none is left.

    Ties go to the smallest index, so the result is deterministic. Returns
    ``(spins, n_flips)``; the input is not modified.
    """
    spins = np.array(spins, dtype=np.float64, copy=True)
    field = adjacency @ spins
    indptr, indices, data = adjacency.indptr, adjacency.indices, adjacency.data
    n_flips = 0
    eps = _gain_eps(adjacency)
    while True:
        gains = spins * field
        i = int(np.argmax(gains))
        if gains[i] <= eps:
            break
        spins[i] = -spins[i]
        lo, hi = indptr[i], indptr[i + 1]
        field[indices[lo:hi]] += 2.0 * spins[i] * data[lo:hi]
        n_flips += 1
    return spins, n_flips


def tabu_search(adjacency, spins, n_moves, rng):
    """Tabu search from ``spins``: best non-tabu flip each move, even if it loses.

    A flipped vertex may not flip back for a tenure drawn from ``rng`` (short
    random tenures stop the search from cycling); a tabu flip is still allowed
    when it reaches a new best cut (aspiration). The best cut seen is returned,
    after a final 1-flip pass, so the result is at least a 1-flip local optimum
    no worse than the start. Returns ``(spins, n_moves_done)``.
    """
    spins, _ = one_flip(adjacency, spins)
    n = spins.size
    if n < 2 or n_moves <= 0:
        return spins, 0
    field = adjacency @ spins
    indptr, indices, data = adjacency.indptr, adjacency.indices, adjacency.data
    eps = _gain_eps(adjacency)
    best = spins.copy()
    gain_total = 0.0  # cut(spins) - cut(start), tracked exactly by the gains
    best_total = 0.0
    tabu_until = np.zeros(n, dtype=np.int64)
    low = max(1, n // _TENURE_MIN_DIVISOR)
    high = max(low + 1, n // _TENURE_MAX_DIVISOR)
    tenures = rng.integers(low, high + 1, size=n_moves)
    for move in range(n_moves):
        gains = spins * field
        allowed = np.where(tabu_until <= move, gains, -np.inf)
        i = int(np.argmax(allowed))
        j = int(np.argmax(gains))
        # Aspiration: a tabu move that beats the best cut so far is taken.
        if gain_total + gains[j] > best_total + eps and gains[j] > allowed[i]:
            i = j
        gain_total += gains[i]
        spins[i] = -spins[i]
        lo, hi = indptr[i], indptr[i + 1]
        field[indices[lo:hi]] += 2.0 * spins[i] * data[lo:hi]
        tabu_until[i] = move + 1 + tenures[move]
        if gain_total > best_total + eps:
            best_total = gain_total
            best[:] = spins
    best, _ = one_flip(adjacency, best)
    return best, n_moves
