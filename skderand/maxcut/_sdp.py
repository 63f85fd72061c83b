"""The MAXCUT semidefinite relaxation at scale, and a certified bound from its dual.

Primal (Goemans-Williamson): maximize ``sum_{ij} w_ij (1 - v_i . v_j) / 2`` over
unit vectors ``v_i``. Burer and Monteiro's low-rank form keeps ``V`` as an
``n x r`` matrix with a small rank ``r``, raised only while the dual bound asks
for it; it is solved by the mixing method, block-coordinate descent over the
colour classes of the graph, so a sweep is a few sparse products ``W V``
(``O(|E| r)``), never a dense ``n x n`` matrix.

Dual: for every ``y``, ``OPT <= SDP <= sum(y) + n max(0, -lambda_min(Diag(y) - L/4))``
with ``L`` the weighted Laplacian (weak duality with the feasible point
``y + max(0, -lambda_min) 1``). ``y_i = v_i . (L V)_i / 4`` (the Lagrange multipliers
of the primal point) makes the bound tight at an exact solution.
"""

import time
from typing import NamedTuple

import numpy as np
from scipy import linalg, sparse
from scipy.sparse.linalg import ArpackNoConvergence, eigsh

from skderand.optimize._certificate import _lanczos_smallest

# Up to this many vertices the dual matrix's smallest eigenvalue comes from a
# dense eigensolver: exact to round-off, and cheaper than starting Lanczos,
# which would also need a Krylov space of a sizeable fraction of n there.
_DENSE_EIGEN_MAX_N = 200
# The rank doubles again only if the last doubling cut the bound's eigenvalue
# term to at most this fraction of what it was: later doublings were seen to
# pay nothing (doc/developers/derandomize_design.rst, "The dual bound").
_RANK_PAYOFF = 0.4
# Size of the escape column of the bound-only continuation, per vertex on
# average: large enough that the first sweeps see the descent direction, small
# enough to keep most of V's value.
_ESCAPE_STEP = 0.1
# ARPACK's relative tolerance on the Ritz value (see _dual_bound).
_EIGSH_TOL = 1e-3
# ARPACK restarts (of a 40-vector Krylov space) before the fallback: converged
# cases take a few dozen; the default (10 n) could spend minutes on a cluster.
_EIGSH_MAX_RESTARTS = 100
# Krylov vectors of the fallback Lanczos: 100 vectors of n floats (80 MB at
# n = 100,000) and a residual small enough to cost the bound little.
_FALLBACK_LANCZOS_ITER = 100
# Up to this many vertices, ARPACK gets _EIGSH_RESTARTS_BEFORE_DENSE restarts
# and then a dense eigensolver takes over (about (4/3) n**3 flops and 8 n**2
# bytes; see doc/developers/derandomize_design.rst, "The dual bound").
_DENSE_FALLBACK_MAX_N = 2_000
_EIGSH_RESTARTS_BEFORE_DENSE = 20


def symmetric_adjacency(n, rows, cols, weights):
    """The symmetric sparse adjacency (CSR) of an edge list given once per edge."""
    return sparse.csr_matrix(
        (
            np.concatenate([weights, weights]),
            (np.concatenate([rows, cols]), np.concatenate([cols, rows])),
        ),
        shape=(n, n),
    )


def _normalize_rows(U, *, norms=None, out=None, negate=False):
    """The rows of ``U`` scaled to unit length (negated if ``negate``), into ``out``.

    ``norms``, if given, are the rows' norms, already computed by the caller.
    One pass for the norms and one division into ``out``: the mixing method
    calls this once per colour class and sweep, and the temporaries of
    ``np.linalg.norm`` and of a separate negation doubled its cost.
    """
    if norms is None:
        norms = np.sqrt(np.einsum("ij,ij->i", U, U))
    # A zero row (a vertex whose neighbours' vectors cancel exactly) gets a
    # fixed unit vector rather than a division by zero.
    zero = norms == 0
    if zero.any():
        U, norms = U.copy(), norms.copy()
        U[zero, 0], norms[zero] = 1.0, 1.0
    if negate:
        norms = -norms
    if out is None:
        out = np.empty_like(U)
    return np.divide(U, norms[:, None], out=out)


class MixingSolver:
    """The Burer-Monteiro SDP by block-coordinate descent over colour classes.

    Minimizes ``f(V) = sum_ij w_ij v_i . v_j`` over unit rows ``v_i`` by the
    mixing method (Wang, Chang and Kolter, 2017): with the other rows fixed,
    the best ``v_i`` is ``-g_i / |g_i|`` with ``g_i = sum_j w_ij v_j``, an exact
    coordinate minimization, so ``f`` never increases. The vertices of one
    colour class of a proper colouring share no edge, so the whole class is
    updated at once from one sparse product ``W[class] @ V``: Python's overhead
    is paid per class, and a sweep over all vertices costs ``O(|E| r)``.

    Parameters
    ----------
    adjacency : scipy.sparse.csr_matrix of shape (n, n)
        Symmetric weights, zero diagonal.
    classes : list of ndarray
        A proper colouring (:func:`~skderand.maxcut._annealing.greedy_colouring`).
    """

    def __init__(self, adjacency, classes):
        self.order = np.concatenate(classes)
        self.bounds = np.cumsum([0] + [c.size for c in classes])
        # Rows and columns renumbered class by class: each class is a
        # contiguous block of rows, updated in place through a view.
        self.W = adjacency[self.order][:, self.order].tocsr()
        self.blocks = [
            (a, b, self.W[a:b])
            for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True)
        ]
        self.weight_scale = max(float(np.abs(self.W.data).sum()), 1e-300)

    def solve(self, V0, *, tol, max_sweeps):
        """Sweep from ``V0`` until ``f`` falls by at most ``tol`` per sweep.

        ``tol`` is relative to ``sum_ij |w_ij|`` (so it means the same on every
        scale of weights). Returns ``(V, n_sweeps)``.
        """
        X = _normalize_rows(V0[self.order])
        n_sweeps = 0
        while n_sweeps < max_sweeps:
            # f is linear in the rows of one class (no edge inside it), with
            # coefficient 2 g_i on v_i: the update v_i -> -g_i / |g_i| lowers
            # f by exactly 2 (|g_i| + v_i . g_i). Summed over the sweep, that
            # is the sweep's decrease, without a product W @ X to evaluate f.
            decrease = 0.0
            for a, b, block in self.blocks:
                G = block @ X
                norms = np.sqrt(np.einsum("ij,ij->i", G, G))
                decrease += 2.0 * (norms.sum() + np.einsum("ij,ij->", X[a:b], G))
                _normalize_rows(G, norms=norms, out=X[a:b], negate=True)
            n_sweeps += 1
            # The first sweep only leaves the start (a random or padded V).
            if n_sweeps > 1 and decrease <= tol * self.weight_scale:
                break
        V = np.empty_like(X)
        V[self.order] = X
        return V, n_sweeps


def expected_gw_cut(rows, cols, weights, V):
    """``sum_{i<j} w_ij arccos(v_i . v_j) / pi``: random-hyperplane rounding's mean."""
    dots = np.clip(np.einsum("ij,ij->i", V[rows], V[cols]), -1.0, 1.0)
    return float(weights @ np.arccos(dots) / np.pi)


def sdp_objective(adjacency, V):
    """``sum_{i<j} w_ij (1 - v_i . v_j) / 2`` for the symmetric ``adjacency``."""
    total = adjacency.sum() / 2.0
    return float(0.5 * (total - 0.5 * np.einsum("ij,ij->", V, adjacency @ V)))


def dual_upper_bound(adjacency, V, rng):
    """A certified upper bound on the maximum cut from the dual of the SDP.

    Returns ``(bound, lambda_min_lower, y)``; see :func:`_dual_bound`.
    """
    bound, lam_low, y, _ = _dual_bound(adjacency, V, rng)
    return bound, lam_low, y


def _dual_bound(adjacency, V, rng, tol=_EIGSH_TOL):
    """The dual bound and the eigenvector of the dual matrix's smallest eigenvalue.

    Returns ``(bound, lambda_min_lower, y, u)``: ``lambda_min_lower`` is a lower
    bound on the smallest eigenvalue of ``S = Diag(y) - L / 4`` and ``u`` its
    (Ritz) vector, from :func:`_smallest_eigenpair`; ``tol`` is ARPACK's
    (relative to the Ritz value): any value keeps the bound valid.
    """
    n = adjacency.shape[0]
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    laplacian = sparse.diags(degree) - adjacency
    LV = laplacian @ V
    y = np.einsum("ij,ij->i", V, LV) / 4.0
    S = (sparse.diags(y) - laplacian / 4.0).tocsr()
    lam_low, vec = _smallest_eigenpair(S, rng, tol)
    bound = float(np.sum(y) + n * max(0.0, -lam_low))
    return bound, lam_low, y, vec


def _dense_smallest_eigenpair(S):
    """The smallest eigenpair of the sparse symmetric ``S`` by a dense solver.

    The eigenvalue is lowered by a margin for the solver's backward error (a
    few ulps of the matrix norm), so that it stays a lower bound.
    """
    n = S.shape[0]
    eigenvalue, eigenvector = linalg.eigh(S.toarray(), subset_by_index=[0, 0])
    margin = 1e-12 * n * max(1.0, float(abs(S).max()))
    return float(eigenvalue[0]) - margin, eigenvector[:, 0]


def _smallest_eigenpair(S, rng, tol):
    """A lower bound on the smallest eigenvalue of ``S`` and its (Ritz) vector.

    Small matrices go to a dense eigensolver. Otherwise one Ritz pair comes
    from ARPACK with a 40-vector Krylov space and a loose tolerance, and the
    residual norm ``|S x - theta x|``, which bounds the distance from the Ritz
    value ``theta`` to an eigenvalue of ``S``, is subtracted from it, so that
    any tolerance keeps the bound valid. ARPACK's tolerance is relative to the
    Ritz value, which is near 0 at an SDP optimum: a tight one would ask for
    far more accuracy than the bound needs.

    Near an exact SDP optimum the lowest eigenvalues cluster at 0 and ARPACK's
    restarts may not separate them. Up to ``_DENSE_FALLBACK_MAX_N`` vertices
    the dense solver then takes over after a few restarts (it costs about as
    much as twenty of them); above, Lanczos without restarts (full
    reorthogonalization) returns its best Ritz pair, whose residual pays for
    the inaccuracy.
    """
    n = S.shape[0]
    if n <= _DENSE_EIGEN_MAX_N:
        return _dense_smallest_eigenpair(S)
    dense_fallback = n <= _DENSE_FALLBACK_MAX_N
    try:
        theta, vec = eigsh(
            S,
            k=1,
            which="SA",
            v0=rng.standard_normal(n),
            ncv=min(n, 40),
            tol=tol,
            maxiter=_EIGSH_RESTARTS_BEFORE_DENSE
            if dense_fallback
            else _EIGSH_MAX_RESTARTS,
        )
        theta, vec = float(theta[0]), vec[:, 0]
    except ArpackNoConvergence:
        if dense_fallback:
            return _dense_smallest_eigenpair(S)
        theta, vec, _, _ = _lanczos_smallest(
            S.dot, n, rng, max_iter=_FALLBACK_LANCZOS_ITER, rtol=1e-8
        )
    residual = np.linalg.norm(S @ vec - theta * vec)
    return float(theta - residual), vec


class SdpSolution(NamedTuple):
    """What :func:`solve_sdp_adaptive` returns.

    ``V`` the vectors of the last rank tried and ``bound`` their dual bound;
    ``ranks``, ``corrections`` (the bound's eigenvalue terms) and ``bounds``
    per rank tried; ``direction`` the eigenvector of the smallest eigenvalue
    of ``V``'s dual matrix (where the objective falls at second order).
    """

    V: np.ndarray
    bound: float
    ranks: list
    corrections: list
    bounds: list
    direction: np.ndarray


def solve_sdp_adaptive(
    adjacency,
    rng,
    *,
    classes,
    max_rank,
    initial_rank=8,
    gap_rtol=2e-4,
    tol=1e-7,
    max_sweeps=300,
    timings=None,
    eigen_tol=_EIGSH_TOL,
    verbose=0,
):
    """The Burer-Monteiro SDP with the rank raised only while the bound asks for it.

    Solves at ``initial_rank`` with :class:`MixingSolver`, then computes the dual
    bound; its eigenvalue term ``n max(0, -lambda_min)`` measures how far ``V``
    is from a certified optimum (it vanishes at a second-order critical point of
    a rank-deficient solution, Boumal et al.). While that term exceeds
    ``gap_rtol`` times the bound, and the previous doubling (if any) cut it to
    at most 40% (``_RANK_PAYOFF``), the rank doubles (at most ``max_rank``) and
    the solver restarts from ``V`` padded with small random columns, which leave
    the saddle.
    MAXCUT SDPs usually need a rank far below ``sqrt(2 n)``.

    Each solve stops when a sweep lowers the objective by at most ``tol`` times
    ``sum |w_ij|``, or after ``max_sweeps`` sweeps: a count, not a time, so the
    result does not depend on the machine. The bound is valid at any accuracy;
    only its tightness depends on them (and on ``eigen_tol``, the dual bound's
    eigensolver tolerance, see :func:`_dual_bound`).

    Returns an :class:`SdpSolution`; ``timings`` (a dict), if given, accumulates
    the seconds spent in ``"sdp"`` and ``"upper_bound"``; ``verbose`` prints a
    line per rank as it is done.
    """
    n = adjacency.shape[0]
    timings = {} if timings is None else timings
    for key in ("sdp", "upper_bound"):
        timings.setdefault(key, 0.0)
    start = time.perf_counter()
    solver = MixingSolver(adjacency, classes)
    rank = min(initial_rank, max_rank)
    V0 = rng.standard_normal((n, rank))
    ranks, corrections, bounds = [], [], []
    previous_correction = np.inf
    while True:
        V, n_sweeps = solver.solve(V0, tol=tol, max_sweeps=max_sweeps)
        timings["sdp"] += time.perf_counter() - start
        start = time.perf_counter()
        bound, lam_low, _, direction = _dual_bound(adjacency, V, rng, eigen_tol)
        timings["upper_bound"] += time.perf_counter() - start
        ranks.append(rank)
        bounds.append(bound)
        correction = n * max(0.0, -lam_low)
        corrections.append(correction)
        if verbose:
            print(
                f"[DeterministicMaxCut] SDP rank {rank}: {n_sweeps} sweeps, value "
                f"{sdp_objective(adjacency, V):.6g}, bound {bound:.6g} (eigenvalue "
                f"term {correction:.3g}; scaled weights)",
                flush=True,
            )
        if (
            correction <= gap_rtol * abs(bound)
            or rank >= max_rank
            or correction > _RANK_PAYOFF * previous_correction
        ):
            # A doubling that did not cut the eigenvalue term to 40% shows that
            # the term is the solver's inaccuracy at this budget of sweeps, not a
            # missing dimension: more columns would only make sweeps dearer.
            return SdpSolution(V, bound, ranks, corrections, bounds, direction)
        previous_correction = correction
        start = time.perf_counter()
        new_rank = min(2 * rank, max_rank)
        # Small new columns: the start keeps V's value to first order.
        pad = 1e-2 * rng.standard_normal((n, new_rank - rank))
        V0, rank = np.hstack([V, pad]), new_rank


def tighten_bound(
    adjacency,
    solution,
    rng,
    *,
    classes,
    max_rank,
    n_rounds=6,
    max_sweeps=100,
    tol=1e-7,
    gap_rtol=2e-4,
    timings=None,
    verbose=0,
):
    """The smallest certified bound over the ranks tried and a bound-only continuation.

    The SDP vectors the rounding uses (``solution.V``) are left as they are:
    the continuation works on a copy. Each round appends a column along the
    eigenvector of the dual matrix's smallest eigenvalue (scaled to
    ``_ESCAPE_STEP`` per vertex on average; the direction in which the
    Burer-Monteiro objective falls at second order, Boumal, Voroninski and
    Bandeira), so that the sweeps leave the saddle at once, then runs at most
    ``max_sweeps`` mixing sweeps and recomputes the dual bound. At most
    ``n_rounds`` rounds; the rank never exceeds ``max_rank`` (at that rank the
    escape goes into the column of least weight), and the rounds stop once the
    eigenvalue term is at most ``gap_rtol`` of the bound, or once a round
    lowered the bound by at most ``gap_rtol`` of it.

    Every bound computed, by :func:`_dual_bound`, is a valid upper bound on the
    maximum cut whatever the vectors it starts from (weak duality holds for
    every ``y``; only its tightness depends on the vectors), so their minimum
    is one too. Returns that minimum; ``timings["upper_bound"]`` accumulates
    the seconds spent.
    """
    timings = {} if timings is None else timings
    timings.setdefault("upper_bound", 0.0)
    start = time.perf_counter()
    n = adjacency.shape[0]
    best = min(solution.bounds)
    V, direction = solution.V, solution.direction
    solver = None
    # Already certified to within gap_rtol: no continuation is needed.
    certified = solution.corrections[-1] <= gap_rtol * abs(solution.bound)
    rounds = 0 if certified else n_rounds
    for round_index in range(rounds):
        escape = _ESCAPE_STEP * np.sqrt(n) * direction
        if V.shape[1] < max_rank:
            V0 = np.column_stack([V, escape])
        else:
            # At the largest rank the escape direction goes into the column
            # of least weight instead of a new one.
            V0 = V.copy()
            V0[:, np.argmin(np.linalg.norm(V, axis=0))] += escape
        if solver is None:
            solver = MixingSolver(adjacency, classes)
        V, n_sweeps = solver.solve(V0, tol=tol, max_sweeps=max_sweeps)
        bound, lam_low, _, direction = _dual_bound(adjacency, V, rng)
        gain, best = best - bound, min(best, bound)
        correction = n * max(0.0, -lam_low)
        if verbose:
            print(
                f"[DeterministicMaxCut] bound continuation {round_index + 1}: rank "
                f"{V.shape[1]}, {n_sweeps} sweeps, bound {bound:.6g} (eigenvalue "
                f"term {correction:.3g}; scaled weights)",
                flush=True,
            )
        if correction <= gap_rtol * abs(bound) or gain <= gap_rtol * abs(best):
            # Certified to within gap_rtol, or the last round paid too little
            # for another (a round costs max_sweeps sweeps and an eigensolve).
            break
    timings["upper_bound"] += time.perf_counter() - start
    return best
