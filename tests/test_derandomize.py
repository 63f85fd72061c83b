"""The derandomization framework: closed forms, the continuation, the finishing step."""

import numpy as np
import pytest

from skderand.derandomize import CutExpectation, derandomize  # noqa: F401
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
