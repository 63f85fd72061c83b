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


def test_degenerate_problems_report_the_trivial_certificate_alike():
    # Nothing to optimize (no pair of distinct points, no edge): every point is
    # an exact SOSP, reported the same way by both estimators.
    jl = skderand.LearnedJLTransformer(n_components=2).fit(np.ones((5, 4)))
    cut = skderand.DeterministicMaxCut(affinity="precomputed").fit(np.zeros((4, 4)))
    for est in (jl, cut):
        assert (est.grad_norm_, est.min_hessian_eig_, est.n_iter_) == (0.0, 0.0, 0)
        assert est.certified_ is True
