"""A learned, deterministic Johnson-Lindenstrauss embedding of a point set."""

import warnings
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from joblib import effective_n_jobs
from scipy import linalg, sparse
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.exceptions import DataDimensionalityWarning
from sklearn.utils import check_array
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted

from skderand._memory import check_fits_in_memory
from skderand._random import check_random_state, draw_seeds
from skderand._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    validate_data,
)
from skderand._threads import one_blas_thread
from skderand.embedding._active import (
    WHITEN_SPREAD,
    _ActivePairs,
    _scale_free,
    solves_on_embedded_points,
)
from skderand.embedding._distinct import distinct_rows
from skderand.embedding._pairs import _Span
from skderand.embedding._polish import polish_minimax
from skderand.embedding._search import (
    SEARCH_START,
    _growth_exponent,  # noqa: F401 (tests import it from this module)
    _power_law_dimension,  # noqa: F401 (tests import it from this module)
    decide_after_stage,
    gives_up,
    search_dimension,
    watched_stage,
)
from skderand.embedding._stages import (
    LANCZOS_ITER,
    certify_stage,
    fit_bytes,
    map_bytes,
    solve_stage,
    stage_objective,
)
from skderand.optimize import sosp_certificate
from skderand.optimize._certificate import (
    record_certificate,
    record_trivial_certificate,
)

__all__ = ["LearnedJLTransformer"]


class LearnedJLTransformer(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """Reduce dimension with a linear map learned to preserve pairwise distances.

    A drop-in for :class:`~sklearn.random_projection.GaussianRandomProjection`
    that *learns* its ``(n_components, n_features)`` matrix for the training
    points: starting from a seeded Gaussian random projection, it minimizes a
    smooth surrogate (a soft-max over pairs of log distance ratios, sharpened in
    stages) of the worst pairwise distortion with the certified solver
    :func:`skderand.optimize.minimize_sosp`. The result is deterministic for a
    given ``random_state``, never worse on the training pairs than the random
    map it started from or than PCA's map (see Notes), and usually has far less
    worst-case distortion than a random projection of the same dimension.

    With ``algorithm="derandomized"`` the solver optimizes the distribution
    ``M + scale * E`` (``E`` standard Gaussian) of a Gaussian projection, with
    the derandomization lemma's penalty ``alpha`` on ``scale``: at a second-order
    stationary point the scale is driven to zero and the mean ``M`` alone is the
    embedding [1]_. ``algorithm="direct"`` optimizes the deterministic map ``M``
    itself (scale fixed at zero).

    **The guarantee is about the training points.** ``distortion_`` is measured
    on the pairs of points seen in :meth:`fit`. On new points a learned map helps
    only where the data has structure it can exploit (a low-dimensional shape, as
    for images of digits); when ``n_features`` is much larger than
    ``n_samples`` it falls back to the level of a random projection on held-out
    points.

    Parameters
    ----------
    n_components : int or "auto", default="auto"
        Dimension of the embedding. ``"auto"`` selects the smallest dimension,
        at most ``n_features``, whose learned map reaches distortion ``eps`` on
        the training pairs: a growth then interpolation search over the
        dimension. The growth starts at 8 (the rank of the centred data, if
        smaller; below a succeeding 8 the search goes down by bisection).
        While candidates fail, each proposes the next from a
        distortion falling as ``k**(-a)`` (at most doubling; ``a`` measured
        between the last two candidates at the last sharpness stage both ran,
        clipped to ``[0.5, 1]``); then the next candidate is where the power
        law through the distortions of the largest failing and smallest
        succeeding dimensions reaches ``eps`` (with bisection steps against
        one-sided runs). A candidate whose first sharpness stage ends above
        ``2.5 eps``, or a later non-final stage above ``(1 + 0.35 m) eps``
        with ``m`` stages still to come (1.7 and 1.35 ``eps`` with the default
        four), is declared failing without its later stages. When
        every pair is in the objective, a candidate is decided during its
        stages: it succeeds at the first map whose exact all-pairs distortion
        is at most ``eps`` (in any stage), and it fails when its final stage
        stalls above ``1.02 eps`` (its lowest distortion fell by less than a
        quarter of its distance to ``eps`` over the last 25 evaluations) or
        ends above it; only a final stage ending between ``eps`` and
        ``1.02 eps`` runs its certificate and polish at once. These
        thresholds are heuristics, chosen with margins over what the
        remaining stages and the polish were seen to gain. A candidate
        on an active set succeeds where a stage before the final one ends at
        most ``eps``. Only the
        returned candidate is completed: its stages from the point it was
        decided at (that stage restarted there), certificate and polish; the
        decided point itself is returned, with its certificate on the final
        surrogate, if the completed map is not better. The result therefore
        follows the search's path and is not, in general, the fit of that
        dimension alone; it is deterministic for a given ``random_state``,
        its ``distortion_`` is exact and at most ``eps``, and its certificate
        is that of the point returned. Candidates are not warm-started from
        one another: each starts from its own random map.
        Unlike ``GaussianRandomProjection``, ``"auto"``
        never fails: at a dimension equal to the rank of the centred data an
        exact isometry of the data exists and is returned. An int larger than
        ``n_features`` is accepted with a ``DataDimensionalityWarning``, as
        ``GaussianRandomProjection`` does: the map is then an exact isometry
        of the training points (distortion 0), and nothing is reduced.
    eps : float, default=0.1
        Target distortion for ``n_components="auto"``: every training pair ``i,
        j`` must satisfy ``(1 - eps) ||x_i - x_j||^2 <= ||f(x_i) - f(x_j)||^2
        <= (1 + eps) ||x_i - x_j||^2``. Unused when ``n_components`` is an int.
    algorithm : {"direct", "derandomized"}, default="direct"
        ``"direct"`` optimizes the deterministic matrix. ``"derandomized"``
        optimizes the mean and the scale of a Gaussian matrix (closed-form
        moments of each pair's distance ratio) with the penalty
        ``alpha * n_components * scale**2``; the scale goes to zero.
        ``"direct"`` is the default because it reaches slightly lower distortion
        in less time (see ``benchmarks/bench_jl.py``).
    softmax_sharpness : float, default=1000.0
        Final sharpness ``beta`` of the soft-max over pairs. The surrogate
        approximates the log of ``r_max / r_min`` (ratios of squared distances)
        to within ``2 log(n_pairs) / beta``. It is stated for ratios whose
        log-range ``log(r_max / r_min)`` is at least 0.1 (a distortion of about
        0.05 or more): a stage that starts from a narrower log-range ``L``
        multiplies its sharpness by ``0.1 / L`` (at most by 64), so that the
        smoothing stays as small against the range (near-isometric maps of
        low-rank data, for one).
    n_stages : int, default=4
        Number of sharpness stages; stage ``s`` uses ``softmax_sharpness /
        4**(n_stages - 1 - s)`` (times the factor above). Raising the sharpness
        gradually avoids the poor local optima of a sharp soft-max started from
        a random map.
    alpha : float, default=0.1
        Weight of the lemma's penalty on the Gaussian scale
        (``algorithm="derandomized"`` only). Any positive value drives the scale to
        zero at a second-order stationary point; larger values do it faster.
    working_set : int or "auto", default="auto"
        Size of the active set. ``"auto"`` means ``max(4000, n_samples)``: the
        pairs that decide the extremes grow with the number of points (each
        point's nearest neighbours, for one), and a set too small for them is
        fitted by the solver while pairs outside it overtake the extremes. With
        at most this many pairs, the objective sees every pair. Beyond, it sees
        an *active set*: a fixed random sample of ``working_set // 2`` pairs
        (the bulk of the ratios, which the soft-max weighs at low sharpness)
        plus, each round, up to ``working_set // 4`` pairs per side whose ratios
        are near the current extremes. Between rounds (40 solver iterations
        each; 20 from a stage's fourth round on while the set stays saturated,
        i.e. a pass finds nearly that many new pairs per side; longer, up to a
        quarter of ``max_iter``, when a pass over all pairs costs far more than
        that, as for tens of thousands of points) the exact extremes over *all*
        pairs are found, and the pairs outside the set that overtake the set's
        extremes join it; a stage ends when none does and the solver has
        converged (or at its budget, see ``max_iter``). A long round after which
        the all-pairs distortion is more than 5 % above the stage's best is
        undone (the stage goes back to its best map, with the pairs that
        overtook in the set, and its later rounds are shorter). The exact
        extremes come from a blocked pass over all pairs (BLAS products of row
        blocks, memory of one block) that keeps candidate pairs near the
        extremes; until the map has moved enough for another pair to overtake
        them (a bound by the extreme eigenvalues of ``M^T M - M_0^T M_0``), the
        candidates alone give the exact extremes and no new pass is needed. The
        reciprocal squared distances of all pairs are stored while they fit in 1
        GiB (in float32 beyond 256 MiB, about 8,000 points; recomputed block by
        block beyond about 23,000). Once the smallest pair distance is known,
        passes run in float32 (recomputed distances too) with a rigorous
        round-off bound that widens the candidates' margins.
    polish : bool, default=True
        After the final stage, minimize the true worst distortion (not its
        smoothing) on the active set by prox-linear steps: each step linearizes
        the log-ratios of the pairs nearest the extremes and solves the
        proximal minimax through its small dual (a concave quadratic over two
        simplices, of the size of those pairs, not of the map). The polished
        map is kept only if its all-pairs distortion is lower. It ends where the
        model predicts no decrease (a first-order stationary point of the
        active-set minimax), when a few steps in a row gain almost nothing, or
        at its step budget; the certificate
        (``grad_norm_``, ``min_hessian_eig_``) stays that of the final stage's
        surrogate, at the point the polish started from.
    max_iter : int, default=1000
        Maximum number of solver iterations per sharpness stage (shared by the
        stage's active-set rounds). The earlier stages of an active-set fit,
        which only carry the map to the next sharpness, also stop after a fixed
        number of rounds (on most data 10 rounds of 40 iterations); the final
        stage goes on until it converges or has spent ``max_iter``. Raising it
        is the remedy a ``ConvergenceWarning`` names: more time for a lower
        distortion where the final stage had not converged.
    tol : float, default=1e-2
        Gradient-norm tolerance of the final stage's certificate: a bound on the
        Euclidean norm of the gradient of the surrogate (dimensionless: a log of
        distance ratios) with respect to the entries of the map restricted to
        the span of the centred training data, in orthonormal coordinates of
        that span (and the scale, for ``algorithm="derandomized"``). The entries
        of ``sqrt(k) * components_`` are of order one; at sharpness 1000 the
        Hessian is badly conditioned, and tighter tolerances cost many
        iterations for distortion changes in the third decimal. The final
        stage's solver stops as soon as this test holds.
    curvature_tol : float, default=None
        The certificate requires the smallest Hessian eigenvalue of the same
        surrogate, in the same coordinates, to be at least ``-curvature_tol``.
        ``None`` means ``sqrt(tol)``, as in :func:`~skderand.optimize.minimize_sosp`.
    compute_inverse_components : bool, default=False
        Compute and store the pseudo-inverse of ``components_`` in fit, as
        ``inverse_components_``; otherwise :meth:`inverse_transform` computes it.
    n_init : int, default=1
        Number of fits from different random starts; the map with the lowest
        ``distortion_`` is kept (as :class:`~sklearn.manifold.MDS` keeps the
        lowest stress). The fit finds a local minimax and starts end in
        different basins, so ``n_init`` starts buy a lower worst case for
        ``n_init`` times the time (less with ``n_jobs``). The first start is
        the one ``n_init=1`` fits, so more starts never raise
        ``distortion_``. With
        ``n_components="auto"`` the first start searches the dimension and the
        others fit the dimension it found.
    n_jobs : int, default=None
        Number of starts (see ``n_init``) fitted at the same time, in threads
        unless a joblib backend is configured; the map is the same whatever
        ``n_jobs``. ``None`` means 1 unless in a ``joblib.parallel_config``
        context. Threads gain less than the number of cores: the solvers'
        many small products hold the interpreter part of the time. Each start
        running at once holds its own map and active set; the data and their
        stored distances are shared, except by starts in processes of their
        own.
    random_state : int, RandomState instance or None, default=None
        Seeds the starting Gaussian projections, the sampled pairs and the
        certificate's Lanczos vectors. Pass an int for reproducible output;
        ``None`` seeds from the operating system on every fit (numpy's global
        generator is never drawn from).
    verbose : int, default=0
        0 is silent; 1 prints one line per sharpness stage, active-set round,
        polish and (for ``n_components="auto"``) candidate dimension as it
        happens; 2 also prints the solvers' own progress.

    Attributes
    ----------
    components_ : ndarray of shape (n_components_, n_features)
        The learned map, calibrated so that the squared-distance ratios of the
        training pairs are centred at 1 (``r_min + r_max = 2``).
    mean_ : ndarray of shape (n_features,)
        Per-feature mean of the training points. :meth:`transform` subtracts
        it before the map (as :class:`~sklearn.decomposition.PCA` does), which
        moves every embedded point by the same vector: distances are unchanged,
        and the embedded points keep their precision when the data sit far
        from the origin.
    n_components_ : int
        Dimension of the embedding (the one found when ``n_components="auto"``).
    search_results_ : dict of ndarray
        Only with ``n_components="auto"``: the candidate dimensions the search
        fitted, in the order tried, as the search left them (the returned one
        is completed afterwards, so ``distortion_`` may be lower than its
        entry). Keys: ``"n_components"``; ``"distortion"``, the all-pairs
        distortion of the candidate's map; ``"reached_eps"``, whether that is
        at most ``eps``; ``"stopped_after_stage"``, the sharpness stage after
        which the search gave the candidate up as too far above ``eps`` (0:
        it was not); ``"decided"``, how the search decided the candidate before
        its certificate and polish (an empty string: it was not).
    stages_ : dict of ndarray
        The sharpness stages of the run that produced the returned map, in the
        order run. Keys: ``"stage"``, the stage's number (1 to ``n_stages``);
        ``"softmax_sharpness"``, the sharpness it ran at (the schedule's,
        raised where the ratios' log-range had narrowed below 0.1, see the user
        guide); ``"distortion"``, the all-pairs distortion at its end;
        ``"n_iter"``, its solver iterations. A stage that the dimension search
        decided early and that was resumed afterwards appears twice. The
        certificate and the polish come after the last stage.
    distortion_ : float
        Worst-case distortion of the training pairs after calibration, the
        scale-free ``(r_max - r_min) / (r_max + r_min)``: every training pair
        satisfies the ``(1 +- distortion_)`` bound on squared distances.
    initial_distortion_ : float
        The same for the random Gaussian projection the kept fit started from (when
        ``n_components_`` is at least the rank of the centred data, the fit
        starts from an exact isometry of their span instead).
    scale_ : float
        Final Gaussian scale of the distribution ``M + scale * E`` in the units
        of ``components_`` (0 for ``algorithm="direct"``). ``n_components_ *
        scale_**2`` is the noise's share of the expected squared-distance ratio.
    n_iter_ : int
        Solver iterations over all stages of the kept fit (at least 1; 0 when
        there is no pair to embed).
    grad_norm_ : float
        Certificate: gradient norm of the final stage's surrogate (its sharpness
        and its active set of pairs) at the stage's end point, the point the
        polish started from (or at the random start, if the final stage did not
        improve on it and the start is returned). 0 when there is no pair to
        embed (all points coincide): the surrogate is then constant.
    min_hessian_eig_ : float
        Certificate: smallest Hessian eigenvalue of the same surrogate there
        (Lanczos, on exact Hessian-vector products of the surrogate, in the
        map and, for ``algorithm="derandomized"``, in its scale). With
        ``grad_norm_`` it certifies a second-order stationary point of the
        *smooth surrogate*; it does not certify a global optimum of the
        worst-case distortion. The surrogate is invariant under the map's
        overall scale except for the centring term, so one eigenvalue is small
        but not negative. At a degenerate map, where a pair's ratio nearly
        vanishes (``distortion_`` near 1), the surrogate's curvature can be
        very large in magnitude; the products are exact there too.
    curvature_tol_ : float
        The curvature tolerance used (``curvature_tol``, or ``sqrt(tol)``).
    certified_ : bool
        Exactly ``grad_norm_ <= tol and min_hessian_eig_ >= -curvature_tol_``.
        A ``ConvergenceWarning`` is raised exactly when this is False.
    inverse_components_ : ndarray of shape (n_features, n_components_)
        Pseudo-inverse of ``components_``, if ``compute_inverse_components``.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when ``X`` has string feature names.

    See Also
    --------
    sklearn.random_projection.GaussianRandomProjection : A random projection with
        a probabilistic guarantee for any point set.
    sklearn.random_projection.johnson_lindenstrauss_min_dim : The dimension that
        guarantee needs.
    sklearn.decomposition.PCA : The best map in mean squared error, not in the
        worst case.

    Notes
    -----
    Ratios are ``r_ij = ||M (x_i - x_j)||^2 / ||x_i - x_j||^2`` over the pairs
    of distinct training points; coincident points (duplicates) are skipped, as
    every linear map keeps them coincident, and the fit runs on the distinct
    rows alone (a copy of a row has the row's ratio with every other point).
    One evaluation of the surrogate costs ``O(n_used * rank * k + n_active *
    k)`` for the ``n_active`` pairs of the active set and the ``n_used`` points
    they touch (``rank``: of the centred data); a blocked pass over all pairs
    costs ``O(n^2 k)`` and is needed only when the map has moved enough for a
    pair outside the candidate set to overtake the extremes. ``distortion_``
    is always exact over all pairs: the pass's candidates are re-measured pair
    by pair.

    The worst case is not convex in the map: when the fit from the random
    start ends above PCA's map of the same dimension (small sets at very low
    ``n_components``), it runs again from that map and keeps the better; so
    does a candidate of ``n_components="auto"`` that fails in its final
    stage. This needs the principal directions, which the fit does not form
    for sparse input of 2,000 rows or more of full rank, nor when it solves on
    the embedded points of a near-isotropic span (there PCA is about as bad as
    a random projection).

    The Johnson-Lindenstrauss lemma [2]_ guarantees distortion ``eps`` at
    ``k = O(log(n) / eps**2)`` for a random map, and Larsen and Nelson [3]_
    show that no map does better for worst-case point sets; real data often
    leaves much more room.

    References
    ----------
    .. [1] N. Tsikouras, C. Pantis, I. Mitliagkas, C. Tzamos. "A Derandomization
       Framework for Structure Discovery: Applications in Neural Networks and
       Beyond." ICLR 2026, arXiv:2510.19382.
    .. [2] W. B. Johnson, J. Lindenstrauss. "Extensions of Lipschitz mappings
       into a Hilbert space." Contemporary Mathematics 26, 1984.
    .. [3] K. G. Larsen, J. Nelson. "Optimality of the Johnson-Lindenstrauss
       lemma." FOCS 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.random_projection import GaussianRandomProjection
    >>> from skderand import LearnedJLTransformer
    >>> X = np.random.default_rng(0).standard_normal((60, 200))
    >>> jl = LearnedJLTransformer(n_components=10, random_state=0).fit(X)
    >>> jl.transform(X).shape
    (60, 10)
    >>> bool(jl.distortion_ < 0.5 * jl.initial_distortion_)
    True
    """

    _parameter_constraints: dict = {
        "n_components": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "eps": [Interval(Real, 0, 1, closed="neither")],
        "algorithm": [StrOptions({"direct", "derandomized"})],
        "softmax_sharpness": [Interval(Real, 0, None, closed="neither")],
        "n_stages": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "working_set": [
            Interval(Integral, 8, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "curvature_tol": [Interval(Real, 0, None, closed="left"), None],
        "polish": ["boolean"],
        "compute_inverse_components": ["boolean"],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_components="auto",
        *,
        eps=0.1,
        algorithm="direct",
        softmax_sharpness=1000.0,
        n_stages=4,
        alpha=0.1,
        working_set="auto",
        max_iter=1000,
        tol=1e-2,
        curvature_tol=None,
        polish=True,
        compute_inverse_components=False,
        n_init=1,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.eps = eps
        self.algorithm = algorithm
        self.softmax_sharpness = softmax_sharpness
        self.n_stages = n_stages
        self.alpha = alpha
        self.working_set = working_set
        self.max_iter = max_iter
        self.tol = tol
        self.curvature_tol = curvature_tol
        self.polish = polish
        self.compute_inverse_components = compute_inverse_components
        self.n_init = n_init
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the embedding of the training points.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training points. Large sparse input is never densified whole:
            the span of the rows comes from their Gram matrix.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            The fitted transformer.
        """
        X = validate_data(
            self, X, accept_sparse=["csr", "csc"], dtype=[np.float64, np.float32]
        )
        dtype = X.dtype
        if self.n_components != "auto" and self.n_components > X.shape[1]:
            # Allowed, as by GaussianRandomProjection (an isometry exists from
            # the rank of the centred data on), but most likely a mistake.
            warnings.warn(
                f"n_components={self.n_components} is larger than n_features="
                f"{X.shape[1]}: the dimensionality of the data is not reduced.",
                DataDimensionalityWarning,
                stacklevel=3,
            )
        # One generator for all starts: the first start's seed is the one a
        # fit with n_init=1 draws, so more starts can only lower distortion_.
        random_state = check_random_state(self.random_state)
        seeds = [draw_seeds(random_state) for _ in range(self.n_init)]
        # A copy of a row has no ratio with it, and the same ratio as the row
        # with every other point: the worst case over pairs is that of the
        # distinct rows, and the fit sees those alone (a copy would also leave
        # the span a dimension short of n - 1 and cost the solves on the
        # embedded points). See the design note, "Distinct rows".
        distinct = distinct_rows(X)
        training = X
        if distinct is not None:
            X = X[distinct]
        # Training distances only see the map on the span of the centred data:
        # optimize there (far fewer variables when n_samples < n_features) and
        # keep the random start's action on the orthogonal complement, which
        # matters for new points only. Large sparse input is never densified.
        # The dimension search checks each larger candidate before its fit
        # (see _fit_dimension): most searches stop far below the rank.
        first_k = (
            min(SEARCH_START, *X.shape)
            if self.n_components == "auto"
            else self.n_components
        )
        working_set = (
            max(WORKING_SET, X.shape[0])
            if self.working_set == "auto"
            else self.working_set
        )
        check_fits_in_memory(
            fit_bytes(X, first_k, working_set),
            f"LearnedJLTransformer.fit on {X.shape[0]} x {X.shape[1]} data",
            "Subsample the points or reduce the features (for sparse input with "
            "fewer rows than columns the Gram matrix of the rows is what grows).",
        )
        # A fit whose solves all run on the embedded points never sees the
        # span's basis: it takes a triangular one, far cheaper than the
        # principal directions, when the span is close enough to isotropic
        # for the embedded solves (see _Span). A search may reach dimensions
        # where every pair is active, which solve in whitened principal
        # coordinates.
        embedded = (
            self.n_components != "auto"
            and self.algorithm == "direct"
            and solves_on_embedded_points(*X.shape, self.n_components, working_set)
        )
        span = _Span(X, max_spread=WHITEN_SPREAD if embedded else None)
        curvature_tol = (
            np.sqrt(self.tol) if self.curvature_tol is None else self.curvature_tol
        )

        # Small products in a long loop: BLAS threads cost more than they save.
        with one_blas_thread():
            pairs = _ActivePairs(
                span.coords,
                working_set,
                verbose=self.verbose,
                gram=span.gram,
                factor=span.factor,
            )
            fit, seed, pairs = self._fit_starts(span, pairs, seeds, curvature_tol)
            fit = self._no_worse_than_pca(span, pairs, fit, seed, curvature_tol)

        # Calibrate: ratios centred at 1, so the scale-free distortion is the
        # (1 +- eps) distortion of the returned map.
        centre = (fit.r_min + fit.r_max) / 2.0 if fit.r_max > 0 else 1.0
        factor = 1.0 / np.sqrt(centre) if np.isfinite(centre) else 1.0
        components = (span.extend(fit.W) + fit.complement) * factor
        self.components_ = components.astype(dtype, copy=False)
        # transform centres the rows by the training mean first (the span's,
        # unless copies were left out of it): distances do not see it, but a
        # product of uncentred rows loses the digits their differences live in
        # (see the design note, "Centring in transform").
        mean = span.mean if distinct is None else training.mean(axis=0, dtype=float)
        self.mean_ = np.asarray(mean).ravel().astype(dtype)
        self.n_components_ = self.components_.shape[0]
        self.distortion_ = fit.distortion
        self.initial_distortion_ = fit.initial_distortion
        self.scale_ = float(fit.sigma * factor)
        _record_fit_certificate(self, fit, curvature_tol)
        self.stages_ = _stage_record(fit.record)
        # Blocked passes and the largest active set over all starts
        # (benchmarks/bench_jl.py reports them).
        self._fit_stats = dict(pairs.stats)
        if self.compute_inverse_components:
            self.inverse_components_ = self._compute_inverse_components()
        return self

    def _fit_starts(self, span, pairs, seeds, curvature_tol):
        """The ``n_init`` starts, ``n_jobs`` at a time; the lowest distortion wins.

        The first start runs on ``pairs``, each other on its own copy of them
        made before any start runs (see ``_ActivePairs.for_another_start``),
        so that no start's path depends on the others: ``n_jobs`` changes the
        time only. With ``n_components="auto"`` the first start searches the
        dimension, and the others, copied after it, fit the one it found.

        Returns the kept fit (the earliest start of the lowest distortion),
        its seed and the first start's pairs, with the other starts' time
        splits added (the PCA check runs on them next).
        """
        # Independent starts, not basin hopping from the best map so far: hops
        # did not find deeper basins than as many fresh starts (see the design
        # note, "Rejected alternatives").
        if self.n_components == "auto":
            first, tried = search_dimension(self, span, pairs, seeds[0], curvature_tol)
            self.search_results_ = _search_results(tried, self.eps)
            fits, k = [first], first.W.shape[0]
            jobs = [(pairs.for_another_start(), seed) for seed in seeds[1:]]
        elif self.n_init == 1:
            # The default fit: one start of a fixed dimension, on this thread.
            fit = self._fit_dimension(
                span, pairs, self.n_components, seeds[0], curvature_tol
            )
            return fit, seeds[0], pairs
        else:
            fits, k = [], self.n_components
            jobs = [(pairs, seeds[0])]
            jobs += [(pairs.for_another_start(), seed) for seed in seeds[1:]]
        if jobs:
            n_workers = min(effective_n_jobs(self.n_jobs), len(jobs))
            # The span is in memory: what the starts running at once add to it.
            check_fits_in_memory(
                n_workers
                * map_bytes(pairs.n, self.n_features_in_, k, pairs.working_set),
                f"LearnedJLTransformer.fit of {n_workers} starts at once in "
                f"n_components={k} dimensions",
                "Pass a smaller n_jobs (the starts then run one after another).",
            )
            done = Parallel(n_jobs=self.n_jobs, prefer="threads")(
                delayed(self._one_start)(span, job_pairs, k, seed, curvature_tol)
                for job_pairs, seed in jobs
            )
            if not fits:
                # The first start's pairs as it left them (a copy, if it ran in
                # a process of its own).
                pairs = done[0][1]
            for _, job_pairs in done:
                if job_pairs is not pairs:
                    pairs.add_stats(job_pairs)
            fits += [fit for fit, _ in done]
        best = 0
        for start, fit in enumerate(fits[1:], start=1):
            if self.verbose:
                print(
                    f"[LearnedJLTransformer] start {start + 1} of {self.n_init}: "
                    f"distortion {fit.distortion:.4f} (lowest before it "
                    f"{fits[best].distortion:.4f})",
                    flush=True,
                )
            if fit.distortion < fits[best].distortion:
                best = start
        return fits[best], seeds[best], pairs

    def _one_start(self, span, pairs, k, seed, curvature_tol):
        """One start of :meth:`_fit_starts`: its fit and the pairs it ran on."""
        # Its own limit: a joblib worker process has none of the caller's.
        with one_blas_thread():
            return self._fit_dimension(span, pairs, k, seed, curvature_tol), pairs

    def _fit_dimension(
        self,
        span,
        pairs,
        k,
        seed,
        curvature_tol,
        give_up_above=(),
        decide_at=None,
        from_pca=False,
        initial_distortion=None,
    ):
        """Learn a ``k``-dimensional map: the sharpness stages, then the polish.

        Returns the final stage's end point (polished, if that lowers the
        all-pairs distortion) with the final stage's certificate, or the start
        with its own certificate on the final surrogate if the final stage did
        not improve on it.

        For the dimension search, a fit whose stage ``s`` (not the final one)
        ends above ``give_up_above[s]`` stops there, uncertified
        (``certificate`` is then ``False``: such a fit only says "fails").
        With ``decide_at = eps``, an all-pairs fit is watched during its
        stages (see ``_search._Watch``) and returned as soon as it is decided: at a
        map of exact distortion at most ``eps`` (succeeds), or when its final
        stage stalls or ends above ``(1 + FINISH_MARGIN) eps`` (fails), before
        its certificate and polish, with ``pending`` holding what
        :meth:`_finish` needs to complete it. Any search candidate whose
        non-final stage ends at most ``eps`` is decided there too (active-set
        fits are not watched during their stages).

        With ``from_pca`` the stages start from PCA's map (see
        :meth:`_no_worse_than_pca`) instead of the random one: the span's
        first ``k`` principal coordinates, nothing off the span.
        ``initial_distortion`` is then the random start's, which the fit and
        every fit it leads to (through ``pending``) report as theirs.
        """
        # The span is in memory by now: the check is of what this dimension
        # adds to it (the only check of the dimension search's later
        # candidates).
        check_fits_in_memory(
            map_bytes(pairs.n, self.n_features_in_, k, pairs.working_set),
            f"LearnedJLTransformer.fit in n_components={k} dimensions",
            "Pass a smaller n_components"
            + (", or a larger eps." if self.n_components == "auto" else "."),
        )
        rng = np.random.RandomState(seed)
        rank = pairs.X.shape[1]
        pairs.reset(k)
        derandomized = self.algorithm == "derandomized"
        # Drawn from PCA's map too: the generator's later draws stay those of
        # the random start's fit.
        start = rng.standard_normal((k, self.n_features_in_)) / np.sqrt(k)
        if from_pca:
            M = np.eye(k, rank)
            complement = np.zeros_like(start)
        else:
            # M is the map restricted to the span, in the basis' coordinates;
            # the start's action on the orthogonal complement is kept for new
            # points.
            M = span.restrict(start)
            complement = start - span.extend(M)
        sigma = 1.0 / np.sqrt(k) if derandomized else 0.0
        r_min, r_max = pairs.extremes(M)
        initial = _scale_free(r_min, r_max)
        betas = _sharpness_stages(self.softmax_sharpness, self.n_stages)
        if initial_distortion is None:
            initial_distortion = initial
        best = _Fit(
            M, complement, initial, r_min, r_max, sigma, initial_distortion, 0, None
        )
        if not np.isfinite(r_min):
            # No pair to embed: the surrogate is identically zero.
            return best
        if k >= rank:
            # An isometry of the span exists, W = [I; 0]: all ratios equal, a
            # global minimum of every stage's surrogate (LSE(t) + LSE(-t) is
            # smallest at constant t). One stage from it only certifies it, and
            # its end point is returned whatever round-off does to the distortion.
            M = np.eye(k, rank)
            sigma = 0.0
            betas = betas[-1:]
            best = best._replace(distortion=np.inf)
        z = M.ravel()
        if derandomized:
            z = np.append(z, sigma)
        return self._run_stages(
            pairs,
            k,
            z,
            betas,
            rng,
            best,
            curvature_tol,
            z_start=z,
            give_up_above=give_up_above,
            decide_at=decide_at,
        )

    def _no_worse_than_pca(self, span, pairs, fit, seed, curvature_tol, **search):
        """``fit``, or a fit started from PCA's map if that is better.

        The worst-case distortion is not a convex function of the map, and on
        small sets at very low ``k`` the stages from a random map can end in a
        local minimum above PCA's map of the same dimension (see the design
        note, "No worse than PCA"). Where the span is in principal coordinates
        (sorted by variance, see ``_Span``: not its triangular bases) PCA's
        map is their first ``k``, ``[I, 0]``. When its exact all-pairs
        distortion is below ``fit``'s, the fit runs again from it and the
        lower of the two is returned, so ``distortion_`` is never above
        PCA's. ``initial_distortion`` stays the random start's and ``n_iter``
        counts both runs, whichever is kept.

        The dimension search also runs each candidate that fails in or after
        its final stage through here, with its ``give_up_above`` and
        ``decide_at`` (``search``, see :meth:`_fit_dimension`): a dimension
        whose fit from PCA's map reaches ``eps`` succeeds. Such a ``fit`` may
        end before its certificate (decided early), and is compared with PCA's
        map all the same.
        """
        k, rank = fit.W.shape
        if span.factor is not None or k >= rank or not np.isfinite(fit.r_min):
            return fit
        pca_map = np.eye(k, rank)
        # Any set of pairs bounds PCA's distortion from below (their extremes
        # lie within those of all pairs): the active set left by the fit
        # usually shows it above the fit's without a pass over all pairs,
        # which is costly for large n. With every pair active it is exact.
        if pairs.rows.size:
            r = pairs.ratios(pca_map)
            if _scale_free(r.min(), r.max()) > fit.distortion:
                return fit
        # The dimension search may have left the pairs at another dimension.
        pairs.reset(k)
        pca = _scale_free(*pairs.extremes(pca_map))
        if fit.distortion <= pca:
            return fit
        if self.verbose:
            print(
                f"[LearnedJLTransformer] k={k}: distortion {fit.distortion:.4f} "
                f"above PCA's map ({pca:.4f}); fitting again from it",
                flush=True,
            )
        again = self._fit_dimension(
            span,
            pairs,
            k,
            seed,
            curvature_tol,
            from_pca=True,
            initial_distortion=fit.initial_distortion,
            **search,
        )
        n_iter = fit.n_iter + again.n_iter
        if again.distortion >= fit.distortion:
            return fit._replace(n_iter=n_iter)
        return again._replace(n_iter=n_iter)

    def _run_stages(
        self,
        pairs,
        k,
        z,
        betas,
        rng,
        best,
        curvature_tol,
        *,
        z_start,
        first=0,
        n_iter=0,
        stages=(),
        record=(),
        final_beta=None,
        at_z=None,
        give_up_above=(),
        decide_at=None,
    ):
        """The sharpness stages ``first, ...`` from ``z``, the certificate, polish.

        ``best`` is the fit returned instead of the final stage's end point if that is
        not better (the start ``z_start``, or the point a search decided at); ``stages``
        the distortions at the ends of the stages already run, ``record`` their entries
        of ``stages_`` (see :func:`_stage_record`), ``final_beta`` the final stage's
        sharpness when it is one of them, and ``at_z`` the exact distortion at ``z``
        when resumed (``first > 0``; at the start it is ``best``'s). Each stage's
        sharpness is its entry of ``betas`` times :func:`_range_factor` of the
        distortion it starts from. With ``decide_at`` see :meth:`_fit_dimension`.
        """
        rank = pairs.X.shape[1]
        derandomized = self.algorithm == "derandomized"
        kwargs = {"derandomized": derandomized, "penalty": self.alpha}
        # A search candidate below the rank is decided at eps (at the rank an
        # isometry exists): during its stages where every pair is active.
        eps = decide_at if k < rank else None
        watched = eps is not None and pairs.complete
        # The exact distortion at z (known at the start and at stage ends).
        if first == 0:
            at_z = best.distortion
        stages, record = list(stages), list(record)
        n_iter_total = n_iter
        for stage in range(first, len(betas)):
            beta = betas[stage] * _range_factor(at_z)
            final_beta = beta
            final = stage == len(betas) - 1
            budget = {"tol": self.tol, "max_iter": self.max_iter}
            if watched:
                z, n_iter, decided = watched_stage(
                    pairs, z, k, beta, final, decide_at, kwargs, at_z, **budget
                )
            else:
                z, n_iter = solve_stage(
                    pairs, z, k, beta, rng=rng, final=final, **budget, **kwargs
                )
                decided = None
            n_iter_total += n_iter
            end = _stage_end(pairs, z, k, derandomized)
            at_z = end["distortion"]
            record.append((stage + 1, beta, at_z, n_iter))
            decided, resume = decide_after_stage(
                decided,
                stage,
                at_z,
                best.distortion,
                final=final,
                watched=watched,
                eps=eps,
            )
            # What the search returns if the candidate stops at this stage.
            stopped = best._replace(**end, n_iter=n_iter_total, certificate=False)
            where = _stage_line(k, stage, len(betas), beta, at_z)
            if decided is not None:
                if self.verbose:
                    print(
                        f"{where}, {n_iter} iterations; decided before the "
                        f"certificate and polish ({decided})",
                        flush=True,
                    )
                pending = (z, resume, z_start, rng, best, final_beta)
                return stopped._replace(
                    stages=tuple(stages),
                    record=tuple(record),
                    pending=pending,
                    decided=decided,
                )
            stages.append(at_z)
            if self.verbose:
                scale = end["sigma"] * np.sqrt(2.0 / (end["r_min"] + end["r_max"]))
                print(
                    f"{where}, scale {scale:.2e}, {n_iter} iterations, active "
                    f"set {pairs.rows.size} pairs",
                    flush=True,
                )
            # Only a stage that ended at a log-range of at least
            # SHARPNESS_RANGE says the candidate fails: below it, its soft-max
            # did not resolve the extremes (see _search.search_dimension).
            resolved = _range_factor(at_z) == 1.0
            if not final and resolved and gives_up(stage, at_z, give_up_above):
                return stopped._replace(
                    stopped_after=stage + 1, stages=tuple(stages), record=tuple(record)
                )
        fit = self._certify_and_pick(
            pairs, z, k, rng, best, curvature_tol, z_start, final_beta, n_iter_total
        )
        return fit._replace(stages=tuple(stages), record=tuple(record))

    def _certify_and_pick(
        self, pairs, z, k, rng, best, curvature_tol, z_start, beta, n_iter
    ):
        """Certify the final stage's end point ``z``; then :meth:`_pick`.

        The certificate is that of ``certify_stage`` on the final surrogate
        (sharpness ``beta``); shared by a fit run to its end and by
        :meth:`_finish`, so that both certify the same way.
        """
        derandomized = self.algorithm == "derandomized"
        objective = stage_objective(
            pairs, k, beta, derandomized=derandomized, penalty=self.alpha
        )
        z, n_cert, certificate = certify_stage(
            pairs,
            objective,
            z,
            k,
            tol=self.tol,
            curvature_tol=curvature_tol,
            max_iter=self.max_iter,
            rng=rng,
            verbose=self.verbose,
        )
        end = _stage_end(pairs, z, k, derandomized)
        if self.verbose:
            print(
                f"[LearnedJLTransformer] k={k} certificate: distortion "
                f"{end['distortion']:.4f}, grad norm {certificate.grad_norm:.2e}, "
                f"min eig {certificate.min_hessian_eig:.2e}, {n_cert} iterations",
                flush=True,
            )
        return self._pick(
            pairs,
            best,
            z_start,
            k,
            beta,
            rng,
            curvature_tol,
            M=end["W"],
            r_min=end["r_min"],
            r_max=end["r_max"],
            sigma=end["sigma"],
            distortion=end["distortion"],
            certificate=certificate,
            n_iter=n_iter + n_cert,
        )

    def _finish(self, pairs, fit, curvature_tol):
        """Complete a fit the dimension search decided before its end.

        The stages from the one it was decided in (restarted from the point
        decided at), the certificate and the polish. The point decided at is
        returned instead (with its certificate on the final surrogate) if
        the completed fit does not end below it.
        """
        z, stage, z_start, rng, best, final_beta = fit.pending
        k = fit.W.shape[0]
        pairs.reset(k)
        betas = _sharpness_stages(self.softmax_sharpness, self.n_stages)
        if fit.distortion < best.distortion:
            best, z_start = fit._replace(pending=None), z
        return self._run_stages(
            pairs,
            k,
            z,
            betas,
            rng,
            best,
            curvature_tol,
            z_start=z_start,
            first=stage,
            n_iter=fit.n_iter,
            stages=fit.stages,
            record=fit.record,
            final_beta=final_beta,
            # The exact distortion of the point decided at (measured there).
            at_z=fit.distortion,
        )

    def _pick(
        self,
        pairs,
        best,
        z_start,
        k,
        beta,
        rng,
        curvature_tol,
        *,
        M,
        r_min,
        r_max,
        sigma,
        distortion,
        certificate,
        n_iter,
    ):
        """The final stage's end point, polished, or the start (``best``)."""
        derandomized = self.algorithm == "derandomized"
        kwargs = {"derandomized": derandomized, "penalty": self.alpha}
        # Ties go to the final (sharper, certified) stage.
        if distortion <= best.distortion:
            best = best._replace(
                W=M,
                distortion=distortion,
                r_min=r_min,
                r_max=r_max,
                sigma=sigma,
                certificate=certificate,
            )
            if self.polish:
                W, polished, _ = polish_minimax(pairs, M, verbose=self.verbose)
                if polished < best.distortion:
                    r_min, r_max = pairs.extremes(W)
                    best = best._replace(
                        W=W, distortion=polished, r_min=r_min, r_max=r_max
                    )
        else:
            # The random start is returned: its certificate, on the same surrogate.
            objective = stage_objective(pairs, k, beta, **kwargs)
            best = best._replace(
                certificate=sosp_certificate(
                    objective,
                    z_start,
                    hessp=objective.hessp,
                    tol=self.tol,
                    curvature_tol=curvature_tol,
                    max_lanczos_iter=LANCZOS_ITER,
                    random_state=rng,
                )
            )
        return best._replace(n_iter=n_iter)

    def transform(self, X):
        """Project the data with the learned map.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data to embed.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components_)
            ``(X - mean_) @ components_.T``, of the same float dtype as ``X``.
            The offset by the training mean leaves every distance as the
            linear map gives it.
        """
        check_is_fitted(self)
        X = validate_data(
            self,
            X,
            accept_sparse=["csr", "csc"],
            reset=False,
            dtype=[np.float64, np.float32],
        )
        if sparse.issparse(X):
            # Centring would densify the rows: subtract the mean's image after
            # the product instead, in float64 so that the subtraction keeps
            # the centred images' digits in float32 as well.
            components = self.components_.astype(np.float64, copy=False)
            embedded = X @ components.T - components @ self.mean_
            return embedded.astype(X.dtype, copy=False)
        components = self.components_.astype(X.dtype, copy=False)
        return (X - self.mean_.astype(X.dtype, copy=False)) @ components.T

    def inverse_transform(self, X):
        """Map embedded points back to the input space via the pseudo-inverse.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_components_)
            Embedded data.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            ``X @ pinv(components_).T + mean_``: the preimage nearest the
            training mean.
        """
        check_is_fitted(self)
        X = check_array(X, accept_sparse=["csr", "csc"], dtype=[np.float64, np.float32])
        if X.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {X.shape[1]} features, but the embedding has "
                f"{self.n_components_} components."
            )
        inverse = getattr(self, "inverse_components_", None)
        if inverse is None:
            inverse = self._compute_inverse_components()
        mean = self.mean_.astype(X.dtype, copy=False)
        return safe_sparse_dot(X, inverse.T.astype(X.dtype, copy=False)) + mean

    def _compute_inverse_components(self):
        return linalg.pinv(self.components_, check_finite=False)

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


# The active set of working_set="auto": max(WORKING_SET, n_samples) pairs. The
# pairs that decide the extremes grow with the number of points, and a set too
# small for them is fitted while pairs outside it overtake the extremes. See
# the design note, "Size of the active set".
WORKING_SET = 4000

# A stage's sharpness is stated for ratios whose log-range log(r_max / r_min)
# is at least SHARPNESS_RANGE (a distortion of about 0.05). The soft-max's
# smoothing, up to 2 log(n_pairs) / beta, only counts against that range, so a
# stage that starts from a narrower one sharpens in proportion (by at most a
# factor, see _range_factor): otherwise it weighs nearly every pair alike. See
# the design note, "Sharpness against the range".
SHARPNESS_RANGE = 0.1


def _range_factor(distortion, max_factor=64.0):
    """How much a stage sharpens for the log-range of ``distortion`` (at least 1).

    ``distortion = (r_max - r_min) / (r_max + r_min)``, so the log-range
    ``log(r_max / r_min)`` is ``2 artanh(distortion)``; below
    ``SHARPNESS_RANGE`` the factor is ``SHARPNESS_RANGE / log-range``, at most
    ``max_factor``. A distortion of 1 (a collapsed pair), or an unknown one (no
    pair, the isometry start: inf), leaves the sharpness as it is.
    """
    if not distortion < 1.0:
        # r_min = 0 (an infinite range), or no distortion known (NaN, inf).
        return 1.0
    log_range = 2.0 * np.arctanh(distortion)
    if log_range >= SHARPNESS_RANGE:
        return 1.0
    return min(SHARPNESS_RANGE / max(log_range, 1e-300), max_factor)


def _record_fit_certificate(estimator, fit, curvature_tol):
    """Store the kept fit's certificate on ``estimator`` (warns if it fails)."""
    if fit.certificate is None:
        record_trivial_certificate(estimator, curvature_tol=curvature_tol)
        return
    record_certificate(
        estimator,
        grad_norm=fit.certificate.grad_norm,
        min_hessian_eig=fit.certificate.min_hessian_eig,
        tol=estimator.tol,
        curvature_tol=curvature_tol,
        # At least one: a start that is already stationary (the isometry at
        # k >= rank) still costs the certifying evaluation.
        n_iter=max(1, fit.n_iter),
        advice=(
            # The count above is over all stages; the budget is each one's.
            f"Increase max_iter (now {estimator.max_iter} per sharpness stage) "
            "or loosen tol / curvature_tol."
        ),
        # Past this function, LearnedJLTransformer.fit and sklearn's
        # _fit_context, to the caller.
        stacklevel=4,
    )


def _search_results(tried, eps):
    """``search_results_``: the dimension search's candidates, in the order tried.

    ``tried`` maps each candidate dimension to its fit as the search left it.
    """
    fits = list(tried.values())
    return {
        "n_components": np.array(list(tried), dtype=int),
        "distortion": np.array([fit.distortion for fit in fits]),
        "reached_eps": np.array([fit.distortion <= eps for fit in fits]),
        "stopped_after_stage": np.array([fit.stopped_after for fit in fits]),
        "decided": np.array([fit.decided for fit in fits], dtype=object),
    }


def _stage_record(record):
    """``stages_``: the sharpness stages of the run that produced the map."""
    columns = np.array(record, dtype=float).reshape(-1, 4)
    return {
        "stage": columns[:, 0].astype(int),
        "softmax_sharpness": columns[:, 1],
        "distortion": columns[:, 2],
        "n_iter": columns[:, 3].astype(int),
    }


def _sharpness_stages(softmax_sharpness, n_stages):
    """The stages' soft-max sharpness: up by 4x to ``softmax_sharpness``."""
    return [softmax_sharpness / 4.0 ** (n_stages - 1 - s) for s in range(n_stages)]


def _stage_end(pairs, z, k, derandomized):
    """The map at a stage's end point ``z``: the fields of ``_Fit`` it sets."""
    rank = pairs.X.shape[1]
    M = z[: k * rank].reshape(k, rank)
    sigma = abs(z[-1]) if derandomized else 0.0
    r_min, r_max = pairs.extremes(M)
    return {
        "W": M,
        "distortion": _scale_free(r_min, r_max),
        "r_min": r_min,
        "r_max": r_max,
        "sigma": sigma,
    }


def _stage_line(k, stage, n_stages, beta, distortion):
    """The start of a stage's line of verbose output."""
    return (
        f"[LearnedJLTransformer] k={k} stage {stage + 1}/{n_stages} "
        f"softmax_sharpness={beta:.4g}: distortion {distortion:.4f}"
    )


class _Fit(NamedTuple):
    """A learned map of one dimension, in the coordinates of the data's span."""

    W: np.ndarray  # (k, rank): the map on the span (uncalibrated)
    complement: np.ndarray  # (k, n_features): the start's action off the span
    distortion: float  # exact all-pairs scale-free distortion of W
    r_min: float  # smallest and largest ratio over all pairs (inf, -inf: none)
    r_max: float
    sigma: float  # Gaussian scale (0 for the direct algorithm)
    initial_distortion: float  # of the random start
    n_iter: int  # solver iterations over all stages
    certificate: object  # OptimizeResult of the returned point; None: no pair
    stopped_after: int = 0  # the dimension search gave up after this stage (0: no)
    stages: tuple = ()  # all-pairs distortion at the end of each stage run
    # (stage, sharpness, distortion, n_iter) of each stage run (see stages_)
    record: tuple = ()
    pending: tuple = None  # decided before its certificate (see _fit_dimension)
    decided: str = ""  # how the dimension search decided it early ("": it did not)
