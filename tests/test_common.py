"""scikit-learn's estimator checks over every public estimator of skderand.

Every public estimator runs the full ``parametrize_with_checks`` suite with its
default parameters and with a few non-default configurations, with no expected
failures. ``check_estimator`` (the public entry point) runs once per estimator
behind the ``slow`` marker, since it repeats the same checks.
"""

import inspect

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import (
    check_estimator,
    check_param_validation,
    parametrize_with_checks,
)

import skderand


def _public_estimators():
    """Every estimator class re-exported by ``skderand`` (found, not listed by hand)."""
    return [
        obj
        for name in skderand.__all__
        if inspect.isclass(obj := getattr(skderand, name))
        and issubclass(obj, BaseEstimator)
    ]


# Non-default configurations that change the code path: other losses,
# activations, depths, solvers and rounding/optimization variants. (MAXCUT's
# similarity affinities are left out on purpose: a maximum cut of a similarity
# graph separates similar points, the opposite of what check_clustering asks of
# a clusterer.)
CONFIGURATIONS = {
    # The defaults choose alpha and n_components by cross-validation; the other
    # configurations fix them (no folds), to check the other code paths at a
    # tenth of the cost, except the one with restarts, which starts from the
    # cross-validated path (over two folds and two decays: the path is what is
    # checked, not its choice).
    "StructureDiscoveryRegressor": [
        {
            "loss": "pseudo_huber",
            "activation": "softplus",
            "alpha": 1e-2,
            "n_components": 1,
        },
        {
            "hidden_layer_sizes": (6, 4),
            "activation": "gelu",
            "whiten": True,
            "alpha": 1e-3,
            "n_components": 1,
        },
        {
            "freeze_first_bias": True,
            "n_init": 2,
            "solver": "pgd",
            "max_iter": 500,
            "cv": 2,
            "alphas": (1e-2, 1e-1),
        },
    ],
    "StructureDiscoveryClassifier": [
        {
            "activation": "sigmoid",
            "hidden_layer_sizes": (8,),
            "alpha": 1e-2,
            "n_components": 1,
        },
    ],
    "LearnedJLTransformer": [
        {"n_components": 2, "algorithm": "derandomized"},
        {"n_components": 3, "n_stages": 2, "compute_inverse_components": True},
    ],
    "DeterministicMaxCut": [
        {"local_search": "tabu", "tau": 0.2},
        {"local_search": None, "rounding_rank": None},
    ],
    "DeterministicQUBO": [
        {"sense": "maximize", "local_search": None},
        {"rounding_rank": None, "n_restarts": 0, "tau": 0.2},
    ],
}

ESTIMATORS = [cls() for cls in _public_estimators()]
CONFIGURED = [
    cls(**params)
    for cls in _public_estimators()
    for params in CONFIGURATIONS.get(cls.__name__, [])
]


def test_every_public_name_resolves():
    for name in skderand.__all__:
        assert hasattr(skderand, name), name


def test_every_estimator_has_non_default_configurations():
    for cls in _public_estimators():
        assert CONFIGURATIONS.get(cls.__name__), cls.__name__
        for params in CONFIGURATIONS[cls.__name__]:
            assert set(params) <= set(cls().get_params()), (cls.__name__, params)


# The three-component LearnedJLTransformer meets two-feature data in some of
# scikit-learn's checks: allowed with a DataDimensionalityWarning, as for
# GaussianRandomProjection (tested in tests/test_learned_jl.py); here only noise.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.DataDimensionalityWarning")
@pytest.mark.skipif(not ESTIMATORS, reason="no public estimator yet")
@parametrize_with_checks(ESTIMATORS + CONFIGURED)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_param_validation(estimator):
    check_param_validation(type(estimator).__name__, estimator)


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_check_estimator_entry_point(estimator):
    check_estimator(estimator)


# One certificate contract (issue 11): every estimator takes the same solver
# parameters and exposes the same fitted certificate, with ``certified_`` true
# exactly when both tolerances hold. (tests/test_convergence.py sweeps budgets
# and checks the one ConvergenceWarning.)
SOLVER_PARAMS = {"tol", "curvature_tol", "max_iter", "random_state", "verbose"}
CERTIFICATE = ("grad_norm_", "min_hessian_eig_", "curvature_tol_", "n_iter_")


def _small_problem(cls):
    """A cheap fit per kind: fixed decay and rank skip structure discovery's CV."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    if cls.__name__.startswith("StructureDiscovery"):
        est = cls(hidden_layer_sizes=4, alpha=1e-2, n_components=1, random_state=0)
        y = X[:, 0] > 0 if "Classifier" in cls.__name__ else np.tanh(X[:, 0])
        return est, (X, y)
    if cls.__name__ == "LearnedJLTransformer":
        # Fewer components than features: an identity map would be exact.
        return cls(n_components=2, random_state=0), (X,)
    if cls.__name__ == "DeterministicQUBO":
        return cls(random_state=0), (X @ X.T - 4.0 * np.eye(60),)
    return cls(random_state=0), (X,)


def _network_certificate(est, X, y):
    """Gradient norm and Hessian eigenvalues of a structure-discovery fit.

    Recomputed from the fitted attributes alone: the network is mapped back to
    the standardized inputs (and, for a regressor, targets) it was fitted on,
    and the Hessian of its objective is formed densely, by central differences
    of the gradient (not the Lanczos run on exact Hessian products that the
    estimator reports). ``whiten=False``: the standardization is diagonal.
    """
    from sklearn.base import is_classifier
    from sklearn.preprocessing import LabelBinarizer

    from skderand.neural._network import _Network

    inv_std = est._whitening
    weights = [coef.T for coef in est.coefs_]
    biases = list(est.intercepts_)
    # coefs_[0] = (W0 * inv_std).T and intercepts_[0] = b0 - mean_ @ coefs_[0].
    weights[0] = est.coefs_[0].T / inv_std
    biases[0] = est.intercepts_[0] + est.mean_ @ est.coefs_[0]
    if is_classifier(est):
        Y = LabelBinarizer().fit_transform(y).astype(np.float64)
        loss = "binary_log_loss" if len(est.classes_) == 2 else "log_loss"
        huber_delta = 1.0
    else:
        Y = np.reshape(y, (len(y), -1))
        y_mean, y_scale = Y.mean(axis=0), Y.std(axis=0)
        Y = (Y - y_mean) / y_scale
        weights[-1] = weights[-1] / y_scale[:, None]
        biases[-1] = (biases[-1] - y_mean) / y_scale
        loss, huber_delta = est.loss, est.huber_delta
    net = _Network(
        (X.shape[1], *(w.shape[0] for w in weights)),
        activation=est.activation,
        softplus_sharpness=est.softplus_sharpness,
        loss=loss,
        alpha=est.alpha_,
        alpha_other=est.alpha_other,
        train_first_bias=not est.freeze_first_bias,
        huber_delta=huber_delta,
    )
    theta = net.pack(weights, biases)
    Xw = (X - est.mean_) * inv_std

    def gradient(t):
        return net.loss_grad(t, Xw, Y)[1]

    step = 1e-5
    hessian = np.column_stack(
        [
            (gradient(theta + step * e) - gradient(theta - step * e)) / (2 * step)
            for e in np.eye(theta.size)
        ]
    )
    hessian = (hessian + hessian.T) / 2
    return np.linalg.norm(gradient(theta)), np.linalg.eigvalsh(hessian)


@pytest.mark.parametrize("cls", _public_estimators(), ids=lambda c: c.__name__)
def test_every_estimator_reports_the_same_certificate(cls):
    assert SOLVER_PARAMS <= set(cls().get_params())
    est, data = _small_problem(cls)
    est.fit(*data)
    for name in CERTIFICATE:
        assert np.isfinite(getattr(est, name)), name
    assert est.curvature_tol_ >= 0 and est.n_iter_ >= 0
    holds = est.grad_norm_ <= est.tol and est.min_hessian_eig_ >= -est.curvature_tol_
    assert est.certified_ is holds
    if cls.__name__.startswith("StructureDiscovery"):
        # The reported numbers are those of the returned network (a wrong sign
        # or a certificate of another point fails here). Lanczos stops at a
        # Ritz residual of 1e-6 times the Hessian's scale (sosp_certificate's
        # lanczos_rtol), which bounds its error; the central differences' error
        # is far smaller on this network.
        grad_norm, eigenvalues = _network_certificate(est, *data)
        assert est.grad_norm_ == pytest.approx(grad_norm, rel=1e-6, abs=1e-10)
        lanczos_error = 2e-6 * np.abs(eigenvalues).max()
        assert est.min_hessian_eig_ == pytest.approx(eigenvalues[0], abs=lanczos_error)
    # LearnedJLTransformer certifies its surrogate at the final stage's end
    # point (before the polish and the calibration) and DeterministicMaxCut its
    # rounding's (V, mu): neither point is among the fitted attributes, so
    # their numbers are not recomputed here.


def test_degenerate_problems_report_the_trivial_certificate_alike():
    # Nothing to optimize (no pair of distinct points, no edge): every point is
    # an exact SOSP, reported the same way by both estimators.
    jl = skderand.LearnedJLTransformer(n_components=2).fit(np.ones((5, 4)))
    cut = skderand.DeterministicMaxCut(affinity="precomputed").fit(np.zeros((4, 4)))
    for est in (jl, cut):
        assert (est.grad_norm_, est.min_hessian_eig_, est.n_iter_) == (0.0, 0.0, 0)
        assert est.certified_ is True
