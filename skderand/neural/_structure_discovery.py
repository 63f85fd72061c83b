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
import warnings

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from skderand._random import check_random_state
from skderand._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    validate_data,
)
from skderand.neural._network import _activation, _Network
from skderand.optimize import minimize_sosp

__all__ = ["StructureDiscoveryClassifier", "StructureDiscoveryRegressor"]

# Below this many multiply-adds in the first layer's product, BLAS threads cost
# more than they save (and on a busy machine a multi-threaded BLAS that waits on
# its own spinning threads was measured 3-10x slower): run such fits on one thread.
_SINGLE_THREAD_WORK = 2e7


def _whitening(X, whiten):
    """Mean and a matrix ``M`` with ``(X - mean) @ M`` centred and white.

    Features are first scaled to unit variance, so that the relative floor on the
    correlation eigenvalues is unit-free. Directions of (numerically) zero
    variance, such as constant or duplicated features, are mapped to zero instead
    of being blown up: a pseudo-inverse square root, never a NaN.
    """
    mean = X.mean(axis=0)
    if not whiten:
        return mean, None
    Xc = X - mean
    std = Xc.std(axis=0)
    constant = std <= 1e-12 * np.maximum(np.abs(mean), np.finfo(np.float64).tiny)
    inv_std = np.where(constant, 0.0, 1.0 / np.where(constant, 1.0, std))
    Z = Xc * inv_std
    cov = Z.T @ Z / X.shape[0]
    eigval, eigvec = np.linalg.eigh(cov)
    keep = eigval > 1e-8 * max(eigval[-1], 0.0)
    inv_sqrt = np.zeros_like(eigval)
    inv_sqrt[keep] = 1.0 / np.sqrt(eigval[keep])
    matrix = (inv_std[:, None] * eigvec) @ (inv_sqrt[:, None] * eigvec.T)
    return mean, matrix


def _n_components_auto(singular_values):
    """Largest ratio ``s_i / max(s_{i+1}, 0.1 s_1)`` over ``i``: the gap."""
    s = singular_values
    if s.size < 2 or s[0] <= 0:
        return 1
    ratios = s[:-1] / np.maximum(s[1:], 0.1 * s[0])
    return int(np.argmax(ratios)) + 1


def _fit_one(X, Y, seed, *, layer_sizes, network_params, solver_params, single_thread):
    """One restart: a fresh network from ``seed`` trained by ``minimize_sosp``."""
    net = _Network(layer_sizes, **network_params)
    theta0 = net.init(np.random.default_rng(seed))
    with threadpool_limits(limits=1 if single_thread else None, user_api="blas"):
        res = minimize_sosp(
            lambda theta: net.loss_grad(theta, X, Y),
            theta0,
            hessp=lambda theta, v: net.hessp(theta, v, X, Y),
            random_state=seed,
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
        "sharpness": [Interval(numbers.Real, 0, None, closed="neither")],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
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

    def _fit_network(self, X, Y, loss, huber_delta=1.0):
        """Fit on validated float64 ``X`` and 2-d internal targets ``Y``."""
        hidden = self._hidden_sizes()
        n_samples, n_features = X.shape
        max_components = min(n_features, hidden[0])
        if self.n_components != "auto" and self.n_components > max_components:
            raise ValueError(
                f"n_components={self.n_components} is larger than the rank the "
                f"first layer can have, min(n_features, hidden_layer_sizes[0]) = "
                f"{max_components}."
            )
        self.mean_, self._whitening = _whitening(X, self.whiten)
        Xw = X - self.mean_
        if self._whitening is not None:
            Xw = Xw @ self._whitening

        curvature_tol = self.curvature_tol
        if curvature_tol is None:
            # The lemma bounds ||W_perp|| by grad / (2 alpha - curvature): a
            # curvature tolerance of alpha keeps that denominator at least alpha.
            curvature_tol = self.alpha if self.alpha > 0 else np.sqrt(self.tol)
        layer_sizes = (n_features, *hidden, Y.shape[1])
        network_params = dict(
            activation=self.activation,
            sharpness=self.sharpness,
            loss=loss,
            alpha=self.alpha,
            alpha_other=self.alpha_other,
            train_first_bias=not self.freeze_first_bias,
            huber_delta=huber_delta,
        )
        solver_params = dict(
            method=self.solver,
            tol=self.tol,
            curvature_tol=curvature_tol,
            max_iter=self.max_iter,
            verbose=max(self.verbose - 1, 0),
        )
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max, size=self.n_init)
        single_thread = n_samples * n_features * hidden[0] < _SINGLE_THREAD_WORK
        # The solver's own ConvergenceWarning names its arguments; ours, below,
        # names this estimator's parameters. sklearn's Parallel carries the filter
        # into its workers.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            results = Parallel(n_jobs=self.n_jobs, prefer="threads")(
                delayed(_fit_one)(
                    Xw,
                    Y,
                    seed,
                    layer_sizes=layer_sizes,
                    network_params=network_params,
                    solver_params=solver_params,
                    single_thread=single_thread,
                )
                for seed in seeds
            )
        if self.verbose:
            for i, res in enumerate(results):
                print(
                    f"[{type(self).__name__}] restart {i + 1}/{self.n_init}: "
                    f"objective {res.fun:.6g}, gradient norm {res.grad_norm:.2e}, "
                    f"min Hessian eigenvalue {res.min_hessian_eig:.2e}, "
                    f"{res.n_iter} iterations, certified {res.success}"
                )
        best = min(results, key=lambda res: res.fun)

        self.loss_ = float(best.fun)
        self.grad_norm_ = float(best.grad_norm)
        self.min_hessian_eig_ = float(best.min_hessian_eig)
        self.certified_ = bool(best.success)
        self.n_iter_ = int(best.n_iter)
        if not best.success:
            warnings.warn(
                f"{type(self).__name__} did not reach a certified second-order "
                f"stationary point: gradient norm {best.grad_norm:.2e} (tol="
                f"{self.tol:g}), smallest Hessian eigenvalue "
                f"{best.min_hessian_eig:.2e} (curvature_tol={curvature_tol:g}) "
                f"after {best.n_iter} iterations (max_iter={self.max_iter}). "
                "Increase max_iter, or loosen tol.",
                ConvergenceWarning,
                # Past _fit_network, fit and sklearn's _fit_context, to the caller.
                stacklevel=4,
            )

        weights = [np.array(w) for w in best.weights]
        biases = [np.array(b) for b in best.biases]
        # The lemma acts on the whitened first layer: its spectrum shows the gap.
        _, s, vt = np.linalg.svd(weights[0], full_matrices=False)
        self.singular_values_ = s
        if self.n_components == "auto":
            self.n_components_ = _n_components_auto(s)
        else:
            self.n_components_ = int(self.n_components)
        basis = vt[: self.n_components_]
        first = weights[0]
        if self._whitening is not None:
            basis = basis @ self._whitening.T
            first = first @ self._whitening.T
        # Re-orthonormalize in input coordinates (rows of ``subspace_``).
        q, r = np.linalg.qr(basis.T)
        self.subspace_ = (q * np.sign(np.diag(r) + (np.diag(r) == 0))).T
        self._n_features_out = self.n_components_
        # Network in the user's coordinates: z = x @ coefs_[0] + intercepts_[0].
        self.coefs_ = [first.T] + [w.T for w in weights[1:]]
        self.intercepts_ = [biases[0] - self.mean_ @ first.T] + biases[1:]
        return self

    def _forward(self, X):
        act = _activation(self.activation, self.sharpness)[0]
        a = X
        for layer, (coef, intercept) in enumerate(
            zip(self.coefs_, self.intercepts_, strict=True)
        ):
            a = a @ coef + intercept
            if layer < len(self.coefs_) - 1:
                a = act(a)[0]
        return a

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
        ``log(1 + exp(sharpness * t)) / sharpness``, a smooth ReLU. ``"tanh"``
        is the default: on the benchmark it was as accurate as the softplus on
        average, cheaper to evaluate, and it escaped a poor stationary point
        (d = 100, ``tanh(u1.x) + 0.5 (u2.x)^2``) where the softplus network
        stopped at a projection distance of 0.93.
    sharpness : float, default=1.0
        Sharpness of the softplus (ignored by the other activations); large
        values approach the ReLU but make the Hessian less smooth.
    alpha : float, default=1e-3
        Weight decay ``alpha * ||W||_F^2`` on the first-layer weight (in whitened
        coordinates). In the population limit any ``alpha > 0`` drives the
        perpendicular part of ``W`` to zero; with ``n`` samples the network can
        fit noise through perpendicular directions, and a moderate decay removes
        that finite-sample part (see Notes).
    alpha_other : float, default=1e-3
        Weight decay on the weights of every later layer. Biases are never
        penalized: the lemma needs them free.
    freeze_first_bias : bool, default=False
        Fix the first-layer bias at zero instead of training it. The lemma then
        no longer applies; this exists for the ablation that shows it.
    whiten : bool, default=True
        Centre and whiten the inputs before training (the lemma needs isotropic
        Gaussian inputs). Directions of zero variance are mapped to zero. With
        ``False`` the inputs are only centred. Every fitted attribute is in the
        original coordinates either way.
    n_components : "auto" or int, default="auto"
        Dimension of the discovered subspace. ``"auto"`` takes the largest ratio
        ``s_i / max(s_{i+1}, 0.1 * s_1)`` of consecutive singular values of the
        first-layer weight: the gap left once the perpendicular part vanishes.
    solver : {"lbfgs", "pgd"}, default="lbfgs"
        Method of :func:`skderand.optimize.minimize_sosp`: L-BFGS with
        negative-curvature steps, or perturbed gradient descent.
    tol : float, default=1e-4
        Gradient-norm tolerance of the certificate. With the default
        ``curvature_tol`` the lemma's bound on the perpendicular weight is then
        at most ``tol / alpha`` (0.1). A smaller ``tol`` gives a sharper bound
        and fits that are more reproducible under round-off changes of the
        input (1e-6 made fits of rescaled inputs agree to about 1e-5 instead of
        1e-3), at the cost of more iterations.
    curvature_tol : float or None, default=None
        The certificate requires the smallest Hessian eigenvalue to be at least
        ``-curvature_tol``. ``None`` means ``alpha`` (``sqrt(tol)`` if ``alpha``
        is 0), which keeps the lemma's bound below ``tol / alpha``.
    max_iter : int, default=3000
        Maximum number of solver iterations per restart.
    n_init : int, default=1
        Number of restarts from independent random initializations; the one with
        the lowest objective is kept.
    n_jobs : int, default=None
        Number of restarts run in parallel (threads unless a joblib backend is
        configured). ``None`` means 1 unless in a ``joblib.parallel_config``
        context.
    random_state : int, RandomState instance or None, default=None
        Seeds the initializations and the solver. Pass an int for reproducible
        results; ``None`` seeds from the operating system on every fit (numpy's
        global generator is never drawn from).
    verbose : int, default=0
        ``1`` prints the objective and certificate of every restart; ``2`` and
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
    certified_ : bool
        Whether ``grad_norm_ <= tol`` and ``min_hessian_eig_ >= -curvature_tol``.
    n_iter_ : int
        Solver iterations of the kept restart.
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
    overfit. A moderate ``alpha`` (1e-3 by default, in units where the targets
    have unit variance) makes that fit cost more than it gains, which is why
    ``alpha`` is not taken tiny although the lemma allows it. Exploratory
    measurements at d = 20, n = 2000 gave a projection distance of about 0.19
    with a decay of 1e-4 against 0.02 with 1e-3; the gap closes as n grows.

    Training is full-batch: exact gradients by backpropagation and exact
    Hessian-vector products by the R-operator (forward-over-reverse), vectorized
    in float64, cost a few matrix products with the ``(n_samples, n_features)``
    input per evaluation. L-BFGS (``solver="lbfgs"``) needs a few hundred to a few
    thousand of them and the certificate about a hundred Hessian-vector products,
    so a fit of 100,000 samples with 500 features takes minutes, not hours.
    Small problems run BLAS on one thread, where threads cost more than they
    save.

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
        sharpness=1.0,
        alpha=1e-3,
        alpha_other=1e-3,
        freeze_first_bias=False,
        whiten=True,
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
        self.sharpness = sharpness
        self.alpha = alpha
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
        y_mean = Y.mean(axis=0)
        y_std = Y.std(axis=0)
        y_scale = np.where(y_std > 0, y_std, 1.0)
        self._fit_network(X, (Y - y_mean) / y_scale, self.loss, self.huber_delta)
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
        sharpness=1.0,
        alpha=1e-3,
        alpha_other=1e-3,
        freeze_first_bias=False,
        whiten=True,
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
        self.sharpness = sharpness
        self.alpha = alpha
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
        return self._fit_network(X, Y, loss)

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
