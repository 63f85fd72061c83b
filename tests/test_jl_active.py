"""The active-set machinery of LearnedJLTransformer on spans of n - 1 dimensions.

The rounds there optimize the embedded points of the active pairs (their
gradient is the map's before its product with the coordinates), and new pairs'
squared distances come from the blocked pass's stored Gram form where its
round-off bound is within GRAM_RTOL.
"""

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from skderand import LearnedJLTransformer
from skderand.embedding import _active
from skderand.embedding._active import _ActivePairs
from skderand.embedding._pairs import (
    GRAM_RTOL,
    _PairObjective,
    _PairScanner,
    _Span,
    all_pairs,
    exact_sq_dists,
)


def _coords(n, d, seed=0):
    rng = np.random.default_rng(seed)
    return _Span(rng.standard_normal((n, d))).coords


def _some_pairs(n, m, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(n, size=m), rng.integers(n, size=m)
    keep = a != b
    key = np.unique(np.minimum(a, b)[keep] * n + np.maximum(a, b)[keep])
    return np.divmod(key, n)


@pytest.mark.parametrize("beta", [7.0, 500.0])
def test_embedded_evaluation_is_the_map_evaluation(beta):
    # Value and gradient in the embedded points Y = X M^T: the same value as
    # the map's evaluation, and the map's gradient is grad_Y^T X.
    X = _coords(30, 40)
    rows, cols = _some_pairs(30, 120)
    d2 = exact_sq_dists(X, rows, cols)
    obj = _PairObjective(X, rows, cols, d2, 4, derandomized=False, penalty=0.0)
    obj.beta = beta
    z = np.random.default_rng(1).standard_normal(4 * X.shape[1])
    value, grad_M = obj(z)
    Y = X[obj.used] @ z.reshape(4, -1).T
    value_Y, grad_Y = obj.embedded(Y)
    assert value_Y == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(
        (grad_Y.T @ X[obj.used]).ravel(),
        grad_M,
        rtol=1e-12,
        atol=1e-12 * abs(grad_M).max(),
    )


def test_embedded_gradient_matches_finite_differences():
    X = _coords(12, 20)
    rows, cols, d2 = all_pairs(X)
    obj = _PairObjective(X, rows, cols, d2, 3, derandomized=False, penalty=0.0)
    obj.beta = 7.0
    Y = np.random.default_rng(2).standard_normal((obj.used.size, 3))
    _, grad = obj.embedded(Y)
    h = 1e-6
    numeric = np.array(
        [
            (obj.embedded(Y + h * E)[0] - obj.embedded(Y - h * E)[0]) / (2 * h)
            for E in np.eye(Y.size).reshape(-1, *Y.shape)
        ]
    )
    np.testing.assert_allclose(grad.ravel(), numeric, rtol=1e-5, atol=1e-7)


def test_stored_gram_distances_are_within_their_tolerance():
    # Accepted pairs lie within GRAM_RTOL of the exact (direct-sum) distances;
    # a near-duplicate pair (the Gram form's cancellation) is refused.
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 300))
    X[7] = X[3] + 1e-5 * rng.standard_normal(300)
    X -= X.mean(0)
    scanner = _PairScanner(X)
    rows, cols = _some_pairs(200, 3000, seed=4)
    rows, cols = np.append(rows, 3), np.append(cols, 7)
    d2, ok = scanner.stored_sq_dists(rows, cols)
    exact = exact_sq_dists(X, rows, cols)
    assert ok[:-1].all() and not ok[-1]
    assert np.all(np.abs(d2[ok] - exact[ok]) <= GRAM_RTOL * exact[ok])


def test_embedded_round_moves_only_the_active_points():
    # A round on the embedded points: the map recovered from them reproduces
    # them (X M^T = Y), lowers the surrogate, and leaves the points outside
    # the active pairs where they were.
    X = _coords(60, 80)
    pairs = _ActivePairs(X, working_set=100)
    assert pairs.embedded == (X.shape[1] >= _active.EMBEDDED_MIN_RANK)
    rows, cols = _some_pairs(40, 150, seed=5)
    pairs._set(rows, cols)
    obj = pairs.objective(5, 50.0, derandomized=False, penalty=0.0)
    z = np.random.default_rng(6).standard_normal(5 * X.shape[1])
    z_new, n_iter = pairs._embedded_lbfgs(obj, z, 1e-9, 20)
    assert n_iter > 0
    Y_old = X @ z.reshape(5, -1).T
    Y_new = X @ z_new.reshape(5, -1).T
    unused = np.setdiff1d(np.arange(60), obj.used)
    assert unused.size >= 20
    np.testing.assert_allclose(Y_new[unused], Y_old[unused], atol=1e-10)
    assert obj(z_new)[0] < obj(z)[0]
    value_Y, _ = obj.embedded(Y_new[obj.used])
    assert value_Y == pytest.approx(obj(z_new)[0], rel=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fit_on_the_embedded_path_is_measured_exactly(monkeypatch):
    # 150 points in 400 dimensions (span 149), active-set rounds on the
    # embedded points, Gram-form distances: distortion_ is the all-pairs value.
    monkeypatch.setattr(_active, "EMBEDDED_MIN_RANK", 1)
    monkeypatch.setattr(_active, "GRAM_DISTANCE_MIN_RANK", 1)
    monkeypatch.setattr(_active, "COMPLETE_PER_VARIABLE", 1)
    X = np.random.default_rng(7).standard_normal((150, 400))
    jl = LearnedJLTransformer(6, working_set=1000, random_state=0).fit(X)
    q = pdist(jl.transform(X), "sqeuclidean")
    r = q / pdist(X, "sqeuclidean")
    assert jl.distortion_ == pytest.approx(
        (r.max() - r.min()) / (r.max() + r.min()), rel=1e-9
    )
    assert jl.distortion_ < 0.8 * jl.initial_distortion_
