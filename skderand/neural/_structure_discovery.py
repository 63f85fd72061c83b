"""Structure discovery with smooth networks trained to certified SOSPs.

A multi-index model ``y = h(U x) + noise`` depends on ``x`` only through a few
directions, the rows of ``U``. Train any smooth network whose first layer is
``W x + b`` (all parameters trainable, biases included) with weight decay on
``W`` to an approximate second-order stationary point: by the derandomization
lemma of Tsikouras et al. (ICLR 2026) the part of ``W`` perpendicular to
``span(U)`` is driven to zero, so the top right singular vectors of ``W`` span
the subspace ``y`` depends on.
"""

import numbers

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, softmax
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
    is_classifier,
)
from sklearn.model_selection import check_cv
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils import resample
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted

from skderand._random import draw_seeds
from skderand._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    validate_data,
)
from skderand._threads import one_blas_thread
from skderand.neural._network import _loss, _Network
from skderand.optimize import minimize_sosp
from skderand.optimize._certificate import record_certificate

__all__ = ["StructureDiscoveryClassifier", "StructureDiscoveryRegressor"]

# Below this many multiply-adds in the first layer's product, BLAS threads cost
# more than they save (a busy machine makes it worse): run such fits on one thread.
_SINGLE_THREAD_WORK = 2e7


# Default decays for ``alpha="auto"``: 1e-3 (what the planted teachers at
# n = 2000 want) up to 1 (a near-constant fit on standardized targets), half a
# decade apart, which the held-out curves resolve well enough; smaller decays
# cost the most iterations (the network fits noise slowly).
_DEFAULT_ALPHAS = np.logspace(-3, 0, 7)

# The path runs from the smallest decay up. The other way round, the largest
# decay collapses the first layer and the output weights to zero together: for an
# even link such as (u.x)^2 that point is a degenerate saddle (zero gradient, no
# negative curvature), which every later fit would stay at.
# Fits along the path are only compared with each other: L-BFGS to this
# infinity-norm gradient tolerance, warm started from the previous decay, within
# this many iterations (fewer lose planted dimensions). The certificate is
# computed once, for the final refit.
_PATH_GTOL = 1e-3
_PATH_MAX_ITER = 100
# The path's products run in single precision (several times the speed of
# double on the first layer's products and the activations; design note,
# "Single precision"); the certified refit runs in double.
_PATH_DTYPE = np.float32
# The path stops once this many decays in a row score below the best one by
# more than the one-standard-error rule allows (see _as_good).
_PATH_PATIENCE = 2
# Gradient tolerance (largest entry) of the single-precision fit on all the
# rows that starts the certified refit: tight enough that the double-precision
# solver often has nothing left to do but the certificate.
_REFIT_START_GTOL = 1e-5
# L-BFGS correction pairs of that fit (scipy's default, 10, along the path): its
# hundreds of iterations on all the rows are where a longer memory pays.
_REFIT_START_MEMORY = 40
# The networks restricted to a rank are refitted to a tighter gradient than the
# path's (within as many iterations): a loose refit scores a sufficient rank
# below the full network it is cut from.
_RANK_GTOL = 1e-4

_REGRESSION_LOSSES = ("squared_error", "pseudo_huber")

# Held-out scores closer than this fraction of a constant prediction's held-out
# loss (0.005 of R^2), or than one standard error if larger, count as equal
# when choosing a decay or a rank.
_SCORE_TOL = 5e-3


def _whitening(X, whiten):
    """Mean and a map ``M``: :func:`_whiten` makes ``X`` standardized or white.

    ``M`` is a matrix (``(X - mean) @ M`` is white) with ``whiten``, else the
    vector of inverse standard deviations (a diagonal matrix, applied
    elementwise: a dense one would cost ``n d^2``).

    Features are first scaled to unit variance (constant ones to zero), so that
    the decay and the relative floor on the correlation eigenvalues are
    unit-free; with ``whiten`` the correlations are removed too. Directions of
    (numerically) zero variance, such as duplicated features, are mapped to zero
    instead of being blown up: a pseudo-inverse square root, never a NaN.
    """
    mean = X.mean(axis=0)
    Xc = X - mean
    std = Xc.std(axis=0)
    constant = std <= 1e-12 * np.maximum(np.abs(mean), np.finfo(np.float64).tiny)
    inv_std = np.where(constant, 0.0, 1.0 / np.where(constant, 1.0, std))
    if not whiten:
        return mean, inv_std
    Z = Xc * inv_std
    cov = Z.T @ Z / X.shape[0]
    eigval, eigvec = np.linalg.eigh(cov)
    keep = eigval > 1e-8 * max(eigval[-1], 0.0)
    inv_sqrt = np.zeros_like(eigval)
    inv_sqrt[keep] = 1.0 / np.sqrt(eigval[keep])
    matrix = (inv_std[:, None] * eigvec) @ (inv_sqrt[:, None] * eigvec.T)
    return mean, matrix


def _whiten(X, mean, matrix):
    return _apply(X - mean, matrix)


def _apply(A, matrix):
    """``A @ M`` for the map ``M`` of :func:`_whitening` (a matrix or a diagonal)."""
    return A * matrix if matrix.ndim == 1 else A @ matrix


def _target_scaling(Y):
    """Mean and scale (the standard deviation, 1 where it is 0) of targets."""
    std = Y.std(axis=0)
    return Y.mean(axis=0), np.where(std > 0, std, 1.0)


def _validation_score(loss, out, Y, huber_delta=1.0):
    """Held-out score, higher is better.

    For the squared error, R^2 averaged over outputs, that of
    :func:`sklearn.metrics.r2_score` (invariant to the target scaling, so it is
    computed on the standardized targets); otherwise minus the mean training
    loss: the log-loss of :func:`sklearn.metrics.log_loss`, or the pseudo-Huber
    loss, whose point is that outliers do not dominate it (they would dominate
    R^2). So ``alpha="auto"`` ranks decays as a
    :class:`~sklearn.model_selection.GridSearchCV` scored by ``"r2"`` or
    ``"neg_log_loss"`` does.
    """
    if loss == "squared_error":
        sse = np.sum((Y - out) ** 2, axis=0)
        sst = np.sum((Y - Y.mean(axis=0)) ** 2, axis=0)
        constant = sst == 0
        r2 = 1.0 - sse / np.where(constant, 1.0, sst)
        r2 = np.where(constant, np.where(sse == 0, 1.0, 0.0), r2)
        return float(np.mean(r2))
    loss_and_derivatives, _ = _loss(loss, huber_delta)
    losses = loss_and_derivatives(out, Y)[0]
    if loss == "pseudo_huber":
        return -float(np.mean(losses))
    return -float(np.mean(np.sum(losses, axis=1)))


class _DecayPath:
    """A network fitted along increasing first-layer decays, warm started.

    Only the first-layer decay changes along the path; each fit starts where
    the previous, less regularized one ended, so it needs few iterations and
    follows one branch of solutions (the one that fits the signal) instead of
    a new random one per decay. The fits are loose (L-BFGS to ``_PATH_GTOL``,
    products in ``_PATH_DTYPE``): they are only compared with each other, and
    the certificate is computed once, for the final refit.
    """

    def __init__(self, net, theta, X, Y, single_thread):
        self.net, self.theta = net, theta
        self.X = np.asarray(X, dtype=_PATH_DTYPE)
        self.Y = np.asarray(Y, dtype=_PATH_DTYPE)
        self.single_thread = single_thread

    def fit(self, alpha, *, gtol=_PATH_GTOL, max_iter=_PATH_MAX_ITER, memory=10):
        self.net.set_first_decay(alpha)
        with one_blas_thread(self.single_thread):
            result = minimize(
                lambda t: self.net.loss_grad(t, self.X, self.Y),
                self.theta,
                jac=True,
                method="L-BFGS-B",
                options={"maxiter": max_iter, "gtol": gtol, "maxcor": memory},
            )
        self.theta, self.n_iter = result.x, result.nit
        return self.theta


class _Fold:
    """One cross-validation split: a decay path on the training part, scored
    on the held-out part.

    Whitening and target scaling come from the training part alone, as they
    would for an estimator fitted on it (what a ``GridSearchCV`` does).
    """

    def __init__(
        self,
        X,
        Y,
        train,
        test,
        *,
        layer_sizes,
        network_params,
        alpha,
        whiten,
        seed,
        single_thread,
    ):
        self.loss = network_params["loss"]
        mean, matrix = _whitening(X[train], whiten)
        X_train = _whiten(X[train], mean, matrix)
        self.X_test = _whiten(X[test], mean, matrix).astype(_PATH_DTYPE)
        Y_train, self.Y_test = Y[train], Y[test]
        if self.loss in _REGRESSION_LOSSES:
            y_mean, y_scale = _target_scaling(Y_train)
            Y_train, self.Y_test = (
                (Y_train - y_mean) / y_scale,
                (self.Y_test - y_mean) / y_scale,
            )
        self.network_params = network_params
        self.single_thread = single_thread
        # The held-out loss of the best constant prediction: the unit in which
        # score differences are judged (R^2 is already in that unit).
        self.null_loss = 1.0
        if self.loss != "squared_error":
            # Clipped as sklearn's log_loss clips: a class may miss a fold.
            prior = np.clip(Y_train.mean(axis=0), 1e-15, 1.0 - 1e-15)
            if self.loss == "pseudo_huber":
                constant = prior
            elif self.loss == "binary_log_loss":
                constant = np.log(prior) - np.log1p(-prior)
            else:
                constant = np.log(prior)
            out = np.broadcast_to(constant, self.Y_test.shape)
            self.null_loss = -_validation_score(
                self.loss, out, self.Y_test, network_params["huber_delta"]
            )
        net = _Network(layer_sizes, **network_params, alpha=alpha)
        theta = net.init(np.random.default_rng(seed))
        self.path = _DecayPath(net, theta, X_train, Y_train, single_thread)
        self.thetas = []

    def fit_and_score(self, alpha):
        """Fit at the next decay: the parameters and their held-out score.

        Run in a joblib worker, which may be another process: the caller
        records the result with :meth:`record`, since changes made to ``self``
        there are lost.
        """
        theta = self.path.fit(alpha)
        out = self.path.net.forward(theta, self.X_test)
        return theta, self._score(out)

    def record(self, theta):
        self.path.theta = theta
        self.thetas.append(theta)

    def _score(self, out):
        return _validation_score(
            self.loss,
            out.astype(np.float64),
            self.Y_test,
            self.network_params["huber_delta"],
        )

    def rank_score(self, step, alpha, rank):
        """Held-out score of the network restricted to ``rank`` input directions.

        The first layer is cut to its top ``rank`` right singular vectors ``B``
        and the network refitted (loosely, from the cut one) on ``B x``: a
        network whose first layer has rank ``rank``. Cutting without the refit
        judged sufficient ranks insufficient whenever the small singular
        directions of a fold's network carried part of the fit.
        """
        net = self.path.net
        weights, biases = net.unpack(self.thetas[step].copy())
        basis = np.linalg.svd(weights[0], full_matrices=False)[2][:rank]
        small = _Network(
            (rank, *net.layer_sizes[1:]), **self.network_params, alpha=alpha
        )
        theta = small.pack([weights[0] @ basis.T, *weights[1:]], biases)
        path = _DecayPath(
            small, theta, self.path.X @ basis.T, self.path.Y, self.single_thread
        )
        return self._score(
            small.forward(
                path.fit(alpha, gtol=_RANK_GTOL),
                self.X_test @ basis.T,
            )
        )


def _as_good(scores, best_scores, unit):
    """Whether per-fold ``scores`` are as good as ``best_scores`` on held-out data.

    True when the mean shortfall is within one standard error of the per-fold
    differences, or within ``_SCORE_TOL * unit`` (``unit`` is the held-out loss
    of a constant prediction): the one-standard-error rule of model selection,
    which takes the simpler model whenever held-out data cannot tell it from
    the best one.
    """
    diff = np.asarray(best_scores) - np.asarray(scores)
    stderr = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else 0.0
    return diff.mean() <= max(stderr, _SCORE_TOL * unit)


def _smallest_sufficient_rank(rank_scores, full_scores, max_rank, unit):
    """Smallest rank whose restricted networks score as well as the full ones.

    ``rank_scores(rank)`` returns the held-out scores of the folds' networks
    restricted to ``rank`` input directions, ``full_scores`` those of the full
    networks; "as well" is :func:`_as_good`. The full rank is sufficient by
    definition; sufficiency is taken to be monotone in the rank. Ranks 1, 2,
    4, ... are tried until one is sufficient, then a bisection between it and
    the last insufficient one: the small ranks, the usual answer and the
    cheapest refits, come first, and a rank ``k`` takes about ``2 log2(k)``
    tries.

    Returns the rank and a dict of the scores evaluated, by rank.
    """
    evaluated = {}

    def sufficient(rank):
        evaluated[rank] = np.asarray(rank_scores(rank))
        return _as_good(evaluated[rank], full_scores, unit)

    low, high = 1, max_rank  # high is sufficient, everything below low is not
    rank = 1
    while rank < max_rank:
        if sufficient(rank):
            high = rank
            break
        low, rank = rank + 1, 2 * rank
    while low < high:
        middle = (low + high) // 2
        if sufficient(middle):
            high = middle
        else:
            low = middle + 1
    return high, evaluated


def _rows_of(A, rows):
    """``A[rows]``, or ``A`` itself when ``rows`` (or ``A``) is None."""
    return A if rows is None or A is None else A[rows]


def _fit_one(
    X, Y, seed, theta0, *, layer_sizes, network_params, solver_params, single_thread
):
    """One certified fit, from ``theta0`` or a fresh network drawn from ``seed``."""
    net = _Network(layer_sizes, **network_params)
    if theta0 is None:
        theta0 = net.init(np.random.default_rng(seed))
    with one_blas_thread(single_thread):
        res = minimize_sosp(
            lambda theta: net.loss_grad(theta, X, Y),
            theta0,
            hessp=lambda theta, v: net.hessp(theta, v, X, Y),
            random_state=seed,
            warn=False,
            **solver_params,
        )
    res.weights, res.biases = net.unpack(res.x)
    return res


class _BaseStructureDiscovery(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """Shared fit: whitening, restarts, certificate and subspace read-out."""

    _parameter_constraints: dict = {
        "hidden_layer_sizes": [
            "array-like",
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "activation": [StrOptions({"softplus", "tanh", "sigmoid", "gelu"})],
        "softplus_sharpness": [Interval(numbers.Real, 0, None, closed="neither")],
        "alpha": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="left")],
        "alphas": [None, "array-like"],
        "cv": ["cv_object"],
        "cv_max_samples": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "alpha_other": [Interval(numbers.Real, 0, None, closed="left")],
        "freeze_first_bias": ["boolean"],
        "whiten": ["boolean"],
        "n_components": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "solver": [StrOptions({"lbfgs", "pgd"})],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "curvature_tol": [None, Interval(numbers.Real, 0, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_jobs": [None, numbers.Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def _hidden_sizes(self):
        sizes = self.hidden_layer_sizes
        sizes = [sizes] if isinstance(sizes, numbers.Integral) else list(sizes)
        if len(sizes) == 0 or not all(
            isinstance(s, numbers.Integral) and s >= 1 for s in sizes
        ):
            raise ValueError(
                "hidden_layer_sizes must be a positive integer or a non-empty "
                f"sequence of positive integers, got {self.hidden_layer_sizes!r}."
            )
        return [int(s) for s in sizes]

    def _fit_network(self, X, Y, loss, huber_delta=1.0, split_labels=None):
        """Fit on validated float64 ``X`` and 2-d internal targets ``Y``.

        Three steps: choose the decay (and the rank) on held-out folds, refit
        to a certified SOSP on all the data, read the subspace off the first
        layer. ``split_labels`` are the targets the folds of ``cv`` are drawn
        from (class labels stratify a classifier's folds).
        """
        hidden = self._hidden_sizes()
        n_samples, n_features = X.shape
        max_components = min(n_features, hidden[0])
        if self.n_components != "auto" and self.n_components > max_components:
            raise ValueError(
                f"n_components={self.n_components} is larger than the rank the "
                f"first layer can have, min(n_features, hidden_layer_sizes[0]) = "
                f"{max_components}."
            )
        layer_sizes = (n_features, *hidden, Y.shape[1])
        network_params = dict(
            activation=self.activation,
            softplus_sharpness=self.softplus_sharpness,
            loss=loss,
            alpha_other=self.alpha_other,
            train_first_bias=not self.freeze_first_bias,
            huber_delta=huber_delta,
        )
        seeds = draw_seeds(self.random_state, size=self.n_init)
        single_thread = n_samples * n_features * hidden[0] < _SINGLE_THREAD_WORK
        # Held for the whole fit, so that the many short path fits inside enter
        # it at the cost of a counter (their own entries matter only in worker
        # processes, which do not share this one's limit).
        with one_blas_thread(single_thread):
            self.mean_, self._whitening = _whitening(X, self.whiten)
            Xw = _whiten(X, self.mean_, self._whitening)
            theta0, start_iter = None, 0
            if self.alpha == "auto" or self.n_components == "auto":
                rows = self._cv_rows(n_samples, split_labels, seeds[0])
                self._cross_validate(
                    _rows_of(X, rows),
                    _rows_of(Y, rows),
                    _rows_of(split_labels, rows),
                    seed=seeds[0],
                    max_components=max_components,
                    layer_sizes=layer_sizes,
                    network_params=network_params,
                    single_thread=single_thread,
                )
                theta0, start_iter = self._path_start(
                    Xw, Y, rows, seeds[0], layer_sizes, network_params, single_thread
                )
            else:
                self.alpha_ = float(self.alpha)
            network_params["alpha"] = self.alpha_
            best = self._certified_refit(
                Xw,
                Y,
                seeds,
                (theta0, start_iter),
                layer_sizes,
                network_params,
                single_thread,
            )
        self.loss_ = float(best.fun)
        self._set_subspace(best.weights, best.biases)
        return self

    def _cv_rows(self, n_samples, split_labels, seed):
        """The rows cross-validated on: ``None`` for all of them, else a sorted
        random subsample of ``cv_max_samples`` (stratified for a classifier)."""
        if self.cv_max_samples is None or n_samples <= self.cv_max_samples:
            return None
        rows = resample(
            np.arange(n_samples),
            replace=False,
            n_samples=self.cv_max_samples,
            stratify=split_labels if is_classifier(self) else None,
            random_state=seed,
        )
        return np.sort(rows)

    def _path_start(
        self, Xw, Y, rows, seed, layer_sizes, network_params, single_thread
    ):
        """Where the certified refit starts: the decay path followed up to ``alpha_``.

        The path runs on the cross-validated rows (``rows``; ``None`` for all),
        so that the refit starts on the branch the held-out scores were measured
        on; then one more single-precision fit at ``alpha_`` on all the rows,
        to ``_REFIT_START_GTOL``, brings it close to their optimum at a fraction
        of the cost of double-precision iterations. Returns the start and the
        iterations of that last fit.
        """
        net = _Network(layer_sizes, **network_params, alpha=self.alphas_[0])
        start = net.init(np.random.default_rng(seed))
        path = _DecayPath(
            net, start, _rows_of(Xw, rows), _rows_of(Y, rows), single_thread
        )
        n_steps = np.flatnonzero(self.alphas_ == self.alpha_)[0] + 1
        for alpha in self.alphas_[:n_steps]:
            theta = path.fit(alpha)
        if rows is not None:
            path = _DecayPath(net, theta, Xw, Y, single_thread)
        theta = path.fit(
            self.alpha_,
            gtol=_REFIT_START_GTOL,
            max_iter=self.max_iter,
            memory=_REFIT_START_MEMORY,
        )
        return theta, path.n_iter

    def _certified_refit(
        self, Xw, Y, seeds, start, layer_sizes, network_params, single_thread
    ):
        """``n_init`` certified fits (the first from ``start``); the best one.

        ``start`` is ``(theta0, start_iter)``: the first fit's start (None for
        a random network) and the single-precision iterations that led to it,
        counted in that fit's ``n_iter``.

        Stores the certificate of the returned fit (``grad_norm_``,
        ``min_hessian_eig_``, ``curvature_tol_``, ``n_iter_``, ``certified_``).
        """
        theta0, start_iter = start
        curvature_tol = self.curvature_tol
        if curvature_tol is None:
            # The lemma bounds ||W_perp|| by grad / (2 alpha - curvature): a
            # curvature tolerance of alpha keeps that denominator at least alpha.
            curvature_tol = self.alpha_ if self.alpha_ > 0 else np.sqrt(self.tol)
        solver_params = dict(
            method=self.solver,
            tol=self.tol,
            curvature_tol=curvature_tol,
            max_iter=self.max_iter,
            verbose=max(self.verbose - 1, 0),
        )
        # A generator: with threads, each restart is reported as it finishes.
        results = Parallel(n_jobs=self.n_jobs, prefer="threads", return_as="generator")(
            delayed(_fit_one)(
                Xw,
                Y,
                seed,
                theta0 if i == 0 else None,
                layer_sizes=layer_sizes,
                network_params=network_params,
                solver_params=solver_params,
                single_thread=single_thread,
            )
            for i, seed in enumerate(seeds)
        )
        best = None
        for i, res in enumerate(results):
            if i == 0:
                res.n_iter += start_iter
            if self.verbose:
                print(
                    f"[{type(self).__name__}] restart {i + 1}/{self.n_init}: "
                    f"objective {res.fun:.6g}, gradient norm {res.grad_norm:.2e}, "
                    f"min Hessian eigenvalue {res.min_hessian_eig:.2e}, "
                    f"{res.n_iter} iterations, certified {res.success}",
                    flush=True,
                )
            if best is None or res.fun < best.fun:
                best = res
        record_certificate(
            self,
            grad_norm=best.grad_norm,
            min_hessian_eig=best.min_hessian_eig,
            tol=self.tol,
            curvature_tol=curvature_tol,
            n_iter=best.n_iter,
            advice="Increase max_iter, or loosen tol.",
            # Past _certified_refit, _fit_network, fit and _fit_context.
            stacklevel=5,
        )
        return best

    def _set_subspace(self, weights, biases):
        """``subspace_``, ``singular_values_`` and the network in input coordinates.

        The lemma acts on the (whitened) first layer: its right singular vectors
        span the discovered subspace and its spectrum shows the gap.
        """
        weights = [np.array(w) for w in weights]
        biases = [np.array(b) for b in biases]
        _, s, vt = np.linalg.svd(weights[0], full_matrices=False)
        self.singular_values_ = s
        if self.n_components != "auto":
            self.n_components_ = int(self.n_components)
        # Rows act on whitened inputs (x - mean) @ M: in input coordinates they
        # are rows @ M.T (a diagonal M is its own transpose).
        basis = _apply(vt[: self.n_components_], self._whitening.T)
        first = _apply(weights[0], self._whitening.T)
        # Re-orthonormalize in input coordinates (rows of ``subspace_``).
        q, r = np.linalg.qr(basis.T)
        self.subspace_ = (q * np.sign(np.diag(r) + (np.diag(r) == 0))).T
        self._n_features_out = self.n_components_
        # Network in the user's coordinates: z = x @ coefs_[0] + intercepts_[0].
        self.coefs_ = [first.T] + [w.T for w in weights[1:]]
        self.intercepts_ = [biases[0] - self.mean_ @ first.T] + biases[1:]

    def _cross_validate(
        self,
        X,
        Y,
        split_labels,
        *,
        seed,
        max_components,
        layer_sizes,
        network_params,
        single_thread,
    ):
        """Choose ``alpha_`` and ``n_components_`` by held-out scores.

        Sets ``alphas_``, ``cv_scores_``, ``alpha_``, and ``rank_cv_scores_``
        and ``n_components_`` when ``n_components="auto"``.
        """
        if self.alpha == "auto":
            alphas = _DEFAULT_ALPHAS if self.alphas is None else self.alphas
            alphas = np.sort(np.asarray(alphas, dtype=np.float64))
        else:
            alphas = np.array([float(self.alpha)])
        cv = check_cv(self.cv, split_labels, classifier=is_classifier(self))
        n_splits = cv.get_n_splits(X, split_labels)
        if X.shape[0] < 2 * n_splits:
            raise ValueError(
                f"{type(self).__name__} chooses "
                + ("alpha" if self.alpha == "auto" else "n_components")
                + f" by {n_splits}-fold cross-validation (cv={self.cv!r}), which "
                f"needs at least {2 * n_splits} samples; got n_samples="
                f"{X.shape[0]}. Pass a number as alpha and n_components, or a "
                "smaller cv."
            )
        folds = [
            _Fold(
                X,
                Y,
                train,
                test,
                layer_sizes=layer_sizes,
                network_params=network_params,
                alpha=alphas[0],
                whiten=self.whiten,
                seed=seed,
                single_thread=single_thread,
            )
            for train, test in cv.split(X, split_labels)
        ]
        unit = np.mean([fold.null_loss for fold in folds])
        parallel = Parallel(n_jobs=self.n_jobs, prefer="threads")
        self.cv_scores_ = self._path_scores(folds, alphas, unit, parallel)
        self.alphas_ = alphas[: len(self.cv_scores_)]
        # The largest decay (the simplest network) that scores as well as the
        # best one: smaller decays that gain less than the folds' noise level
        # only tilt the first layer towards directions that fit noise.
        top = self.cv_scores_[np.argmax(self.cv_scores_.mean(axis=1))]
        best = max(
            i for i, row in enumerate(self.cv_scores_) if _as_good(row, top, unit)
        )
        self.alpha_ = float(alphas[best])
        if self.n_components == "auto":
            self._choose_rank(folds, best, unit, parallel, max_components)
        if self.verbose:
            print(
                f"[{type(self).__name__}] alpha_={self.alpha_:.3g} (mean held-out "
                f"score {self.cv_scores_[best].mean():.4f})"
                + (
                    f", n_components_={self.n_components_}"
                    if self.n_components == "auto"
                    else ""
                ),
                flush=True,
            )

    def _path_scores(self, folds, alphas, unit, parallel):
        """Held-out scores of the decay path, one row per decay scored.

        The path stops once ``_PATH_PATIENCE`` decays in a row score below the
        best one: past the peak of the held-out curve, larger decays (which
        cost the most iterations) would not be chosen.
        """
        scores = []
        worse_in_a_row = 0
        for alpha in alphas:
            results = parallel(delayed(fold.fit_and_score)(alpha) for fold in folds)
            for fold, (theta, _) in zip(folds, results, strict=True):
                fold.record(theta)
            scores.append([score for _, score in results])
            if self.verbose:
                print(
                    f"[{type(self).__name__}] alpha {alpha:.3g}: mean held-out "
                    f"score {np.mean(scores[-1]):.4f} over {len(folds)} folds",
                    flush=True,
                )
            top = scores[int(np.argmax(np.mean(scores, axis=1)))]
            worse_in_a_row = (
                0 if _as_good(scores[-1], top, unit) else worse_in_a_row + 1
            )
            if worse_in_a_row == _PATH_PATIENCE:
                break
        return np.array(scores)

    def _choose_rank(self, folds, step, unit, parallel, max_components):
        """``n_components_`` and ``rank_cv_scores_``: the smallest rank of the
        first layer whose held-out scores match the full network's at decay
        ``step`` of the path."""

        def rank_scores(rank):
            scores = parallel(
                delayed(fold.rank_score)(step, self.alpha_, rank) for fold in folds
            )
            if self.verbose:
                print(
                    f"[{type(self).__name__}] rank {rank}: mean held-out "
                    f"score {np.mean(scores):.4f}",
                    flush=True,
                )
            return scores

        self.n_components_, evaluated = _smallest_sufficient_rank(
            rank_scores, self.cv_scores_[step], max_components, unit
        )
        self.rank_cv_scores_ = {rank: evaluated[rank] for rank in sorted(evaluated)}

    def _forward(self, X):
        # In input coordinates the first bias absorbs the centring, so it is a
        # variable even when freeze_first_bias fixed it during the fit.
        sizes = (self.n_features_in_, *(c.shape[1] for c in self.coefs_))
        net = _Network(
            sizes,
            activation=self.activation,
            softplus_sharpness=self.softplus_sharpness,
            train_first_bias=True,
        )
        theta = net.pack([c.T for c in self.coefs_], self.intercepts_)
        return net.forward(theta, X)

    def transform(self, X):
        """Coordinates of ``X`` in the discovered subspace.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components_)
            ``(X - mean_) @ subspace_.T``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        return (X - self.mean_) @ self.subspace_.T

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


_COMMON_PARAMETERS_DOC = """
    hidden_layer_sizes : int or tuple of int, default=(32,)
        Widths of the hidden layers. The first one is the number of rows of the
        first-layer weight ``W``, so it bounds the dimension that can be found.
    activation : {"tanh", "softplus", "sigmoid", "gelu"}, default="tanh"
        Smooth (C^2) activation of every hidden layer. ``"softplus"`` is
        ``log(1 + exp(s * t)) / s`` with ``s = softplus_sharpness``, a smooth
        ReLU. ``"tanh"`` is the default: on the benchmark it was as accurate
        as the softplus on average, cheaper to evaluate, and it escaped a poor
        stationary point (d = 100, ``tanh(u1.x) + 0.5 (u2.x)^2``) where the
        softplus network stopped at a projection distance of 0.93.
    softplus_sharpness : float, default=1.0
        Sharpness of the softplus (ignored by the other activations); large
        values approach the ReLU but make the Hessian less smooth.
    alpha : "auto" or float, default="auto"
        Weight decay ``alpha * ||W||_F^2`` on the first-layer weight (in whitened
        coordinates). ``"auto"`` chooses it from ``alphas`` by ``cv``-fold
        cross-validation, as :class:`~sklearn.linear_model.RidgeCV` does: a
        warm-started path from the smallest decay up, scored on the held-out
        folds, then one certified refit on all the data at the chosen
        ``alpha_`` (see ``cv`` for the rule). A number is used as given. In
        the population limit any ``alpha > 0`` drives the perpendicular part of
        ``W`` to zero; with ``n`` samples the network can fit noise through
        perpendicular directions, and the decay that prevents it depends on
        ``n`` and the noise (see Notes).
    alphas : array-like of float, default=None
        Decays tried by ``alpha="auto"``, from the smallest up (see
        ``alphas_`` for where the path stops). ``None`` means seven values from
        1e-3 to 1, half a decade apart.
    cv : int, cross-validation generator or iterable, default=5
        Folds of ``alpha="auto"`` and ``n_components="auto"``, as in
        :func:`~sklearn.model_selection.check_cv` (stratified for the
        classifier). The held-out score is R^2 for the squared error, minus
        the mean loss for the pseudo-Huber loss (which outliers would dominate
        R^2) and minus the log-loss for the classifier. ``alpha_`` is the
        largest decay whose fold scores are within one standard error (of the
        per-fold differences), or 0.005, of the best decay's: the
        one-standard-error rule, which prefers the simpler network when the
        held-out data cannot tell them apart. (0.005 is in units of R^2; for
        the other losses it is 0.005 times a constant prediction's loss.)
    cv_max_samples : int or None, default=10_000
        Above this many samples, ``alpha="auto"`` and ``n_components="auto"``
        are chosen by cross-validation on a random subsample of this size
        (stratified by class for the classifier), and the network of the
        chosen decay fitted on it starts the refit on all the samples: the
        cost of the choice then stops growing with the data, and its held-out
        scores are still those of thousands of samples. ``None``
        cross-validates on every sample. The certified refit always uses every
        sample.
    alpha_other : float, default=1e-3
        Weight decay on the weights of every later layer. Biases are never
        penalized: the lemma needs them free.
    freeze_first_bias : bool, default=False
        Fix the first-layer bias at zero instead of training it. The lemma then
        no longer applies; this exists for the ablation that shows it.
    whiten : bool, default=False
        Whiten the inputs (remove their correlations) before training, instead
        of only centring and scaling each feature to unit variance. The lemma is
        stated for isotropic Gaussian inputs, which whitening provides; but on
        correlated real data whitening blows up low-variance directions (mostly
        noise) to unit variance, where the decay no longer restrains them, so
        it is off by default. Turn it on to recover the subspace of strongly
        correlated inputs (see the user guide). Directions of zero variance
        are mapped to zero. Every fitted attribute is in the original
        coordinates either way.
    n_components : "auto" or int, default="auto"
        Dimension of the discovered subspace. ``"auto"`` takes the smallest
        rank ``k`` such that the networks of the ``cv`` folds, restricted to the
        top ``k`` directions of their first layer and refitted, score on the
        held-out folds as well as unrestricted (within one standard error, or
        0.005): a *sufficient* reduction, the directions the predictions need.
        On data with no low-dimensional structure that is all of them,
        ``min(n_features, hidden_layer_sizes[0])``.
    solver : {"lbfgs", "pgd"}, default="lbfgs"
        Method of :func:`skderand.optimize.minimize_sosp`: L-BFGS with
        negative-curvature steps, or perturbed gradient descent.
    tol : float, default=1e-4
        Gradient-norm tolerance of the certificate. With the default
        ``curvature_tol`` the lemma's bound on the perpendicular weight is then
        at most ``tol / alpha_``. A smaller ``tol`` gives a sharper bound
        and fits that are more reproducible under round-off changes of the
        input (1e-6 made fits of rescaled inputs agree to about 1e-5 instead of
        1e-3), at the cost of more iterations.
    curvature_tol : float or None, default=None
        The certificate requires the smallest Hessian eigenvalue to be at least
        ``-curvature_tol``. ``None`` means ``alpha_`` (``sqrt(tol)`` if it is 0),
        which keeps the lemma's bound below ``tol / alpha_``.
    max_iter : int, default=3000
        Maximum number of solver iterations per restart.
    n_init : int, default=1
        Number of certified fits at ``alpha_``: the first starts from the decay
        path (from a random network when neither ``alpha`` nor ``n_components``
        is "auto"), the others from independent random networks; the one with
        the lowest objective is kept.
    n_jobs : int, default=None
        Number of folds, and then of restarts, fitted in parallel (threads
        unless a joblib backend is configured). ``None`` means 1 unless in a
        ``joblib.parallel_config`` context.
    random_state : int, RandomState instance or None, default=None
        Seeds the initializations and the solver. Pass an int for reproducible
        results; ``None`` seeds from the operating system on every fit (numpy's
        global generator is never drawn from).
    verbose : int, default=0
        ``1`` prints the held-out score of every decay on the path and the
        objective and certificate of every restart, as they finish; ``2`` and
        more also print the solver's progress."""

_COMMON_ATTRIBUTES_DOC = """
    subspace_ : ndarray of shape (n_components_, n_features_in_)
        Orthonormal rows spanning the discovered subspace, in input coordinates.
    singular_values_ : ndarray of shape (min(n_features_in_, hidden_layer_sizes[0]),)
        All singular values of the first-layer weight in whitened coordinates,
        in decreasing order: the gap after the first ``n_components_`` of them
        is the evidence for the dimension.
    n_components_ : int
        Dimension of the discovered subspace.
    alpha_ : float
        First-layer decay of the returned network (``alpha`` unless "auto").
    alphas_ : ndarray of shape (n_alphas,)
        Decays on the cross-validated path, increasing: ``alphas`` up to where
        the path stopped (it stops once two decays in a row score below the
        best one by more than the one-standard-error rule allows; larger ones
        would not be chosen). Only when ``alpha="auto"`` or
        ``n_components="auto"`` (then ``[alpha]``).
    cv_scores_ : ndarray of shape (n_alphas, n_splits)
        Held-out score of each decay on each fold: R^2 for the squared error,
        minus the mean loss for the pseudo-Huber loss and the log-loss.
    rank_cv_scores_ : dict of int to ndarray of shape (n_splits,)
        Held-out scores at ``alpha_`` of the networks whose first layer is
        restricted to each rank the search tried; only when
        ``n_components="auto"``.
    mean_ : ndarray of shape (n_features_in_,)
        Per-feature mean of the training inputs.
    coefs_ : list of ndarray
        Weight of each layer in input coordinates, ``coefs_[i]`` of shape
        ``(fan_in, fan_out)`` as in :class:`~sklearn.neural_network.MLPRegressor`.
    intercepts_ : list of ndarray
        Bias of each layer, in input coordinates.
    loss_ : float
        Objective at the returned point: mean loss plus weight decay.
    grad_norm_ : float
        Certificate: norm of the objective's gradient at the returned point.
    min_hessian_eig_ : float
        Certificate: smallest Hessian eigenvalue at the returned point (Lanczos
        on exact Hessian-vector products).
    curvature_tol_ : float
        The curvature tolerance used: ``curvature_tol``, or ``alpha_`` when it is
        None.
    certified_ : bool
        Whether ``grad_norm_ <= tol`` and ``min_hessian_eig_ >= -curvature_tol_``.
    n_iter_ : int
        Solver iterations of the kept restart; for the first restart, which
        starts from the decay path, they include the single-precision
        iterations on all the samples that precede the double-precision ones.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when ``X`` has string column names."""

_NOTES_DOC = """
    Let ``W`` be the first-layer weight in whitened coordinates and split it as
    ``W_par + W_perp`` along ``span(U)`` and its complement. If the inputs are
    Gaussian and ``y`` depends on them only through ``U x``, the population risk
    as a function of ``(W_perp, b)`` has the form of the derandomization lemma, so
    at a point with gradient norm ``rho`` and smallest Hessian eigenvalue
    ``-eps`` (``eps < 2 alpha``)::

        ||W_perp||_F <= rho / (2 alpha - eps).

    The fitted certificate (``grad_norm_``, ``min_hessian_eig_``) gives ``rho``
    and ``eps`` for the *empirical* risk. With finitely many samples the
    perpendicular coordinates are not exactly independent of ``y``, and a network
    with little decay uses them to fit noise: the gap between empirical and
    population risk shows up as a perpendicular part of ``W`` of order of the
    overfit. The decay that makes that fit cost more than it gains depends on
    ``n``, the noise and the link, so by default it is chosen on held-out data
    (``alpha="auto"``): a decay that suits a planted teacher can overfit a
    small noisy table badly, and the other way round.

    Training is full-batch: exact gradients by backpropagation and exact
    Hessian-vector products by the R-operator (forward-over-reverse) cost a few
    matrix products with the ``(n_samples, n_features)`` input per evaluation.
    The fits that choose the decay and the rank only compare held-out scores,
    so they run in single precision, several times faster; the
    refit starts with a single-precision fit on all the samples and ends in
    double precision, where the certificate (about a hundred Hessian-vector
    products) is computed. Small problems run BLAS on one thread, where
    threads cost more than they save.

    References
    ----------
    .. [1] N. Tsikouras, C. Pantis, I. Mitliagkas, C. Tzamos. "A Derandomization
       Framework for Structure Discovery: Applications in Neural Networks and
       Beyond." ICLR 2026, arXiv:2510.19382.
    .. [2] B. A. Pearlmutter. "Fast Exact Multiplication by the Hessian." Neural
       Computation 6(1), 1994."""


def _doc(text):
    return (
        text.replace("%(parameters)s", _COMMON_PARAMETERS_DOC.strip())
        .replace("%(attributes)s", _COMMON_ATTRIBUTES_DOC.strip())
        .replace("%(notes)s", _NOTES_DOC.strip())
    )


class StructureDiscoveryRegressor(RegressorMixin, _BaseStructureDiscovery):
    __doc__ = _doc(
        """Regression that discovers the subspace the target depends on.

    Fits a smooth network whose first layer is ``W x + b`` to ``y`` with weight
    decay on ``W``, trained to a certified approximate second-order stationary
    point. If ``y`` depends on ``x`` only through a few linear combinations
    ``U x`` (a multi-index model), the derandomization lemma drives the part of
    ``W`` outside ``span(U)`` to zero, so the top right singular vectors of ``W``
    span the subspace: :meth:`transform` projects on it (a supervised dimension
    reduction for a :class:`~sklearn.pipeline.Pipeline`) and :meth:`predict`
    uses the network. Unlike sliced inverse regression it finds even links such
    as ``(u . x)**2``.

    Targets are standardized internally, so ``alpha`` does not depend on their
    units.

    Parameters
    ----------
    loss : {"squared_error", "pseudo_huber"}, default="squared_error"
        ``0.5 * r**2``, or the robust ``delta**2 * (sqrt(1 + (r / delta)**2) - 1)``,
        of the residual ``r`` of the standardized targets.
    huber_delta : float, default=1.0
        Scale of the pseudo-Huber loss, in standard deviations of the target.
    %(parameters)s

    Attributes
    ----------
    %(attributes)s

    See Also
    --------
    StructureDiscoveryClassifier : The same with the cross-entropy loss.
    sklearn.neural_network.MLPRegressor : Multilayer perceptron regressor.
    sklearn.cross_decomposition.PLSRegression : Linear supervised reduction.

    Notes
    -----
    %(notes)s

    Examples
    --------
    ``y = (u . x)**2`` depends on one direction ``u``, which SIR cannot see:

    >>> import numpy as np
    >>> from skderand import StructureDiscoveryRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((500, 5))
    >>> u = np.array([0.6, 0.8, 0.0, 0.0, 0.0])
    >>> y = (X @ u) ** 2
    >>> est = StructureDiscoveryRegressor(hidden_layer_sizes=8, random_state=0)
    >>> est = est.fit(X, y)
    >>> est.n_components_
    1
    >>> np.round(np.abs(est.subspace_ @ u), 2)
    array([1.])
    >>> est.transform(X).shape
    (500, 1)
    >>> bool(est.score(X, y) > 0.95)
    True
    """
    )

    _parameter_constraints: dict = {
        **_BaseStructureDiscovery._parameter_constraints,
        "loss": [StrOptions({"squared_error", "pseudo_huber"})],
        "huber_delta": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        *,
        loss="squared_error",
        huber_delta=1.0,
        hidden_layer_sizes=(32,),
        activation="tanh",
        softplus_sharpness=1.0,
        alpha="auto",
        alphas=None,
        cv=5,
        cv_max_samples=10_000,
        alpha_other=1e-3,
        freeze_first_bias=False,
        whiten=False,
        n_components="auto",
        solver="lbfgs",
        tol=1e-4,
        curvature_tol=None,
        max_iter=3000,
        n_init=1,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.loss = loss
        self.huber_delta = huber_delta
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.softplus_sharpness = softplus_sharpness
        self.alpha = alpha
        self.alphas = alphas
        self.cv = cv
        self.cv_max_samples = cv_max_samples
        self.alpha_other = alpha_other
        self.freeze_first_bias = freeze_first_bias
        self.whiten = whiten
        self.n_components = n_components
        self.solver = solver
        self.tol = tol
        self.curvature_tol = curvature_tol
        self.max_iter = max_iter
        self.n_init = n_init
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train the network and read the subspace off its first layer.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.

        Returns
        -------
        self : StructureDiscoveryRegressor
            The fitted estimator.
        """
        X, y = validate_data(
            self,
            X,
            y,
            dtype=np.float64,
            order="C",
            multi_output=True,
            y_numeric=True,
        )
        y = np.asarray(y, dtype=np.float64)
        self._y_ndim = y.ndim
        Y = y.reshape(y.shape[0], -1)
        y_mean, y_scale = _target_scaling(Y)
        self._fit_network(
            X, (Y - y_mean) / y_scale, self.loss, self.huber_delta, split_labels=y
        )
        # Fold the target scaling into the output layer.
        self.coefs_[-1] = self.coefs_[-1] * y_scale
        self.intercepts_[-1] = self.intercepts_[-1] * y_scale + y_mean
        return self

    def predict(self, X):
        """Predict with the trained network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predictions, with the shape of the targets seen in fit.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        out = self._forward(X)
        return out.ravel() if self._y_ndim == 1 else out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class StructureDiscoveryClassifier(ClassifierMixin, _BaseStructureDiscovery):
    __doc__ = _doc(
        """Classification that discovers the subspace the label depends on.

    The classification counterpart of :class:`StructureDiscoveryRegressor`: the
    same smooth network, whitening, certified training and subspace read-out,
    with the cross-entropy loss (logistic for two classes, softmax for more).
    The lemma holds for any smooth loss, so the part of the first-layer weight
    outside the subspace that the class probabilities depend on is driven to
    zero.

    Parameters
    ----------
    %(parameters)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    %(attributes)s

    See Also
    --------
    StructureDiscoveryRegressor : The same for real-valued targets.
    sklearn.neural_network.MLPClassifier : Multilayer perceptron classifier.

    Notes
    -----
    %(notes)s

    Examples
    --------
    The label is the sign of ``(u1 . x) * (u2 . x)``: two directions, a
    quadrant pattern no linear classifier can fit.

    >>> import numpy as np
    >>> from skderand import StructureDiscoveryClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((600, 4))
    >>> y = np.where(X[:, 0] * X[:, 1] > 0, "same", "different")
    >>> clf = StructureDiscoveryClassifier(hidden_layer_sizes=8, random_state=0)
    >>> clf = clf.fit(X, y)
    >>> clf.classes_
    array(['different', 'same'], dtype='<U9')
    >>> clf.n_components_
    2
    >>> np.round(np.abs(clf.subspace_[:, 2:]).max(), 1)
    np.float64(0.0)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """
    )

    def __init__(
        self,
        *,
        hidden_layer_sizes=(32,),
        activation="tanh",
        softplus_sharpness=1.0,
        alpha="auto",
        alphas=None,
        cv=5,
        cv_max_samples=10_000,
        alpha_other=1e-3,
        freeze_first_bias=False,
        whiten=False,
        n_components="auto",
        solver="lbfgs",
        tol=1e-4,
        curvature_tol=None,
        max_iter=3000,
        n_init=1,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.softplus_sharpness = softplus_sharpness
        self.alpha = alpha
        self.alphas = alphas
        self.cv = cv
        self.cv_max_samples = cv_max_samples
        self.alpha_other = alpha_other
        self.freeze_first_bias = freeze_first_bias
        self.whiten = whiten
        self.n_components = n_components
        self.solver = solver
        self.tol = tol
        self.curvature_tol = curvature_tol
        self.max_iter = max_iter
        self.n_init = n_init
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train the network and read the subspace off its first layer.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : StructureDiscoveryClassifier
            The fitted estimator.
        """
        # C order: a pandas frame arrives Fortran-ordered, and a different memory
        # layout changes BLAS round-off, which a non-convex fit can amplify.
        X, y = validate_data(self, X, y, dtype=np.float64, order="C")
        check_classification_targets(y)
        binarizer = LabelBinarizer()
        Y = binarizer.fit_transform(y).astype(np.float64)
        self.classes_ = binarizer.classes_
        if self.classes_.size < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes in the "
                f"data, but the data contain only one class: {self.classes_[0]!r}."
            )
        loss = "binary_log_loss" if self.classes_.size == 2 else "log_loss"
        return self._fit_network(X, Y, loss, split_labels=y)

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of each class, in the order of ``classes_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        out = self._forward(X)
        if self.classes_.size == 2:
            p = expit(out[:, 0])
            return np.column_stack([1.0 - p, p])
        return softmax(out, axis=1)

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
