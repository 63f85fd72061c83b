"""A learned, deterministic Johnson-Lindenstrauss embedding of a point set."""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy import linalg, sparse
from scipy.optimize import OptimizeResult
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from skderand._random import check_random_state
from skderand._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    validate_data,
)
from skderand.embedding._active import _ActivePairs, _scale_free, polish_minimax
from skderand.optimize import minimize_sosp, sosp_certificate

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
    map it started from, and usually has far less worst-case distortion than a
    random projection of the same dimension.

    With ``method="derandomized"`` the solver optimizes the distribution
    ``M + scale * E`` (``E`` standard Gaussian) of a Gaussian projection, with
    the derandomization lemma's penalty on ``scale``: at a second-order
    stationary point the scale is driven to zero and the mean ``M`` alone is the
    embedding [1]_. ``method="direct"`` optimizes the deterministic map ``M``
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
        the training pairs (a doubling then bisection search over the
        dimension). Unlike ``GaussianRandomProjection``, ``"auto"`` never fails:
        at a dimension equal to the rank of the centred data an exact isometry
        of the data exists and is returned.
    eps : float, default=0.1
        Target distortion for ``n_components="auto"``: every training pair ``i,
        j`` must satisfy ``(1 - eps) ||x_i - x_j||^2 <= ||f(x_i) - f(x_j)||^2
        <= (1 + eps) ||x_i - x_j||^2``. Unused when ``n_components`` is an int.
    method : {"direct", "derandomized"}, default="direct"
        ``"direct"`` optimizes the deterministic matrix. ``"derandomized"``
        optimizes the mean and the scale of a Gaussian matrix (closed-form
        moments of each pair's distance ratio) with the penalty
        ``scale_penalty * n_components * scale**2``; the scale goes to zero.
        ``"direct"`` is the default because it reaches slightly lower distortion
        in less time (see ``benchmarks/bench_jl.py``).
    sharpness : float, default=1000.0
        Final sharpness ``beta`` of the soft-max over pairs. The surrogate
        approximates the log of ``r_max / r_min`` (ratios of squared distances)
        to within ``2 log(n_pairs) / beta``.
    n_stages : int, default=4
        Number of sharpness stages; stage ``s`` uses ``sharpness / 4**(n_stages -
        1 - s)``. Raising the sharpness gradually avoids the poor local optima
        of a sharp soft-max started from a random map.
    scale_penalty : float, default=0.1
        Weight of the lemma's penalty on the Gaussian scale
        (``method="derandomized"`` only). Any positive value drives the scale to
        zero at a second-order stationary point; larger values do it faster.
    working_set : int, default=4000
        Size of the active set. With at most this many pairs, the objective
        sees every pair. Beyond, it sees an *active set*: a fixed random sample
        of ``working_set // 2`` pairs (the bulk of the ratios, which the soft-max
        weighs at low sharpness) plus, each round, up to ``working_set // 4``
        pairs per side whose ratios are near the current extremes. Between
        rounds (at most 40 solver iterations each) the exact extremes over *all*
        pairs are found, and the pairs outside the set that overtake the set's
        extremes join it; a stage ends when none does and the solver has
        converged. The exact extremes come from a blocked pass over all pairs
        (BLAS products of row blocks, memory of one block) that keeps candidate
        pairs near the extremes; until the map has moved enough for another
        pair to overtake them (a bound by ``||M^T M - M_0^T M_0||``), the
        candidates alone give the exact extremes and no new pass is needed.
        The squared distances of all pairs are stored while they fit in 1 GiB
        (in float32 beyond 256 MiB; recomputed block by block beyond).
    polish : bool, default=True
        After the final stage, minimize the true worst distortion (not its
        smoothing) on the active pairs nearest the extremes by sequential
        linear programming with a trust region (``scipy.optimize.linprog``,
        HiGHS): each LP minimizes the spread of the linearized ratios. The
        polished map is kept only if its all-pairs distortion is lower. It is a
        point where no trust-region LP step within the budget lowers the
        distortion of those pairs; the certificate (``grad_norm_``,
        ``min_hessian_eig_``) stays that of the final stage's surrogate, at the
        point the polish started from.
    max_iter : int, default=1000
        Maximum number of solver iterations per sharpness stage (shared by the
        stage's active-set rounds, each of at most 40 iterations).
    tol : float, default=1e-2
        Gradient-norm tolerance of the final stage's certificate (the curvature
        tolerance is ``sqrt(tol)``). The surrogate is of order one (a log of
        ratios) and so are the entries of ``sqrt(k) * components_``; at
        sharpness 1000 its Hessian is badly conditioned, and tighter
        tolerances cost many iterations for distortion changes in the third
        decimal.
    compute_inverse_components : bool, default=False
        Compute and store the pseudo-inverse of ``components_`` in fit, as
        ``inverse_components_``; otherwise :meth:`inverse_transform` computes it.
    random_state : int, RandomState instance or None, default=None
        Seeds the starting Gaussian projection, the sampled pairs and the
        certificate's Lanczos vectors. Pass an int for reproducible output;
        ``None`` seeds from the operating system on every fit (numpy's global
        generator is never drawn from).
    verbose : int, default=0
        Print the distortion and the certificate after each stage.

    Attributes
    ----------
    components_ : ndarray of shape (n_components_, n_features)
        The learned map, calibrated so that the squared-distance ratios of the
        training pairs are centred at 1 (``r_min + r_max = 2``).
    n_components_ : int
        Dimension of the embedding (the one found when ``n_components="auto"``).
    distortion_ : float
        Worst-case distortion of the training pairs after calibration, the
        scale-free ``(r_max - r_min) / (r_max + r_min)``: every training pair
        satisfies the ``(1 +- distortion_)`` bound on squared distances.
    initial_distortion_ : float
        The same for the random Gaussian projection the fit starts from (when
        ``n_components_`` is at least the rank of the centred data, the fit
        starts from an exact isometry of their span instead).
    scale_ : float
        Final Gaussian scale of the distribution ``M + scale * E`` in the units
        of ``components_`` (0 for ``method="direct"``). ``n_components_ *
        scale_**2`` is the noise's share of the expected squared-distance ratio.
    n_iter_ : int
        Solver iterations over all stages.
    grad_norm_ : float
        Certificate: gradient norm of the final stage's surrogate (its sharpness
        and its active set of pairs) at the stage's end point, the point the
        polish started from (NaN if the final stage did not improve on the
        random start, which is then returned).
    min_hessian_eig_ : float
        Certificate: smallest Hessian eigenvalue of the same surrogate there
        (Lanczos). With ``grad_norm_`` it certifies a second-order stationary
        point of the *smooth surrogate*; it does not certify a global optimum of
        the worst-case distortion. The surrogate is invariant under the map's
        overall scale except for the centring term, so one eigenvalue is small
        but not negative.
    certified_ : bool
        Whether ``grad_norm_ <= tol`` and ``min_hessian_eig_ >= -sqrt(tol)``.
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
    every linear map keeps them coincident. One evaluation of the surrogate
    costs ``O(n_used * rank * k + n_active * k)`` for the ``n_active`` pairs of
    the active set and the ``n_used`` points they touch (``rank``: of the
    centred data); a blocked pass over all pairs costs ``O(n^2 k)`` and is
    needed only when the map has moved enough for a pair outside the candidate
    set to overtake the extremes. ``distortion_`` is always exact over all
    pairs: the pass's candidates are re-measured pair by pair. The Johnson-Lindenstrauss
    lemma [2]_ guarantees distortion ``eps`` at ``k = O(log(n) / eps**2)`` for
    a random map, and Larsen and Nelson [3]_ show that no map does better for
    worst-case point sets; real data often leaves much more room.

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
        "method": [StrOptions({"direct", "derandomized"})],
        "sharpness": [Interval(Real, 0, None, closed="neither")],
        "n_stages": [Interval(Integral, 1, None, closed="left")],
        "scale_penalty": [Interval(Real, 0, None, closed="neither")],
        "working_set": [Interval(Integral, 8, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "polish": ["boolean"],
        "compute_inverse_components": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_components="auto",
        *,
        eps=0.1,
        method="direct",
        sharpness=1000.0,
        n_stages=4,
        scale_penalty=0.1,
        working_set=4000,
        max_iter=1000,
        tol=1e-2,
        polish=True,
        compute_inverse_components=False,
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.eps = eps
        self.method = method
        self.sharpness = sharpness
        self.n_stages = n_stages
        self.scale_penalty = scale_penalty
        self.working_set = working_set
        self.max_iter = max_iter
        self.tol = tol
        self.polish = polish
        self.compute_inverse_components = compute_inverse_components
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the embedding of the training points.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training points. Sparse input is densified for the fit.
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
        Xd = X.toarray() if sparse.issparse(X) else X
        # Distances do not depend on the origin; centring keeps the Gram-matrix
        # form of the squared distances accurate.
        # C order: the same BLAS paths (hence bit-identical fits) for every layout.
        Xc = np.ascontiguousarray(Xd, dtype=np.float64)
        Xc = Xc - Xc.mean(axis=0)
        # Distance ratios do not depend on the data's scale either; working at
        # unit scale keeps squared distances of 1e-150-sized data from
        # underflowing (and of 1e150-sized data from overflowing).
        data_scale = np.abs(Xc).max()
        if data_scale > 0:
            Xc /= data_scale
        rng = check_random_state(self.random_state)
        seed = rng.randint(np.iinfo(np.int32).max)
        # Training distances only see the map on the span of the centred data:
        # optimize there (coordinates Xc @ basis, far fewer variables when
        # n_samples < n_features) and keep the random start's action on the
        # orthogonal complement, which matters for new points only.
        basis = _span_basis(Xc)
        Xs = Xc @ basis

        # Small products in a long loop: BLAS threads cost more than they save.
        with threadpool_limits(1):
            pairs = _ActivePairs(Xs, self.working_set)
            if self.n_components == "auto":
                fit = self._search_dimension(basis, pairs, seed)
            else:
                fit = self._fit_dimension(basis, pairs, self.n_components, seed)

        if fit.get("warning"):
            # stacklevel: past this fit and sklearn's _fit_context, to the caller.
            warnings.warn(fit["warning"], ConvergenceWarning, stacklevel=3)
        self.components_ = fit["components"].astype(dtype, copy=False)
        self.n_components_ = self.components_.shape[0]
        self.distortion_ = fit["distortion"]
        self.initial_distortion_ = fit["initial_distortion"]
        self.scale_ = fit["scale"]
        self.n_iter_ = max(1, fit["n_iter"])
        self.grad_norm_ = fit["grad_norm"]
        self.min_hessian_eig_ = fit["min_hessian_eig"]
        self.certified_ = fit["certified"]
        # Time split and active-set size (benchmarks/bench_jl.py reports them).
        self._fit_stats = dict(pairs.stats)
        if self.compute_inverse_components:
            self.inverse_components_ = self._compute_inverse_components()
        return self

    def _fit_dimension(self, basis, pairs, k, seed):
        """Learn a ``k``-dimensional map: the sharpness stages.

        Returns the final stage's end point (polished, if that lowers the
        all-pairs distortion) with the final stage's certificate, or the start
        (uncertified) if the final stage did not improve on it.
        """
        rng = np.random.RandomState(seed)
        n_features, rank = basis.shape
        pairs.reset(k)
        derandomized = self.method == "derandomized"
        start = rng.standard_normal((k, n_features)) / np.sqrt(k)
        # M is the map restricted to the span, in the basis' coordinates.
        M = start @ basis
        complement = start - M @ basis.T
        sigma = 1.0 / np.sqrt(k) if derandomized else 0.0
        r_min, r_max = pairs.extremes(M)
        initial = _scale_free(r_min, r_max)
        betas = [
            self.sharpness / 4.0 ** (self.n_stages - 1 - s)
            for s in range(self.n_stages)
        ]
        best = (initial, M, r_min, r_max, sigma)
        if not np.isfinite(r_min):
            # No pair to embed: the surrogate is identically zero, so any map is
            # stationary with zero gradient and zero curvature.
            return self._finish(
                initial, 0, best, basis, complement, _EMPTY_SURROGATE_CERTIFICATE
            )
        if k >= rank:
            # An isometry of the span exists, W = [I; 0]: all ratios equal, a
            # global minimum of every stage's surrogate (LSE(t) + LSE(-t) is
            # smallest at constant t). One stage from it only certifies it, and
            # its end point is returned whatever round-off does to the distortion.
            M = np.eye(k, rank)
            sigma = 0.0
            betas = betas[-1:]
            best = (np.inf, M, r_min, r_max, sigma)
        best_certificate = None
        n_iter_total = 0
        z = M.ravel()
        if derandomized:
            z = np.append(z, sigma)
        kwargs = {"derandomized": derandomized, "penalty": self.scale_penalty}
        for stage, beta in enumerate(betas):
            final = stage == len(betas) - 1
            z, n_iter = pairs.solve_stage(
                z,
                k,
                beta,
                max_iter=self.max_iter,
                tol=self.tol,
                rng=rng,
                **kwargs,
            )
            res = None
            if final:
                # The certificate: the surrogate of the final active set. The
                # certifying solver gets a short budget from the rounds' end
                # point; on a fixed active set a long run would fit those pairs
                # while others overtake the extremes, so its point is kept only
                # if the all-pairs distortion did not rise, and otherwise the
                # rounds' end point is certified as it is.
                objective = pairs.objective(k, beta, **kwargs)
                res = _solve(
                    objective,
                    z,
                    self.tol,
                    min(CERTIFY_ITER, self.max_iter),
                    rng,
                    {"max_lanczos_iter": 100},
                )
                before = _scale_free(*pairs.extremes(z[: k * rank].reshape(k, rank)))
                after = _scale_free(*pairs.extremes(res.x[: k * rank].reshape(k, rank)))
                if after <= before:
                    z = res.x
                    n_iter += res.n_iter
                else:
                    res = sosp_certificate(
                        objective,
                        z,
                        tol=self.tol,
                        max_lanczos_iter=100,
                        random_state=rng,
                    )
            n_iter_total += n_iter
            M = z[: k * rank].reshape(k, rank)
            sigma = abs(z[-1]) if derandomized else 0.0
            r_min, r_max = pairs.extremes(M)
            distortion = _scale_free(r_min, r_max)
            if self.verbose:
                cert = (
                    f", grad norm {res.grad_norm:.2e}, min eig "
                    f"{res.min_hessian_eig:.2e}"
                    if res is not None
                    else ""
                )
                print(
                    f"[LearnedJLTransformer] k={k} stage {stage + 1}/{len(betas)} "
                    f"sharpness={beta:.4g}: distortion {distortion:.4f}, "
                    f"scale {sigma * np.sqrt(2.0 / (r_min + r_max)):.2e}{cert}, "
                    f"{n_iter} iterations, active set {pairs.rows.size} pairs"
                )
            # Ties go to the later (sharper, better certified) stage.
            if final and distortion <= best[0]:
                best = (distortion, M, r_min, r_max, sigma)
                best_certificate = res
        if best_certificate is not None and self.polish:
            W, distortion, _ = polish_minimax(
                pairs, best[1], max_constraints=POLISH_CONSTRAINTS, verbose=self.verbose
            )
            if distortion < best[0]:
                r_min, r_max = pairs.extremes(W)
                best = (distortion, W, r_min, r_max, best[4])
        return self._finish(
            initial, n_iter_total, best, basis, complement, best_certificate
        )

    def _finish(self, initial, n_iter, best, basis, complement, certificate):
        distortion, W, r_min, r_max, sigma = best
        M = W @ basis.T + complement
        # Calibrate: ratios centred at 1, so the scale-free distortion is the
        # (1 +- eps) distortion of the returned map.
        centre = (r_min + r_max) / 2.0 if np.isfinite(r_min) and r_max > 0 else 1.0
        factor = 1.0 / np.sqrt(centre)
        fit = {
            "components": M * factor,
            "distortion": distortion,
            "initial_distortion": initial,
            "scale": float(sigma * factor),
            "n_iter": n_iter,
            "grad_norm": np.nan,
            "min_hessian_eig": np.nan,
            "certified": False,
            "warning": (
                "No stage improved on the random starting map, which is returned "
                f"uncertified. Increase max_iter (now {self.max_iter})."
            ),
        }
        if certificate is not None:
            fit["grad_norm"] = float(certificate.grad_norm)
            fit["min_hessian_eig"] = float(certificate.min_hessian_eig)
            fit["certified"] = bool(certificate.success)
            fit["warning"] = None
            if not certificate.success:
                fit["warning"] = (
                    "The returned map is not a certified second-order stationary "
                    f"point of its stage's surrogate (gradient norm "
                    f"{certificate.grad_norm:.3e}, tol {self.tol:.1e}; smallest "
                    f"Hessian eigenvalue {certificate.min_hessian_eig:.3e}, "
                    f"curvature tolerance {np.sqrt(self.tol):.1e}). Increase "
                    f"max_iter (now {self.max_iter}) or loosen tol."
                )
        return fit

    def _search_dimension(self, basis, pairs, seed):
        """Smallest ``k`` whose learned map reaches ``eps``: doubling, bisection."""
        cache = {}

        def fit_k(k):
            if k not in cache:
                cache[k] = self._fit_dimension(basis, pairs, k, seed)
                if self.verbose:
                    print(
                        f"[LearnedJLTransformer] n_components={k}: distortion "
                        f"{cache[k]['distortion']:.4f} (eps={self.eps})"
                    )
            return cache[k]

        # At the rank of the centred data an isometry of its span exists (and
        # _fit_dimension returns it), so the search is bounded and succeeds.
        k_max = basis.shape[1]
        lo, hi = 0, k_max  # the dimension lo fails (0 trivially), hi succeeds
        k = 1
        while k < k_max:
            if _ok(fit_k(k), self.eps):
                hi = k
                break
            lo = k
            k *= 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _ok(fit_k(mid), self.eps):
                hi = mid
            else:
                lo = mid
        return fit_k(hi)

    def transform(self, X):
        """Project the data with the learned map.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data to embed.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components_)
            The embedded data, of the same float dtype as ``X``.
        """
        check_is_fitted(self)
        X = validate_data(
            self,
            X,
            accept_sparse=["csr", "csc"],
            reset=False,
            dtype=[np.float64, np.float32],
        )
        return safe_sparse_dot(X, self.components_.T.astype(X.dtype, copy=False))

    def inverse_transform(self, X):
        """Map embedded points back to the input space via the pseudo-inverse.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_components_)
            Embedded data.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            ``X @ pinv(components_).T``: the least-norm preimage.
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
        return safe_sparse_dot(X, inverse.T.astype(X.dtype, copy=False))

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


# With no pair the surrogate is the zero function: its gradient and Hessian are
# exactly zero everywhere, so every map is a second-order stationary point.
# Iterations the certifying solver may add to the final stage's rounds.
CERTIFY_ITER = 100

# Pairs per side in each linear program of the polish: enough for the minimax's
# active constraints on the benchmark sets, few enough for HiGHS to stay fast.
POLISH_CONSTRAINTS = 50

_EMPTY_SURROGATE_CERTIFICATE = OptimizeResult(
    grad_norm=0.0, min_hessian_eig=0.0, success=True
)


def _ok(fit, eps):
    return fit["distortion"] <= eps


def _span_basis(Xc):
    """Orthonormal basis (columns) of the row space of the centred data."""
    _, sv, Vt = linalg.svd(Xc, full_matrices=False, check_finite=False)
    tol = sv.max(initial=0.0) * max(Xc.shape) * np.finfo(np.float64).eps
    # At least one direction, so that constant data still has a (trivial) map.
    rank = max(1, int(np.sum(sv > tol)))
    return Vt[:rank].T


def _solve(objective, z, tol, max_iter, rng, options):
    # The estimator reports its own ConvergenceWarning, naming its parameters,
    # from the final stage's certificate.
    return minimize_sosp(
        objective,
        z,
        method="lbfgs",
        tol=tol,
        max_iter=max_iter,
        random_state=rng,
        warn=False,
        options=options,
    )
