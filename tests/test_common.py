"""scikit-learn's estimator checks over every public estimator of skderand."""

import inspect

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

import skderand


def _public_estimators():
    """Every estimator class re-exported by ``skderand`` (found, not listed by hand)."""
    return [
        obj
        for name in skderand.__all__
        if inspect.isclass(obj := getattr(skderand, name))
        and issubclass(obj, BaseEstimator)
    ]


ESTIMATORS = [cls() for cls in _public_estimators()]


def test_every_public_name_resolves():
    for name in skderand.__all__:
        assert hasattr(skderand, name), name


@pytest.mark.skipif(not ESTIMATORS, reason="no public estimator yet")
@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
