"""Tests of the certified SOSP solver: escapes, certificates, and their definitions."""

import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der, rosen_hess_prod
from sklearn.exceptions import ConvergenceWarning

from skderand.optimize import minimize_sosp, sosp_certificate
from skderand.optimize._problems import double_well, matrix_factorization

METHODS = ["lbfgs", "pgd"]


def dense_hessian(fun, x, h=1e-6):
    """Hessian by central differences of the (exact) gradient, one column at a time."""
    n = x.size
    hess = np.empty((n, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        hess[:, i] = (fun(x + e)[1] - fun(x - e)[1]) / (2 * h)
    return 0.5 * (hess + hess.T)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_escapes_factorization_saddle_at_zero(method, seed):
    fun, target, n_vars = matrix_factorization(12, 9, 2, seed)
    x0 = np.zeros(n_vars)
    start = sosp_certificate(fun, x0)
    assert start.grad_norm == 0.0
    assert start.min_hessian_eig < -1.0  # a strict saddle
    res = minimize_sosp(fun, x0, method=method, random_state=seed, max_iter=100_000)
    assert res.success
    assert res.grad_norm <= res.tol
    assert res.min_hessian_eig >= -res.curvature_tol
    assert res.n_perturbations >= 1
    # Every SOSP of this factorization is a global minimum: the product is M.
    u = res.x[: 12 * 2].reshape(12, 2)
    v = res.x[12 * 2 :].reshape(9, 2)
    np.testing.assert_allclose(u @ v.T, target, atol=1e-5)
    np.testing.assert_array_equal(x0, 0.0)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_escapes_double_well_origin(method, seed):
    res = minimize_sosp(double_well, np.zeros(4), method=method, random_state=seed)
    assert res.success
    np.testing.assert_allclose(np.abs(res.x), 1.0, atol=1e-5)
    # The Hessian at the minimizers is 3 x^2 - 1 = 2 I.
    assert res.min_hessian_eig == pytest.approx(2.0, abs=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_min_eig_at_factorization_zero_matches_exact(seed):
    # The Hessian at U = V = 0 is [[0, -M (x) I], [-M^T (x) I, 0]]: eigenvalues
    # +-sigma_i(M) and a large null space. Lanczos from a structured start vector
    # can report ~0 there; a random start must find -sigma_1(M).
    m, n, rank = 30, 20, 3
    fun, target, n_vars = matrix_factorization(m, n, rank, seed)
    cert = sosp_certificate(fun, np.zeros(n_vars), random_state=seed)
    sigma_1 = np.linalg.svd(target, compute_uv=False)[0]
    assert cert.min_hessian_eig == pytest.approx(-sigma_1, rel=1e-6)
    hess = dense_hessian(fun, np.zeros(n_vars))
    assert cert.min_hessian_eig == pytest.approx(np.linalg.eigvalsh(hess)[0], rel=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_min_eig_matches_dense_hessian_at_random_points(seed):
    m, n, rank = 8, 6, 2
    fun, _, n_vars = matrix_factorization(m, n, rank, seed)
    x = np.random.default_rng(seed).standard_normal(n_vars)
    exact = np.linalg.eigvalsh(dense_hessian(fun, x))
    cert = sosp_certificate(fun, x, random_state=seed)
    assert cert.min_hessian_eig == pytest.approx(exact[0], rel=1e-5, abs=1e-6)
    # The reported eigenvector is one: ||H v - lambda v|| small.
    hess = dense_hessian(fun, x)
    v = cert.min_hessian_eigvec
    np.testing.assert_allclose(hess @ v, exact[0] * v, atol=1e-4)
    assert cert.grad_norm == pytest.approx(np.linalg.norm(fun(x)[1]), rel=1e-12)


def test_certificate_with_exact_hessp_on_rosenbrock():
    def fun(x):
        return rosen(x), rosen_der(x)

    x = np.random.default_rng(0).uniform(-1, 1, 7)
    exact = np.linalg.eigvalsh(dense_hessian(fun, x))[0]
    with_hessp = sosp_certificate(fun, x, hessp=rosen_hess_prod)
    without = sosp_certificate(fun, x)
    assert with_hessp.min_hessian_eig == pytest.approx(exact, rel=1e-6)
    assert without.min_hessian_eig == pytest.approx(exact, rel=1e-5)
    assert with_hessp.nhev > 0 and with_hessp.nfev == 1  # no gradient differences


def test_certificate_of_a_point_from_another_optimizer():
    x_star = minimize(rosen, np.zeros(5), jac=rosen_der, method="BFGS", tol=1e-12).x
    cert = sosp_certificate(lambda x: (rosen(x), rosen_der(x)), x_star, tol=1e-5)
    assert cert.success
    assert cert.min_hessian_eig > 0
    # At a non-stationary point the certificate fails on the gradient.
    cert = sosp_certificate(lambda x: (rosen(x), rosen_der(x)), np.zeros(5))
    assert not cert.success
    assert cert.grad_norm == pytest.approx(np.linalg.norm(rosen_der(np.zeros(5))))


@pytest.mark.parametrize("method", METHODS)
def test_convex_quadratic_reaches_minimizer(method):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((20, 20))
    a = q @ q.T / 20 + 0.5 * np.eye(20)
    b = rng.standard_normal(20)

    def fun(x):
        return 0.5 * x @ a @ x - b @ x, a @ x - b

    res = minimize_sosp(fun, np.zeros(20), method=method, random_state=0, tol=1e-8)
    assert res.success
    np.testing.assert_allclose(res.x, np.linalg.solve(a, b), atol=1e-6)
    assert res.min_hessian_eig == pytest.approx(np.linalg.eigvalsh(a)[0], rel=1e-6)


def test_large_problem_without_dense_hessian():
    # 10^5 variables started on the saddle of a separable double well (Hessian -I).
    n = 100_000
    res = minimize_sosp(double_well, np.zeros(n), random_state=0, tol=1e-5)
    assert res.success
    np.testing.assert_allclose(np.abs(res.x), 1.0, atol=1e-4)


@pytest.mark.parametrize("method", METHODS)
def test_same_seed_same_result(method):
    fun, _, n_vars = matrix_factorization(10, 8, 2, 0)
    a = minimize_sosp(fun, np.zeros(n_vars), method=method, random_state=3)
    b = minimize_sosp(fun, np.zeros(n_vars), method=method, random_state=3)
    np.testing.assert_array_equal(a.x, b.x)


@pytest.mark.parametrize("method", METHODS)
def test_convergence_warning_when_max_iter_runs_out(method):
    fun, _, n_vars = matrix_factorization(10, 8, 2, 0)
    x0 = np.random.default_rng(0).standard_normal(n_vars)
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        res = minimize_sosp(fun, x0, method=method, max_iter=3, random_state=0)
    assert not res.success
    assert res.n_iter == 3


def test_callback_can_stop_and_sees_iterates():
    seen = []

    def callback(intermediate_result):
        seen.append(intermediate_result.grad_norm)
        if len(seen) == 5:
            raise StopIteration

    fun, _, n_vars = matrix_factorization(10, 8, 2, 0)
    x0 = np.random.default_rng(0).standard_normal(n_vars)
    res = minimize_sosp(fun, x0, callback=callback, random_state=0)
    assert len(seen) == 5 and res.n_iter == 5
    assert "callback" in res.message
    assert res.grad_norm == pytest.approx(seen[-1])


def test_verbose_prints_progress(capsys):
    minimize_sosp(double_well, np.zeros(3), random_state=0, verbose=1)
    out = capsys.readouterr().out
    assert "grad norm" in out and "negative curvature" in out and "Certified" in out


@pytest.mark.parametrize(
    "x0, message",
    [
        ([0.0, np.nan], "NaN or infinite"),
        ([np.inf, 0.0], "NaN or infinite"),
        (np.zeros((2, 2)), "flat"),
        ([], "empty"),
        (["a", "b"], "real numbers"),
    ],
)
def test_bad_x0(x0, message):
    with pytest.raises(ValueError, match=message):
        minimize_sosp(double_well, x0)
    with pytest.raises(ValueError, match=message):
        sosp_certificate(double_well, x0)


@pytest.mark.parametrize(
    "fun, message",
    [
        (lambda x: (0.0, np.zeros(x.size + 1)), "gradient of shape"),
        (lambda x: (np.nan, np.zeros(x.size)), "non-finite objective"),
        (lambda x: (0.0, np.full(x.size, np.nan)), "gradient with NaN"),
        (lambda x: 0.0, "pair"),
    ],
)
def test_bad_fun(fun, message):
    with pytest.raises(ValueError, match=message):
        minimize_sosp(fun, np.zeros(3))


def test_bad_arguments():
    with pytest.raises(ValueError, match="method must be one of"):
        minimize_sosp(double_well, np.zeros(2), method="newton")
    with pytest.raises(ValueError, match="Unknown options"):
        minimize_sosp(double_well, np.zeros(2), options={"step": 1})
    with pytest.raises(ValueError, match="tol must be a positive"):
        minimize_sosp(double_well, np.zeros(2), tol=0)
    with pytest.raises(ValueError, match="max_iter"):
        minimize_sosp(double_well, np.zeros(2), max_iter=0)
    with pytest.raises(TypeError, match="fun must be callable"):
        minimize_sosp(None, np.zeros(2))
    with pytest.raises(ValueError, match="hessp returned shape"):
        sosp_certificate(double_well, np.zeros(2), hessp=lambda x, v: np.ones(3))


def test_accepts_numpy_generator_as_random_state():
    fun, _, n_vars = matrix_factorization(10, 8, 2, 0)
    a = minimize_sosp(fun, np.zeros(n_vars), random_state=np.random.default_rng(5))
    b = minimize_sosp(fun, np.zeros(n_vars), random_state=np.random.default_rng(5))
    assert a.success
    np.testing.assert_array_equal(a.x, b.x)
    rng = np.random.default_rng(0)
    cert = sosp_certificate(fun, np.zeros(n_vars), random_state=rng)
    assert cert.min_hessian_eig < 0
