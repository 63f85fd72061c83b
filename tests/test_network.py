"""The smooth MLP behind StructureDiscoveryRegressor: derivatives and the lemma."""

import itertools
import warnings

import numpy as np
import pytest

from skderand.neural._network import _BLOCK_VALUES, _activation, _Network
from skderand.optimize import minimize_sosp, sosp_certificate

ACTIVATIONS = ["softplus", "tanh", "sigmoid", "gelu"]
LOSSES = [
    ("squared_error", 2),
    ("pseudo_huber", 2),
    ("binary_log_loss", 1),
    ("log_loss", 3),
]


# Enough rows for three row blocks of the (4, 5, 3, k) network (block size
# _BLOCK_VALUES // 5), the last one partial.
SEVERAL_BLOCKS = 2 * (_BLOCK_VALUES // 5) + 7


def _problem(
    loss, n_outputs, activation, train_first_bias, seed=0, n_samples=7, weighted=False
):
    rng = np.random.default_rng(seed)
    sample_weight = rng.uniform(0.5, 2.0, n_samples) if weighted else None
    net = _Network(
        (4, 5, 3, n_outputs),
        activation=activation,
        softplus_sharpness=2.0,
        loss=loss,
        alpha=0.1,
        alpha_other=0.05,
        train_first_bias=train_first_bias,
        huber_delta=0.7,
        sample_weight=sample_weight,
    )
    X = rng.standard_normal((n_samples, 4))
    if loss == "log_loss":
        Y = np.eye(n_outputs)[rng.integers(0, n_outputs, n_samples)]
    elif loss == "binary_log_loss":
        Y = rng.integers(0, 2, (n_samples, 1)).astype(float)
    else:
        Y = rng.standard_normal((n_samples, n_outputs))
    theta = net.init(rng) + 0.3 * rng.standard_normal(net.n_params)
    return net, X, Y, theta, rng


@pytest.mark.parametrize("loss, n_outputs", LOSSES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("train_first_bias", [True, False])
@pytest.mark.parametrize(
    "n_samples, weighted", [(7, False), (SEVERAL_BLOCKS, False), (SEVERAL_BLOCKS, True)]
)
def test_gradient_and_hvp_match_finite_differences(
    loss, n_outputs, activation, train_first_bias, n_samples, weighted
):
    # Past one row block, the sums over blocks (and the sample weights sliced
    # per block) must give the same derivatives as the differences.
    net, X, Y, theta, rng = _problem(
        loss,
        n_outputs,
        activation,
        train_first_bias,
        n_samples=n_samples,
        weighted=weighted,
    )
    value, grad = net.loss_grad(theta, X, Y)
    v = rng.standard_normal(net.n_params)
    h = 1e-6
    f_plus, g_plus = net.loss_grad(theta + h * v, X, Y)
    f_minus, g_minus = net.loss_grad(theta - h * v, X, Y)
    np.testing.assert_allclose(grad @ v, (f_plus - f_minus) / (2 * h), rtol=1e-6)
    hv = net.hessp(theta, v, X, Y)
    np.testing.assert_allclose(hv, (g_plus - g_minus) / (2 * h), rtol=1e-5, atol=1e-8)


def test_objective_is_mean_loss_plus_decay_on_weights_only():
    rng = np.random.default_rng(0)
    net = _Network((3, 4, 1), alpha=0.2, alpha_other=0.3)
    X, Y = rng.standard_normal((10, 3)), rng.standard_normal((10, 1))
    theta = net.init(rng)
    weights, biases = net.unpack(theta)
    biases[0][:] = 5.0  # a bias is not penalized
    out = net.forward(theta, X)
    expected = (
        0.5 * np.mean((out - Y) ** 2)
        + 0.2 * np.sum(weights[0] ** 2)
        + 0.3 * np.sum(weights[1] ** 2)
    )
    assert net.loss_grad(theta, X, Y)[0] == pytest.approx(expected, rel=1e-12)
    np.testing.assert_array_equal(net.pack(weights, biases), theta)


def test_frozen_first_bias_is_not_a_variable():
    trainable = _Network((3, 4, 1))
    frozen = _Network((3, 4, 1), train_first_bias=False)
    assert trainable.n_params - frozen.n_params == 4
    theta = frozen.init(np.random.default_rng(0))
    np.testing.assert_array_equal(frozen.unpack(theta)[1][0], 0.0)


def test_certificate_agrees_with_finite_difference_hessian():
    # A tiny network, away from any stationary point so the Hessian is
    # indefinite: Lanczos on the exact HVPs must find the smallest eigenvalue of
    # the Hessian assembled column by column from finite differences of gradients.
    rng = np.random.default_rng(3)
    X, Y = rng.standard_normal((20, 4)), rng.standard_normal((20, 1))
    net = _Network((4, 3, 1), activation="tanh", alpha=1e-3, alpha_other=1e-3)
    theta = net.init(np.random.default_rng(1)) * 2.0
    n, h = net.n_params, 1e-5
    hessian = np.empty((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = h
        hessian[:, j] = (
            net.loss_grad(theta + e, X, Y)[1] - net.loss_grad(theta - e, X, Y)[1]
        ) / (2 * h)
    hessian = (hessian + hessian.T) / 2
    expected = np.linalg.eigvalsh(hessian)[0]
    assert expected < -1e-3  # the test point really has negative curvature
    cert = sosp_certificate(
        lambda t: net.loss_grad(t, X, Y),
        theta,
        hessp=lambda t, v: net.hessp(t, v, X, Y),
        max_lanczos_iter=n,
    )
    assert cert.min_hessian_eig == pytest.approx(expected, abs=1e-6)
    assert not cert.success


def _gauss_hermite_population(n_nodes, dim):
    """Tensor Gauss-Hermite rule: sample-weighted points whose weighted mean is
    the expectation over N(0, I_dim), exact for polynomials of degree < 2 n."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)
    X = np.array(list(itertools.product(nodes, repeat=dim)))
    w = np.prod(np.array(list(itertools.product(weights, repeat=dim))), axis=1)
    return X, w / w.sum()


@pytest.mark.parametrize(
    "seed",
    [
        0,
        pytest.param(1, marks=pytest.mark.slow),
        pytest.param(2, marks=pytest.mark.slow),
    ],
)
def test_lemma_trainable_bias_kills_perpendicular_weight_frozen_does_not(seed):
    # The ablation of the theory on the (quadrature-exact) population risk:
    # y = x_0**2 depends on x_0 only; x_1, x_2 are perpendicular. With a tiny
    # decay, a certified SOSP has W_perp ~ 0 when the first-layer bias is
    # trainable; frozen at zero, the network uses the perpendicular Gaussian
    # directions in place of the missing offsets and W_perp stays large.
    X, w = _gauss_hermite_population(10, 3)
    Y = (X[:, 0] ** 2)[:, None]
    lam = 1e-4
    perp = {}
    for train_bias in (True, False):
        net = _Network(
            (3, 4, 1),
            alpha=lam,
            alpha_other=lam,
            train_first_bias=train_bias,
            sample_weight=w,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = minimize_sosp(
                lambda t, net=net: net.loss_grad(t, X, Y),
                net.init(np.random.default_rng(seed)),
                hessp=lambda t, v, net=net: net.hessp(t, v, X, Y),
                tol=1e-8,
                curvature_tol=lam,
                max_iter=5000,
                random_state=seed,
            )
        assert res.success
        W = net.unpack(res.x)[0][0]
        perp[train_bias] = np.linalg.norm(W[:, 1:])
        if train_bias:
            # The lemma's bound, ||W_perp|| <= rho / (2 lambda - eps).
            eps = max(0.0, -res.min_hessian_eig)
            assert perp[True] <= 1.5 * res.grad_norm / (2 * lam - eps)
    assert perp[True] < 1e-4
    assert perp[False] > 1e-2


@pytest.mark.parametrize("dtype, atol", [(np.float64, 1e-15), (np.float32, 1e-6)])
def test_tanh_matches_numpy_everywhere_and_never_warns(dtype, atol):
    # Computed through the exponential: up to round-off, in both precisions,
    # past the clip at |z| = 20, and with every floating-point error raised.
    act, _ = _activation("tanh", 1.0)
    z = np.concatenate([np.linspace(-60, 60, 10_001), [0.0, 1e-8, -1e-8, 20.0]])
    with np.errstate(all="raise"):
        value, d1 = act(z.astype(dtype))
    assert value.dtype == dtype
    np.testing.assert_allclose(value, np.tanh(z), rtol=0, atol=atol)
    np.testing.assert_allclose(d1, 1.0 - np.tanh(z) ** 2, rtol=0, atol=4 * atol)
