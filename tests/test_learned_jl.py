"""Tests of LearnedJLTransformer: the mathematics of the embedding, then the API."""

import threading
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from scipy import sparse
from scipy.spatial.distance import pdist
from sklearn.datasets import load_digits, load_linnerud
from sklearn.decomposition import PCA
from sklearn.exceptions import DataDimensionalityWarning
from sklearn.random_projection import (
    GaussianRandomProjection,
    johnson_lindenstrauss_min_dim,
)
from sklearn.utils._param_validation import InvalidParameterError

from skderand import LearnedJLTransformer
from skderand.embedding import _active, _distinct, _learned_jl, _pairs, _stages
from skderand.embedding._learned_jl import _growth_exponent, _power_law_dimension
from skderand.embedding._pairs import (
    _GramObjective,
    _PairObjective,
    _PairScanner,
    _Span,
    all_pairs,
)
from skderand.embedding._stages import lbfgs, stage_objective
from skderand.optimize import sosp_certificate

# Fits at the final sharpness are not always certified within the default
# max_iter; the estimator says so with a ConvergenceWarning, tested on its own in
# tests/test_convergence.py. Here it would only be noise.
pytestmark = pytest.mark.filterwarnings(
    "ignore:LearnedJLTransformer did not reach a certified:"
    "sklearn.exceptions.ConvergenceWarning"
)


def scale_free_distortion(X, Y):
    """``(r_max - r_min) / (r_max + r_min)`` over pairs of distinct rows, exactly."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    i, j = np.triu_indices(X.shape[0], 1)
    d2 = np.sum((X[i] - X[j]) ** 2, axis=1)
    q = np.sum((Y[i] - Y[j]) ** 2, axis=1)
    keep = d2 > 1e-10 * np.max(np.sum((X - X.mean(0)) ** 2, axis=1))
    r = q[keep] / d2[keep]
    return (r.max() - r.min()) / (r.max() + r.min())


# A learned map must beat both the best of N_DRAWS Gaussian projections and PCA
# by this factor. The fits of these tests reach 0.28-0.41 of the smaller of the
# two; a random map (or an optimizer that never moves it) cannot pass, since a
# single draw is not below 0.6 of the best of 50 draws, nor PCA below 0.6 of PCA.
MARGIN = 0.6
N_DRAWS = 50


def best_baseline(X, k, n_draws=N_DRAWS):
    """The smaller of the best Gaussian projection of ``n_draws`` and PCA's."""
    draws = [
        scale_free_distortion(
            X, GaussianRandomProjection(k, random_state=s).fit_transform(X)
        )
        for s in range(n_draws)
    ]
    pca = scale_free_distortion(X, PCA(k, svd_solver="full").fit_transform(X))
    return min(min(draws), pca)


def make_data(name, seed):
    rng = np.random.default_rng(seed)
    if name == "gaussian":
        return rng.standard_normal((80, 120))
    if name == "digits":
        X = load_digits().data
        return X[rng.choice(X.shape[0], 150, replace=False)]
    if name == "low_rank":
        return rng.standard_normal((100, 5)) @ rng.standard_normal(
            (5, 60)
        ) + 0.1 * rng.standard_normal((100, 60))
    if name == "unit_uniform":
        X = rng.uniform(size=(60, 100))
        return X / np.linalg.norm(X, axis=1, keepdims=True)
    raise ValueError(name)


def standardized_linnerud():
    """The linnerud set: 20 points, 3 features centred and scaled to unit variance."""
    X = load_linnerud().data
    return (X - X.mean(axis=0)) / X.std(axis=0)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", ["gaussian", "digits", "low_rank", "unit_uniform"])
def test_beats_random_projections_and_its_start(name, seed):
    X = make_data(name, seed)
    k = 10
    jl = LearnedJLTransformer(k, random_state=seed).fit(X)
    measured = scale_free_distortion(X, jl.transform(X))
    assert measured == pytest.approx(jl.distortion_, rel=1e-6)
    assert jl.distortion_ < jl.initial_distortion_
    assert jl.distortion_ < MARGIN * best_baseline(X, k)


@pytest.mark.parametrize("algorithm", ["direct", "derandomized"])
@pytest.mark.parametrize("k", [1, 2])
def test_never_worse_than_pca_on_the_training_pairs(k, algorithm, monkeypatch):
    # Linnerud: 20 points in 3 standardized dimensions. From their random maps
    # the stages end in local minima above PCA's map (seeds 0-2: at k = 2
    # 0.941 / 0.884 / 0.941 direct, 0.941 / 0.783 / 0.934 derandomized,
    # against 0.776; at k = 1 0.9994 direct, 0.9990 derandomized, seed 2,
    # against 0.9988); the fit then runs again from PCA's map.
    X = standardized_linnerud()
    pca = scale_free_distortion(X, PCA(k, svd_solver="full").fit_transform(X))
    fits = [
        LearnedJLTransformer(k, algorithm=algorithm, random_state=seed).fit(X)
        for seed in range(3)
    ]
    for jl in fits:
        measured = scale_free_distortion(X, jl.transform(X))
        assert measured == pytest.approx(jl.distortion_, rel=1e-9)
        assert jl.distortion_ <= pca * (1 + 1e-12)
        assert jl.certified_
    if k == 2:
        # Not just PCA's map: the stages from it go well below (0.644).
        assert max(jl.distortion_ for jl in fits) < pca - 0.1
    # Without the second run, a fit ends above PCA's map: the test sees it.
    monkeypatch.setattr(
        LearnedJLTransformer,
        "_no_worse_than_pca",
        lambda self, span, pairs, fit, seed, curvature_tol: fit,
    )
    alone = [
        LearnedJLTransformer(k, algorithm=algorithm, random_state=seed).fit(X)
        for seed in range(3)
    ]
    assert max(jl.distortion_ for jl in alone) > pca


def test_n_init_keeps_the_lowest_distortion_of_its_starts():
    # Gaussian 80 x 20, k = 5: the starts end in different local minimax
    # points (0.7412-0.7554), the lowest from the second start.
    X = np.random.RandomState(0).standard_normal((80, 20))
    # Four fits drawing their seeds one after another from one RandomState(0)
    # start where the four starts of n_init=4, random_state=0 do, in order.
    starts = np.random.RandomState(0)
    alone = [LearnedJLTransformer(5, random_state=starts).fit(X) for _ in range(4)]
    distortions = [jl.distortion_ for jl in alone]
    assert max(distortions) > min(distortions) * 1.005
    best = LearnedJLTransformer(5, n_init=4, random_state=0).fit(X)
    lowest = alone[int(np.argmin(distortions))]
    assert best.distortion_ == lowest.distortion_ == min(distortions)
    np.testing.assert_array_equal(best.components_, lowest.components_)
    assert best.initial_distortion_ == lowest.initial_distortion_
    assert best.n_iter_ == lowest.n_iter_
    measured = scale_free_distortion(X, best.transform(X))
    assert measured == pytest.approx(best.distortion_, rel=1e-9)
    # The first start is the n_init=1 fit: more starts never raise the result.
    one = LearnedJLTransformer(5, random_state=0).fit(X)
    np.testing.assert_array_equal(one.components_, alone[0].components_)
    assert best.distortion_ < one.distortion_


def test_n_init_with_auto_fits_the_dimension_its_first_start_found():
    # The same Gaussian set, eps = 0.6: the search finds k = 7 (at 0.5565),
    # and a later start at k = 7 ends lower (0.5499).
    X = np.random.RandomState(0).standard_normal((80, 20))
    eps = 0.6
    starts = np.random.RandomState(0)
    first = LearnedJLTransformer(eps=eps, random_state=starts).fit(X)
    k = first.n_components_
    assert k < X.shape[1]
    later = [LearnedJLTransformer(k, random_state=starts).fit(X) for _ in range(2)]
    best = LearnedJLTransformer(eps=eps, n_init=3, random_state=0).fit(X)
    assert best.n_components_ == k
    assert best.distortion_ == min(jl.distortion_ for jl in [first, *later])
    assert best.distortion_ < first.distortion_ <= eps
    measured = scale_free_distortion(X, best.transform(X))
    assert measured == pytest.approx(best.distortion_, rel=1e-9)


def test_n_jobs_runs_the_starts_side_by_side_on_their_own_active_sets(monkeypatch):
    # 150 points in 8 dimensions: 11,175 pairs, more than the working set, so
    # each start runs active-set rounds and blocked passes, whose state (the
    # active set, the last pass's bounds) must not pass from one start to
    # another. Three fits drawing their seeds from one RandomState(0) are the
    # three starts; the kept map is the lowest of them, bit for bit, whether
    # the starts run one after another or two at a time.
    X = np.random.RandomState(1).standard_normal((150, 8))
    starts = np.random.RandomState(0)
    alone = [LearnedJLTransformer(3, random_state=starts).fit(X) for _ in range(3)]
    assert alone[0]._fit_stats["max_active"] < 150 * 149 // 2
    lowest = min(alone, key=lambda jl: jl.distortion_)
    serial = LearnedJLTransformer(3, n_init=3, n_jobs=1, random_state=0).fit(X)
    np.testing.assert_array_equal(serial.components_, lowest.components_)
    assert serial.distortion_ == lowest.distortion_

    # Two starts at a time: each waits at a barrier for another (a serial
    # run would break it), and the map is the same.
    barrier = threading.Barrier(2, timeout=60)
    threads = []
    one_start = LearnedJLTransformer._one_start

    def one_start_in_pairs(self, *args):
        threads.append(threading.get_ident())
        if len(threads) <= 2:
            barrier.wait()  # BrokenBarrierError unless another start runs too
        return one_start(self, *args)

    monkeypatch.setattr(LearnedJLTransformer, "_one_start", one_start_in_pairs)
    parallel = LearnedJLTransformer(3, n_init=3, n_jobs=2, random_state=0).fit(X)
    assert len(threads) == 3 and len(set(threads)) == 2
    np.testing.assert_array_equal(parallel.components_, serial.components_)
    assert parallel.distortion_ == serial.distortion_
    assert parallel.n_iter_ == serial.n_iter_
    # The time split counts every start's passes.
    assert parallel._fit_stats["n_scans"] == sum(
        jl._fit_stats["n_scans"] for jl in alone
    )


@pytest.mark.parametrize("algorithm", ["direct", "derandomized"])
def test_auto_tries_pcas_map_for_a_failing_candidate(algorithm, monkeypatch):
    # Linnerud, eps = 0.7: from their random maps the k = 2 fits end above eps
    # (seeds 0-2: 0.941 / 0.884 / 0.941 direct, 0.941 / 0.783 / 0.934
    # derandomized), from PCA's map at 0.644; k = 1 cannot reach it (above
    # 0.99), k = 3 is the rank (an isometry).
    X = standardized_linnerud()
    eps = 0.7

    def search(seed):
        return LearnedJLTransformer(
            "auto", eps=eps, algorithm=algorithm, random_state=seed
        ).fit(X)

    for seed in range(3):
        jl = search(seed)
        assert jl.n_components_ == 2
        assert jl.distortion_ <= eps
        measured = scale_free_distortion(X, jl.transform(X))
        assert measured == pytest.approx(jl.distortion_, rel=1e-9)
        assert jl.certified_
        # The random start's distortion, as for the fixed dimension.
        fixed = LearnedJLTransformer(2, algorithm=algorithm, random_state=seed)
        assert jl.initial_distortion_ == fixed.fit(X).initial_distortion_
    # Without PCA's map the search returns the rank for some seed.
    monkeypatch.setattr(
        LearnedJLTransformer,
        "_no_worse_than_pca",
        lambda self, span, pairs, fit, seed, curvature_tol, **search: fit,
    )
    assert max(search(seed).n_components_ for seed in range(3)) == 3


def test_distortion_is_the_calibrated_two_sided_bound():
    X = make_data("gaussian", 3)
    jl = LearnedJLTransformer(8, random_state=0).fit(X)
    Y = jl.transform(X)
    i, j = np.triu_indices(X.shape[0], 1)
    r = np.sum((Y[i] - Y[j]) ** 2, 1) / np.sum((X[i] - X[j]) ** 2, 1)
    # Calibrated: the extreme ratios are 1 - eps and 1 + eps.
    assert r.min() == pytest.approx(1 - jl.distortion_, rel=1e-9)
    assert r.max() == pytest.approx(1 + jl.distortion_, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_derandomized_path_drives_the_scale_to_zero(seed):
    X = make_data("gaussian", seed)
    k = 10
    jl = LearnedJLTransformer(k, algorithm="derandomized", random_state=seed).fit(X)
    # Started at scale 1/sqrt(k) (as much noise as signal), it ends near zero.
    assert jl.scale_ < 1e-2 / np.sqrt(k)
    assert jl.distortion_ < jl.initial_distortion_
    assert jl.distortion_ < MARGIN * best_baseline(X, k)


def test_direct_path_reports_zero_scale():
    jl = LearnedJLTransformer(5, random_state=0).fit(make_data("low_rank", 0))
    assert jl.scale_ == 0.0


def fit_search(X, eps, **params):
    """Fit ``n_components="auto"`` and check what every search keeps.

    Returns the fit, its ``search_results_`` and the candidates tried
    (dimension -> distortion as the search fitted it).
    """
    jl = LearnedJLTransformer(eps=eps, random_state=0, **params).fit(X)
    assert jl.distortion_ <= eps
    # The reported distortion is the exact one of the returned map.
    assert jl.distortion_ == pytest.approx(
        scale_free_distortion(X, jl.transform(X)), rel=1e-9
    )
    results = jl.search_results_
    tried = dict(
        zip(
            results["n_components"].tolist(),
            results["distortion"].tolist(),
            strict=True,
        )
    )
    assert len(tried) == results["n_components"].size  # each candidate once
    np.testing.assert_array_equal(results["reached_eps"], results["distortion"] <= eps)
    # One dimension less failed as the search fitted it.
    k = jl.n_components_
    assert k - 1 in tried and tried[k - 1] > eps
    return jl, results, tried


def _decided(results, k):
    """How the search decided candidate ``k`` ("" when it did not early)."""
    return results["decided"][results["n_components"].tolist().index(k)]


def test_auto_finds_a_small_dimension_reaching_eps():
    X = make_data("low_rank", 0)[:50, :30]
    eps = 0.2
    jl, results, tried = fit_search(X, eps)
    k = jl.n_components_
    # The JL bound is loose here: it asks for more than the input dimension.
    assert k < min(johnson_lindenstrauss_min_dim(X.shape[0], eps=eps), X.shape[1])
    assert all(d > eps for j, d in tried.items() if j < k)
    # Every pair is in the objective: candidates were decided during their
    # stages (or given up after one), so that only the returned one was
    # certified and polished.
    early = (results["decided"] != "") | (results["stopped_after_stage"] > 0)
    assert early.all()
    assert jl.certified_
    # Deterministic for a fixed random_state.
    again = LearnedJLTransformer(eps=eps, random_state=0).fit(X)
    np.testing.assert_array_equal(jl.components_, again.components_)
    assert jl.distortion_ == again.distortion_
    for key, values in results.items():
        np.testing.assert_array_equal(values, again.search_results_[key])


@pytest.mark.parametrize("seed", [0, 1])
def test_auto_keeps_candidates_whose_blunt_stages_cannot_resolve_a_small_eps(seed):
    # Rank 5 plus noise: from k = 5 on, maps come within 1 % of an isometry,
    # but the first stage (sharpness 15.6) ends far from resolving such ratios
    # whatever k; giving up there took the search to larger dimensions than
    # the direct fits need (see the design note, "Giving up on a candidate").
    X = make_data("low_rank", seed)
    eps = 0.005
    jl, _, _ = fit_search(X, eps)
    direct = next(
        k
        for k in range(1, X.shape[1])
        if LearnedJLTransformer(k, random_state=0).fit(X).distortion_ <= eps
    )
    assert jl.n_components_ <= direct


def test_auto_decides_all_pair_candidates_during_their_stages():
    # 11,175 pairs: the lean all-pairs evaluation from k = 14 on, whose
    # log-ratios the search reads after every evaluation.
    X = make_data("gaussian", 0)[:150, :40]
    eps = 0.3
    jl, results, tried = fit_search(X, eps)
    k = jl.n_components_
    # Both rules fired: a candidate succeeded at the first map reaching eps
    # (the returned one, completed afterwards to a lower distortion), and one
    # failed when its final stage stalled above 1.02 eps.
    assert _decided(results, k) == "reached eps"
    assert tried[k] <= eps and jl.distortion_ <= tried[k]
    assert "stalled above eps" in results["decided"]
    assert jl.certified_
    again = LearnedJLTransformer(eps=eps, random_state=0).fit(X)
    np.testing.assert_array_equal(jl.components_, again.components_)


def test_auto_decides_active_set_candidates_at_their_stage_ends():
    # 4,950 pairs against a working set of 300: the candidates below k = 8
    # optimize an active set, and are decided where a stage ends.
    X = make_data("low_rank", 0)[:, :30]
    eps = 0.25
    jl, results, tried = fit_search(X, eps, working_set=300)
    k = jl.n_components_
    assert k < 8
    assert _decided(results, k) == "reached eps at the end of the stage"
    # Completed through the later stages, certificate and polish: lower still.
    assert jl.distortion_ <= tried[k]
    assert jl.certified_


def test_search_results_only_with_auto():
    X = make_data("low_rank", 0)[:50, :30]
    assert not hasattr(
        LearnedJLTransformer(5, random_state=0).fit(X), "search_results_"
    )


def test_growth_exponent_measures_the_power_law_at_a_common_stage():
    class Fit(NamedTuple):
        stages: tuple

    def d(k, stage):
        # d(k) = c_s k^(-0.7) at every stage s.
        return (1.0 - 0.1 * stage) * k**-0.7

    # The last stage both ran: the second (one candidate stopped there).
    a = Fit(tuple(d(16, s) for s in range(2)))
    b = Fit(tuple(d(32, s) for s in range(4)))
    assert _growth_exponent(16, a, 32, b) == pytest.approx(0.7)
    # Clipped to [0.5, 1]; 0.5 without a common stage or a previous candidate.
    steep = Fit((d(16, 0) * 4,))
    assert _growth_exponent(16, steep, 32, b) == 1.0
    assert _growth_exponent(16, Fit(()), 32, b) == 0.5
    assert _growth_exponent(0, None, 8, b) == 0.5


def test_power_law_dimension_interpolates_and_stays_inside():
    # On an exact power law d(k) = 2 / sqrt(k), eps = 0.25 is reached at k = 64.
    def d(k):
        return 2.0 / np.sqrt(k)

    assert _power_law_dimension(40, d(40), 100, d(100), 0.25) == 64
    # Clipped strictly inside (lo, hi), so that the search always progresses:
    # the crossing at 63.2 rounds to 63, a dimension known to fail.
    assert _power_law_dimension(63, d(63), 66, d(66), d(63.2)) == 64
    assert _power_law_dimension(10, d(10), 12, d(12), d(11.9)) == 11
    # A succeeding hi above eps, or a failing lo below it, is no bracket.
    assert _power_law_dimension(63, d(63), 71, d(71), 0.2) == 67
    # No usable pair of distortions: the midpoint.
    assert _power_law_dimension(0, 1.0, 30, 0.1, 0.2) == 15
    assert _power_law_dimension(10, 0.3, 30, 0.3, 0.3) == 20


def test_auto_never_fails_when_the_jl_bound_exceeds_the_dimension():
    X = make_data("gaussian", 0)[:40, :8]
    assert johnson_lindenstrauss_min_dim(X.shape[0], eps=0.05) > X.shape[1]
    jl = LearnedJLTransformer(eps=0.05, random_state=0).fit(X)
    assert jl.n_components_ <= X.shape[1]
    assert jl.distortion_ <= 0.05


@pytest.mark.slow
def test_paper_setting_beats_the_best_of_1000_gaussian_draws():
    # Tsikouras et al. (2026): 100 unit vectors with Uniform[0, 1) entries in
    # d = 500, embedded in k = 30.
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(100, 500))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    k = 30
    jl = LearnedJLTransformer(k, random_state=0).fit(X)
    i, j = np.triu_indices(X.shape[0], 1)
    D = X[i] - X[j]
    d2 = np.sum(D**2, 1)
    best = np.inf
    for seed in range(1000):
        G = np.random.default_rng(seed).standard_normal((k, X.shape[1]))
        r = np.sum((D @ G.T) ** 2, 1) / d2
        best = min(best, (r.max() - r.min()) / (r.max() + r.min()))
    assert jl.distortion_ < best


@pytest.mark.parametrize("algorithm", ["direct", "derandomized"])
@pytest.mark.parametrize("cls", [_PairObjective, _GramObjective])
def test_gradient_matches_finite_differences(cls, algorithm):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((25, 6))
    X -= X.mean(0)
    derandomized = algorithm == "derandomized"
    if cls is _PairObjective:
        rows, cols, d2 = all_pairs(X)
        obj = cls(X, rows, cols, d2, 3, derandomized=derandomized, penalty=0.3)
    else:
        obj = cls(X, 1e-12, 3, derandomized=derandomized, penalty=0.3)
    obj.beta = 7.0
    z = 0.5 * rng.standard_normal(18 + derandomized)
    _, grad = obj(z)
    h = 1e-6
    numeric = np.array(
        [(obj(z + h * e)[0] - obj(z - h * e)[0]) / (2 * h) for e in np.eye(z.size)]
    )
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)


def _direct_objective(cls, X, k, *, penalty, derandomized=False):
    """The direct map's (or derandomized) surrogate of the centred ``X``'s pairs."""
    X = X - X.mean(0)
    if cls is _PairObjective:
        rows, cols, d2 = all_pairs(X)
        return cls(X, rows, cols, d2, k, derandomized=derandomized, penalty=penalty)
    return cls(X, 1e-12, k, derandomized=derandomized, penalty=penalty)


@pytest.mark.parametrize("sigma", [None, 0.4, 0.0, -0.1])
@pytest.mark.parametrize("beta", [7.0, 300.0])
@pytest.mark.parametrize("cls", [_PairObjective, _GramObjective])
def test_hessp_matches_finite_differences_of_the_gradient(cls, beta, sigma):
    # The certificate's Lanczos runs on these exact products: of the direct map
    # (sigma None), and of the derandomized surrogate in the map and in sigma
    # (at sigma = 0 it is the direct one, and its second derivative in sigma
    # still the log-normal terms'). At sharpness 300 most pairs' soft-max
    # weights underflow and are skipped.
    rng = np.random.default_rng(2)
    derandomized = sigma is not None
    X = rng.standard_normal((25, 6))
    obj = _direct_objective(cls, X, 3, penalty=0.3, derandomized=derandomized)
    obj.beta = beta
    z = 0.5 * rng.standard_normal(18)
    if derandomized:
        z = np.append(z, sigma)
    n = z.size
    for v in (rng.standard_normal(n), np.eye(n)[4], np.eye(n)[-1]):
        exact = obj.hessp(z, v)
        h = 1e-5
        numeric = (obj(z + h * v)[1] - obj(z - h * v)[1]) / (2 * h)
        scale = np.abs(numeric).max()
        np.testing.assert_allclose(exact, numeric, rtol=0, atol=1e-6 * scale)
    # Symmetric: u . H v == v . H u.
    u, v = rng.standard_normal((2, n))
    assert u @ obj.hessp(z, v) == pytest.approx(v @ obj.hessp(z, u), rel=1e-9)


@pytest.mark.parametrize("sigma", [1e-3, 1e-5])
def test_derandomized_certificate_is_exact_at_a_degenerate_map(sigma):
    # k = 1 on 30 points of rank 3, the map nearly orthogonal to one pair's
    # difference (that ratio 9e-9 of the largest): the surrogate's curvature
    # varies on a scale far below the central differences' step eps^(1/3) |z|,
    # which read -1.47e6 and -7.4e12 against the true -1.38e6 and -1.01e13
    # (and the fits of such maps 68,091, 5.4 or 0.97 as the step shrank).
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3)) @ rng.standard_normal((3, 50))
    X -= X.mean(0)
    rows, cols, d2 = all_pairs(X)
    obj = _PairObjective(X, rows, cols, d2, 1, derandomized=True, penalty=0.1)
    obj.beta = 1000.0
    d = X[rows[0]] - X[cols[0]]
    m = rng.standard_normal(50)
    m -= (m @ d) / (d @ d) * d
    m += 1e-4 * d / np.linalg.norm(d)
    z = np.append(m / np.linalg.norm(m), sigma)
    r = obj.ratios(z[:-1].reshape(1, -1))
    assert r.min() < 1e-8 * r.max()
    H = np.column_stack([obj.hessp(z, e) for e in np.eye(z.size)])
    np.testing.assert_allclose(H, H.T, rtol=0, atol=1e-12 * np.abs(H).max())
    # Central differences agree once their step is far below the pair's scale
    # (measured: 2e-7 and 2e-9 relative at h = 1e-8).
    v = rng.standard_normal(z.size)
    h = 1e-8
    numeric = (obj(z + h * v)[1] - obj(z - h * v)[1]) / (2 * h)
    hv = obj.hessp(z, v)
    assert np.linalg.norm(numeric - hv) <= 1e-5 * np.linalg.norm(hv)
    # Lanczos on the exact products finds the smallest eigenvalue (51
    # variables: the Krylov space is invariant within its 100 steps).
    certificate = sosp_certificate(obj, z, hessp=obj.hessp, tol=1e-2)
    smallest = np.linalg.eigvalsh(H)[0]
    assert smallest < -1e5
    assert certificate.min_hessian_eig == pytest.approx(smallest, rel=1e-8)


def test_pair_and_gram_objectives_agree():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20, 5))
    X -= X.mean(0)
    rows, cols, d2 = all_pairs(X)
    z = np.append(rng.standard_normal(10), 0.3)
    values = []
    for obj in (
        _PairObjective(X, rows, cols, d2, 2, derandomized=True, penalty=0.1),
        _GramObjective(X, 1e-12, 2, derandomized=True, penalty=0.1),
    ):
        obj.beta = 5.0
        values.append(obj(z))
    assert values[0][0] == pytest.approx(values[1][0], rel=1e-10)
    np.testing.assert_allclose(values[0][1], values[1][1], rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("beta", [3.0, 80.0, 2000.0])
def test_lean_gram_evaluation_is_the_pair_surrogate(beta):
    # The Gram form's direct evaluation takes its own route (squared distances
    # from one product, log q - log d2, weights over q): the same value and
    # gradient as the pair list's, from every pair in the soft-max (beta 3) to
    # a handful (beta 2000, where the exponentials below the cut are skipped).
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 8))
    X -= X.mean(0)
    rows, cols, d2 = all_pairs(X)
    pair = _PairObjective(X, rows, cols, d2, 3, derandomized=False, penalty=0.1)
    gram = _GramObjective(X, 1e-12, 3, derandomized=False, penalty=0.1)
    pair.beta = gram.beta = beta
    for _ in range(3):
        z = 0.5 * rng.standard_normal(24)
        v_pair, g_pair = pair(z)
        v_gram, g_gram = gram(z)
        assert v_gram == pytest.approx(v_pair, rel=1e-12)
        np.testing.assert_allclose(
            g_gram, g_pair, rtol=0, atol=1e-10 * np.abs(g_pair).max()
        )


def test_every_pair_active_up_to_2000_points_takes_the_gram_form(monkeypatch):
    # 1,000 points with every pair active (k = 30: 499,500 pairs, under 20 per
    # variable) go through the Gram matrix of the embedded points (4-5x faster
    # than the pair list from 800 to 2,000 points), with the pair list's value
    # and gradient; the memory estimate counts its n x n arrays.
    rng = np.random.default_rng(7)
    X = _pairs._Span(rng.standard_normal((1000, 1200))).coords
    pairs = _active._ActivePairs(X, 20_000)
    pairs.reset(30)
    assert pairs.complete
    gram = stage_objective(pairs, 30, 250.0, derandomized=False, penalty=0.1)
    assert isinstance(gram, _GramObjective)
    monkeypatch.setattr(_stages, "GRAM_MAX_SAMPLES", 999)
    pair = stage_objective(pairs, 30, 250.0, derandomized=False, penalty=0.1)
    assert not isinstance(pair, _GramObjective)
    z = rng.standard_normal(30 * X.shape[1]) / np.sqrt(30)
    v_pair, g_pair = pair(z)
    v_gram, g_gram = gram(z)
    assert v_gram == pytest.approx(v_pair, rel=1e-10)
    np.testing.assert_allclose(g_gram, g_pair, rtol=0, atol=1e-8 * abs(g_pair).max())
    monkeypatch.undo()
    n_sq = 1000 * 1000 * 8
    complete = _stages.map_bytes(1000, 1200, 30, 4000)
    # k = 5: 499,500 pairs exceed 20 per variable (99,900): an active set.
    active = _stages.map_bytes(1000, 1200, 5, 4000)
    # The Gram arrays, plus what 25 more dimensions add to the map (1 MB) and
    # the Lanczos vectors (101 pairs of 1,000 x 25 float64 numbers, 40 MB).
    extra = complete - active - 14 * n_sq  # 14: map_bytes' gram_arrays
    assert 40e6 < extra < 42e6
    # A working set of all 499,500 pairs makes k = 5 a fit of every pair too.
    assert _stages.map_bytes(1000, 1200, 5, 499_500) == active + (14 * n_sq)


@pytest.mark.parametrize("cls", [_PairObjective, _GramObjective])
def test_evaluations_reusing_work_arrays_leave_earlier_results_intact(cls):
    # Evaluations write into work arrays kept between calls; what they return,
    # and what hessp keeps for its point, must not change when the next
    # evaluation reuses them. Evaluating again at the same point gives the same
    # numbers exactly, before and after an evaluation elsewhere.
    rng = np.random.default_rng(3)
    obj = _direct_objective(cls, rng.standard_normal((30, 7)), 3, penalty=0.1)
    for beta in (2.0, 400.0):  # every pair in the soft-max, then a few
        obj.beta = beta
        z, other, v = 0.5 * rng.standard_normal((3, 21))
        value, grad = obj(z)
        kept = grad.copy()
        hv = obj.hessp(z, v)
        obj(other)
        np.testing.assert_array_equal(grad, kept)
        again_value, again_grad = obj(z)
        assert again_value == value
        np.testing.assert_array_equal(again_grad, kept)
        # hessp's stored pair quantities at z survived the evaluations elsewhere.
        np.testing.assert_array_equal(obj.hessp(z, v), hv)


@pytest.mark.parametrize("products", [False, True])
@pytest.mark.parametrize("beta", [15.0, 60.0, 1000.0])
def test_float32_evaluation_is_the_surrogate_to_float32_round_off(beta, products):
    # The low-sharpness active-set rounds evaluate the pair terms in float32
    # (_PairObjective.single), and the long rounds also the products with X;
    # the rounds on embedded points do so at every sharpness (up to 1000 by
    # default): value and gradient are those of the float64 evaluation
    # (checked against finite differences above) up to float32 round-off
    # amplified by the sharpness, far below what the rounds resolve; a
    # collapsed pair stays finite. The float64 evaluation is left as it was.
    rng = np.random.default_rng(6)
    X = rng.standard_normal((60, 8))
    exact = _direct_objective(_PairObjective, X, 3, penalty=0.1)
    single = _direct_objective(_PairObjective, X, 3, penalty=0.1)
    exact.beta = single.beta = beta
    single.single(products=products)
    assert single.X.dtype == np.float64
    for z in 0.5 * rng.standard_normal((3, 24)):
        value, grad = exact(z)
        value32, grad32 = single(z)
        assert abs(value32 - value) <= 1e-5 * abs(value)
        assert np.linalg.norm(grad32 - grad) <= 1e-4 * np.linalg.norm(grad)
        assert grad32.dtype == np.float64
        assert exact(z)[0] == value
        Y = X @ z.reshape(3, 8).T
        value, grad = exact.embedded(Y)
        value32, grad32 = single.embedded(Y)
        assert abs(value32 - value) <= 1e-5 * abs(value)
        assert np.linalg.norm(grad32 - grad) <= 1e-4 * np.linalg.norm(grad)
    # Two coincident embedded points (a map whose rows annihilate one pair's
    # difference): the float32 floor keeps the value and gradient finite.
    d = X[0] - X[1]
    M = rng.standard_normal((3, 8))
    M -= np.outer(M @ d, d) / (d @ d)
    value32, grad32 = single(M.ravel())
    assert np.isfinite(value32) and np.all(np.isfinite(grad32))


def test_weighted_transpose_product_is_exactly_the_weighted_sum():
    # The pair Laplacian puts the weights into B^T's entries: (+-w) * d equals
    # (+-1) * (w * d) exactly, so the product is B^T (w * (B Y)) to the bit,
    # for weights of any sign and magnitude.
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 5))
    X -= X.mean(0)
    rows, cols, d2 = all_pairs(X)
    obj = _PairObjective(X, rows, cols, d2, 4, derandomized=False, penalty=0.1)
    Y = rng.standard_normal((obj.X.shape[0], 4))
    diff = obj.pairs.B @ Y
    w = rng.standard_normal(rows.size) * 10.0 ** rng.uniform(-12, 6, rows.size)
    np.testing.assert_array_equal(
        obj.pairs.laplacian(w, Y, diff), obj.pairs.BT @ (w[:, None] * diff)
    )
    # And it is the Laplacian: row i sums w_p (y_i - y_j) over i's pairs.
    expected = np.zeros_like(Y)
    ri = np.searchsorted(np.unique(np.concatenate([rows, cols])), rows)
    ci = np.searchsorted(np.unique(np.concatenate([rows, cols])), cols)
    np.add.at(expected, ri, w[:, None] * (Y[ri] - Y[ci]))
    np.add.at(expected, ci, w[:, None] * (Y[ci] - Y[ri]))
    np.testing.assert_allclose(
        obj.pairs.laplacian(w, Y),
        expected,
        rtol=1e-12,
        atol=1e-12 * np.abs(expected).max(),
    )


@pytest.mark.parametrize("sizes", [(4, 4), (3, 7), (6, 2)])
def test_polish_dual_solves_the_two_simplex_quadratic(sizes):
    # max c.u - rho/2 u^T Q u over two simplices of different sizes (the
    # shorter is padded for the projection). Optimality: u is feasible and no
    # feasible point does better, checked against the KKT conditions: on each
    # simplex, the gradient is largest (and equal) on the support. Solved to
    # the end (no stop at a relative duality gap).
    from skderand.embedding._polish import _dual

    rng = np.random.default_rng(sum(sizes))
    n_high, n_low = sizes
    G = rng.standard_normal((n_high + n_low, 3))
    Q = G @ G.T + 0.5 * np.eye(n_high + n_low)
    c = rng.standard_normal(n_high + n_low)
    u0 = np.concatenate([np.full(n_high, 1 / n_high), np.full(n_low, 1 / n_low)])
    u = _dual(c, Q, n_high, 2.0, u0, gap=0.0)
    for part in (slice(0, n_high), slice(n_high, None)):
        assert u[part].min() >= 0.0
        assert u[part].sum() == pytest.approx(1.0, abs=1e-12)
    grad = c - 2.0 * (Q @ u)
    for part in (slice(0, n_high), slice(n_high, None)):
        g, w = grad[part], u[part]
        support = w > 1e-9
        assert g[support].max() - g[support].min() < 1e-6
        assert g[~support].max(initial=-np.inf) <= g[support].min() + 1e-6


def _prox_linear_model(seed, n_high, n_low, n_variables=5):
    """A prox-linear step's data from explicit gradients ``g_p`` of the pairs.

    Returns ``l``, the signs, the ``g_p`` and the dual's ``c = sign * l`` and
    ``Q``, the Gram matrix of the ``sign_p g_p``.
    """
    rng = np.random.default_rng(seed)
    m = n_high + n_low
    g = rng.standard_normal((m, n_variables))
    l = rng.standard_normal(m)
    sign = np.concatenate([np.ones(n_high), -np.ones(n_low)])
    signed = sign[:, None] * g
    return l, sign, g, sign * l, signed @ signed.T


def _explicit_gap(l, sign, g, c, Q, n_high, rho, u):
    """Primal minus dual of the prox-linear step at ``u``, and ``F - dual``.

    The primal is the proximal minimax at the step ``D = -rho sum_p u_p
    sign_p g_p``, ``max_high (l + g.D) - min_low (l + g.D) + |D|^2 / (2
    rho)``; the dual ``c.u - rho/2 u^T Q u``; ``F = max l_high - min l_low``.
    """
    D = -rho * (u * sign) @ g
    moved = l + g @ D
    primal = moved[:n_high].max() - moved[n_high:].min() + D @ D / (2 * rho)
    dual = c @ u - 0.5 * rho * u @ Q @ u
    return primal - dual, l[:n_high].max() - l[n_high:].min() - dual


@pytest.mark.parametrize("seed", range(4))
def test_polish_duality_gap_is_primal_minus_dual(seed):
    # The gap of the explicit primal (see _explicit_gap) and the dual, divided
    # by F - dual: what _dual_gap returns, at any feasible u; 0 only at the
    # dual's optimum.
    from skderand.embedding._polish import _dual_gap

    n_high, n_low, rho = 4, 6, 0.7
    l, sign, g, c, Q = _prox_linear_model(seed, n_high, n_low)
    rng = np.random.default_rng(100 + seed)
    u = np.concatenate([rng.dirichlet(np.ones(n_high)), rng.dirichlet(np.ones(n_low))])
    gap, distance = _explicit_gap(l, sign, g, c, Q, n_high, rho, u)
    assert gap > 0
    assert _dual_gap(c, Q, n_high, rho, u) == pytest.approx(gap / distance, rel=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_polish_dual_stops_at_its_relative_gap(seed):
    # With the default stop, the dual's point has a relative duality gap of at
    # most its gap, 1e-3 (checked with the explicit primal, as above; these problems
    # reach it within the iteration budget); solved to the end, below 1e-9.
    from skderand.embedding import _polish

    n_high, n_low, rho = 5, 8, 0.3
    l, sign, g, c, Q = _prox_linear_model(10 + seed, n_high, n_low, n_variables=40)
    u0 = np.concatenate([np.full(n_high, 1 / n_high), np.full(n_low, 1 / n_low)])

    def relative_gap(u):
        gap, distance = _explicit_gap(l, sign, g, c, Q, n_high, rho, u)
        return gap / distance

    stopped = _polish._dual(c, Q, n_high, rho, u0)
    assert 0 <= relative_gap(stopped) <= 1e-3
    exact = _polish._dual(c, Q, n_high, rho, u0, max_iter=20_000, gap=0.0)
    assert relative_gap(exact) < 1e-9


def _scan_case(monkeypatch, seed):
    """40 centred points, a map's image ``Y`` and every pair's ratio, by brute force.

    Blocks are made tiny, so that a scan crosses many block boundaries.
    """
    monkeypatch.setattr(_pairs, "BLOCK_ELEMENTS", 50)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((40, 7))
    X -= X.mean(0)
    Y = X @ rng.standard_normal((7, 3))
    i, j = np.triu_indices(40, 1)
    r = np.sum((Y[i] - Y[j]) ** 2, 1) / np.sum((X[i] - X[j]) ** 2, 1)
    return X, Y, i, j, r


def test_blocked_scan_matches_brute_force(monkeypatch):
    X, Y, i, j, r = _scan_case(monkeypatch, seed=0)
    order = np.argsort(r)
    expected_low = {(i[p], j[p]) for p in order[:5]}
    expected_high = {(i[p], j[p]) for p in order[-5:]}
    for store in (True, False):
        monkeypatch.setattr(_pairs, "STORE_BYTES_64", 1 << 30 if store else 0)
        monkeypatch.setattr(_pairs, "STORE_BYTES_32", 1 << 30 if store else 0)
        scanner = _PairScanner(X)
        # Float32 once the smallest distance is known (at once when stored,
        # else after a float64 pass), with a round-off bound it must respect.
        for float32 in (store, True):
            r_min, r_max, low, high = scanner.scan(Y, n_extreme=5)
            assert (scanner.error > 0) == float32
            # Distances not stored are recomputed in float32 in a float32 pass.
            assert (scanner._gram32 is not None) == (float32 and not store)
            if float32:
                assert abs(r_min - r.min()) <= scanner.error
                assert abs(r_max - r.max()) <= scanner.error
                # The bound is rigorous, not tight: the actual error is far below.
                assert abs(r_min - r.min()) < 1e-5 * r.min()
            else:
                assert r_min == pytest.approx(r.min(), rel=1e-10)
                assert r_max == pytest.approx(r.max(), rel=1e-10)
            assert set(zip(*low, strict=True)) == expected_low
            assert set(zip(*high, strict=True)) == expected_high


def test_scan_pools_started_from_known_limits_are_the_same(monkeypatch):
    # Limits with at least n_extreme pairs at or beyond them (here the exact
    # 5th smallest and largest ratios, the tightest valid ones, widened by
    # the float64 slack only) must give the same extremes and pools, in a
    # float64 pass and in a float32 one (whose error bound the scan adds).
    X, Y, _, _, r = _scan_case(monkeypatch, seed=2)
    # Distances not stored: the first pass is float64, the second float32.
    monkeypatch.setattr(_pairs, "STORE_BYTES_64", 0)
    monkeypatch.setattr(_pairs, "STORE_BYTES_32", 0)
    r = np.sort(r)
    known = (r[4] * (1 + 1e-5), r[-5] * (1 - 1e-5))
    plain, started = _PairScanner(X), _PairScanner(X)
    for float32 in (False, True):
        expected = plain.scan(Y, n_extreme=5)
        got = started.scan(Y, n_extreme=5, known=known)
        assert (started.error > 0) == float32
        assert got[:2] == expected[:2]
        for side in (2, 3):
            assert set(zip(*got[side], strict=True)) == set(
                zip(*expected[side], strict=True)
            )
            assert len(got[side][0]) == 5


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_scan_pools_count_negative_round_off_as_zero(sign):
    # The pools take max(r, 0) (a Gram-form ratio below 0 is round-off of a
    # near-zero one) without clipping whole blocks: the same keys as a
    # brute-force selection on the clipped values, NaN never taken.
    rng = np.random.default_rng(3)
    blocks = [rng.uniform(-0.2, 1.0, size=(4, 9)) for _ in range(5)]
    for block in blocks:
        block[rng.random(block.shape) < 0.2] = np.nan
    pool = _pairs._MostExtreme(6, sign)
    for a, block in enumerate(blocks):
        pool.add(block.copy(), a, block.shape[1])
    extreme, pool = pool.result()
    values = np.concatenate([b.ravel() for b in blocks])
    values = np.maximum(values[~np.isnan(values)], 0.0)
    expected = np.sort(sign * values)[:6]
    assert np.array_equal(np.sort(pool.parts[0][2]), expected)
    assert extreme == sign * expected[0]
    # A limit at 0 on the high side (every clipped ratio reaches it) takes
    # every entry but NaN, negative ones included.
    if sign < 0:
        pool = _pairs._MostExtreme(100, sign)
        pool.limit = 0.0
        pool.add(blocks[0].copy(), 0, blocks[0].shape[1])
        assert pool.size == np.count_nonzero(~np.isnan(blocks[0]))


def test_float32_recomputed_distances_skip_coincident_pairs(monkeypatch):
    # Distances not stored, five duplicated points: the float32 pass
    # recomputes the distances and must leave the coincident pairs out (their
    # ratio is 0 / 0) while finding the same extremes and pools as brute force
    # over the other pairs, within its error bound.
    monkeypatch.setattr(_pairs, "BLOCK_ELEMENTS", 60)
    monkeypatch.setattr(_pairs, "STORE_BYTES_64", 0)
    monkeypatch.setattr(_pairs, "STORE_BYTES_32", 0)
    rng = np.random.default_rng(4)
    X = rng.standard_normal((35, 6))
    X = np.vstack([X, X[:5]])
    X -= X.mean(0)
    Y = X @ rng.standard_normal((6, 3))
    i, j = np.triu_indices(40, 1)
    d2 = np.sum((X[i] - X[j]) ** 2, 1)
    keep = d2 > 1e-9
    i, j = i[keep], j[keep]
    r = np.sum((Y[i] - Y[j]) ** 2, 1) / d2[keep]
    ratio_of = dict(zip(zip(i, j, strict=True), r, strict=True))
    scanner = _PairScanner(X)
    for float32 in (False, True):
        r_min, r_max, low, high = scanner.scan(Y, n_extreme=5)
        assert (scanner._gram32 is not None) == float32
        assert abs(r_min - r.min()) <= max(scanner.error, 1e-12 * r.min())
        assert abs(r_max - r.max()) <= max(scanner.error, 1e-12 * r.max())
        # Compared by ratio, not by pair: a duplicated point gives its
        # neighbours two pairs of exactly the same ratio (here the 5th and
        # 6th smallest, (3, 32) and (32, 38) with point 38 a copy of 3), and
        # either is a correct 5th. Coincident pairs have no entry: a pool
        # holding one fails the lookup.
        for pool, expected in ((low, np.sort(r)[:5]), (high, np.sort(r)[-5:])):
            pairs = set(zip(*pool, strict=True))
            assert len(pairs) == 5
            assert np.array_equal(np.sort([ratio_of[q] for q in pairs]), expected)


def test_passes_over_coincident_points_only(monkeypatch):
    # Distances not stored and every pair coincident: no ratio, and no float32
    # recomputation (its bound divides by the smallest distance).
    monkeypatch.setattr(_pairs, "STORE_BYTES_64", 0)
    monkeypatch.setattr(_pairs, "STORE_BYTES_32", 0)
    scanner = _PairScanner(np.zeros((12, 3)))
    for _ in range(3):
        r_min, r_max, low, _ = scanner.scan(np.zeros((12, 2)), n_extreme=2)
        assert (r_min, r_max) == (np.inf, -np.inf)
        assert low[0].size == 0 and scanner._gram32 is None


def test_float32_passes_stay_float64_near_duplicates():
    # Two points 1e-3 apart: the float32 round-off bound (through 1 / the
    # smallest distance) would swamp the spread of the ratios, so every pass
    # stays float64 and exact to round-off.
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 6))
    X[1] = X[0] + 1e-3
    X -= X.mean(0)
    Y = X @ rng.standard_normal((6, 3))
    scanner = _PairScanner(X)
    i, j = np.triu_indices(30, 1)
    r = np.sum((Y[i] - Y[j]) ** 2, 1) / np.sum((X[i] - X[j]) ** 2, 1)
    for _ in range(2):
        r_min, r_max, _, _ = scanner.scan(Y, n_extreme=3)
        assert scanner.error == 0.0
        assert r_max == pytest.approx(r.max(), rel=1e-9)


def test_duplicates_and_constant_features_give_finite_results():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 10))
    X[:, 3] = 7.0  # a constant feature
    X = np.vstack([X, X[:5]])  # five duplicated points
    jl = LearnedJLTransformer(4, random_state=0).fit(X)
    assert np.all(np.isfinite(jl.components_))
    assert np.isfinite(jl.distortion_)
    assert jl.distortion_ == pytest.approx(
        scale_free_distortion(X, jl.transform(X)), rel=1e-6
    )


def _first_copies(dense):
    """Brute force: the index of the first copy of each distinct row, in order."""
    return np.array(
        [
            i
            for i in range(dense.shape[0])
            if not any(np.array_equal(dense[i], dense[j]) for j in range(i))
        ]
    )


@pytest.mark.parametrize("collide", [False, True])
@pytest.mark.parametrize("layout", ["C", "F", "float32", "csr", "csc", "messy"])
def test_distinct_rows_are_the_first_copies(layout, collide, monkeypatch):
    # Exact copies, found by a hash of each row and an exact comparison of rows
    # whose hashes agree (all of them when every hash collides). A sparse row
    # stored with unsorted columns, a repeated entry or an explicit zero equals
    # its canonical copy; the user's matrix is left as it was.
    if collide:
        monkeypatch.setattr(
            _distinct, "_row_hashes", lambda X: np.zeros(X.shape[0], np.uint64)
        )
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 6))
    X[rng.random(X.shape) < 0.5] = 0.0
    X = X[rng.integers(0, 25, size=60)]  # copies of 25 rows at most
    X[7] = 0.0  # an empty row, and its copy
    X[30] = 0.0
    expected = _first_copies(X)
    if layout == "F":
        X = np.asfortranarray(X)
    elif layout == "float32":
        X = X.astype(np.float32)
    elif layout in ("csr", "csc"):
        X = sparse.csr_matrix(X) if layout == "csr" else sparse.csc_matrix(X)
    elif layout == "messy":
        # Row 3 stored as (column 5, a zero in column 0, column 5 again).
        X = sparse.csr_matrix(X)
        row = X.getrow(3).toarray().ravel()
        rows = [X[:3], None, X[4:]]
        rows[1] = sparse.csr_matrix(
            (
                [row[5] / 2, 0.0, row[5] / 2] + list(row[:5][row[:5] != 0]),
                [5, 0, 5] + list(np.flatnonzero(row[:5])),
                [0, 3 + np.count_nonzero(row[:5])],
            ),
            shape=(1, 6),
        )
        X = sparse.vstack(rows, format="csr")
        X.has_canonical_format = False
    before = X.copy()
    keep = _distinct.distinct_rows(X)
    np.testing.assert_array_equal(keep, expected)
    if sparse.issparse(X):
        for name in ("data", "indices", "indptr"):
            np.testing.assert_array_equal(getattr(X, name), getattr(before, name))
    # No copy: None.
    assert _distinct.distinct_rows(X[keep]) is None


@pytest.mark.parametrize("sparse_input", [False, True])
def test_copies_of_rows_do_not_change_the_fit(sparse_input, monkeypatch):
    # A copy of a row adds no ratio: the fit with copies is the fit of the
    # distinct rows (the same map and distortion), and reports the exact
    # distortion of all the rows. Sparse rows of rank n - 1 once copies are
    # left out keep the Cholesky factor (CHOLESKY_MIN_SAMPLES patched down) and
    # the solves on embedded points (with the copies in, the span used to fall
    # back to principal directions of n - 2 dimensions and map solves). mean_
    # is the mean of all rows.
    monkeypatch.setattr(_pairs, "SPARSE_DENSIFY_ELEMENTS", 0)
    monkeypatch.setattr(_pairs, "CHOLESKY_MIN_SAMPLES", 2)
    rng = np.random.default_rng(3)
    X = sparse.random(120, 400, density=0.05, format="csr", random_state=3)
    X.data = rng.exponential(size=X.nnz)
    copies = sparse.vstack([X, X[[5, 9, 9, 40]]], format="csr")
    copies = copies[rng.permutation(copies.shape[0])]
    if not sparse_input:
        copies = copies.toarray()
    distinct = copies[_distinct.distinct_rows(copies)]
    fit = LearnedJLTransformer(5, random_state=0).fit(copies)
    alone = LearnedJLTransformer(5, random_state=0).fit(distinct)
    np.testing.assert_array_equal(fit.components_, alone.components_)
    assert fit.distortion_ == alone.distortion_
    dense = copies.toarray() if sparse_input else copies
    assert fit.distortion_ == pytest.approx(
        scale_free_distortion(dense, fit.transform(copies)), rel=1e-9
    )
    np.testing.assert_allclose(fit.mean_, dense.mean(axis=0), rtol=1e-12)


def test_constant_data_does_not_produce_nan():
    X = np.ones((6, 4))
    jl = LearnedJLTransformer(2, random_state=0).fit(X)
    assert np.all(np.isfinite(jl.transform(X)))
    assert jl.distortion_ == 0.0


@pytest.mark.parametrize("container", [np.asarray, sparse.csr_matrix])
def test_more_components_than_features_warns_and_embeds_isometrically(container):
    # As GaussianRandomProjection: allowed, with a DataDimensionalityWarning.
    # From the rank of the centred data on an isometry of the training points
    # exists, and the fit returns one: every pair keeps its distance.
    X = np.random.default_rng(0).standard_normal((40, 6))
    with pytest.warns(DataDimensionalityWarning, match="n_components=9 is larger"):
        jl = LearnedJLTransformer(9, random_state=0).fit(container(X))
    Y = jl.transform(container(X))
    assert Y.shape == (40, 9)
    i, j = np.triu_indices(40, 1)
    ratios = np.sum((Y[i] - Y[j]) ** 2, 1) / np.sum((X[i] - X[j]) ** 2, 1)
    np.testing.assert_allclose(ratios, 1.0, rtol=1e-10)
    assert jl.distortion_ <= 1e-12
    assert jl.distortion_ == pytest.approx(scale_free_distortion(X, Y), abs=1e-12)
    # The dimension itself is no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDimensionalityWarning)
        LearnedJLTransformer(6, random_state=0).fit(X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_preserved(dtype):
    X = make_data("low_rank", 0).astype(dtype)
    jl = LearnedJLTransformer(5, random_state=0).fit(X)
    assert jl.components_.dtype == dtype
    assert jl.transform(X).dtype == dtype
    assert jl.inverse_transform(jl.transform(X)).dtype == dtype


@pytest.mark.parametrize("container", [np.asarray, sparse.csr_matrix])
@pytest.mark.parametrize("seed", [0, 1])
def test_float32_data_far_from_the_origin_keep_their_distortion(container, seed):
    # Rows near 1e4 that differ by about 1e-3: float32 holds each row to about
    # 5e-4, and a product of the uncentred rows rounds their images at the
    # scale of 1e4 |components_|, where the differences are lost (0.97-0.99
    # against distortion_ 0.62 here, 0.55 at 300 x 600). Centred first, the
    # images keep the distortion measured on the training pairs (to 1e-7).
    rng = np.random.default_rng(seed)
    X = (1e4 + 1e-3 * rng.standard_normal((100, 200))).astype(np.float32)
    jl = LearnedJLTransformer(6, max_iter=100, random_state=seed).fit(container(X))
    Y = jl.transform(container(X))
    assert Y.dtype == np.float32
    assert scale_free_distortion(X, Y) == pytest.approx(jl.distortion_, abs=1e-5)
    # The offset moves every point alike: the images are the linear map's up
    # to one common vector.
    exact = X.astype(np.float64) @ jl.components_.T.astype(np.float64)
    np.testing.assert_allclose(Y - Y[0], exact - exact[0], atol=1e-3 * np.ptp(Y))


@pytest.mark.parametrize("container", [sparse.csr_matrix, sparse.csc_array])
def test_sparse_input_matches_dense(container):
    X = make_data("low_rank", 0)
    X[np.abs(X) < 0.5] = 0.0
    dense = LearnedJLTransformer(5, random_state=0).fit(X)
    sp = LearnedJLTransformer(5, random_state=0).fit(container(X))
    np.testing.assert_allclose(sp.components_, dense.components_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(
        sp.transform(container(X)), dense.transform(X), rtol=1e-8, atol=1e-10
    )


def test_pandas_output_and_feature_names():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(make_data("low_rank", 0)).add_prefix("f")
    jl = LearnedJLTransformer(3, random_state=0).set_output(transform="pandas")
    out = jl.fit_transform(X)
    assert isinstance(out, pd.DataFrame)
    expected = [f"learnedjltransformer{i}" for i in range(3)]
    assert list(out.columns) == expected
    assert list(jl.get_feature_names_out()) == expected
    np.testing.assert_array_equal(jl.feature_names_in_, X.columns)


def test_inverse_transform_is_the_pseudo_inverse():
    X = make_data("gaussian", 0)[:, :8]
    jl = LearnedJLTransformer(8, random_state=0).fit(X)
    # A square invertible map: the pseudo-inverse recovers the data.
    np.testing.assert_allclose(jl.inverse_transform(jl.transform(X)), X, atol=1e-8)
    stored = LearnedJLTransformer(
        3, compute_inverse_components=True, random_state=0
    ).fit(X)
    np.testing.assert_allclose(
        stored.inverse_components_, np.linalg.pinv(stored.components_), atol=1e-12
    )
    Z = stored.transform(X)
    np.testing.assert_allclose(
        stored.inverse_transform(Z),
        Z @ np.linalg.pinv(stored.components_).T + stored.mean_,
    )


def test_deterministic_for_a_seed_and_input_not_modified():
    X = make_data("low_rank", 0)[:40]
    X_copy = X.copy()
    a = LearnedJLTransformer(6, random_state=3).fit(X)
    b = LearnedJLTransformer(6, random_state=3).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(X, X_copy)
    Xs = sparse.csr_matrix(X)
    data = Xs.data.copy()
    a.fit(Xs).transform(Xs)
    np.testing.assert_array_equal(Xs.data, data)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_components": 0}, "n_components"),
        ({"n_components": "many"}, "n_components"),
        ({"eps": 1.5}, "eps"),
        ({"algorithm": "random"}, "algorithm"),
        ({"softmax_sharpness": -1.0}, "softmax_sharpness"),
        ({"curvature_tol": -1.0}, "curvature_tol"),
        ({"working_set": 2}, "working_set"),
        ({"working_set": "all"}, "working_set"),
    ],
)
def test_bad_parameters_raise(params, match):
    X = make_data("low_rank", 0)
    with pytest.raises(InvalidParameterError, match=match):
        LearnedJLTransformer(**params).fit(X)


def test_bad_input_raises():
    X = make_data("low_rank", 0)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        LearnedJLTransformer(3).fit(bad)
    jl = LearnedJLTransformer(3, random_state=0).fit(X)
    with pytest.raises(ValueError, match="features"):
        jl.transform(X[:, :-1])
    with pytest.raises(ValueError, match="components"):
        jl.inverse_transform(np.ones((2, 4)))


def test_active_set_path_large_n(monkeypatch):
    # More pairs (11,175) than the working set and (patched) than needed per
    # variable: the active-set rounds. The result must still be measured exactly
    # on all pairs and beat the baselines.
    monkeypatch.setattr(_active, "COMPLETE_PER_VARIABLE", 1)
    X = make_data("digits", 1)
    jl = LearnedJLTransformer(10, working_set=1000, random_state=0).fit(X)
    assert jl.distortion_ == pytest.approx(
        scale_free_distortion(X, jl.transform(X)), rel=1e-6
    )
    assert jl.distortion_ < jl.initial_distortion_
    assert jl.distortion_ < MARGIN * best_baseline(X, 10)


def test_auto_working_set_is_the_larger_of_its_floor_and_the_points(monkeypatch):
    # working_set="auto" is max(WORKING_SET, n_samples): with the floor patched
    # below the 150 points it is 150, above them the floor.
    monkeypatch.setattr(_active, "COMPLETE_PER_VARIABLE", 1)
    X = make_data("digits", 1)
    assert X.shape[0] == 150

    def components(working_set):
        return (
            LearnedJLTransformer(
                5, working_set=working_set, n_stages=2, max_iter=60, random_state=0
            )
            .fit(X)
            .components_
        )

    monkeypatch.setattr(_learned_jl, "WORKING_SET", 100)
    auto = components("auto")
    np.testing.assert_array_equal(auto, components(150))
    # The size matters on this data, so the equality above is not vacuous.
    assert not np.array_equal(auto, components(200))
    monkeypatch.setattr(_learned_jl, "WORKING_SET", 400)
    np.testing.assert_array_equal(components("auto"), components(400))


def test_verbose_reports_every_stage_and_the_polish(capsys):
    X = make_data("gaussian", 0)
    LearnedJLTransformer(5, n_stages=3, verbose=1, random_state=0).fit(X)
    out = capsys.readouterr().out
    for stage in (1, 2, 3):
        assert f"stage {stage}/3" in out
    assert "stage 4/" not in out
    assert "polish round 1: all-pairs distortion" in out
    LearnedJLTransformer(5, n_stages=3, random_state=0).fit(X)
    assert capsys.readouterr().out == ""
    # Level 2 adds the solvers' own progress.
    LearnedJLTransformer(5, n_stages=3, verbose=2, random_state=0).fit(X)
    out2 = capsys.readouterr().out
    assert "stage 3/3" in out2 and "[minimize_sosp]" in out2


@pytest.mark.parametrize("seed", [0, 1])
def test_sharpness_and_n_stages_shape_the_minimax(seed):
    X = make_data("gaussian", seed)
    # At sharpness 1 the soft-max is close to an average over the pairs, a poor
    # stand-in for the worst pair: the sharp default ends far lower.
    blunt = LearnedJLTransformer(
        5, softmax_sharpness=1.0, n_stages=1, polish=False, random_state=seed
    ).fit(X)
    sharp = LearnedJLTransformer(5, polish=False, random_state=seed).fit(X)
    assert sharp.distortion_ < 0.9 * blunt.distortion_
    # The stages' sharpness is sharpness / 4**(n_stages - 1 - s).
    jl = LearnedJLTransformer(5, softmax_sharpness=64.0, n_stages=3, random_state=0)
    stages = jl.fit(X).stages_
    np.testing.assert_array_equal(stages["stage"], [1, 2, 3])
    np.testing.assert_array_equal(stages["softmax_sharpness"], [4.0, 16.0, 64.0])
    # The stages' iterations are part of the fit's (the certificate may add
    # some).
    assert 0 < stages["n_iter"].sum() <= jl.n_iter_


def test_range_factor_scales_sharpness_to_a_narrow_log_range():
    factor = _learned_jl._range_factor
    # The log-range of a distortion D is log((1 + D) / (1 - D)) = 2 artanh(D).
    at_range = np.tanh(_learned_jl.SHARPNESS_RANGE / 2.0)
    assert factor(at_range) == pytest.approx(1.0, rel=1e-12)
    assert factor(0.3) == 1.0
    assert factor(1.0) == 1.0  # r_min = 0: an infinite range
    assert factor(np.inf) == 1.0  # no distortion known (the isometry start)
    assert factor(np.tanh(0.025)) == pytest.approx(2.0, rel=1e-12)
    assert factor(np.tanh(0.001)) == pytest.approx(50.0, rel=1e-12)
    assert factor(np.tanh(0.0005)) == 64.0  # 100, capped at the default factor
    assert factor(0.0) == 64.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_narrow_ratio_ranges_sharpen_the_stages(seed, monkeypatch):
    # Near-isometric maps of low-rank data leave the final stage a log-range
    # of about 0.01: at sharpness 1000 its soft-max weighs nearly every pair
    # alike. Sharpened to the range, the fit ends far lower (measured: 0.0023
    # against 0.0040, seeds 0-2).
    X = make_data("low_rank", seed)
    sharpened = LearnedJLTransformer(10, random_state=seed).fit(X)
    stages = sharpened.stages_
    np.testing.assert_array_equal(stages["stage"], [1, 2, 3, 4])
    # The final stage starts where stage 3 ended: its sharpness is 1000 times
    # SHARPNESS_RANGE over that log-range.
    log_range = 2.0 * np.arctanh(stages["distortion"][2])
    assert log_range < _learned_jl.SHARPNESS_RANGE
    assert stages["softmax_sharpness"][3] == pytest.approx(
        1000.0 * _learned_jl.SHARPNESS_RANGE / log_range, rel=1e-12
    )
    monkeypatch.setattr(_learned_jl, "SHARPNESS_RANGE", 0.0)
    plain = LearnedJLTransformer(10, random_state=seed).fit(X)
    assert sharpened.distortion_ < 0.75 * plain.distortion_
    measured = scale_free_distortion(X, sharpened.transform(X))
    assert measured == pytest.approx(sharpened.distortion_, rel=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_polish_never_raises_and_lowers_the_distortion(seed):
    X = make_data("unit_uniform", seed)
    plain = LearnedJLTransformer(8, polish=False, random_state=seed).fit(X)
    polished = LearnedJLTransformer(8, random_state=seed).fit(X)
    # The polish starts from the same stage end point and is kept only if the
    # all-pairs distortion falls; the certificate is the stage's.
    assert polished.distortion_ < plain.distortion_
    assert polished.distortion_ == pytest.approx(
        scale_free_distortion(X, polished.transform(X)), rel=1e-6
    )
    assert polished.grad_norm_ == plain.grad_norm_


def test_alpha_drives_the_scale_faster():
    X = make_data("gaussian", 0)
    scales = [
        LearnedJLTransformer(
            5,
            algorithm="derandomized",
            alpha=penalty,
            n_stages=1,
            max_iter=5,
            polish=False,
            random_state=0,
        )
        .fit(X)
        .scale_
        for penalty in (0.01, 10.0)
    ]
    assert scales[1] < 0.5 * scales[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "params",
    [
        {"max_iter": 1},
        {"max_iter": 20, "algorithm": "derandomized"},
        {},
        {"tol": 1.0, "curvature_tol": 0.0},
        {"curvature_tol": 0.5},
    ],
)
def test_certified_is_its_definition(params, seed):
    # 12 points (55 variables): the same outcomes as 40 points on every case
    # (uncertified at max_iter 1 and 20, certified otherwise, after negative-
    # curvature escapes for curvature_tol=0), at a tenth of the Lanczos cost.
    X = make_data("gaussian", seed)[:12]
    jl = LearnedJLTransformer(5, random_state=seed, **params).fit(X)
    curvature_tol = params.get("curvature_tol", np.sqrt(jl.tol))
    assert jl.curvature_tol_ == curvature_tol
    assert jl.certified_ is bool(
        jl.grad_norm_ <= jl.tol and jl.min_hessian_eig_ >= -curvature_tol
    )
    assert np.isfinite(jl.grad_norm_) and np.isfinite(jl.min_hessian_eig_)
    assert jl.n_iter_ >= 1


def test_no_pair_to_embed_has_the_trivial_certificate():
    # All points coincide: no pair, a constant surrogate, nothing to iterate.
    X = np.tile(np.arange(6.0), (5, 1))
    jl = LearnedJLTransformer(2, curvature_tol=0.3, random_state=0).fit(X)
    assert (jl.grad_norm_, jl.min_hessian_eig_, jl.n_iter_) == (0.0, 0.0, 0)
    assert jl.certified_ is True
    assert jl.curvature_tol_ == 0.3
    assert jl.distortion_ == 0.0


def test_large_sparse_input_is_never_densified(monkeypatch):
    # Above the threshold (patched down), the span comes from the Gram matrix of
    # the rows: the fit matches the dense one's distortion and the peak memory
    # stays below one dense copy of the input.
    import tracemalloc

    rng = np.random.default_rng(0)
    # 100 points: the same Gram-matrix path as more, at a third of the cost
    # (tracemalloc slows every allocation of the fit).
    X = sparse.random(100, 20_000, density=0.005, format="csr", random_state=0)
    X.data = rng.exponential(size=X.nnz)
    dense = LearnedJLTransformer(5, polish=False, random_state=0).fit(X.toarray())
    monkeypatch.setattr(_pairs, "SPARSE_DENSIFY_ELEMENTS", 0)
    tracemalloc.start()
    sp = LearnedJLTransformer(5, polish=False, random_state=0).fit(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    one_dense_copy = X.shape[0] * X.shape[1] * 8
    assert peak < 0.5 * one_dense_copy
    assert sp.distortion_ == pytest.approx(
        scale_free_distortion(X.toarray(), sp.transform(X)), rel=1e-6
    )
    # The same start and the same landscape in another orthonormal basis: only
    # round-off separates the two trajectories (which then part, as nonconvex
    # descents do, so the maps differ but reach the same level).
    assert sp.initial_distortion_ == pytest.approx(dense.initial_distortion_, rel=1e-9)
    assert sp.distortion_ == pytest.approx(dense.distortion_, rel=1e-2)
    assert sp.distortion_ < 0.8 * sp.initial_distortion_


def test_large_sparse_span_from_a_pivoted_cholesky_factor(monkeypatch):
    # From CHOLESKY_MIN_SAMPLES rows on (patched down) the span's coordinates
    # come from a pivoted Cholesky factor of the rows' Gram matrix: another
    # orthonormal basis of the same span. The distances, the maps on the input
    # space (extend after restrict projects onto the span) and the fit's
    # random start are those of the principal directions; the fit, on the
    # embedded points (rank 299 of 300 points), reaches the same level and
    # reports the distortion of its map. Rows with a duplicate (centred rank
    # n - 2) keep the principal directions.
    rng = np.random.default_rng(1)
    X = sparse.random(300, 1_000, density=0.05, format="csr", random_state=1)
    X.data = rng.exponential(size=X.nnz)
    monkeypatch.setattr(_pairs, "SPARSE_DENSIFY_ELEMENTS", 0)
    principal = _Span(X)
    # (A fit of 5 dimensions solves on the embedded points only and would
    # take the factor at any size: kept on the principal directions here.)
    monkeypatch.setattr(_learned_jl, "solves_on_embedded_points", lambda *a: False)
    fit_principal = LearnedJLTransformer(5, random_state=0).fit(X)
    monkeypatch.setattr(_pairs, "CHOLESKY_MIN_SAMPLES", 2)
    span = _Span(X)
    assert principal.factor is None and span.factor is not None
    assert span.coords.shape == principal.coords.shape == (300, 299)
    K = span.gram.rows(np.arange(300))
    np.testing.assert_allclose(
        span.coords @ span.coords.T, K, atol=1e-12 * abs(K).max()
    )
    dense = X.toarray()
    centred = dense - dense.mean(axis=0)
    # The coordinates' rows are the points in the pivots' order.
    assert sorted(span.order) == list(range(X.shape[0]))
    ratios = pdist(span.coords, "sqeuclidean") / pdist(
        centred[span.order], "sqeuclidean"
    )
    assert ratios.max() / ratios.min() - 1 < 1e-11
    A = rng.standard_normal((4, X.shape[1]))
    projected = principal.extend(principal.restrict(A))
    np.testing.assert_allclose(
        span.extend(span.restrict(A)), projected, atol=1e-10 * abs(projected).max()
    )
    fit = LearnedJLTransformer(5, random_state=0).fit(X)
    assert fit.initial_distortion_ == pytest.approx(
        fit_principal.initial_distortion_, rel=1e-9
    )
    assert fit.distortion_ == pytest.approx(fit_principal.distortion_, rel=1e-2)
    assert fit.distortion_ == pytest.approx(
        scale_free_distortion(dense, fit.transform(X)), rel=1e-9
    )
    duplicated = sparse.vstack([X, X[:1]], format="csr")
    fallback = _Span(duplicated)
    assert fallback.factor is None and fallback.coords.shape == (301, 299)
    # The factor overwrote the Gram matrix; the eigendecomposition's (formed
    # again) gives the distances all the same.
    distinct = pdist(duplicated.toarray(), "sqeuclidean") > 0
    ratios = (
        pdist(fallback.coords, "sqeuclidean")[distinct]
        / pdist(duplicated.toarray(), "sqeuclidean")[distinct]
    )
    assert ratios.max() / ratios.min() - 1 < 1e-11


def test_a_sparse_span_keeps_the_direction_of_a_near_duplicate_pair(monkeypatch):
    # 200 sparse rows whose column 0 is +-30 (the largest Gram eigenvalue
    # about 200 * 900); rows 0 and 1 differ only by 3.5e-4 in the last column,
    # a squared distance of 1.4e-10 of the largest squared norm: not
    # coincident. The one direction that separates them has a Gram eigenvalue
    # of 7e-13 of the largest, below the round-off cut of the eigenvalues
    # (max(n, d) eps = 9e-13): it was dropped, the pair collapsed in the span
    # (span rank 198) and went unseen by the fit, and distortion_ read 0.43140
    # against the map's 0.43144. Kept, but from eigh alone, its squared distance
    # was 5e-4 off; taken again from products with the rows, it is exact.
    X = sparse.random(200, 4_000, density=0.005, format="lil", random_state=0)
    X[:, 0] = 30.0 * np.sign(np.random.default_rng(0).standard_normal((200, 1)))
    X[1, :] = X[0, :]
    X[:, -1] = 0.0
    X[1, -1] = 3.5e-4
    X = X.tocsr()
    monkeypatch.setattr(_pairs, "SPARSE_DENSIFY_ELEMENTS", 0)
    span = _Span(X)
    assert span.coords.shape == (200, 199)
    dense = X.toarray()
    ratios = pdist(span.coords, "sqeuclidean") / pdist(dense, "sqeuclidean")
    assert ratios.max() / ratios.min() - 1 < 1e-10
    fit = LearnedJLTransformer(10, max_iter=50, random_state=0).fit(X)
    assert fit.distortion_ == pytest.approx(
        scale_free_distortion(dense, fit.transform(X)), rel=1e-7
    )


def test_centred_rows_span_at_most_n_minus_1_dimensions(monkeypatch):
    # 300 points of 600 features with a standard deviation of 0.04 around 5:
    # the centring's round-off leaves a 300th singular value above the
    # SVD's threshold (and a 300th Gram eigenvalue above the eigenvalue
    # threshold). Centred rows have rank 299; a span of 300 dimensions made
    # the embedded certificate divide by that direction's tiny norm, and the
    # fit crashed with NaN in the Lanczos recurrence.
    rng = np.random.default_rng(3)
    n, d = 300, 600
    U = np.linalg.qr(rng.standard_normal((n, n)))[0]
    V = np.linalg.qr(rng.standard_normal((d, n)))[0]
    X = U @ V.T + 5.0
    assert _Span(X).coords.shape == (n, n - 1)
    monkeypatch.setattr(_pairs, "SPARSE_DENSIFY_ELEMENTS", 0)
    assert _Span(sparse.csr_array(X)).coords.shape == (n, n - 1)
    # The fit on principal coordinates (as dense data of this shape had it).
    monkeypatch.setattr(_learned_jl, "solves_on_embedded_points", lambda *a: False)
    for data in (X, sparse.csr_array(X)):
        fit = LearnedJLTransformer(5, random_state=0, max_iter=50).fit(data)
        assert np.isfinite(fit.min_hessian_eig_)
        assert fit.distortion_ == pytest.approx(
            scale_free_distortion(X, fit.transform(data)), rel=1e-9
        )


@pytest.mark.parametrize("dense", [False, True])
def test_fits_solving_on_embedded_points_take_a_triangular_span(monkeypatch, dense):
    # The span keeps the principal directions for the fits that solve in
    # whitened map coordinates: every pair active (k = 8 on 300 points:
    # 44,850 pairs, fewer than 20 per variable), the derandomized surrogate,
    # and a search of the dimension (which may reach such a k). A direct fit
    # of 5 dimensions solves on the embedded points only and takes a
    # triangular basis (sparse rows: a Cholesky factor below
    # CHOLESKY_MIN_SAMPLES rows; dense rows: a QR factorization); its map is
    # as good, and its distortion_ is its map's.
    assert _active.solves_on_embedded_points(300, 1_000, 5, 4_000)
    assert not _active.solves_on_embedded_points(300, 1_000, 8, 4_000)
    assert not _active.solves_on_embedded_points(300, 1_000, 5, 50_000)
    assert not _active.solves_on_embedded_points(300, 200, 5, 4_000)  # rank < n - 1
    assert not _active.solves_on_embedded_points(200, 1_000, 5, 4_000)  # rank < 256
    rng = np.random.default_rng(1)
    X = sparse.random(300, 1_000, density=0.05, format="csr", random_state=1)
    X.data = rng.exponential(size=X.nnz)
    if dense:
        X = X.toarray()
    monkeypatch.setattr(_pairs, "SPARSE_DENSIFY_ELEMENTS", 0)
    spans = []

    class RecordedSpan(_Span):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            spans.append(self)

    monkeypatch.setattr(_learned_jl, "_Span", RecordedSpan)
    factored = LearnedJLTransformer(5, random_state=0).fit(X)
    assert spans[-1].factor is not None and spans[-1].coords.shape == (300, 299)
    for params in (
        {"n_components": 8, "max_iter": 20},
        {"n_components": 5, "algorithm": "derandomized", "max_iter": 20},
        {"n_components": "auto", "eps": 0.9, "max_iter": 20},
    ):
        LearnedJLTransformer(random_state=0, **params).fit(X)
        assert spans[-1].factor is None, params
    monkeypatch.setattr(_learned_jl, "solves_on_embedded_points", lambda *a: False)
    principal = LearnedJLTransformer(5, random_state=0).fit(X)
    assert spans[-1].factor is None
    assert factored.distortion_ == pytest.approx(principal.distortion_, rel=1e-2)
    assert factored.distortion_ == pytest.approx(
        scale_free_distortion(X if dense else X.toarray(), factored.transform(X)),
        rel=1e-9,
    )


def test_a_qr_span_gives_triangular_coordinates_of_the_rows():
    # Centred rows of rank n - 1 (here with an offset of 5, whose centring
    # leaves round-off): an orthonormal basis, lower trapezoidal coordinates
    # that give the rows back, and the spread of the span's variances as the
    # principal directions have it. Rows of lower rank (a duplicate) keep the
    # principal directions: the unpivoted QR does not always reveal the
    # rank, but the spread of a round-off direction does.
    rng = np.random.default_rng(0)
    n, d = 300, 600
    X = rng.standard_normal((n, d)) * np.linspace(1.0, 0.05, d) + 5.0
    Xc = X - X.mean(axis=0)
    basis, coords = _pairs._qr_span(Xc)
    np.testing.assert_allclose(basis.T @ basis, np.eye(n - 1), atol=1e-12)
    C = coords.coords
    assert C.shape == (n, n - 1) and not np.triu(C[: n - 1], 1).any()
    np.testing.assert_allclose(C @ basis.T, Xc, atol=1e-12 * abs(Xc).max())
    principal = _Span(X).coords
    col_sq = np.einsum("ij,ij->j", principal, principal)
    assert coords.spread() == pytest.approx(col_sq.max() / col_sq.min(), rel=1e-3)
    duplicated = _Span(np.vstack([X, X[:1]]), max_spread=1e3)
    assert duplicated.factor is None and duplicated.coords.shape == (n + 1, n - 1)
    assert _pairs._qr_span(Xc[:, : n - 2]) is None


def test_a_spread_that_arpack_cannot_estimate_keeps_the_principal_directions(
    monkeypatch,
):
    from scipy.sparse.linalg import ArpackNoConvergence

    def fails(*args, **kwargs):
        raise ArpackNoConvergence("no convergence", np.empty(0), np.empty((0, 0)))

    X = np.random.default_rng(0).standard_normal((300, 600))
    assert _Span(X, max_spread=1e3).factor is not None
    monkeypatch.setattr(_pairs, "eigsh", fails)
    span = _Span(X, max_spread=1e3)
    assert span.factor is None and span.coords.shape == (300, 299)


def test_the_spread_of_a_cholesky_span_is_that_of_its_principal_directions(
    monkeypatch,
):
    rng = np.random.default_rng(1)
    X = sparse.random(300, 1_000, density=0.05, format="csr", random_state=1)
    X.data = rng.exponential(size=X.nnz)
    monkeypatch.setattr(_pairs, "SPARSE_DENSIFY_ELEMENTS", 0)
    principal = _Span(X).coords
    col_sq = np.einsum("ij,ij->j", principal, principal)
    factor = _Span(X, max_spread=np.inf).factor
    assert factor.spread() == pytest.approx(col_sq.max() / col_sq.min(), rel=1e-3)


def test_anisotropic_spans_solve_in_whitened_principal_coordinates(monkeypatch):
    # 300 points of rank 300 in 600 dimensions with standard deviations i^-1.5
    # (a spread of 7e11 after centring): the embedded solves, which take the
    # whitened path without its floor, would move the directions of least
    # variance freely. The fit keeps the principal directions and solves the
    # map in whitened coordinates (with the floor): lower distortion, seeds
    # 0-2 (measured 0.256 / 0.258 / 0.258 against 0.268 / 0.572 / 0.297).
    rng = np.random.default_rng(0)
    n, d = 300, 600
    V = np.linalg.qr(rng.standard_normal((d, n)))[0]
    X = (rng.standard_normal((n, n)) * np.arange(1, n + 1) ** -1.5) @ V.T
    actives = []
    original = _active._ActivePairs.__init__

    def recorded(self, *args, **kwargs):
        original(self, *args, **kwargs)
        actives.append(self)

    monkeypatch.setattr(_active._ActivePairs, "__init__", recorded)
    whitened = [LearnedJLTransformer(5, random_state=s).fit(X) for s in range(3)]
    assert actives[-1].points.factor is None and actives[-1].scale is not None
    assert not actives[-1].embedded

    def forced(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.embedded = True

    monkeypatch.setattr(_active._ActivePairs, "__init__", forced)
    embedded = [LearnedJLTransformer(5, random_state=s).fit(X) for s in range(3)]
    assert np.mean([f.distortion_ for f in whitened]) < 0.9 * np.mean(
        [f.distortion_ for f in embedded]
    )
    # From CHOLESKY_MIN_SAMPLES rows on (patched down) the triangular basis
    # whatever the spread: the map's products would cost n x n x k.
    assert _Span(X, max_spread=1e3).factor is None
    monkeypatch.setattr(_pairs, "CHOLESKY_MIN_SAMPLES", 2)
    assert _Span(X, max_spread=1e3).factor is not None


def test_a_fit_that_cannot_fit_in_memory_is_refused_up_front(monkeypatch):
    from skderand import _memory

    X = make_data("low_rank", 0)
    monkeypatch.setattr(_memory, "available_memory", lambda: 1000)
    with pytest.raises(ValueError, match="would need about .* of memory"):
        LearnedJLTransformer(3, random_state=0).fit(X)
    monkeypatch.setattr(_memory, "available_memory", lambda: None)
    LearnedJLTransformer(3, random_state=0).fit(X)


def test_the_dimension_search_is_not_refused_for_the_number_of_features(
    monkeypatch,
):
    # Text-like data: few documents, a wide vocabulary. The search's
    # candidates are at most the rank of the 300 centred rows, and each is
    # checked before its fit: the estimate up front counted a map of
    # n_features dimensions (4 x 50,000^2 numbers, 75 GiB) and refused the fit
    # on any machine.
    from skderand import _memory

    X = sparse.random(300, 50_000, density=0.002, format="csr", random_state=0)
    monkeypatch.setattr(_memory, "available_memory", lambda: 2**30)
    jl = LearnedJLTransformer(eps=0.5, random_state=0).fit(X)
    assert jl.n_components_ < 299
    assert jl.distortion_ <= 0.5
    # pdist: the pairs' difference vectors of scale_free_distortion would take
    # 18 GB at 50,000 features.
    r = pdist(jl.transform(X), "sqeuclidean") / pdist(X.toarray(), "sqeuclidean")
    assert (r.max() - r.min()) / (r.max() + r.min()) == pytest.approx(
        jl.distortion_, rel=1e-6
    )


def test_a_search_candidate_that_cannot_fit_in_memory_is_refused_before_its_fit(
    monkeypatch,
):
    # Memory for the span and the first candidate (8 dimensions) only: with
    # the passes' blocks patched small, a map of 9 or more dimensions on 10^6
    # features (32 MB more each) does not fit, and 8 cannot reach eps = 0.1.
    from skderand import _memory

    rng = np.random.default_rng(0)
    # 100 entries per row (sparse.random would draw from all 3 x 10^8 cells).
    rows = np.repeat(np.arange(300), 100)
    cols = rng.integers(10**6, size=rows.size)
    X = sparse.csr_array((rng.random(rows.size), (rows, cols)), shape=(300, 10**6))
    monkeypatch.setattr(_pairs, "BLOCK_ELEMENTS", 1 << 16)
    budget = _stages.fit_bytes(X, 8, 4000)
    assert _stages.map_bytes(300, 10**6, 9, 4000) > budget
    monkeypatch.setattr(_memory, "available_memory", lambda: budget)
    with pytest.raises(
        ValueError,
        match=r"in n_components=\d+ dimensions would need about .* larger eps",
    ):
        LearnedJLTransformer(eps=0.1, max_iter=50, random_state=0).fit(X)


def test_a_pivoted_cholesky_span_holds_one_gram_matrix(monkeypatch):
    # The factor overwrites the Gram matrix and its memory holds the
    # coordinates: the span's peak is about one n x n array (plus blocks of
    # the Gram matrix's formation, patched small here as they are at
    # thousands of rows), where the principal directions take up to
    # eigh_span_bytes' five of them; both within their estimates.
    import tracemalloc

    n = 1_000
    rng = np.random.default_rng(2)
    X = sparse.random(n, 1_500, density=0.01, format="csr", random_state=2)
    X.data = rng.exponential(size=X.nnz)
    monkeypatch.setattr(_pairs, "SPARSE_DENSIFY_ELEMENTS", 0)
    monkeypatch.setattr(_pairs, "BLOCK_ELEMENTS", 50 * n)
    gram_bytes = n * n * 8
    peaks = {}
    for min_samples in (n + 1, n):
        monkeypatch.setattr(_pairs, "CHOLESKY_MIN_SAMPLES", min_samples)
        tracemalloc.start()
        span = _Span(X)
        peaks[span.factor is not None] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peaks[True] < 1.2 * gram_bytes
    assert 3 * gram_bytes < peaks[False] <= _pairs.eigh_span_bytes(n)


def test_rows_of_lower_rank_are_refused_if_their_principal_directions_cannot_fit(
    monkeypatch,
):
    # A duplicate row leaves the centred rows rank n - 2: the span falls back
    # from the factor to the principal directions, which need more memory
    # than the factor (and than the estimate up front counted); that need is
    # checked before the Gram matrix is formed again.
    from skderand import _memory

    X = sparse.random(300, 1_000, density=0.05, format="csr", random_state=1)
    duplicated = sparse.vstack([X, X[:1]], format="csr")
    monkeypatch.setattr(_pairs, "SPARSE_DENSIFY_ELEMENTS", 0)
    monkeypatch.setattr(_pairs, "CHOLESKY_MIN_SAMPLES", 2)
    monkeypatch.setattr(_memory, "available_memory", lambda: 2 * 301**2 * 8)
    with pytest.raises(ValueError, match=r"rank 299 \(below 300: duplicate rows"):
        _Span(duplicated)
    monkeypatch.setattr(_memory, "available_memory", lambda: 5 * 301**2 * 8)
    assert _Span(duplicated).coords.shape == (301, 299)


def test_whitening_scales_each_direction_by_its_inverse_deviation():
    rng = np.random.default_rng(0)
    # Principal deviations over five decades (the variances over ten), and an
    # isotropic cloud.
    deviations = np.logspace(0, -5, 8)
    X = rng.standard_normal((200, 8)) * deviations
    coords = _Span(X).coords
    scale = _active._whitening_scale(coords)
    e = np.einsum("ij,ij->j", coords, coords)
    e /= e.mean()
    floored = e < 1e-2  # the default floor
    assert floored.any() and not floored.all()
    # Whitened: each unfloored direction's variance times its scale^2 is the mean
    # variance; the floored ones are scaled as if at the floor.
    np.testing.assert_allclose(e[~floored] * scale[~floored] ** 2, 1.0, rtol=1e-12)
    np.testing.assert_allclose(scale[floored], 1e-2**-0.5, rtol=1e-12)
    isotropic = _Span(rng.standard_normal((200, 8))).coords
    assert _active._whitening_scale(isotropic) is None


@pytest.mark.parametrize("algorithm", ["direct", "derandomized"])
def test_whitened_stage_solves_the_same_surrogate(algorithm):
    # The stage's L-BFGS runs on N = M / scale; the point it returns is a map M
    # whose surrogate is below the start's, and at its end the gradient in N
    # (df/dM * scale) is small: the same problem in other coordinates.

    # 40 points near a 5-dimensional subspace of 60: variances over 4 decades.
    X = make_data("low_rank", 0)[:40]
    pairs = _active._ActivePairs(_Span(X).coords, working_set=5000)
    assert pairs.scale is not None
    k, rank = 2, pairs.X.shape[1]
    pairs.reset(k)
    assert pairs.complete  # every pair in the surrogate
    derandomized = algorithm == "derandomized"
    rng = np.random.RandomState(0)
    z = rng.standard_normal(k * rank) / np.sqrt(k)
    if derandomized:
        z = np.append(z, 0.1)
    objective = stage_objective(pairs, k, 10.0, derandomized=derandomized, penalty=0.1)
    start_value = objective(z)[0]
    z_end, n_iter, converged = lbfgs(pairs, objective, z, 1e-2, 3000)
    assert converged and 1 <= n_iter < 3000
    value, grad = objective(z_end)
    assert value < start_value
    scale = np.ones(z.size)
    scale[: k * rank] = np.tile(pairs.scale, k)
    # The solver's test: the inf-norm of the whitened gradient below tol / sqrt(n).
    assert np.abs(grad * scale).max() <= 1e-2 / np.sqrt(z.size)


def test_certificate_of_a_far_stage_end_is_taken_where_it_stands():
    # A final stage ending with a gradient above reach * tol (2 tol) is certified
    # at its end point (no certifying solver): same point, no iteration, and the
    # certificate's gradient norm is that point's.
    X = make_data("gaussian", 0)
    pairs = _active._ActivePairs(_Span(X).coords, working_set=4000)
    k, rank = 4, pairs.X.shape[1]
    pairs.reset(k)
    z = np.random.RandomState(0).standard_normal(k * rank) / 2.0
    objective = stage_objective(pairs, k, 100.0, derandomized=False, penalty=0.1)
    grad_norm = np.linalg.norm(objective(z)[1])
    tol = grad_norm / 4.0  # 4 tol: beyond certify_stage's reach, 2 tol
    z_out, n_iter, cert = _stages.certify_stage(
        pairs,
        objective,
        z,
        k,
        tol=tol,
        curvature_tol=np.sqrt(tol),
        max_iter=50,
        rng=np.random.RandomState(0),
        verbose=0,
    )
    assert n_iter == 0 and np.array_equal(z_out, z)
    assert cert.grad_norm == pytest.approx(grad_norm, rel=1e-12)
    assert not cert.success
