"""The planted-problem generators: their structure is what they claim."""

import numpy as np
import pytest
from scipy import sparse

from skderand.datasets import (
    MULTI_INDEX_LINKS,
    make_multi_index_regression,
    subspace_distance,
)
from skderand.maxcut import erdos_renyi_graph

_DIRECTIONS = {"relu": 1, "square": 1, "tanh+square": 2, "product": 2, "relu_sum": 3}


@pytest.mark.parametrize("link", MULTI_INDEX_LINKS)
def test_target_depends_on_the_returned_directions_only(link):
    X, y, U = make_multi_index_regression(300, 7, link=link, noise=0.0, random_state=0)
    assert X.shape == (300, 7) and y.shape == (300,)
    assert U.shape == (_DIRECTIONS[link], 7)
    np.testing.assert_allclose(U @ U.T, np.eye(U.shape[0]), atol=1e-12)
    # The noiseless target is the link of the projections X U^T, so moving X
    # orthogonally to span(U) cannot change it.
    shift = np.random.default_rng(1).standard_normal(X.shape)
    shift -= shift @ U.T @ U
    X2 = X + shift
    h = {
        "relu": lambda z: np.maximum(z[:, 0], 0),
        "square": lambda z: z[:, 0] ** 2,
        "tanh+square": lambda z: np.tanh(z[:, 0]) + 0.5 * z[:, 1] ** 2,
        "product": lambda z: z[:, 0] * z[:, 1],
        "relu_sum": lambda z: np.maximum(z, 0).sum(axis=1),
    }[link]
    np.testing.assert_allclose(h(X2 @ U.T), y, atol=1e-10)
    # The same seed gives the same data.
    again = make_multi_index_regression(300, 7, link=link, noise=0.0, random_state=0)
    np.testing.assert_array_equal(again[1], y)


def test_noise_has_the_requested_scale_and_a_callable_link_works():
    _, clean, _ = make_multi_index_regression(20_000, 3, noise=0.0, random_state=0)
    _, noisy, _ = make_multi_index_regression(20_000, 3, noise=0.5, random_state=0)
    assert np.std(noisy - clean) == pytest.approx(0.5, rel=0.03)
    X, y, U = make_multi_index_regression(
        50, 4, link=lambda z: z.sum(axis=1), n_directions=3, noise=0.0, random_state=2
    )
    assert U.shape == (3, 4)
    np.testing.assert_allclose(y, (X @ U.T).sum(axis=1))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(link="cubic"), "link must be one of"),
        (dict(link=np.sin), "n_directions"),
        (dict(link="product", n_directions=3), "depends on 2"),
        (dict(n_features=2, link="relu_sum"), "more than n_features"),
        (dict(n_samples=0), "n_samples must be a positive integer"),
        (dict(noise=-1.0), "noise must be a non-negative"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_multi_index_regression(**kwargs)


def test_subspace_distance_is_the_sine_of_the_largest_principal_angle():
    e = np.eye(3)
    for angle in (0.0, 0.3, np.pi / 2):
        tilted = [[np.cos(angle), np.sin(angle), 0.0]]
        assert subspace_distance(e[:1], tilted) == pytest.approx(np.sin(angle))
    # Bases need not be orthonormal; the distance is symmetric.
    B = [[1.0, 1.0, 0.0], [1.0, -2.0, 0.0]]
    assert subspace_distance(e[:2], B) == pytest.approx(0.0, abs=1e-12)
    assert subspace_distance(e[:1], B) == pytest.approx(1.0)
    assert subspace_distance(B, e[:1]) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_erdos_renyi_graph_is_a_simple_graph_of_the_requested_density(seed):
    n, p = 400, 0.03
    A = erdos_renyi_graph(n, p, signed=True, random_state=seed)
    assert sparse.issparse(A) and A.shape == (n, n)
    assert abs(A - A.T).nnz == 0 and A.diagonal().max() == 0
    m = A.nnz // 2
    expected = p * n * (n - 1) / 2
    assert abs(m - expected) < 4 * np.sqrt(expected)  # binomial, 4 std
    assert set(np.unique(A.data)) == {-1.0, 1.0}
    assert abs(np.mean(A.data > 0) - 0.5) < 0.05
    # Every pair is equally likely: the degrees are binomial around p (n - 1).
    degrees = np.diff(A.tocsr().indptr)
    assert abs(degrees.mean() - p * (n - 1)) < 0.5
    # The same seed gives the same graph.
    assert (erdos_renyi_graph(n, p, signed=True, random_state=seed) != A).nnz == 0


def test_erdos_renyi_graph_extremes_and_errors():
    assert erdos_renyi_graph(5, 0.0, random_state=0).nnz == 0
    full = erdos_renyi_graph(6, 1.0, random_state=0).toarray()
    np.testing.assert_array_equal(full, 1 - np.eye(6))
    with pytest.raises(ValueError, match="density"):
        erdos_renyi_graph(5, 1.5)
    with pytest.raises(ValueError, match="n_vertices"):
        erdos_renyi_graph(1, 0.5)
