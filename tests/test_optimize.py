"""Tests of the certified SOSP solver: escapes, certificates, and their definitions."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der, rosen_hess_prod
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from skderand.optimize import (
    _lbfgs,
    double_well,
    matrix_factorization,
    minimize_sosp,
    sosp_certificate,
)

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


# Behaviour of each documented option (issue 12: every option has a test of its
# effect, not only of its acceptance).


def _half_square(x):
    """``||x||^2 / 2``: gradient ``x``, Hessian ``I``, minimizer 0."""
    return 0.5 * x @ x, x.copy()


def _ill_conditioned_quadratic(n=60, seed=0):
    """``x'Ax/2 - b'x`` with eigenvalues from 1e-3 to 1: smallest one 1e-3."""
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    a = (q * np.geomspace(1e-3, 1.0, n)) @ q.T
    b = rng.standard_normal(n)

    def fun(x):
        return 0.5 * x @ a @ x - b @ x, a @ x - b

    return fun, a, np.linalg.solve(a, b)


def _iterates(**kwargs):
    seen = []
    res = minimize_sosp(
        callback=lambda r: seen.append(np.array(r.x, copy=True)), **kwargs
    )
    return res, seen


def test_pgd_step_size_and_step_growth():
    # On ||x||^2 / 2 a gradient step of size eta maps x to (1 - eta) x, and
    # Armijo accepts every eta <= 1: the iterates show the step sizes used.
    x0 = np.ones(3)
    _, seen = _iterates(fun=_half_square, x0=x0, method="pgd", random_state=0)
    np.testing.assert_allclose(seen[0], 0.0, atol=1e-15)  # default step_size 1
    _, seen = _iterates(
        fun=_half_square,
        x0=x0,
        method="pgd",
        random_state=0,
        options={"step_size": 0.1, "step_growth": 2.0},
    )
    # Steps 0.1, 0.2, 0.4: each accepted step is doubled.
    np.testing.assert_allclose(seen[0], 0.9 * x0, rtol=1e-14)
    np.testing.assert_allclose(seen[1], 0.9 * 0.8 * x0, rtol=1e-14)
    np.testing.assert_allclose(seen[2], 0.9 * 0.8 * 0.6 * x0, rtol=1e-14)
    _, seen = _iterates(
        fun=_half_square, x0=x0, method="pgd", options={"step_size": 0.1}
    )
    # The default growth is 1.1: steps 0.1, 0.11, 0.121.
    np.testing.assert_allclose(seen[2], 0.9 * 0.89 * 0.879 * x0, rtol=1e-14)


@pytest.mark.parametrize("radius", [1e-6, 1e-2])
def test_pgd_perturbation_radius(radius):
    # From the saddle of the double well (gradient 0) the first move is a draw
    # from the ball of the given radius, followed by one gradient step, which
    # near the origin (Hessian -I, step 1) doubles it. In 50 dimensions a
    # uniform draw from the ball has a norm above 0.9 r with probability
    # 1 - 0.9**50 > 0.99.
    res, seen = _iterates(
        fun=double_well,
        x0=np.zeros(50),
        method="pgd",
        random_state=0,
        options={"perturbation_radius": radius},
    )
    assert res.success and res.n_perturbations == 1
    assert 1.8 * radius <= np.linalg.norm(seen[0]) <= 2.0 * radius


@pytest.mark.parametrize("escape_iter", [25, 40])
def test_pgd_escape_iter_and_certify_early(escape_iter):
    # Started at the minimizer: with certify_early (the default) the certificate
    # holds at once, no step is taken; without it the escape test perturbs and
    # waits escape_iter steps before returning the remembered point.
    x0 = np.zeros(5)
    early = minimize_sosp(_half_square, x0, method="pgd", random_state=0)
    assert early.success and early.n_iter == 0 and early.n_perturbations == 0
    res = minimize_sosp(
        _half_square,
        x0,
        method="pgd",
        random_state=0,
        options={"escape_iter": escape_iter, "certify_early": False},
    )
    assert res.success and res.n_perturbations == 1
    assert res.n_iter == escape_iter
    np.testing.assert_array_equal(res.x, x0)


@pytest.mark.parametrize("step_size", [1.0, 0.5])
def test_pgd_default_escape_iter_follows_step_size_and_curvature_tol(step_size):
    # escape_iter=None: the steps for a component along curvature -curvature_tol
    # to grow by 10 sqrt(n), log(10 sqrt(n)) / log(1 + eta curvature_tol).
    n, curvature_tol = 5, 1e-2
    res = minimize_sosp(
        _half_square,
        np.zeros(n),
        method="pgd",
        curvature_tol=curvature_tol,
        random_state=0,
        options={"certify_early": False, "step_size": step_size},
    )
    expected = np.ceil(np.log(10 * np.sqrt(n)) / np.log1p(step_size * curvature_tol))
    assert res.n_iter == expected


def test_pgd_escape_decrease(capsys):
    # The escape from the double well's saddle lowers the objective by about
    # n/4 = 1: the default threshold (curvature_tol r^2 / 2, tiny) declares the
    # escape as soon as it happens; a threshold of 1e6 can never be met, so the
    # escape test runs to its end and is reported inconclusive.
    fast = minimize_sosp(
        double_well, np.zeros(4), method="pgd", random_state=0, verbose=1
    )
    out = capsys.readouterr().out
    assert fast.success
    assert "escaped a saddle" in out and "inconclusive" not in out
    slow = minimize_sosp(
        double_well,
        np.zeros(4),
        method="pgd",
        random_state=0,
        verbose=1,
        options={"escape_decrease": 1e6},
    )
    out = capsys.readouterr().out
    assert slow.success
    assert "escaped a saddle" not in out and "escape test inconclusive" in out
    assert slow.n_iter > 10 * fast.n_iter


def test_lbfgs_memory():
    # More correction pairs, fewer iterations on an ill-conditioned quadratic
    # (330 with one pair, 222 with the default 20 when this was written).
    fun, _, x_star = _ill_conditioned_quadratic()
    n_iter = {}
    # One BLAS thread: on a loaded machine threaded 60 x 60 products were
    # measured 20x slower (4 s instead of 0.2 s for this run).
    with threadpool_limits(limits=1, user_api="blas"):
        for memory in (1, 20):
            res = minimize_sosp(
                fun, np.zeros(60), tol=1e-8, random_state=0, options={"memory": memory}
            )
            assert res.success
            np.testing.assert_allclose(res.x, x_star, atol=1e-4)
            n_iter[memory] = res.n_iter
        default = minimize_sosp(fun, np.zeros(60), tol=1e-8, random_state=0)
    assert n_iter[1] > 1.3 * n_iter[20]
    assert default.n_iter == n_iter[20]


@pytest.mark.parametrize("method", METHODS)
def test_max_lanczos_iter_and_lanczos_rtol(method):
    # At the minimizer (no step taken) the only Hessian products are those of
    # one Lanczos run. Its smallest Ritz value is an upper bound on the smallest
    # eigenvalue (1e-3), exact once the Krylov space is invariant (60 steps).
    fun, a, x_star = _ill_conditioned_quadratic()
    exact = np.linalg.eigvalsh(a)[0]
    full = minimize_sosp(fun, x_star, method=method, random_state=0)
    assert full.nhev == 60
    assert full.min_hessian_eig == pytest.approx(exact, rel=1e-8)
    capped = minimize_sosp(
        fun, x_star, method=method, random_state=0, options={"max_lanczos_iter": 5}
    )
    assert capped.nhev == 5
    assert capped.min_hessian_eig > 2 * exact
    loose = minimize_sosp(
        fun, x_star, method=method, random_state=0, options={"lanczos_rtol": 0.1}
    )
    # Stops after the minimum of 10 steps, with a cruder eigenvalue.
    assert loose.nhev == 10
    assert loose.min_hessian_eig > 2 * exact


def test_sosp_certificate_lanczos_rtol():
    fun, a, x_star = _ill_conditioned_quadratic()
    exact = np.linalg.eigvalsh(a)[0]
    tight = sosp_certificate(fun, x_star, lanczos_rtol=1e-12)
    loose = sosp_certificate(fun, x_star, lanczos_rtol=0.1)
    assert tight.lanczos_iter == 60
    assert tight.min_hessian_eig == pytest.approx(exact, rel=1e-8)
    assert loose.lanczos_iter < tight.lanczos_iter
    # The loose run stopped because its residual met the looser bound (the
    # Hessian's scale here is at most 1).
    assert 1e-12 < loose.lanczos_residual <= 0.1
    assert loose.min_hessian_eig > 2 * exact


def test_sosp_certificate_explicit_curvature_tol():
    # A saddle with zero gradient and smallest eigenvalue -0.01: certified
    # exactly when curvature_tol >= 0.01. None means sqrt(tol) = 1e-3.
    def fun(x):
        return x[0] ** 2 - 0.005 * x[1] ** 2, np.array([2 * x[0], -0.01 * x[1]])

    x = np.zeros(2)
    default = sosp_certificate(fun, x)
    assert default.curvature_tol == pytest.approx(1e-3)
    assert default.min_hessian_eig == pytest.approx(-0.01, rel=1e-10)
    assert not default.success
    assert sosp_certificate(fun, x, curvature_tol=0.02).success
    assert sosp_certificate(fun, x, curvature_tol=0.02).curvature_tol == 0.02
    assert not sosp_certificate(fun, x, curvature_tol=0.005).success
    # tol alone moves the default curvature tolerance: sqrt(1e-2) = 0.1.
    assert sosp_certificate(fun, x, tol=1e-2).success


@pytest.mark.parametrize("method", METHODS)
def test_callback_sees_every_iteration(method):
    fun, _, n_vars = matrix_factorization(10, 8, 2, 0)
    x0 = np.random.default_rng(0).standard_normal(n_vars)
    seen = []
    res = minimize_sosp(
        fun,
        x0,
        method=method,
        random_state=0,
        callback=seen.append,
        max_iter=300,
        warn=False,
    )
    assert [r.nit for r in seen] == list(range(1, res.n_iter + 1))
    for r in seen[:: max(1, len(seen) // 10)]:
        value, grad = fun(r.x)
        assert r.fun == pytest.approx(value, rel=1e-12)
        assert r.grad_norm == pytest.approx(np.linalg.norm(grad), rel=1e-12)


def _reported_iterations(out):
    """Iteration numbers of the progress rows (note-free and noted)."""
    iterations, plain = [], []
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0].isdigit():
            iterations.append(int(fields[0]))
            if len(fields) == 4:
                plain.append(int(fields[0]))
    return iterations, plain


@pytest.mark.parametrize("method", METHODS)
def test_verbose_levels(method, capsys):
    fun, _, n_vars = matrix_factorization(10, 8, 2, 0)
    x0 = np.random.default_rng(0).standard_normal(n_vars)
    quiet = minimize_sosp(fun, x0, method=method, random_state=0, max_iter=400)
    assert capsys.readouterr().out == ""
    one = minimize_sosp(fun, x0, method=method, random_state=0, max_iter=400, verbose=1)
    out_one = capsys.readouterr().out
    two = minimize_sosp(fun, x0, method=method, random_state=0, max_iter=400, verbose=2)
    out_two = capsys.readouterr().out
    # Printing does not change the run.
    np.testing.assert_array_equal(quiet.x, one.x)
    np.testing.assert_array_equal(quiet.x, two.x)
    for out in (out_one, out_two):
        assert out.startswith(f"[minimize_sosp] method='{method}', max_iter=400\n")
        assert out.rstrip().endswith(f"[minimize_sosp] {quiet.message}")
    # verbose=1: a row every max_iter // 20 = 20 iterations (and the final one);
    # verbose=2: a row every iteration.
    _, plain_one = _reported_iterations(out_one)
    _, plain_two = _reported_iterations(out_two)
    assert plain_one and all(i % 20 == 0 for i in plain_one)
    assert len(plain_one) == quiet.n_iter // 20
    assert plain_two == list(range(1, quiet.n_iter + 1))


@pytest.mark.parametrize("method", METHODS)
def test_warn_false_suppresses_the_convergence_warning(method):
    fun, _, n_vars = matrix_factorization(10, 8, 2, 0)
    x0 = np.random.default_rng(0).standard_normal(n_vars)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = minimize_sosp(
            fun, x0, method=method, max_iter=3, random_state=0, warn=False
        )
    assert not res.success and "max_iter=3" in res.message
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        minimize_sosp(fun, x0, method=method, max_iter=3, random_state=0)


def test_lbfgs_direction_is_the_limited_memory_bfgs_inverse():
    # The compact form's direction equals -H g for H built by the BFGS
    # inverse updates H <- (I - rho s y^T) H (I - rho y s^T) + rho s s^T over
    # the stored pairs, oldest first, from H0 = gamma I (gamma = s.y / y.y of
    # the newest pair); the oldest pairs drop out beyond the memory.
    rng = np.random.default_rng(6)
    n, size = 12, 4
    A = rng.standard_normal((n, n))
    A = A @ A.T + np.eye(n)  # curvature pairs of a convex quadratic: s.y > 0
    memory = _lbfgs.LBFGSMemory(size)
    pairs = []
    for count in range(1, 8):
        s = rng.standard_normal(n)
        pairs.append((s, A @ s))
        memory.push(*pairs[-1])
        kept = pairs[-size:]
        s_new, y_new = kept[-1]
        H = (s_new @ y_new) / (y_new @ y_new) * np.eye(n)
        for s_i, y_i in kept:
            rho = 1.0 / (s_i @ y_i)
            V = np.eye(n) - rho * np.outer(y_i, s_i)
            H = V.T @ H @ V + rho * np.outer(s_i, s_i)
        g = rng.standard_normal(n)
        assert len(memory) == min(count, size)
        np.testing.assert_allclose(memory.direction(g), -H @ g, rtol=1e-9, atol=1e-12)
    # A pair without positive curvature is not stored.
    memory.push(np.ones(n), -np.ones(n))
    assert len(memory) == size


def test_lbfgs_memory_takes_the_new_pairs_products_from_the_gradients():
    # push(s, y, gradients=(g, g_new)) takes the new pair's products with the
    # stored rows from their products with the two gradients (kept from the
    # last direction, and for the next one). Over 40 steps, the memory
    # filling and then wrapping around, its directions equal those of a
    # memory given the pairs alone, and the rows' products with a gradient
    # are computed once per step (the other read of the rows forms the
    # direction), not twice more for the new pair.
    rng = np.random.default_rng(8)
    n, size = 30, 5
    A = rng.standard_normal((n, n))
    A = A @ A.T + np.eye(n)
    b = rng.standard_normal(n)
    x = rng.standard_normal(n)
    g = A @ x - b
    from_gradients, from_pairs = _lbfgs.LBFGSMemory(size), _lbfgs.LBFGSMemory(size)
    reads = []
    rows_products = _lbfgs.LBFGSMemory._with

    def counted(memory, g):
        reads.append(all(known is not g for known, _ in memory._products))
        return rows_products(memory, g)

    for step in range(40):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_lbfgs.LBFGSMemory, "_with", counted)
            d = from_gradients.direction(g)
        np.testing.assert_allclose(
            d, from_pairs.direction(g), rtol=1e-10, atol=1e-12 * np.linalg.norm(g)
        )
        # Steps along random directions keep the gradients of order one.
        s = 0.3 * rng.standard_normal(n)
        x = x + s
        g_new = A @ x - b
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_lbfgs.LBFGSMemory, "_with", counted)
            from_gradients.push(s, g_new - g, gradients=(g, g_new))
        from_pairs.push(s, g_new - g)
        assert len(from_gradients) == len(from_pairs) == min(step + 1, size)
        g = g_new
    # The first step has no pairs to take products with.
    assert sum(reads) == 39


def test_lbfgs_reaches_the_gradient_tolerance():
    # An ill-conditioned quadratic (condition 1e4) and Rosenbrock's function:
    # the gradient test stops it, and the point is then within what that
    # gradient allows of the minimizer. The start is left as it was. (Far
    # tighter gradients are out of reach of a line search on values: the
    # quadratic's value then changes below its round-off.)
    rng = np.random.default_rng(7)
    n = 50
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    eig = np.logspace(0, 4, n)
    A = (Q * eig) @ Q.T
    b = rng.standard_normal(n)
    solution = np.linalg.solve(A, b)
    x0 = np.zeros(n)
    x, n_iter = _lbfgs.minimize_lbfgs(
        lambda x: (0.5 * x @ A @ x - b @ x, A @ x - b), x0, gtol=1e-5, max_iter=5000
    )
    assert n_iter < 5000
    assert np.abs(A @ x - b).max() <= 1e-5
    # |x - x*| <= |A (x - x*)| / lambda_min, and |.|_2 <= sqrt(n) |.|_inf.
    assert np.linalg.norm(x - solution) <= np.sqrt(n) * 1e-5 / eig[0]
    np.testing.assert_array_equal(x0, 0.0)

    def rosenbrock(x):
        value = 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2
        grad = np.array(
            [
                -400.0 * x[0] * (x[1] - x[0] ** 2) - 2.0 * (1.0 - x[0]),
                200.0 * (x[1] - x[0] ** 2),
            ]
        )
        return value, grad

    x, n_iter = _lbfgs.minimize_lbfgs(
        rosenbrock, np.array([-1.2, 1.0]), gtol=1e-10, max_iter=1000
    )
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-8)
    # The budget is a hard limit.
    _, n_iter = _lbfgs.minimize_lbfgs(
        rosenbrock, np.array([-1.2, 1.0]), gtol=1e-10, max_iter=5
    )
    assert n_iter == 5
