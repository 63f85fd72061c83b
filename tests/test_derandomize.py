"""The derandomization framework: closed forms, the continuation, the finishing step."""

import itertools

import numpy as np
import pytest
from scipy.special import ndtr

from skderand.derandomize import (
    CutExpectation,
    IsingExpectation,
    SampleAverageExpectation,
    arcs_to_ising,
    clauses_to_ising,
    derandomize,
    maxcut_to_ising,
    qubo_to_ising,
)
from skderand.derandomize._cut import (
    separation_gradient,
    separation_hessian,
    separation_probability,
)
from skderand.derandomize._framework import _Penalized

# ------------------------------------------------------------- closed form


def test_separation_probability_gw_limit():
    rho = np.linspace(-0.99, 0.99, 21)
    np.testing.assert_allclose(
        separation_probability(np.zeros_like(rho), np.zeros_like(rho), rho),
        np.arccos(rho) / np.pi,
        rtol=1e-10,
        atol=1e-12,
    )


@pytest.mark.parametrize("seed", range(3))
def test_separation_probability_series_matches_owens_t(seed):
    # Below |rho| = 1e-3 Mehler's series replaces Owen's T; the truncation
    # error is bounded by 4e-16 (Cramer's inequality), so the two forms agree
    # to round-off, also for means far in the tails and in mixed arrays.
    from skderand.derandomize._cut import _SERIES_MAX_RHO, _separation_owen

    rng = np.random.default_rng(seed)
    h = rng.standard_normal(5_000) * rng.choice([0.3, 2.0, 8.0], 5_000)
    k = rng.standard_normal(5_000) * rng.choice([0.3, 2.0, 8.0], 5_000)
    rho = rng.uniform(-_SERIES_MAX_RHO, _SERIES_MAX_RHO, 5_000)
    np.testing.assert_allclose(
        separation_probability(h, k, rho), _separation_owen(h, k, rho), atol=2e-15
    )
    # Mixed: every other correlation too large for the series.
    rho[::2] = rng.uniform(-0.9, 0.9, rho[::2].size)
    mixed = separation_probability(h, k, rho)
    np.testing.assert_allclose(mixed, _separation_owen(h, k, rho), atol=2e-15)
    assert separation_probability(h[1], k[1], rho[1]) == pytest.approx(
        mixed[1], abs=1e-16
    )


@pytest.mark.parametrize("scale", [1.0, 1e-5])
def test_smoothed_cut_per_vertex_tails_match_separation_probability(scale):
    # The objective computes the series' normal tails once per vertex and
    # gathers them per edge: the values must be separation_probability's, bit
    # for bit, in the mixed regime (some edges on Owen's T, some on the series)
    # and when every edge is on the series.
    rng = np.random.default_rng(4)
    n, m, r, tau = 60, 400, 3, 0.1
    rows, cols = np.triu_indices(n, 1)
    pick = rng.choice(rows.size, m, replace=False)
    rows, cols = rows[pick], cols[pick]
    objective = CutExpectation.from_edges(n, rows, cols, rng.standard_normal(m), tau)
    V = scale * rng.standard_normal((n, r)) / np.sqrt(r)
    mu = 0.3 * rng.standard_normal(n)
    s = np.sqrt(tau**2 + np.sum(V * V, axis=1))
    a = mu / s
    rho = objective._edge_dots(V) / (s[rows] * s[cols])
    reference = separation_probability(a[rows], a[cols], rho)
    assert np.array_equal(objective._separation(a, rho), reference)


def test_separation_probability_matches_monte_carlo():
    rng = np.random.default_rng(0)
    n_samples = 400_000
    for h, k, rho in [(0.3, -1.2, 0.5), (0.0, 0.7, -0.8), (1.5, 1.0, 0.95), (0, 0, 0)]:
        z = rng.standard_normal((n_samples, 2))
        x = h + z[:, 0]
        y = k + rho * z[:, 0] + np.sqrt(1 - rho**2) * z[:, 1]
        freq = np.mean(np.sign(x) != np.sign(y))
        stderr = np.sqrt(freq * (1 - freq) / n_samples)
        assert abs(separation_probability(h, k, rho) - freq) <= 5 * stderr + 1e-12


def test_expected_cut_matches_monte_carlo():
    rng = np.random.default_rng(1)
    n, r, tau = 10, 3, 0.3
    rows, cols = np.triu_indices(n, 1)
    weights = rng.choice([-1.0, 1.0, 2.0], size=rows.size)
    objective = CutExpectation.from_edges(n, rows, cols, weights, tau)
    V = 0.7 * rng.standard_normal((n, r))
    mu = 0.5 * rng.standard_normal(n)
    n_samples = 200_000
    y = rng.standard_normal((n_samples, r)) @ V.T + mu
    y += tau * rng.standard_normal((n_samples, n))
    cuts = (np.sign(y[:, rows]) != np.sign(y[:, cols])) @ weights
    stderr = cuts.std() / np.sqrt(n_samples)
    assert abs(objective.value(V, mu) - cuts.mean()) <= 5 * stderr


def _small_smoothed_cut(rng, n=9, r=3):
    """A smoothed cut's penalized objective on a random graph, and a point."""
    rows, cols = np.triu_indices(n, 1)
    keep = rng.random(rows.size) < 0.6
    rows, cols = rows[keep], cols[keep]
    weights = rng.choice([-1.0, 1.0, 0.5], size=rows.size)
    cut = CutExpectation.from_edges(n, rows, cols, weights, tau=0.2)
    objective = _Penalized(cut, n, r, alpha=0.05)
    return objective, 0.6 * rng.standard_normal(n * r + n)


@pytest.mark.parametrize("mu_zero", [False, True])
def test_gradient_matches_finite_differences(mu_zero):
    rng = np.random.default_rng(2)
    objective, z = _small_smoothed_cut(rng)
    n, r = objective.n, objective.rank
    if mu_zero:
        z[n * r :: 2] = 0.0  # Owen's T form divides by mu = 0: the guard at work
    _, grad = objective(z)
    step = 1e-6
    numeric = np.array(
        [
            (objective(z + step * e)[0] - objective(z - step * e)[0]) / (2 * step)
            for e in np.eye(z.size)
        ]
    )
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("v_scale", [0.6, 1e-4])
@pytest.mark.parametrize("mu_zero", [False, True])
def test_hessp_matches_finite_differences_of_the_gradient(mu_zero, v_scale):
    # The rounding's certificate runs Lanczos on these exact products. At
    # v_scale 1e-4 every correlation is below the series threshold (the end of
    # the rounding, where the certificate is computed); at 0.6 Owen's T.
    rng = np.random.default_rng(4)
    objective, z = _small_smoothed_cut(rng)
    n, r = objective.n, objective.rank
    z[: n * r] *= v_scale / 0.6
    if mu_zero:
        z[n * r :: 2] = 0.0
    for v in (rng.standard_normal(z.size), np.eye(z.size)[4], np.eye(z.size)[-2]):
        exact = objective.hessp(z, v)
        step = 1e-6
        numeric = (objective(z + step * v)[1] - objective(z - step * v)[1]) / (2 * step)
        scale = np.abs(numeric).max()
        np.testing.assert_allclose(exact, numeric, rtol=0, atol=1e-7 * scale)
    # Symmetric: u . H v == v . H u.
    u, v = rng.standard_normal((2, z.size))
    assert u @ objective.hessp(z, v) == pytest.approx(
        v @ objective.hessp(z, u), rel=1e-9
    )
    # The cache is keyed on the point: another point gets its own Hessian.
    z2 = z + 0.1 * rng.standard_normal(z.size)
    step = 1e-6
    numeric = (objective(z2 + step * u)[1] - objective(z2 - step * u)[1]) / (2 * step)
    np.testing.assert_allclose(
        objective.hessp(z2, u), numeric, rtol=0, atol=1e-7 * np.abs(numeric).max()
    )


def test_separation_hessian_matches_finite_differences():
    rng = np.random.default_rng(5)
    h, k = rng.standard_normal(20), rng.standard_normal(20)
    rho = rng.uniform(-0.97, 0.97, 20)
    first = separation_gradient(h, k, rho)
    p_hh, p_hk, p_kk, p_hr, p_kr, p_rr = separation_hessian(h, k, rho, *first)
    step = 1e-6
    rows = {(1, 0, 0): (p_hh, p_hk, p_hr), (0, 1, 0): (p_hk, p_kk, p_kr)}
    rows[(0, 0, 1)] = (p_hr, p_kr, p_rr)
    for e, analytic in rows.items():
        plus = separation_gradient(h + step * e[0], k + step * e[1], rho + step * e[2])
        minus = separation_gradient(h - step * e[0], k - step * e[1], rho - step * e[2])
        for exact, p, m in zip(analytic, plus, minus, strict=True):
            np.testing.assert_allclose(exact, (p - m) / (2 * step), atol=1e-7)


def test_separation_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    h, k = rng.standard_normal(20), rng.standard_normal(20)
    rho = rng.uniform(-0.97, 0.97, 20)
    d_h, d_k, d_rho = separation_gradient(h, k, rho)
    step = 1e-6
    for analytic, e in [(d_h, (1, 0, 0)), (d_k, (0, 1, 0)), (d_rho, (0, 0, 1))]:
        plus = separation_probability(
            h + step * e[0], k + step * e[1], rho + step * e[2]
        )
        minus = separation_probability(
            h - step * e[0], k - step * e[1], rho - step * e[2]
        )
        np.testing.assert_allclose(analytic, (plus - minus) / (2 * step), atol=1e-7)


# ------------------------------------------------------------- Ising forms


def _all_binary(n):
    return np.array(list(itertools.product((0.0, 1.0), repeat=n)))


def _ising_value(h, J, offset, t):
    return offset + h @ t + t @ (J @ t)


@pytest.mark.parametrize("seed", range(3))
def test_qubo_and_maxcut_to_ising_agree_on_every_point(seed):
    rng = np.random.default_rng(seed)
    n = 6
    Q = rng.integers(-5, 6, (n, n)).astype(float)  # asymmetric, with a diagonal
    h, J, offset = qubo_to_ising(Q)
    W = rng.integers(-2, 4, (n, n)).astype(float)
    W = np.triu(W, 1) + np.triu(W, 1).T
    hc, Jc, offset_c = maxcut_to_ising(W)
    for x in _all_binary(n):
        t = 2 * x - 1
        assert _ising_value(h, J, offset, t) == pytest.approx(x @ Q @ x, abs=1e-9)
        cut = W[np.ix_(x == 1, x == 0)].sum()
        assert _ising_value(hc, Jc, offset_c, t) == pytest.approx(cut, abs=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_clauses_and_arcs_to_ising_count_what_holds(seed):
    rng = np.random.default_rng(seed)
    n = 5
    clauses = []
    for _ in range(14):
        size = rng.choice([1, 2], p=[0.2, 0.8])
        variables = rng.integers(1, n + 1, size)
        clauses.append(tuple(int(v) * int(rng.choice([-1, 1])) for v in variables))
    clauses.append((2, -2))  # a tautology
    weights = rng.integers(1, 5, len(clauses)).astype(float)
    h, J, offset = clauses_to_ising(clauses, weights)
    arcs = np.array([(i, j) for i in range(n) for j in range(n) if i != j])
    arcs = arcs[rng.random(len(arcs)) < 0.5]
    arc_weights = rng.integers(1, 4, len(arcs)).astype(float)
    ha, Ja, offset_a = arcs_to_ising(arcs, arc_weights, n_vertices=n)
    for x in _all_binary(n):
        t = 2 * x - 1
        satisfied = sum(
            w
            for clause, w in zip(clauses, weights, strict=True)
            if any((x[abs(lit) - 1] == 1) == (lit > 0) for lit in clause)
        )
        assert _ising_value(h, J, offset, t) == pytest.approx(satisfied, abs=1e-9)
        dicut = arc_weights @ ((x[arcs[:, 0]] == 1) & (x[arcs[:, 1]] == 0))
        assert _ising_value(ha, Ja, offset_a, t) == pytest.approx(dicut, abs=1e-9)


def test_ising_expectation_matches_monte_carlo():
    # E[offset + h.t + t^T J t] for t_i = sign(y_i) sign(y_0), y = V z + mu +
    # tau g: the closed form against 10**6 draws (five standard errors).
    rng = np.random.default_rng(7)
    n, r, tau = 6, 3, 0.3
    Q = rng.integers(-5, 6, (n, n)).astype(float)
    ising = IsingExpectation.from_qubo(Q, tau=tau)
    V = 0.8 * rng.standard_normal((n + 1, r))
    mu = 0.4 * rng.standard_normal(n + 1)
    values = []
    for _ in range(10):
        y = rng.standard_normal((100_000, r)) @ V.T + mu
        y += tau * rng.standard_normal(y.shape)
        x = (np.sign(y[:, 1:]) * np.sign(y[:, :1]) + 1) / 2
        values.append(np.einsum("ki,ij,kj->k", x, Q, x))
    values = np.concatenate(values)
    stderr = values.std() / np.sqrt(values.size)
    assert abs(ising.value(V, mu) - values.mean()) <= 5 * stderr
    # The binary read-out and its exact value.
    x = ising.solution(mu)
    assert set(np.unique(x)) <= {0.0, 1.0}
    assert ising.solution_value(x) == pytest.approx(x @ Q @ x, abs=1e-9)


def test_ising_gradient_and_hessp_match_finite_differences():
    rng = np.random.default_rng(3)
    n, r = 5, 2
    h, J = rng.standard_normal(n), rng.standard_normal((n, n))
    ising = IsingExpectation(h, J, 1.5, tau=0.2)
    objective = _Penalized(ising, n + 1, r, alpha=0.07)
    z = 0.5 * rng.standard_normal((n + 1) * (r + 1))
    _, grad = objective(z)
    step = 1e-6
    eye = np.eye(z.size)
    numeric = [
        (objective(z + step * e)[0] - objective(z - step * e)[0]) / 2e-6 for e in eye
    ]
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)
    v = rng.standard_normal(z.size)
    numeric = (objective(z + step * v)[1] - objective(z - step * v)[1]) / (2 * step)
    np.testing.assert_allclose(
        objective.hessp(z, v), numeric, atol=1e-7 * np.abs(numeric).max()
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: clauses_to_ising([(1, 2, 3)]), "only clauses of one or two"),
        (lambda: clauses_to_ising([(1, 4)], n_variables=3), "beyond n_variables"),
        (lambda: clauses_to_ising([(1, 0)]), "non-zero integers"),
        (lambda: clauses_to_ising([]), "empty"),
        (lambda: clauses_to_ising([(1, 2)], weights=[1.0, 2.0]), "one entry per"),
        (lambda: qubo_to_ising(np.ones((2, 3))), "square"),
        (lambda: qubo_to_ising(np.array([[1.0, np.nan], [0, 1]])), "NaN"),
        (lambda: qubo_to_ising(np.zeros((0, 0))), "empty"),
        (lambda: arcs_to_ising([(0, 0)]), "itself"),
        (lambda: arcs_to_ising([(0, 3)], n_vertices=2), "outside"),
        (lambda: IsingExpectation(np.ones(3), np.eye(2)), "shape"),
        (lambda: IsingExpectation(np.ones(2), np.eye(2), vartype="bits"), "vartype"),
        (lambda: CutExpectation(np.array([[0.0, 1.0], [2.0, 0.0]])), "symmetric"),
        (lambda: CutExpectation.from_edges(3, [0, 1], [1, 0], [1.0, 1.0]), "twice"),
    ],
)
def test_bad_problems_are_refused_with_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ------------------------------------------------------------- derandomize


def _relaxation_start(n, rank, rng):
    """Random unit vectors: a start of the shape the SDP gives."""
    V = rng.standard_normal((n, rank))
    return V / np.linalg.norm(V, axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(4))
def test_derandomize_certifies_and_keeps_its_promises(seed):
    # On signed QUBOs: a certified point whose |V| is within the lemma's
    # bound; the finished solution's exact value at least F(0, mu); the final
    # expectation at least the start's minus the penalty paid (the ledger).
    rng = np.random.default_rng(seed)
    n = 30
    Q = rng.integers(-10, 11, (n, n)).astype(float)
    ising = IsingExpectation.from_qubo(Q + Q.T)
    res = derandomize(ising, _relaxation_start(n + 1, 4, rng), random_state=seed)
    assert res.certified
    assert res.grad_norm <= res.tol and res.min_hessian_eig >= -res.curvature_tol
    assert res.v_norm <= res.v_norm_bound * (1 + 1e-9)  # equality up to round-off
    assert res.value >= res.expectation_at_zero - 1e-9 * np.abs(Q).sum()
    assert res.value >= res.rounded_value
    assert res.expectation >= res.start_expectation - res.penalty_paid - 1e-9
    assert res.value == pytest.approx(res.solution @ (Q + Q.T) @ res.solution)
    path = res.path
    assert len(path["alpha"]) == res.n_stages + 1
    assert np.all(np.diff(path["alpha"][:-1]) > 0) and path["alpha"][-1] == res.alpha
    assert res.n_iter == path["n_iter"].sum()


def test_v_norm_bound_is_the_lemma_of_the_certificate():
    # Recomputed from its definition; with alpha too small for the measured
    # curvature the bound is infinite, never negative.
    from skderand.derandomize._framework import v_norm_bound

    rng = np.random.default_rng(1)
    W = np.triu(rng.choice([0.0, 1.0], (12, 12)), 1)
    res = derandomize(CutExpectation(W + W.T), _relaxation_start(12, 3, rng))
    denominator = 2 * res.alpha - max(0.0, -res.min_hessian_eig)
    assert res.v_norm_bound == pytest.approx(res.grad_norm / denominator)
    assert v_norm_bound(1e-3, -0.5, 0.2) == np.inf
    assert v_norm_bound(1e-3, 0.5, 0.2) == pytest.approx(1e-3 / 0.4)


def test_finishing_step_never_lowers_the_expectation_at_zero():
    # Conditional expectations at V = 0, from offsets near zero (the hardest
    # case: every side uncertain), on signed graphs.
    for seed in range(5):
        rng = np.random.default_rng(seed)
        W = np.triu(rng.choice([-1.0, 0.0, 1.0, 2.0], (40, 40)), 1)
        cut = CutExpectation(W + W.T, tau=0.1)
        mu = 0.05 * rng.standard_normal(40)
        sides = cut.finish(mu)
        assert set(np.unique(sides)) <= {-1.0, 1.0}
        assert cut.solution_value(sides) >= cut.value(np.zeros((40, 1)), mu) - 1e-9


def test_sample_average_matches_the_closed_form():
    # The smoothed cut has both forms: given y, the sides are independent with
    # P[side +1] = Phi(y_i / tau), a smooth payoff whose Gaussian expectation
    # is CutExpectation's closed form.
    rng = np.random.default_rng(2)
    n, r, tau = 8, 3, 0.5
    W = np.triu(rng.choice([-1.0, 1.0, 2.0], (n, n)), 1)
    W = W + W.T
    cut = CutExpectation(W, tau=tau)

    def payoff(Y):
        p = ndtr(Y / tau)
        return 0.5 * np.einsum("ki,ij,kj->k", p, W, 1 - p) + 0.5 * np.einsum(
            "ki,ij,kj->k", 1 - p, W, p
        )

    def gradient(Y):
        p = ndtr(Y / tau)
        dp = np.exp(-0.5 * (Y / tau) ** 2) / (tau * np.sqrt(2 * np.pi))
        return dp * ((1 - 2 * p) @ W)

    F = SampleAverageExpectation(
        payoff, gradient, n_coordinates=n, rank=r, n_samples=2**15
    )
    V = 0.5 * rng.standard_normal((n, r))
    mu = 0.3 * rng.standard_normal(n)
    value, grad_V, grad_mu = F.value_and_grad(V, mu)
    exact, exact_V, exact_mu = cut.value_and_grad(V, mu)
    assert value == pytest.approx(exact, abs=1e-3 * np.abs(W).sum())
    np.testing.assert_allclose(grad_mu, exact_mu, atol=1e-3 * np.abs(W).sum())
    np.testing.assert_allclose(grad_V, exact_V, atol=1e-3 * np.abs(W).sum())
    # Antithetic points: V = 0 is stationary in V at every mu.
    _, grad_V0, _ = F.value_and_grad(np.zeros((n, r)), mu)
    np.testing.assert_allclose(grad_V0, 0.0, atol=1e-12)


def test_derandomize_validates_its_start():
    cut = CutExpectation(np.ones((3, 3)) - np.eye(3))
    with pytest.raises(ValueError, match="rows"):
        derandomize(cut, np.ones((4, 2)))
    with pytest.raises(ValueError, match="NaN"):
        derandomize(cut, np.full((3, 2), np.nan))
    with pytest.raises(ValueError, match="mu0"):
        derandomize(cut, np.ones((3, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="alpha_growth"):
        derandomize(cut, np.ones((3, 2)), alpha_growth=1.0)
    V0 = np.ones((3, 2))
    derandomize(cut, V0, random_state=0)
    np.testing.assert_array_equal(V0, 1.0)  # never modified
