"""The MAXCUT semidefinite relaxation at scale, and a certified bound from its dual.

Primal (Goemans-Williamson): maximize ``sum_{ij} w_ij (1 - v_i . v_j) / 2`` over
unit vectors ``v_i``. Burer and Monteiro's low-rank form keeps ``V`` as an
``n x r`` matrix with ``r ~ sqrt(2 n)``; we write ``v_i = u_i / |u_i|`` and run
L-BFGS on the unconstrained ``U``, so each evaluation is one sparse product
``W V`` (``O(|E| r)``), never a dense ``n x n`` matrix.

Dual: for every ``y``, ``OPT <= SDP <= sum(y) + n max(0, -lambda_min(Diag(y) - L/4))``
with ``L`` the weighted Laplacian (weak duality with the feasible point
``y + max(0, -lambda_min) 1``). ``y_i = v_i . (L V)_i / 4`` (the Lagrange multipliers
of the primal point) makes the bound tight at an exact solution.
"""

import time

import numpy as np
from scipy import sparse
from scipy.optimize import minimize
from scipy.sparse.linalg import eigsh

# Up to this many vertices the dual matrix's smallest eigenvalue comes from a
# dense eigensolver: exact to round-off, and at n = 200 (a 200 x 200 eigvalsh,
# about 5 ms) cheaper than starting Lanczos, which would also need a Krylov
# space of a sizeable fraction of n to be reliable there.
_DENSE_EIGEN_MAX_N = 200


def symmetric_adjacency(n, rows, cols, weights):
    """The symmetric sparse adjacency (CSR) of an edge list given once per edge."""
    return sparse.csr_matrix(
        (
            np.concatenate([weights, weights]),
            (np.concatenate([rows, cols]), np.concatenate([cols, rows])),
        ),
        shape=(n, n),
    )


def _normalize(U):
    norms = np.linalg.norm(U, axis=1)
    return U / norms[:, None], norms


def solve_sdp(adjacency, rank, rng, *, tol=1e-5, max_iter=3000, U0=None):
    """Burer-Monteiro for ``min sum_ij w_ij v_i . v_j`` over unit rows ``v_i``.

    Starts from ``U0`` (``n x rank``) if given, else from a Gaussian matrix.
    Returns ``(V, n_iter)``.
    """
    n = adjacency.shape[0]
    scale = max(abs(adjacency).sum() / 2.0, 1e-300)

    def fun(u):
        U = u.reshape(n, rank)
        V, norms = _normalize(U)
        WV = adjacency @ V
        value = 0.5 * np.einsum("ij,ij->", V, WV)
        # Riemannian gradient of the sphere, divided by |u_i| (chain rule).
        grad = (WV - np.einsum("ij,ij->i", V, WV)[:, None] * V) / norms[:, None]
        return value / scale, grad.ravel() / scale

    if U0 is None:
        U0 = rng.standard_normal((n, rank))
    res = minimize(
        fun,
        U0.ravel(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol / n, "ftol": 1e-15},
    )
    V, _ = _normalize(res.x.reshape(n, rank))
    return V, int(res.nit)


def sdp_objective(adjacency, V):
    """``sum_{i<j} w_ij (1 - v_i . v_j) / 2`` for the symmetric ``adjacency``."""
    total = adjacency.sum() / 2.0
    return float(0.5 * (total - 0.5 * np.einsum("ij,ij->", V, adjacency @ V)))


def dual_upper_bound(adjacency, V, rng):
    """A certified upper bound on the maximum cut from the dual of the SDP.

    Returns ``(bound, lambda_min_lower, y)``. The smallest eigenvalue of the sparse
    ``S = Diag(y) - L / 4`` comes from Lanczos (``eigsh``); the residual norm
    ``|S x - theta x|`` of the returned Ritz pair bounds the distance from the Ritz
    value ``theta`` to an eigenvalue of ``S``, and it is subtracted so that the
    eigensolver's own tolerance cannot make the bound too small.
    """
    n = adjacency.shape[0]
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    laplacian = sparse.diags(degree) - adjacency
    LV = laplacian @ V
    y = np.einsum("ij,ij->i", V, LV) / 4.0
    S = (sparse.diags(y) - laplacian / 4.0).tocsr()
    if n <= _DENSE_EIGEN_MAX_N:
        # Small graphs: a dense symmetric eigensolver, with a margin for its
        # backward error (a few ulps of the matrix norm).
        lam_low = float(np.linalg.eigvalsh(S.toarray())[0])
        lam_low -= 1e-12 * n * max(1.0, float(abs(S).max()))
    else:
        # One Ritz pair, a 40-vector Krylov space and a moderate tolerance: the
        # residual correction below makes the tolerance safe, and tighter settings
        # cost seconds on the cluster of eigenvalues near 0 that an SDP optimum has.
        theta, vec = eigsh(
            S, k=1, which="SA", v0=rng.standard_normal(n), ncv=min(n, 40), tol=1e-6
        )
        residual = np.linalg.norm(S @ vec[:, 0] - theta[0] * vec[:, 0])
        lam_low = float(theta[0] - residual)
    bound = float(np.sum(y) + n * max(0.0, -lam_low))
    return bound, lam_low, y


def solve_sdp_adaptive(
    adjacency,
    rng,
    *,
    max_rank,
    initial_rank=8,
    gap_rtol=2e-4,
    timings=None,
    verbose=0,
):
    """Burer-Monteiro with the rank raised only while the dual bound asks for it.

    Solves at ``initial_rank``, then computes the dual bound; its eigenvalue
    term ``n max(0, -lambda_min)`` measures how far ``V`` is from a certified
    optimum (it vanishes at a second-order critical point of a rank-deficient
    solution, Boumal et al.). While that term exceeds ``gap_rtol`` times the
    bound, the rank doubles (at most ``max_rank``) and the solver restarts from
    ``V`` padded with small random columns, which leave the saddle. MAXCUT SDPs
    usually need a rank far below ``sqrt(2 n)``.

    Returns ``(V, bound, ranks)``; ``timings`` (a dict), if given, accumulates
    the seconds spent in ``"sdp"`` and ``"upper_bound"``; ``verbose`` prints a
    line per rank as it is done.
    """
    n = adjacency.shape[0]
    timings = {} if timings is None else timings
    for key in ("sdp", "upper_bound"):
        timings.setdefault(key, 0.0)
    rank = min(initial_rank, max_rank)
    V, ranks = None, []
    while True:
        start = time.perf_counter()
        if V is None:
            U0 = None
        else:
            # Small new columns: the start keeps V's value to first order.
            pad = 1e-2 * rng.standard_normal((n, rank - V.shape[1]))
            U0 = np.hstack([V, pad])
        V, _ = solve_sdp(adjacency, rank, rng, U0=U0)
        timings["sdp"] += time.perf_counter() - start
        start = time.perf_counter()
        bound, lam_low, _ = dual_upper_bound(adjacency, V, rng)
        timings["upper_bound"] += time.perf_counter() - start
        ranks.append(rank)
        correction = n * max(0.0, -lam_low)
        if verbose:
            print(
                f"[DeterministicMaxCut] SDP rank {rank}: value "
                f"{sdp_objective(adjacency, V):.6g}, bound {bound:.6g} (eigenvalue "
                f"term {correction:.3g}; scaled weights)",
                flush=True,
            )
        if correction <= gap_rtol * abs(bound) or rank >= max_rank:
            return V, bound, ranks
        rank = min(2 * rank, max_rank)
