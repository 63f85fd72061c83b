"""scikit-learn's estimator checks over every public estimator of skderand.

Every public estimator runs the full ``parametrize_with_checks`` suite with its
default parameters and with a few non-default configurations, with no expected
failures. ``check_estimator`` (the public entry point) runs once per estimator
behind the ``slow`` marker, since it repeats the same checks.
"""

import inspect

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
    # cross-validated path.
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
        {"freeze_first_bias": True, "n_init": 2, "solver": "pgd", "max_iter": 500},
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
        {"n_components": 2, "method": "derandomized"},
        {"n_components": 3, "n_stages": 2, "compute_inverse_components": True},
    ],
    "DeterministicMaxCut": [
        {"local_search": "tabu", "tau": 0.2},
        {"local_search": None, "rounding_rank": None},
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
