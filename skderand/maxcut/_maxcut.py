"""DeterministicMaxCut: derandomized Goemans-Williamson with a certified bound."""

import time
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.metrics import pairwise_distances
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.neighbors import kneighbors_graph

from skderand._memory import (
    check_fits_in_memory,
    dense_affinity_bytes,
    format_bytes,
    maxcut_fit_bytes,
)
from skderand._random import seeded_generator
from skderand._sklearn_compat import Interval, StrOptions, _fit_context, validate_data
from skderand._threads import one_blas_thread
from skderand.derandomize import CutExpectation, derandomize
from skderand.derandomize._cut import symmetric_zero_diagonal
from skderand.maxcut._annealing import anneal, greedy_colouring, temper
from skderand.maxcut._graph_io import _is_networkx_graph, graph_to_adjacency
from skderand.maxcut._local_search import cut_value, one_flip, tabu_search
from skderand.maxcut._sdp import (
    expected_gw_cut,
    sdp_objective,
    solve_sdp_adaptive,
    symmetric_adjacency,
    tighten_bound,
)
from skderand.optimize._certificate import (
    record_certificate,
    record_trivial_certificate,
)

__all__ = ["DeterministicMaxCut"]

# Feature affinities that build a dense n x n matrix.
_DENSE_AFFINITIES = ("euclidean", "rbf")
# Annealing temperatures (start, end) in units of the mean absolute edge weight:
# the start accepts a loss of 2 with probability exp(-2/3), hot enough to leave
# the rounded cut's basin; the end accepts it with probability exp(-20), a
# descent. See doc/developers/maxcut_design.rst, "Annealing temperatures".
_ANNEALING_TEMPERATURES = (3.0, 0.1)
# Tempering's ladder (hottest, coldest) in units of sigma = sqrt(mean_i sum_j
# w_ij**2), the typical gain of a vertex in a random cut, whatever the degree and
# the weights' signs. The hottest rung keeps replicas moving between basins, the
# coldest is a near-descent. See doc/developers/maxcut_design.rst, "Tempering
# ladder".
_TEMPERING_LADDER = (0.5, 0.08)
# n_replicas="auto": _AUTO_REPLICAS_SMALL replicas up to this many vertices, one
# beyond. On small graphs Python's overhead per colour class dominates and one
# sparse product serves every replica; on large ones the product's cost grows
# with the replicas and one longer chain does better. See
# doc/developers/maxcut_design.rst, "Replicas".
_AUTO_REPLICAS_MAX_N = 5_000
_AUTO_REPLICAS_SMALL = 16
# local_search="auto" up to _AUTO_REPLICAS_MAX_N vertices: graphs of at least
# _AUTO_ANNEALING_MIN_N vertices and mean degree _AUTO_ANNEALING_MIN_DEGREE or
# more are annealed (16 replicas cooled together do better there), smaller or
# sparser ones tempered. See doc/developers/maxcut_design.rst, "Tempering or
# annealing".
_AUTO_ANNEALING_MIN_N = 1_500
_AUTO_ANNEALING_MIN_DEGREE = 16
# n_sweeps="auto" with several replicas: _AUTO_SWEEPS_PER_VERTEX per vertex
# (small graphs settle sooner) in [_AUTO_SWEEPS_MIN, _AUTO_SWEEPS_MAX], and at
# most max(_AUTO_SWEEPS_BASE, _AUTO_SWEEPS_WORK_SMALL / (n + nnz / 6)): a budget
# of work for the whole fit, whose stages cost about as much per vertex as per 6
# entries. See doc/developers/maxcut_design.rst, "Sweeps with several replicas".
_AUTO_SWEEPS_MIN = 100
# Sweeps per vertex on small graphs: enough for the sparse Gset graphs' chains
# to settle, within the fits' time. See doc/developers/maxcut_design.rst,
# "Sweeps per vertex".
_AUTO_SWEEPS_PER_VERTEX = 6
_AUTO_SWEEPS_MAX = 8_000
_AUTO_SWEEPS_BASE = 2_000
_AUTO_SWEEPS_WORK_SMALL = 16_000_000
_ENTRIES_PER_VERTEX_COST = 6
# ... with one replica: _AUTO_SWEEPS_ENTRY_WORK / nnz sweeps, between
# _AUTO_SWEEPS_LONG_MIN and _AUTO_SWEEPS_LONG_MAX. A single chain's sweep costs
# about the same per stored adjacency entry on every graph kind, so this is a
# budget of work of a few seconds. See doc/developers/maxcut_design.rst,
# "Sweeps of one chain".
_AUTO_SWEEPS_ENTRY_WORK = 800_000_000
_AUTO_SWEEPS_LONG_MIN = 10_000
_AUTO_SWEEPS_LONG_MAX = 20_000


def _improvement_method(n_vertices, n_entries, local_search):
    """``local_search`` with "auto" resolved.

    Tempering needs several replicas (graphs up to _AUTO_REPLICAS_MAX_N
    vertices) and pays on sparse or small ones; larger dense graphs are
    annealed.
    ``n_entries`` is the number of stored entries of the adjacency matrix
    (twice the edges).
    """
    if local_search == "auto":
        if n_vertices > _AUTO_REPLICAS_MAX_N:
            return "annealing"
        if (
            n_vertices >= _AUTO_ANNEALING_MIN_N
            and n_entries >= _AUTO_ANNEALING_MIN_DEGREE * n_vertices
        ):
            return "annealing"
        return "tempering"
    return local_search


def _annealing_budget(n_vertices, n_entries, n_sweeps, n_replicas):
    """``(n_sweeps, n_replicas)`` with the "auto" values resolved.

    ``n_entries`` is the number of stored entries of the adjacency matrix
    (twice the edges).
    """
    if n_replicas == "auto":
        n_replicas = _AUTO_REPLICAS_SMALL if n_vertices <= _AUTO_REPLICAS_MAX_N else 1
    if n_sweeps == "auto":
        if n_vertices <= _AUTO_REPLICAS_MAX_N:
            sweep_cost = n_vertices + n_entries // _ENTRIES_PER_VERTEX_COST
            by_work = max(_AUTO_SWEEPS_BASE, _AUTO_SWEEPS_WORK_SMALL // sweep_cost)
            n_sweeps = max(
                _AUTO_SWEEPS_MIN,
                min(_AUTO_SWEEPS_MAX, _AUTO_SWEEPS_PER_VERTEX * n_vertices, by_work),
            )
        else:
            n_sweeps = min(
                _AUTO_SWEEPS_LONG_MAX,
                max(
                    _AUTO_SWEEPS_LONG_MIN, _AUTO_SWEEPS_ENTRY_WORK // max(1, n_entries)
                ),
            )
    return n_sweeps, n_replicas


# The bound-only continuation (tighten_bound, up to 6 rounds of 100 sweeps and
# an eigensolve each) runs on graphs up to this many vertices: there it lowers
# the bound for a fraction of a second; beyond, a round costs seconds for little.
# See doc/developers/maxcut_design.rst, "Bound-only continuation".
_BOUND_CONTINUATION_MAX_N = 5_000
_BOUND_CONTINUATION_ROUNDS = 6

# Up to _BOUND_CONTINUATION_MAX_N vertices the Burer-Monteiro rank starts at 8
# and doubles while the bound asks for it (solve_sdp_adaptive's defaults).
# Beyond, the SDP is solved at this one rank (at most _sdp_rank's): each rank
# tried costs a slow eigensolve, and a fresh start at rank 16 is as good as the
# doublings. See doc/developers/maxcut_design.rst, "One rank".
_LARGE_SDP_RANK = 16
# ... and its one eigensolve is loosened from ARPACK's tolerance 1e-3 (relative
# to the Ritz value) to 1e-2: with no rank to choose, only its small residual
# term costs the bound, for fewer products. See doc/developers/maxcut_design.rst,
# "A looser eigensolve".
_LARGE_EIGSH_TOL = 1e-2
# L-BFGS correction pairs of the rounding beyond _BOUND_CONTINUATION_MAX_N
# vertices (20 below, derandomize's default): an L-BFGS-B iteration's own work
# grows with the pairs times the variables. See doc/developers/maxcut_design.rst,
# "Fewer L-BFGS pairs in the rounding".
_LARGE_LBFGS_MEMORY = 5
_LBFGS_MEMORY = 20  # derandomize's default
# Largest Burer-Monteiro rank: bounds memory on large graphs; the dual bound
# stays valid at any rank.
_MAX_SDP_RANK = 100
# ... and at most this many entries in V (4 MiB): on large sparse graphs the
# bound's slack comes from the solver's accuracy, not the rank (see
# doc/developers/maxcut_design.rst, "The size of V").
_MAX_SDP_ENTRIES = 2**19


def _sdp_rank(n_active):
    """Largest Burer-Monteiro rank tried.

    ``r ~ sqrt(2 n)`` rules out spurious local optima (Boumal, Voroninski and
    Bandeira); capped at ``_MAX_SDP_RANK`` and at ``_MAX_SDP_ENTRIES / n``
    (at least 8, the first rank tried).
    """
    return min(
        n_active,
        int(np.ceil(np.sqrt(2 * n_active))) + 1,
        _MAX_SDP_RANK,
        max(8, _MAX_SDP_ENTRIES // n_active),
    )


def _fit_memory_bytes(n_vertices, n_entries):
    """Bytes a fit needs on a graph with ``n_entries`` stored adjacency entries."""
    return maxcut_fit_bytes(n_vertices, n_entries, _sdp_rank(n_vertices))


def _check_fit_memory(n_vertices, n_entries):
    """Refuse, before allocating, a graph whose fit cannot fit in memory."""
    check_fits_in_memory(
        _fit_memory_bytes(n_vertices, n_entries),
        f"DeterministicMaxCut on a graph with {n_vertices:,} vertices and "
        f"{n_entries // 2:,} edges",
        "Every vertex costs memory in the fitted attributes, even without edges: "
        "drop the isolated vertices.",
    )


def _check_precomputed(A):
    """Validate a precomputed adjacency; return it as CSR with a zero diagonal."""
    return symmetric_zero_diagonal(A, "With affinity='precomputed', X", "X")


class DeterministicMaxCut(ClusterMixin, BaseEstimator):
    """Maximum cut by derandomized Goemans-Williamson rounding, with a certified bound.

    Splits the vertices of a weighted graph into two sides so that the total
    weight of the edges between the sides (the cut) is large, deterministically,
    and reports a rigorous upper bound on the best possible cut.

    The pipeline: (1) the Goemans-Williamson semidefinite relaxation, solved by a
    Burer-Monteiro low-rank method on the sparse edge list; (2) the derandomized
    rounding of Tsikouras et al.: vertex ``i`` is given ``y_i = v_i . z + mu_i``
    with the SDP vectors ``v_i``, Gaussian ``z`` and new offsets ``mu_i``, and the
    smoothed expected cut of ``sign(y)`` minus ``alpha * ||V||_F**2`` is maximized
    over ``(V, mu)``, ``alpha`` being raised in stages, and the last stage's
    point is made a certified second-order stationary point by
    :func:`skderand.optimize.minimize_sosp`; there ``V = 0``, so the cut is
    ``sign(mu)``, with no random rounding; (3) an improvement phase, by
    default simulated annealing started from that cut; (4) an upper bound on the
    maximum cut from the dual of the SDP.

    Parameters
    ----------
    affinity : {"euclidean", "rbf", "nearest_neighbors", "precomputed"} or \
            callable, default="euclidean"
        How the weighted graph is built; the weights are what the cut maximizes.

        - ``"precomputed"``: ``X`` is the symmetric ``(n, n)`` weighted adjacency
          matrix (dense or any scipy sparse format, signed weights allowed, the
          diagonal ignored), or a networkx graph.
        - ``"euclidean"``: weights are the distances between the rows of ``X``;
          the cut then separates far-apart points (a 2-clustering).
        - ``"rbf"``: weights ``exp(-gamma ||x_i - x_j||**2)``, a similarity, so the
          cut sends similar points to opposite sides (anticlustering: two halves
          that each resemble the whole).
        - ``"nearest_neighbors"``: weight 1 between each point and its
          ``n_neighbors`` nearest neighbours (symmetrized), an anticlustering too.
        - callable: ``affinity(X)`` returns the adjacency matrix.

        ``"euclidean"`` and ``"rbf"`` build a dense matrix: ``O(n**2)`` memory
        (a 60,000-point fit would need over 100 GiB). A fit that would need more
        memory than is available is refused up front with a ``ValueError`` naming
        the memory needed; ``"nearest_neighbors"`` or a sparse precomputed graph
        scale linearly.
    gamma : float, default=1.0
        Kernel coefficient of ``affinity="rbf"``.
    n_neighbors : int, default=10
        Neighbours per point for ``affinity="nearest_neighbors"``.
    tau : float, default=0.1
        Standard deviation of the Gaussian noise that smooths the sign in the
        rounding objective (see Notes).
    alpha : float, default=0.1
        Penalty weight ``alpha`` on ``||V||_F**2`` in the first stage of the
        rounding, relative to the mean absolute edge weight.
    alpha_growth : float, default=3.0
        Factor by which ``alpha`` grows from one stage to the next.
    max_stages : int, default=20
        Largest number of ``alpha`` stages.
    max_iter : int, default=30
        Largest number of L-BFGS iterations per stage, and of the final
        certified solve.
    tol : float, default=1e-3
        Gradient-norm tolerance of the rounding's certificate. Units: the
        rounding objective (smoothed expected cut minus the penalty) is
        computed on the weights divided by their mean absolute value, so ``tol``
        bounds the Euclidean norm of its gradient in ``(V, mu)`` in units of
        the mean absolute edge weight, whatever the scale of the weights.
    curvature_tol : float, default=None
        The certificate requires the smallest eigenvalue of the Hessian of the
        negated rounding objective (same units as ``tol``) to be at least
        ``-curvature_tol``. ``None`` means ``sqrt(tol)``, as in
        :func:`~skderand.optimize.minimize_sosp`.
    rounding_rank : int, default=3
        Columns of ``V`` in the rounding: the SDP vectors are projected on their
        leading principal directions (and renormalized), which keeps each
        evaluation cheap. ``None`` keeps the full SDP rank.
    local_search : {"auto", "tempering", "annealing", "1-flip", "tabu"} or \
            None, default="auto"
        Improvement of the rounded cut (which is first made 1-flip optimal):

        - ``"auto"``: up to 5,000 vertices, ``"tempering"``, or ``"annealing"``
          if there are at least 1,500 vertices and the mean degree is 16 or
          more; ``"annealing"`` (one long chain) beyond 5,000 vertices.
        - ``"tempering"``: replica exchange (parallel tempering) started from the
          rounded cut, ``n_replicas`` replicas on a ladder of fixed temperatures
          for ``n_sweeps`` sweeps (see Notes); with one replica, annealing.
        - ``"annealing"``: simulated annealing started from the rounded cut, over
          ``n_replicas`` replicas for ``n_sweeps`` sweeps (see Notes).
        - ``"1-flip"``: flip single vertices while that increases the cut.
        - ``"tabu"``: a tabu search (seeded), which also accepts losing flips to
          leave local optima and ends with a 1-flip pass.
        - ``None``: the rounded cut ``sign(mu)`` as is.

        Each returns the best cut it has seen, never less than the rounded cut.
    n_tabu_moves : int, default=None
        Moves of the tabu search; ``None`` means ``20 * n_vertices``.
    n_sweeps : int or "auto", default="auto"
        Budget of the tempering and the annealing: sweeps over all vertices, each
        offering every vertex one flip in every replica. A count of moves, not a
        time, so that the cut does not depend on the machine. ``"auto"`` means,
        up to 5,000 vertices, ``6 * n_vertices`` sweeps (chains on small graphs
        settle in fewer sweeps), at least 100, but at most
        ``16 * 10**6 // (n_vertices + n_entries // 6)`` clipped to
        [2000, 8000], ``n_entries`` the stored entries of the adjacency matrix
        (a budget of work for the fit: its stages cost about as much per vertex
        as per 6 entries, and sparse graphs get more sweeps); beyond 5,000 vertices,
        ``min(20000, max(10000, 8 * 10**8 // n_entries))`` (one chain's sweep
        costs about the same per stored entry on every graph kind measured).
    n_replicas : int or "auto", default="auto"
        Chains of the tempering (one per temperature) or the annealing, run
        together as the columns of one sign matrix (one sparse product per
        colour class serves all of them). ``"auto"`` means 16 up to 5,000
        vertices and 1 beyond, where the product's cost grows with the replicas
        and one longer annealing chain does better in the same time.
    random_state : int, RandomState instance or None, default=0
        Seeds the SDP start, the perturbation of ``mu``, the certificate's
        Lanczos start, the tempering's and annealing's draws and the tabu
        tenures. The default is
        a fixed seed, unlike the other skderand estimators (``None``), because
        what this estimator promises is a deterministic cut: with the default,
        the same graph gives the same cut on every call and every machine.
        ``None`` seeds from the operating system on every fit (numpy's global
        generator is never drawn from).
    verbose : int, default=0
        ``0`` prints nothing; ``1`` prints a line for each stage as it ends
        (each SDP rank with its bound, each rounding stage, the certificate, the
        improvement phase); ``2`` also prints the solver's progress inside the
        rounding's certified solve.

    Attributes
    ----------
    labels_ : ndarray of shape (n_vertices,)
        Side (0 or 1) of each vertex; vertex 0 is on side 0.
    cut_value_ : float
        Total weight of the edges between the two sides.
    upper_bound_ : float
        Certified upper bound on the maximum cut (see Notes): the smallest of
        the dual bounds computed, at each rank tried and during a bound-only
        continuation of the SDP (escape along the dual's eigenvector, then
        further sweeps) that runs after the cut is found, on graphs of up to
        5,000 vertices (beyond, it costs seconds for little), and leaves
        ``sdp_vectors_`` and the cut unchanged. It is at most the dual bound of
        ``sdp_vectors_``.
    sdp_value_ : float
        Value of the low-rank SDP solution (a lower estimate of the SDP optimum).
    expected_gw_cut_ : float
        Exact expected cut of Goemans-Williamson random-hyperplane rounding of the
        SDP vectors, ``sum_{i<j} w_ij arccos(v_i . v_j) / pi``.
    sdp_vectors_ : ndarray of shape (n_vertices, rank)
        Unit vectors of the low-rank SDP solution (zero rows for isolated
        vertices).
    sdp_ranks_ : ndarray of int
        Burer-Monteiro ranks tried: the rank starts at 8 and doubles (at most
        ``min(sqrt(2 n) + 1, 100, 2**19 / n)``) while the dual bound's
        eigenvalue correction exceeds 2e-4 of the bound and the previous
        doubling cut it to at most 40%; the last is ``sdp_vectors_``'s. On
        graphs of more than 5,000 vertices (with edges), one rank only:
        ``min(16, 2**19 / n)``.
    rounded_cut_value_ : float
        Cut after the rounding, before the local search: that of ``sign(mu)``,
        or of the rounding's exact finishing step (conditional expectations at
        ``V = 0``, at least the smoothed expected cut there) where it is larger.
    grad_norm_ : float
        The rounding's certificate (see Notes): gradient norm of the rounding
        objective at the returned ``(V, mu)``, in the units of ``tol``.
    min_hessian_eig_ : float
        The rounding's certificate: smallest Hessian eigenvalue there (a
        Lanczos Ritz value), in the units of ``tol``.
    curvature_tol_ : float
        The curvature tolerance used (``sqrt(tol)`` when ``curvature_tol`` is
        ``None``).
    certified_ : bool
        ``grad_norm_ <= tol and min_hessian_eig_ >= -curvature_tol_``.
    rounding_v_norm_ : float
        ``||V||_F`` at the end of the rounding (the lemma drives it to ~0).
    rounding_v_norm_bound_ : float
        The lemma's a-posteriori bound on ``rounding_v_norm_`` from the
        certificate, ``grad_norm_ / (2 alpha_ - max(0, -min_hessian_eig_))``
        in scaled units (``inf`` when not positive).
    expected_rounding_cut_ : float
        Smoothed expected cut of the rounding at its start (the SDP vectors,
        ``mu ~ 0``): the randomized algorithm the rounding derandomizes.
    rounding_penalty_paid_ : float
        The penalty paid along the rounding's path (see
        :func:`~skderand.derandomize.derandomize`): the smoothed expected cut at
        the end is at least ``expected_rounding_cut_ - rounding_penalty_paid_``.
    mu_ : ndarray of shape (n_vertices,)
        Offsets at the end of the rounding (0 for isolated vertices).
    alpha_ : float
        Penalty weight of the last stage (and of the certified solve).
    n_iter_ : int
        L-BFGS iterations of the rounding over all stages and the certified
        solve.
    n_stages_ : int
        Number of ``alpha`` stages run.
    rounding_history_ : dict of ndarray
        Per rounding iteration: ``"stage"``, ``"alpha"``, ``"expected_cut"``
        (smoothed, penalty excluded) and ``"v_norm"``; the certified solve's
        iterations are recorded under the last stage.
    timings_ : dict
        Wall time in seconds of each stage: ``"affinity"``, ``"sdp"``,
        ``"upper_bound"``, ``"rounding"``, ``"local_search"``, ``"total"``.
    n_features_in_ : int
        Number of features (columns) of ``X`` seen in :meth:`fit`.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features, when ``X`` has string column names.

    See Also
    --------
    sklearn.cluster.SpectralClustering : Clustering on a graph by its Laplacian.
    skderand.optimize.minimize_sosp : The certified solver used in the rounding.

    Notes
    -----
    With smoothing noise, ``P[i, j separated] = Phi(a_i) + Phi(a_j) -
    2 Phi_2(a_i, a_j; rho_ij)``, with ``s_i = sqrt(tau**2 + |v_i|**2)``,
    ``a_i = mu_i / s_i`` and ``rho_ij = v_i . v_j / (s_i s_j)``; the expected cut
    and its gradient are computed exactly through Owen's T function in
    ``O(|E| r)``. By the derandomization lemma, every second-order stationary point
    of the penalized objective has ``V = 0``.

    The certificate (``grad_norm_``, ``min_hessian_eig_``, ``certified_``) is
    computed once, on the ``(V, mu)`` the rounding returns. The ``alpha`` stages
    are first-order continuation steps (L-BFGS, at most ``max_iter`` iterations
    each) that carry the SDP vectors towards ``V = 0``; the last stage's point is
    then handed to :func:`~skderand.optimize.minimize_sosp` at the last
    ``alpha``, which iterates until it is an approximate second-order stationary
    point (stepping along negative curvature if it finds some) and certifies it:
    the Euclidean norm of the gradient of ``-(E[cut] - alpha ||V||_F**2)``, over
    all entries of ``V`` and ``mu``, is at most ``tol``, and the smallest
    eigenvalue of its Hessian (Lanczos on exact Hessian-vector products) is
    at least ``-curvature_tol``. The objective is computed on the weights
    divided by their mean absolute value, so both numbers are in units of the
    mean absolute edge weight. By the lemma such a point has ``V ~ 0``; the
    certificate says that the rounded cut ``sign(mu)`` is a local maximum of
    the smoothed expected cut, to these tolerances.

    The improvement phase (``local_search="tempering"`` or ``"annealing"``):
    the rounded cut is made 1-flip optimal, then ``n_replicas`` copies of it
    run together as the columns of an ``n x n_replicas`` sign matrix. A greedy
    colouring (largest degree first) splits the vertices into classes that
    share no edge, so a whole class is offered flips at once through one sparse
    product, each flip accepted with the Metropolis probability
    ``min(1, exp(gain / T))``. Annealing lowers ``T`` for all replicas
    together, geometrically from three times to a tenth of the mean absolute
    weight over ``n_sweeps`` sweeps. Tempering gives each replica its own fixed
    ``T``, on a geometric ladder from ``0.5 sigma`` down to ``0.08 sigma``,
    ``sigma = sqrt(mean_i sum_j w_ij**2)`` the typical field of a vertex in a
    random cut, and after every sweep lets replicas at neighbouring
    temperatures swap them with the probability that keeps each at its
    Boltzmann distribution: the cold replicas keep receiving the good cuts the
    hot ones find, which is what plain annealing, frozen after its cooling,
    cannot do. On dense graphs of 1,500 vertices or more (mean degree 16 or
    more) the replicas annealed together do better, so ``"auto"`` anneals those.
    The draws come from ``random_state``, so the cut is deterministic. The best cut
    seen (after every sweep, over all replicas, then made 1-flip optimal) is
    returned only if its exactly recomputed value is at least that of the
    rounded cut; otherwise the rounded cut is. The phase can
    therefore only raise the cut: the rounding's guarantee (its cut is at least
    the expected Goemans-Williamson cut of the SDP vectors, ``expected_gw_cut_``,
    hence at least 0.878 times the SDP value for non-negative weights) holds for
    ``cut_value_`` too, and ``rounded_cut_value_`` reports the cut before it.

    The bound: for every ``y``, ``OPT <= sum(y) + n max(0, -lambda_min(Diag(y) -
    L / 4))`` with ``L`` the weighted Laplacian (weak duality of the SDP), valid
    for signed weights and for an inexact SDP solution. ``y`` comes from the SDP
    vectors; ``lambda_min`` from a Lanczos solver on the sparse matrix, minus the
    residual norm of its Ritz pairs so that the solver's tolerance is accounted
    for. Every ``y`` gives a valid bound, so the smallest of those computed
    (at each rank, and during the bound-only continuation) is reported. The
    remaining assumption is that Lanczos found the lowest eigenvalue,
    which a random start and a wide Krylov space make overwhelmingly likely.

    References
    ----------
    .. [1] N. Tsikouras, C. Pantis, I. Mitliagkas, C. Tzamos. "A Derandomization
       Framework for Structure Discovery: Applications in Neural Networks and
       Beyond." ICLR 2026. arXiv:2510.19382.
    .. [2] M. X. Goemans, D. P. Williamson. "Improved approximation algorithms for
       maximum cut and satisfiability problems using semidefinite programming."
       Journal of the ACM 42(6), 1115-1145, 1995.
    .. [3] S. Burer, R. D. C. Monteiro. "A nonlinear programming algorithm for
       solving semidefinite programs via low-rank factorization." Mathematical
       Programming 95, 329-357, 2003.

    Examples
    --------
    A 5-cycle: the best cut has 4 of the 5 edges.

    >>> import numpy as np
    >>> from skderand import DeterministicMaxCut
    >>> A = np.zeros((5, 5))
    >>> for i in range(5):
    ...     A[i, (i + 1) % 5] = A[(i + 1) % 5, i] = 1
    >>> mc = DeterministicMaxCut(affinity="precomputed").fit(A)
    >>> mc.cut_value_, mc.labels_.shape
    (4.0, (5,))
    >>> bool(mc.cut_value_ <= 4.0 <= mc.upper_bound_)
    True
    """

    _parameter_constraints: dict = {
        "affinity": [
            callable,
            StrOptions({"euclidean", "rbf", "nearest_neighbors", "precomputed"}),
        ],
        "gamma": [Interval(Real, 0, None, closed="left")],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "tau": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "alpha_growth": [Interval(Real, 1, None, closed="neither")],
        "max_stages": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "curvature_tol": [Interval(Real, 0, None, closed="left"), None],
        "rounding_rank": [Interval(Integral, 1, None, closed="left"), None],
        "local_search": [
            StrOptions({"auto", "tempering", "annealing", "tabu", "1-flip"}),
            None,
        ],
        "n_tabu_moves": [Interval(Integral, 0, None, closed="left"), None],
        "n_sweeps": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "n_replicas": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        affinity="euclidean",
        *,
        gamma=1.0,
        n_neighbors=10,
        tau=0.1,
        alpha=0.1,
        alpha_growth=3.0,
        max_stages=20,
        max_iter=30,
        tol=1e-3,
        curvature_tol=None,
        rounding_rank=3,
        local_search="auto",
        n_tabu_moves=None,
        n_sweeps="auto",
        n_replicas="auto",
        random_state=0,
        verbose=0,
    ):
        self.affinity = affinity
        self.gamma = gamma
        self.n_neighbors = n_neighbors
        self.tau = tau
        self.alpha = alpha
        self.alpha_growth = alpha_growth
        self.max_stages = max_stages
        self.max_iter = max_iter
        self.tol = tol
        self.curvature_tol = curvature_tol
        self.rounding_rank = rounding_rank
        self.local_search = local_search
        self.n_tabu_moves = n_tabu_moves
        self.n_sweeps = n_sweeps
        self.n_replicas = n_replicas
        self.random_state = random_state
        self.verbose = verbose

    def _adjacency(self, X):
        """Validate ``X`` and build the symmetric CSR adjacency with zero diagonal."""
        if self.affinity == "precomputed" and _is_networkx_graph(X):
            A = graph_to_adjacency(X)
            if A.shape[0] == 0:
                raise ValueError("The graph is empty: it has no vertices.")
            self.n_features_in_ = A.shape[0]
            return A
        X = validate_data(
            self,
            X,
            accept_sparse=["csr", "csc", "coo"],
            dtype=np.float64,
            ensure_min_samples=1,
        )
        n_samples = X.shape[0]
        if self.affinity == "precomputed":
            n_entries = X.nnz if sparse.issparse(X) else np.count_nonzero(X)
            _check_fit_memory(n_samples, n_entries)
            return _check_precomputed(X)
        if self.affinity in _DENSE_AFFINITIES:
            dense = format_bytes(8 * n_samples**2)
            check_fits_in_memory(
                dense_affinity_bytes(n_samples),
                f"affinity={self.affinity!r} builds a dense {n_samples:,} x "
                f"{n_samples:,} float64 matrix ({dense} alone); with the sparse "
                "copies the fit makes, it",
                "Use affinity='nearest_neighbors' (a sparse graph of n_neighbors "
                "edges per point), or pass a sparse adjacency matrix with "
                "affinity='precomputed'.",
            )
        if self.affinity == "euclidean":
            A = pairwise_distances(X, metric="euclidean")
        elif self.affinity == "rbf":
            A = rbf_kernel(X, gamma=self.gamma)
        elif self.affinity == "nearest_neighbors":
            n_neighbors = min(self.n_neighbors, X.shape[0] - 1)
            if n_neighbors < 1:
                A = sparse.csr_matrix((X.shape[0], X.shape[0]))
            else:
                A = kneighbors_graph(X, n_neighbors, include_self=False)
                A = 0.5 * (A + A.T)
        else:
            A = self.affinity(X)
            if sparse.issparse(A):
                A = sparse.csr_matrix(A, dtype=np.float64)
                if not np.all(np.isfinite(A.data)):
                    raise ValueError("The affinity callable returned NaN or inf.")
            else:
                A = np.asarray(A, dtype=np.float64)
                if not np.all(np.isfinite(A)):
                    raise ValueError("The affinity callable returned NaN or inf.")
            if A.ndim != 2 or A.shape != (X.shape[0], X.shape[0]):
                raise ValueError(
                    "The affinity callable must return an (n_samples, n_samples) "
                    f"matrix; got shape {A.shape}."
                )
        return _check_precomputed(A)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the cut and its certified upper bound.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or \
                (n_samples, n_samples), or networkx.Graph
            Feature vectors, or with ``affinity="precomputed"`` the symmetric
            weighted adjacency matrix or a networkx graph (vertices in
            ``list(graph.nodes)`` order).
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        start = time.perf_counter()
        A = self._adjacency(X)
        return self._fit_adjacency(A, start=start)

    def _fit_adjacency(self, A, *, start=None, warn=True):
        """Fit on a validated symmetric CSR adjacency with a zero diagonal.

        ``warn=False`` stores the certificate without a warning, for an
        estimator that fits this one inside its own fit and warns itself.
        """
        start = time.perf_counter() if start is None else start
        timings = {"affinity": time.perf_counter() - start}
        rng = seeded_generator(self.random_state)
        # Multi-threaded BLAS makes the many small products of the solver loops
        # far slower (thread start-up dominates); one thread is fastest.
        with one_blas_thread():
            self._fit_graph(A, A.shape[0], rng, timings, warn)
        timings["total"] = time.perf_counter() - start
        self.timings_ = timings
        return self

    def _fit_graph(self, A, n, rng, timings, warn):
        degree_nnz = np.diff(A.indptr)
        active = np.flatnonzero(degree_nnz)
        self.labels_ = np.zeros(n, dtype=np.int64)
        self.mu_ = np.zeros(n)
        self._set_trivial()
        for key in ("sdp", "upper_bound", "rounding", "local_search"):
            timings[key] = 0.0
        if active.size < 2:
            # No edge: every cut is 0 and so is the bound.
            return
        sub = A[active][:, active].tocsr()
        upper = sparse.triu(sub, k=1).tocoo()
        rows, cols = upper.row.astype(np.int64), upper.col.astype(np.int64)
        # Scale-free tolerances and alpha: the solver sees weights of mean
        # magnitude one; cut values are scaled back.
        scale = float(np.mean(np.abs(upper.data)))
        weights = upper.data / scale
        n_act = active.size
        adjacency = symmetric_adjacency(n_act, rows, cols, weights)

        t = time.perf_counter()
        # One colouring serves the SDP's sweeps and the annealing's.
        classes = greedy_colouring(adjacency)
        timings["sdp"] += time.perf_counter() - t
        max_rank = _sdp_rank(n_act)
        one_rank = {}
        if n_act > _BOUND_CONTINUATION_MAX_N:
            # One rank and one loosened eigensolve on large graphs (see
            # _LARGE_SDP_RANK); smaller ones keep solve_sdp_adaptive's defaults.
            max_rank = min(_LARGE_SDP_RANK, max_rank)
            one_rank = {"initial_rank": max_rank, "eigen_tol": _LARGE_EIGSH_TOL}
        solution = solve_sdp_adaptive(
            adjacency,
            rng,
            classes=classes,
            max_rank=max_rank,
            timings=timings,
            verbose=self.verbose,
            **one_rank,
        )
        V, ranks = solution.V, solution.ranks
        self.sdp_ranks_ = np.asarray(ranks)
        self.sdp_vectors_ = np.zeros((n, V.shape[1]))
        self.sdp_vectors_[active] = V
        self.sdp_value_ = scale * sdp_objective(adjacency, V)
        self.expected_gw_cut_ = scale * expected_gw_cut(rows, cols, weights, V)

        t = time.perf_counter()
        rounding = self._round(rows, cols, weights, V, scale, rng, warn)
        self.mu_[active] = rounding.mu * scale
        timings["rounding"] = time.perf_counter() - t

        # sign(mu), or the finishing step's sides where they cut more.
        spins = rounding.solution
        self.rounded_cut_value_ = scale * cut_value(adjacency, spins)
        t = time.perf_counter()
        if self.local_search == "tabu":
            moves = 20 * n_act if self.n_tabu_moves is None else self.n_tabu_moves
            spins, _ = tabu_search(adjacency, spins, moves, rng)
        elif self.local_search == "1-flip":
            spins, _ = one_flip(adjacency, spins)
        elif self.local_search is not None:
            spins = self._anneal(adjacency, spins, rng, classes)
        timings["local_search"] = time.perf_counter() - t
        # The bound's continuation comes after every draw the cut depends on
        # (it draws Lanczos starts from rng): the cut is the same with it or
        # without it.
        self.upper_bound_ = scale * tighten_bound(
            adjacency,
            solution,
            rng,
            classes=classes,
            n_rounds=(
                _BOUND_CONTINUATION_ROUNDS if n_act <= _BOUND_CONTINUATION_MAX_N else 0
            ),
            max_rank=_sdp_rank(n_act),
            timings=timings,
            verbose=self.verbose,
        )
        if spins[0] < 0:
            spins = -spins
        self.labels_[active] = (spins < 0).astype(np.int64)
        # Recomputed from the labels on the caller's weights, not from the scaled
        # graph, so that it is exactly the cut of labels_.
        self.cut_value_ = cut_value(sub, np.where(self.labels_[active] == 1, -1.0, 1.0))
        if self.labels_[0] == 1:
            self.labels_ = 1 - self.labels_

    def _round(self, rows, cols, weights, V, scale, rng, warn):
        """The derandomized rounding; stores its history and its certificate.

        Returns :func:`~skderand.derandomize.derandomize`'s result (on the
        scaled weights); the rounded cut is its ``solution``.
        """
        V_round = V
        if self.rounding_rank is not None and self.rounding_rank < V.shape[1]:
            # Leading principal directions of the SDP vectors, renormalized: a
            # cheaper start that keeps most of the geometry.
            U, s, _ = np.linalg.svd(V, full_matrices=False)
            V_round = U[:, : self.rounding_rank] * s[: self.rounding_rank]
            V_round /= np.maximum(np.linalg.norm(V_round, axis=1), 1e-12)[:, None]
        history = {"stage": [], "alpha": [], "expected_cut": [], "v_norm": []}

        def record(stage, alpha, Vk, muk, expected_cut):
            history["stage"].append(stage)
            history["alpha"].append(alpha)
            history["expected_cut"].append(scale * expected_cut)
            history["v_norm"].append(np.sqrt(np.sum(Vk * Vk)))

        curvature_tol = (
            np.sqrt(self.tol) if self.curvature_tol is None else self.curvature_tol
        )
        # The stages stop at derandomize's default ||V||_F <= 1e-3 tau sqrt(n):
        # V z then shifts a typical y_i by 0.1% of the noise's spread.
        res = derandomize(
            CutExpectation.from_edges(V_round.shape[0], rows, cols, weights, self.tau),
            V_round,
            alpha=self.alpha,
            alpha_growth=self.alpha_growth,
            max_stages=self.max_stages,
            max_iter=self.max_iter,
            tol=self.tol,
            curvature_tol=curvature_tol,
            memory=(
                _LARGE_LBFGS_MEMORY
                if V_round.shape[0] > _BOUND_CONTINUATION_MAX_N
                else _LBFGS_MEMORY
            ),
            random_state=rng,
            verbose=self.verbose,
            callback=record,
        )
        self.rounding_history_ = {k: np.asarray(v) for k, v in history.items()}
        self.rounding_v_norm_ = res.v_norm
        self.rounding_v_norm_bound_ = res.v_norm_bound
        self.alpha_ = res.alpha
        self.n_stages_ = res.n_stages
        self.expected_rounding_cut_ = scale * res.start_expectation
        self.rounding_penalty_paid_ = scale * res.penalty_paid
        record_certificate(
            self,
            grad_norm=res.grad_norm,
            min_hessian_eig=res.min_hessian_eig,
            tol=self.tol,
            curvature_tol=curvature_tol,
            n_iter=res.n_iter,
            advice=(
                f"|V| = {res.v_norm:.2e} at the end of the rounding. Increase "
                "max_iter or max_stages, or loosen tol / curvature_tol."
            ),
            # Past _round, _fit_graph, _fit_adjacency, fit and _fit_context.
            stacklevel=6,
            warn=warn,
        )
        return res

    def _anneal(self, adjacency, spins, rng, classes):
        """Tempering or annealing from the 1-flip-optimal rounded cut.

        Never returns less than the rounded cut.
        """
        start, _ = one_flip(adjacency, spins)
        method = _improvement_method(spins.size, adjacency.nnz, self.local_search)
        n_sweeps, n_replicas = _annealing_budget(
            spins.size, adjacency.nnz, self.n_sweeps, self.n_replicas
        )
        if n_sweeps == 0:
            return start
        if method == "tempering" and n_replicas >= 2:
            # The field of vertex i in a random cut has variance sum_j w_ij**2.
            sigma = float(np.sqrt(np.mean(adjacency.multiply(adjacency).sum(axis=1))))
            hottest, coldest = _TEMPERING_LADDER
            best, _ = temper(
                adjacency,
                start,
                n_sweeps=n_sweeps,
                n_replicas=n_replicas,
                temperatures=(hottest * sigma, coldest * sigma),
                rng=rng,
                classes=classes,
            )
        else:
            # One replica has no ladder to exchange along: it is annealed.
            method = "annealing"
            best, _ = anneal(
                adjacency,
                start,
                n_sweeps=n_sweeps,
                n_replicas=n_replicas,
                temperatures=_ANNEALING_TEMPERATURES,
                rng=rng,
                classes=classes,
            )
        best, _ = one_flip(adjacency, best)
        # The guarantee of the rounding is kept by an exact comparison, not by
        # the gains the chains accumulated in floating point.
        start_cut, best_cut = cut_value(adjacency, start), cut_value(adjacency, best)
        if self.verbose:
            print(
                f"[DeterministicMaxCut] {method}: {len(classes)} colour classes, "
                f"{n_replicas} replicas x {n_sweeps} sweeps; cut "
                f"{start_cut:.6g} -> {max(start_cut, best_cut):.6g} (scaled weights)",
                flush=True,
            )
        return best if best_cut >= start_cut else start

    def _set_trivial(self):
        self.cut_value_ = 0.0
        self.upper_bound_ = 0.0
        self.sdp_value_ = 0.0
        self.expected_gw_cut_ = 0.0
        self.rounded_cut_value_ = 0.0
        self.sdp_vectors_ = np.zeros((self.labels_.size, 1))
        self.sdp_ranks_ = np.zeros(0, dtype=np.int64)
        record_trivial_certificate(
            self,
            curvature_tol=(
                np.sqrt(self.tol) if self.curvature_tol is None else self.curvature_tol
            ),
        )
        self.rounding_v_norm_ = 0.0
        self.rounding_v_norm_bound_ = 0.0
        self.expected_rounding_cut_ = 0.0
        self.rounding_penalty_paid_ = 0.0
        self.alpha_ = 0.0
        self.n_stages_ = 0
        self.rounding_history_ = {
            k: np.empty(0) for k in ("stage", "alpha", "expected_cut", "v_norm")
        }

    def fit_predict(self, X, y=None):
        """Fit and return the side (0 or 1) of each vertex.

        Parameters
        ----------
        X : {array-like, sparse matrix} or networkx.Graph
            See :meth:`fit`.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            ``labels_``.
        """
        return self.fit(X).labels_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self.affinity == "precomputed"
        return tags
