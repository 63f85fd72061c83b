"""A ``ConvergenceWarning`` is raised exactly when an estimator's certificate fails.

Every public estimator reports the certificate of the point it returns:
``grad_norm_``, ``min_hessian_eig_`` and ``certified_``. For each one, fits sweep
from far too few solver iterations to more than the default, on several seeds,
and every fit must satisfy

- ``certified_`` is the certificate's definition applied to the reported numbers,
  ``grad_norm_ <= tol and min_hessian_eig_ >= -curvature_tol``;
- a ``ConvergenceWarning`` is raised if and only if ``certified_`` is False;
- that warning gives advice (it names the parameter to raise) and points at the
  caller's line.

Each sweep must contain both outcomes, so that neither direction of the "if and
only if" is checked vacuously.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skderand import (
    DeterministicMaxCut,
    DeterministicQUBO,
    LearnedJLTransformer,
    StructureDiscoveryClassifier,
    StructureDiscoveryRegressor,
)
from tests.test_common import _public_estimators


def _signed_graph(seed, n=40, p=0.3):
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) < p, k=1) * rng.choice([-1.0, 1.0], (n, n))
    return upper + upper.T, None


def _qubo(seed, n=30):
    rng = np.random.default_rng(seed)
    return rng.integers(-10, 11, (n, n)).astype(float), None


def _points(seed):
    return np.random.default_rng(seed).standard_normal((50, 30)), None


def _regression(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((200, 5))
    return X, np.tanh(X[:, 0] + X[:, 1])


def _classification(seed):
    X, y = _regression(seed)
    return X, (y > 0).astype(int)


def _sqrt_tol(est):
    return np.sqrt(est.tol)


def _structure_discovery_curvature_tol(est):
    # As documented: curvature_tol, or the decay used (sqrt(tol) if it is 0).
    if est.curvature_tol is not None:
        expected = est.curvature_tol
    else:
        expected = est.alpha_ if est.alpha_ > 0 else np.sqrt(est.tol)
    assert est.curvature_tol_ == expected
    return expected


_STRUCTURE_DISCOVERY_SWEEP = [
    {"max_iter": 3},
    {"max_iter": 30},
    {"max_iter": 100},
    {},
    # A loose gradient tolerance with no curvature slack: certified or not by
    # the Hessian alone.
    {"tol": 1.0, "curvature_tol": 0.0, "max_iter": 1},
]

# estimator -> (fixed parameters, data, sweep of parameters, curvature tolerance
# as each estimator documents it)
SWEEPS = {
    DeterministicMaxCut: (
        {"affinity": "precomputed"},
        _signed_graph,
        [{"max_iter": 1, "max_stages": 1}, {"max_iter": 3}, {"max_iter": 10}, {}],
        _sqrt_tol,
    ),
    DeterministicQUBO: (
        {},
        _qubo,
        [{"max_iter": 1, "max_stages": 1}, {"max_iter": 3}, {"max_iter": 10}, {}],
        _sqrt_tol,
    ),
    LearnedJLTransformer: (
        {"n_components": 5},
        _points,
        [{"max_iter": 1}, {"max_iter": 10}, {"max_iter": 50}, {}, {"max_iter": 2000}],
        _sqrt_tol,
    ),
    StructureDiscoveryRegressor: (
        {"hidden_layer_sizes": 8},
        _regression,
        _STRUCTURE_DISCOVERY_SWEEP,
        _structure_discovery_curvature_tol,
    ),
    StructureDiscoveryClassifier: (
        {"hidden_layer_sizes": 8},
        _classification,
        _STRUCTURE_DISCOVERY_SWEEP,
        _structure_discovery_curvature_tol,
    ),
}


def test_every_public_estimator_has_a_sweep():
    assert set(SWEEPS) == set(_public_estimators())


def _fit_recording(est, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return [w for w in caught if issubclass(w.category, ConvergenceWarning)]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("cls", list(SWEEPS), ids=lambda c: c.__name__)
def test_convergence_warning_exactly_when_not_certified(cls, seed):
    fixed, make_data, sweep, curvature_tol = SWEEPS[cls]
    X, y = make_data(seed)
    outcomes = set()
    for params in sweep:
        est = cls(**fixed, **params, random_state=seed)
        caught = _fit_recording(est, X, y)
        by_definition = bool(
            est.grad_norm_ <= est.tol and est.min_hessian_eig_ >= -curvature_tol(est)
        )
        context = f"{params}: grad {est.grad_norm_}, eig {est.min_hessian_eig_}"
        assert est.certified_ is by_definition, context
        assert len(caught) == (0 if est.certified_ else 1), context
        if caught:
            message = str(caught[0].message)
            # One text for every estimator: its name, the certificate, advice.
            assert message.startswith(f"{cls.__name__} did not reach"), context
            assert "max_iter" in message, context
            # Attributed to the line that called fit, not to library internals.
            assert caught[0].filename == __file__, context
        outcomes.add(est.certified_)
    assert outcomes == {True, False}


def test_a_failure_of_the_curvature_condition_alone_warns():
    # The gradient condition holds here; only the Hessian's negative eigenvalue
    # (a saddle after one iteration from a random network: a fixed alpha and
    # n_components, so no cross-validated path warm-starts the fit) withholds
    # the certificate.
    X, y = _regression(2)
    est = StructureDiscoveryRegressor(
        hidden_layer_sizes=8,
        alpha=1e-3,
        n_components=1,
        tol=1.0,
        curvature_tol=0.0,
        max_iter=1,
        random_state=2,
    )
    caught = _fit_recording(est, X, y)
    assert est.grad_norm_ <= est.tol
    assert est.min_hessian_eig_ < -1e-3
    assert not est.certified_
    assert len(caught) == 1 and "smallest Hessian eigenvalue" in str(caught[0].message)


def test_raising_max_iter_as_advised_lets_the_final_stage_go_on():
    # The advice in the warning must have an effect: an active-set fit (300
    # points near a 10-dimensional subspace, k = 4) whose final stage is far
    # from stationary at max_iter=400 spends the raised budget in that stage.
    # Its earlier stages stop after a fixed number of rounds (400 iterations),
    # so the two fits share their path up to the smaller budget. Before the
    # final stage ran on to max_iter it ended at 400 iterations whatever
    # max_iter was.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 10)) @ rng.standard_normal((10, 60))
    X += 0.3 * rng.standard_normal(X.shape)
    fits = {}
    for max_iter in (400, 800):
        est = LearnedJLTransformer(4, max_iter=max_iter, random_state=0)
        fits[max_iter] = (est, _fit_recording(est, X, None))
    base, caught = fits[400]
    assert base.grad_norm_ > 10 * base.tol
    assert len(caught) == 1 and "Increase max_iter" in str(caught[0].message)
    raised, _ = fits[800]
    assert raised.n_iter_ > base.n_iter_
    if not raised.certified_:
        # Uncertified again: the final stage spent every added iteration.
        assert raised.n_iter_ >= base.n_iter_ + 400
