"""Tests of DeterministicMaxCut: the mathematics of each stage and bad inputs."""

import csv
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from skderand import DeterministicMaxCut
from skderand._cli import main as cli_main
from skderand.maxcut import _maxcut, read_gset, write_gset
from skderand.maxcut._annealing import anneal, greedy_colouring, temper
from skderand.maxcut._local_search import tabu_search

# The graphs the default suite needs ship in tests/data; the others are read from
# the shared data set when it is there (slow tests).
LOCAL_GSET = Path(__file__).parent / "data" / "gset"
GSET = Path(__file__).parents[1] / ".." / "shared" / "data" / "gset"


def gnp(n, p, seed, signed=False):
    """Dense symmetric adjacency of G(n, p), weights 1 or +-1."""
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) < p, k=1).astype(float)
    if signed:
        upper *= rng.choice([-1.0, 1.0], size=(n, n))
    return upper + upper.T


def toroidal_grid(rows, cols):
    """Dense adjacency of the ``rows x cols`` torus, unit weights."""
    n = rows * cols
    A = np.zeros((n, n))
    for r in range(rows):
        for c in range(cols):
            v = r * cols + c
            for w in (((r + 1) % rows) * cols + c, r * cols + (c + 1) % cols):
                A[v, w] = A[w, v] = 1.0
    return A


def brute_force_max_cut(A):
    """Maximum cut by enumerating all 2**(n-1) cuts (vertex 0 fixed on one side)."""
    n = A.shape[0]
    codes = np.arange(2 ** (n - 1))
    bits = (codes[:, None] >> np.arange(n - 1)) & 1
    spins = np.hstack([np.ones((codes.size, 1)), 1.0 - 2.0 * bits])
    cuts = 0.25 * (A.sum() - np.einsum("ki,ij,kj->k", spins, A, spins))
    return float(cuts.max())


def labels_cut(A, labels):
    """Cut of a 0/1 labelling, recomputed from scratch on a dense matrix."""
    A = np.asarray(A.toarray() if sparse.issparse(A) else A)
    A = A - np.diag(np.diag(A))
    side = np.asarray(labels)
    return float(np.sum(np.triu(A, k=1) * (side[:, None] != side[None, :])))


# Annealing sweeps in the tests that are not about the annealing: on small dense
# graphs every colour class is a vertex or two, and the default 1000 sweeps would
# dominate the suite's time.
FAST_SWEEPS = 100


def fit(A, **params):
    params.setdefault("n_sweeps", FAST_SWEEPS)
    return DeterministicMaxCut(affinity="precomputed", **params).fit(A)


# ---------------------------------------------------------------- small graphs


@pytest.mark.parametrize("seed", range(5))
def test_brute_force_optimum_on_gnp_15(seed):
    A = gnp(15, 0.6, seed)
    opt = brute_force_max_cut(A)
    mc = fit(A)
    assert mc.cut_value_ == pytest.approx(labels_cut(A, mc.labels_), abs=1e-9)
    assert mc.cut_value_ == opt
    assert mc.upper_bound_ >= opt - 1e-9
    assert mc.upper_bound_ >= mc.sdp_value_ - 1e-6


@pytest.mark.parametrize("seed", range(4))
def test_signed_weights_bound_and_cut(seed):
    A = gnp(14, 0.5, seed, signed=True)
    A *= np.random.default_rng(seed).uniform(0.5, 2.0, size=A.shape)
    A = np.triu(A, 1) + np.triu(A, 1).T
    opt = brute_force_max_cut(A)
    mc = fit(A)
    assert mc.cut_value_ == pytest.approx(labels_cut(A, mc.labels_), abs=1e-9)
    assert mc.cut_value_ <= opt + 1e-9
    assert mc.upper_bound_ >= opt - 1e-9
    # The rounding is a strong heuristic at this size: within 2% of the optimum.
    assert mc.cut_value_ >= 0.98 * opt


@pytest.mark.parametrize("seed", range(3))
def test_rounding_drives_v_to_zero_and_beats_expected_gw(seed):
    A = sparse.csr_matrix(gnp(120, 0.1, seed, signed=seed == 2))
    mc = fit(A, local_search=None)
    assert mc.certified_
    # The lemma: at a second-order stationary point V = 0.
    assert mc.rounding_v_norm_ <= 1e-3 * mc.tau * np.sqrt(A.shape[0])
    assert mc.rounded_cut_value_ >= mc.expected_gw_cut_ - 1e-6
    assert mc.rounded_cut_value_ == pytest.approx(labels_cut(A, mc.labels_), abs=1e-9)
    # The history records the paper's picture: |V| collapses, the cut rises.
    history = mc.rounding_history_
    assert history["v_norm"][-1] < 1e-2 * history["v_norm"].max()
    assert history["expected_cut"][-1] > history["expected_cut"][0]


def test_local_search_never_lowers_the_cut():
    # Every improvement starts from the same rounded cut and is checked with an
    # independent dense 1-flip loop and cut computation.
    A = gnp(80, 0.2, 1, signed=True)
    base = fit(sparse.csr_matrix(A), local_search=None)
    spins = np.where(base.labels_ == 1, -1.0, 1.0)
    flipped = dense_one_flip(A, spins)
    cuts = {"none": labels_cut(A, base.labels_)}
    for method in ("1-flip", "tabu", "annealing"):
        mc = fit(sparse.csr_matrix(A), local_search=method)
        assert mc.rounded_cut_value_ == base.cut_value_
        cuts[method] = labels_cut(A, mc.labels_)
        assert mc.cut_value_ == cuts[method]
        # Each ends at a 1-flip local optimum.
        s = np.where(mc.labels_ == 1, -1.0, 1.0)
        assert (s * (A @ s)).max() <= 1e-9
    assert cuts["1-flip"] == spins_cut(A, flipped)
    assert cuts["none"] <= cuts["1-flip"] <= min(cuts["tabu"], cuts["annealing"])


def test_deterministic_and_fit_predict():
    A = sparse.csr_matrix(gnp(60, 0.2, 7, signed=True))
    first = fit(A)
    second = DeterministicMaxCut(
        affinity="precomputed", n_sweeps=FAST_SWEEPS
    ).fit_predict(A)
    np.testing.assert_array_equal(first.labels_, second)
    assert first.labels_[0] == 0
    assert set(np.unique(first.labels_)) <= {0, 1}


def test_dense_and_sparse_inputs_agree():
    A = gnp(40, 0.3, 3)
    dense = fit(A)
    for fmt in ("csr", "csc", "coo"):
        sp = fit(sparse.csr_matrix(A).asformat(fmt))
        np.testing.assert_array_equal(dense.labels_, sp.labels_)
        assert dense.upper_bound_ == pytest.approx(sp.upper_bound_, rel=1e-9)


def test_weight_scale_invariance():
    A = gnp(40, 0.3, 5, signed=True)
    mc = fit(A)
    scaled = fit(1000.0 * A)
    np.testing.assert_array_equal(mc.labels_, scaled.labels_)
    assert scaled.cut_value_ == pytest.approx(1000.0 * mc.cut_value_, rel=1e-12)
    assert scaled.upper_bound_ == pytest.approx(1000.0 * mc.upper_bound_, rel=1e-6)


# ------------------------------------------------------------- improvement phase


def dense_one_flip(A, spins):
    """1-flip local optimum by a plain dense loop (independent of the library)."""
    A = np.asarray(A, dtype=float)
    spins = np.array(spins, dtype=float)
    while True:
        gains = spins * (A @ spins)
        i = int(np.argmax(gains))
        if gains[i] <= 1e-9:
            return spins
        spins[i] = -spins[i]


def spins_cut(A, spins):
    return labels_cut(A, np.asarray(spins) < 0)


def stuck_start(A, seed):
    """A random cut made 1-flip optimal: no single flip raises it."""
    rng = np.random.default_rng(seed)
    start = dense_one_flip(A, np.where(rng.random(A.shape[0]) < 0.5, 1.0, -1.0))
    assert (start * (A @ start)).max() <= 1e-9
    return start


def field_scale(A):
    """sigma = sqrt(mean_i sum_j w_ij**2), the unit of the tempering ladder."""
    return float(np.sqrt(np.mean(np.sum(np.asarray(A) ** 2, axis=1))))


def run_search(method, A, start, seed):
    rng = np.random.default_rng(seed)
    if method == "tabu":
        return tabu_search(sparse.csr_matrix(A), start, 2000, rng)[0]
    if method == "tempering":
        hottest, coldest = _maxcut._TEMPERING_LADDER
        sigma = field_scale(A)
        return temper(
            sparse.csr_matrix(A),
            start,
            n_sweeps=300,
            n_replicas=8,
            temperatures=(hottest * sigma, coldest * sigma),
            rng=rng,
        )[0]
    return anneal(
        sparse.csr_matrix(A),
        start,
        n_sweeps=300,
        n_replicas=8,
        temperatures=_maxcut._ANNEALING_TEMPERATURES,
        rng=rng,
    )[0]


@pytest.mark.parametrize("method", ["tabu", "annealing", "tempering"])
@pytest.mark.parametrize("seed", range(4))
def test_search_escapes_one_flip_local_optimum(method, seed):
    # From a cut no single flip improves, the stronger searches must move: a
    # strictly better cut, by an independent dense cut computation.
    A = gnp(60, 0.3, seed, signed=seed % 2 == 1)
    start = stuck_start(A, seed)
    result = run_search(method, A, start, seed)
    assert set(np.unique(result)) <= {-1.0, 1.0}
    # Integer weights: a better cut is better by at least 1.
    assert spins_cut(A, result) >= spins_cut(A, start) + 1.0


@pytest.mark.parametrize(
    "search, n_replicas",
    # One annealed replica reads its thresholds from a pool (_ThresholdPool).
    [(anneal, 4), (anneal, 1), (temper, 4)],
    ids=["anneal", "anneal-one-chain", "temper"],
)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    "weights, precision, tolerance",
    [
        # Integer weights run the chains in float32: every gain and every sum
        # of gains is an integer far below 2**24, so the reported gain must
        # equal the recomputed change exactly, not to round-off.
        (lambda rng: rng.integers(1, 4, size=(60, 60)), np.float32, 0.0),
        # Real weights keep float64, exact to round-off.
        (lambda rng: rng.uniform(0.5, 2.0, size=(60, 60)), np.float64, 1e-9),
    ],
    ids=["integer", "real"],
)
def test_annealing_gain_is_exact(
    search, n_replicas, seed, weights, precision, tolerance
):
    # Flipping a whole colour class at once is exact only if the class shares no
    # edge: the reported gain must equal the independently recomputed change.
    from skderand.maxcut._annealing import _class_spans

    rng = np.random.default_rng(seed)
    A = gnp(60, 0.3, seed, signed=True) * weights(rng)
    A = np.triu(A, 1) + np.triu(A, 1).T
    assert _class_spans(sparse.csr_matrix(A), None)[1][0][2].dtype == precision
    start = stuck_start(A, seed)
    best, gain = search(
        sparse.csr_matrix(A),
        start,
        n_sweeps=200,
        n_replicas=n_replicas,
        temperatures=(2.0, 0.1),
        rng=rng,
    )
    assert best.dtype == np.float64 and set(np.unique(best)) <= {-1.0, 1.0}
    assert gain > 0.0
    assert gain == pytest.approx(
        spins_cut(A, best) - spins_cut(A, start), rel=0.0, abs=tolerance
    )


def test_single_precision_only_for_integer_weights_small_enough():
    from skderand.maxcut._annealing import _SINGLE_EXACT_MAX, _class_spans

    A = sparse.csr_matrix(np.array([[0.0, 2.0], [2.0, 0.0]]))
    assert _class_spans(A, None)[1][0][2].dtype == np.float32
    assert _class_spans(0.25 * A, None)[1][0][2].dtype == np.float64
    assert _class_spans(_SINGLE_EXACT_MAX * A, None)[1][0][2].dtype == np.float64


@pytest.mark.parametrize("seed", range(3))
def test_tempering_samples_the_boltzmann_distribution_at_every_rung(seed):
    # The colour-class sweeps and the swaps between rungs must leave the
    # distribution exp(C / T) / Z over cuts invariant at every temperature T of
    # the ladder (a wrong sign in the swap rule hands the cold rungs the worse
    # cuts). On 8 vertices with real weights, the mean cut at each rung over
    # the chain is compared with the exact one from all 2**8 sign vectors.
    from skderand.maxcut._annealing import _class_spans, _tempering_chain

    rng = np.random.default_rng(seed)
    n, ladder, n_sweeps, burn_in = 8, (2.0, 0.25), 8_000, 500
    A = gnp(n, 0.6, seed, signed=True) * rng.uniform(0.5, 1.5, size=(n, n))
    A = np.triu(A, 1) + np.triu(A, 1).T
    codes = np.arange(2**n)
    every = 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)) & 1)
    cuts = 0.25 * (A.sum() - np.einsum("ki,ij,kj->k", every, A, every))
    temperatures = np.geomspace(*ladder, 4)
    order, spans, _ = _class_spans(sparse.csr_matrix(A), None)
    start = np.ones(n)
    start_cut = spins_cut(A, start)
    sums = np.zeros(temperatures.size)
    chain = _tempering_chain(spans, start[order], n_sweeps, 4, ladder, rng)
    for sweep, (_, gain_so_far, replica_at) in enumerate(chain):
        if sweep >= burn_in:
            sums += start_cut + gain_so_far[replica_at]
    means = sums / (n_sweeps - burn_in)
    for temperature, mean in zip(temperatures, means, strict=True):
        weights = np.exp((cuts - cuts.max()) / temperature)
        exact_mean = np.sum(weights * cuts) / weights.sum()
        exact_std = np.sqrt(np.sum(weights * (cuts - exact_mean) ** 2) / weights.sum())
        # 7,500 correlated samples: the chain's standard error is a few
        # hundredths of the spread of the cut at that temperature.
        assert abs(mean - exact_mean) <= 0.1 * exact_std, (temperature, mean)


@pytest.mark.parametrize("seed", range(3))
def test_one_chain_from_the_threshold_pool_samples_the_boltzmann_distribution(seed):
    # One replica takes its Metropolis thresholds -T E from a pool of
    # exponential draws read at random offsets, not from fresh draws: at a
    # fixed temperature the chain must still sample exp(C / T) / Z. On 8
    # vertices with real weights, the mean cut over the chain is compared with
    # the exact one from all 2**8 sign vectors, at two temperatures.
    from skderand.maxcut._annealing import _class_spans, _sweep, _ThresholdPool

    rng = np.random.default_rng(seed)
    n, n_sweeps, burn_in = 8, 8_000, 500
    A = gnp(n, 0.6, seed, signed=True) * rng.uniform(0.5, 1.5, size=(n, n))
    A = np.triu(A, 1) + np.triu(A, 1).T
    codes = np.arange(2**n)
    every = 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)) & 1)
    cuts = 0.25 * (A.sum() - np.einsum("ki,ij,kj->k", every, A, every))
    order, spans, _ = _class_spans(sparse.csr_matrix(A), None)
    for temperature in (2.0, 0.5):
        S = np.ones((n, 1))
        start_cut = spins_cut(A, np.ones(n))
        gain_so_far = np.zeros(1)
        pool = _ThresholdPool(n, S.dtype, rng)
        total = 0.0
        for sweep in range(n_sweeps):
            _sweep(spans, S, temperature, gain_so_far, rng, pool)
            if sweep >= burn_in:
                total += start_cut + gain_so_far[0]
        mean = total / (n_sweeps - burn_in)
        weights = np.exp((cuts - cuts.max()) / temperature)
        exact_mean = np.sum(weights * cuts) / weights.sum()
        exact_std = np.sqrt(np.sum(weights * (cuts - exact_mean) ** 2) / weights.sum())
        # 7,500 correlated samples: the chain's standard error is a few
        # hundredths of the spread of the cut at that temperature.
        assert abs(mean - exact_mean) <= 0.1 * exact_std, (temperature, mean)
        # The chain's signs are the cut its accumulated gains say.
        spins = np.empty(n)
        spins[order] = S[:, 0]
        assert spins_cut(A, spins) == pytest.approx(start_cut + gain_so_far[0])


def test_tempering_needs_two_replicas():
    A = sparse.csr_matrix(gnp(10, 0.5, 0))
    with pytest.raises(ValueError, match="at least 2 replicas"):
        temper(
            A, np.ones(10), n_sweeps=1, n_replicas=1, temperatures=(1, 0.1), rng=None
        )


@pytest.mark.parametrize("graph", ["gnp", "grid"])
def test_greedy_colouring_is_proper(graph):
    if graph == "gnp":
        A = sparse.csr_matrix(gnp(80, 0.2, 0))
    else:
        A = sparse.csr_matrix(toroidal_grid(6, 5))
    classes = greedy_colouring(A)
    np.testing.assert_array_equal(
        np.sort(np.concatenate(classes)), np.arange(80 if graph == "gnp" else 30)
    )
    for idx in classes:
        assert A[idx][:, idx].nnz == 0  # no edge inside a class
    max_degree = np.diff(A.indptr).max()
    assert len(classes) <= max_degree + 1


def test_annealing_never_returns_below_its_start(monkeypatch):
    # At a temperature far above every gain the chains wander to random cuts,
    # far below the start; the best-seen rule must still return the start.
    A = gnp(60, 0.3, 1, signed=True)
    start = stuck_start(A, 1)
    best, gain = anneal(
        sparse.csr_matrix(A),
        start,
        n_sweeps=30,
        n_replicas=4,
        temperatures=(1e3, 5e2),
        rng=np.random.default_rng(0),
    )
    assert gain == 0.0
    np.testing.assert_array_equal(best, start)
    # The estimator under the same hot schedule keeps the rounded cut (made
    # 1-flip optimal), never less.
    monkeypatch.setattr(_maxcut, "_ANNEALING_TEMPERATURES", (1e3, 5e2))
    monkeypatch.setattr(_maxcut, "_TEMPERING_LADDER", (1e3, 5e2))
    flip = fit(sparse.csr_matrix(A), local_search="1-flip")
    for method in ("annealing", "tempering"):
        hot = fit(sparse.csr_matrix(A), n_sweeps=30, local_search=method)
        assert hot.cut_value_ >= hot.rounded_cut_value_
        assert hot.cut_value_ == flip.cut_value_ == labels_cut(A, hot.labels_)


@pytest.mark.parametrize("method", ["annealing", "tempering"])
def test_annealing_beats_one_flip_from_the_rounding(method):
    # The rounding is strong on small graphs (often optimal): never worse on any
    # graph, strictly better summed over them.
    gains = []
    for seed in range(4):
        A = sparse.csr_matrix(gnp(150, 0.1, seed, signed=True))
        flip = fit(A, local_search="1-flip")
        annealed = fit(A, local_search=method, n_sweeps=300)
        assert annealed.rounded_cut_value_ == flip.rounded_cut_value_
        assert annealed.cut_value_ == labels_cut(A, annealed.labels_)
        gains.append(annealed.cut_value_ - flip.cut_value_)
    assert min(gains) >= 0.0
    assert sum(gains) >= 2.0


def test_n_sweeps_zero_is_one_flip_and_random_state_fixes_the_cut():
    A = sparse.csr_matrix(gnp(100, 0.1, 3, signed=True))
    flip = fit(A, local_search="1-flip")
    zero = fit(A, n_sweeps=0)
    np.testing.assert_array_equal(zero.labels_, flip.labels_)
    first = fit(A, random_state=5)
    second = fit(A, random_state=5)
    np.testing.assert_array_equal(first.labels_, second.labels_)


def test_more_sweeps_and_replicas_find_better_cuts():
    # Summed over graphs, so that one lucky short run cannot decide it.
    graphs = [sparse.csr_matrix(gnp(200, 0.05, seed, signed=True)) for seed in range(3)]
    starts = [stuck_start(A.toarray(), seed) for seed, A in enumerate(graphs)]

    def total(n_sweeps, n_replicas):
        cuts = []
        for A, start in zip(graphs, starts, strict=True):
            best, _ = anneal(
                A,
                start,
                n_sweeps=n_sweeps,
                n_replicas=n_replicas,
                temperatures=_maxcut._ANNEALING_TEMPERATURES,
                rng=np.random.default_rng(0),
            )
            cuts.append(spins_cut(A.toarray(), best))
        return sum(cuts)

    assert total(400, 8) > total(20, 8)
    assert total(200, 16) > total(200, 1)


def test_large_graphs_solve_the_sdp_at_one_rank(monkeypatch):
    # Beyond _BOUND_CONTINUATION_MAX_N vertices the SDP is solved at one rank,
    # min(16, the cap), with one dual bound; lowered here to 100 vertices so
    # that a 300-vertex graph takes that path. The bound stays an upper bound
    # on every cut, checked against the cut found and a dense eigensolver.
    A = sparse.csr_matrix(gnp(300, 0.05, 0))
    monkeypatch.setattr(_maxcut, "_BOUND_CONTINUATION_MAX_N", 100)
    mc = DeterministicMaxCut(affinity="precomputed", n_sweeps=FAST_SWEEPS).fit(A)
    np.testing.assert_array_equal(mc.sdp_ranks_, [16])
    assert mc.sdp_vectors_.shape == (300, 16)
    V = mc.sdp_vectors_
    L = np.diag(A.toarray().sum(axis=1)) - A.toarray()
    y = np.einsum("ij,ij->i", V, L @ V) / 4
    exact = y.sum() + 300 * max(0.0, -np.linalg.eigvalsh(np.diag(y) - L / 4)[0])
    # The loosened eigensolve (1e-2) only adds its residual term.
    assert exact - 1e-6 <= mc.upper_bound_ <= exact * (1 + 1e-3)
    assert mc.cut_value_ <= mc.upper_bound_


@pytest.mark.parametrize("seed", range(2))
def test_sdp_rank_grows_until_the_bound_is_tight(seed):
    # n > 200: the sparse eigensolver path. The rank starts at 8 and doubles
    # while the bound's eigenvalue correction n max(0, -lambda_min) exceeds
    # 2e-4 of the bound and the previous doubling at least halved it; the last
    # correction is checked here with a dense eigensolver.
    from skderand.maxcut._annealing import greedy_colouring
    from skderand.maxcut._sdp import solve_sdp_adaptive

    n = 400
    A = sparse.csr_matrix(gnp(n, 0.1, seed))
    cap = _maxcut._sdp_rank(n)
    V, bound, ranks, corrections, bounds, _ = solve_sdp_adaptive(
        A, np.random.default_rng(seed), classes=greedy_colouring(A), max_rank=cap
    )
    assert len(bounds) == len(ranks) and bounds[-1] == bound
    assert ranks[0] == 8 and len(ranks) >= 2
    np.testing.assert_array_equal(ranks[1:], np.minimum(2 * np.array(ranks[:-1]), cap))
    for k in range(len(ranks) - 1):  # every doubling was asked for
        assert corrections[k] > 2e-4 * bound
        assert k == 0 or corrections[k] <= 0.5 * corrections[k - 1]
    # ... and the last rank stops for one of the three reasons.
    assert (
        corrections[-1] <= 2e-4 * bound
        or ranks[-1] == cap
        or corrections[-1] > 0.5 * corrections[-2]
    )
    assert V.shape == (n, ranks[-1])
    L = np.diag(A.toarray().sum(axis=1)) - A.toarray()
    y = np.einsum("ij,ij->i", V, L @ V) / 4
    correction = n * max(0.0, -np.linalg.eigvalsh(np.diag(y) - L / 4)[0])
    assert bound >= y.sum() + correction - 1e-6
    assert corrections[-1] == pytest.approx(correction, rel=1e-3, abs=1e-6)
    # The bound is tight to 1% of the SDP value here.
    assert bound <= 1.01 * (A.sum() / 2 - np.einsum("ij,ij->", V, A @ V) / 2) / 2


# ------------------------------------------------------------- parameters


def test_alpha_schedule_follows_alpha_and_growth():
    A = sparse.csr_matrix(gnp(80, 0.15, 2, signed=True))
    for alpha, alpha_growth in [(1e-3, 3.0), (5e-3, 2.0)]:
        mc = fit(A, alpha=alpha, alpha_growth=alpha_growth)
        history = mc.rounding_history_
        # Every recorded iteration of stage k ran at alpha * growth**k (a stage
        # that converged at once records no iteration; the certified solve runs
        # at the last stage's alpha).
        np.testing.assert_allclose(
            history["alpha"],
            alpha * alpha_growth ** history["stage"],
            rtol=1e-12,
        )
        assert len(set(history["stage"])) >= 2
        expected = alpha * alpha_growth ** np.arange(mc.n_stages_)
        assert mc.alpha_ == pytest.approx(expected[-1], rel=1e-12)


@pytest.mark.parametrize(
    "params",
    [{}, {"tol": 1e-6, "curvature_tol": 0.0}, {"max_iter": 2, "max_stages": 1}],
)
def test_certified_is_the_definition(params):
    # certified_ is exactly grad_norm_ <= tol and min_hessian_eig_ >=
    # -curvature_tol_, whether the certificate holds or not, and one
    # ConvergenceWarning is raised exactly when it does not.
    from sklearn.exceptions import ConvergenceWarning

    A = sparse.csr_matrix(gnp(60, 0.2, 4, signed=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        mc = fit(A, local_search=None, **params)
    tol = params.get("tol", 1e-3)
    assert mc.curvature_tol_ == pytest.approx(params.get("curvature_tol", tol**0.5))
    assert mc.certified_ == (
        mc.grad_norm_ <= tol and mc.min_hessian_eig_ >= -mc.curvature_tol_
    )
    assert isinstance(mc.n_iter_, int) and mc.n_iter_ >= 1
    convergence = [w for w in caught if w.category is ConvergenceWarning]
    assert len(convergence) == (0 if mc.certified_ else 1)
    # Two iterations in one stage cannot drive V to zero.
    assert mc.certified_ == ("max_iter" not in params)


def test_trivial_certificate_on_an_edgeless_graph():
    mc = fit(sparse.csr_matrix((5, 5)))
    assert (mc.grad_norm_, mc.min_hessian_eig_, mc.n_iter_) == (0.0, 0.0, 0)
    assert mc.certified_ and mc.curvature_tol_ == pytest.approx(np.sqrt(1e-3))


def test_max_stages_caps_the_stages(recwarn):
    A = sparse.csr_matrix(gnp(80, 0.15, 2, signed=True))
    full = fit(A)
    assert full.n_stages_ >= 3
    capped = fit(A, max_stages=2)
    assert capped.n_stages_ == 2
    assert set(capped.rounding_history_["stage"]) == {0, 1}
    # Stopped before the penalty drove V to zero.
    assert capped.rounding_v_norm_ > 10 * full.rounding_v_norm_


@pytest.mark.parametrize("rounding_rank", [1, 3, None])
def test_rounding_rank_projects_the_sdp_vectors(monkeypatch, rounding_rank):
    # The rounding starts from the SDP vectors projected on their leading
    # principal directions, rows renormalized; None keeps them as they are.
    seen = {}
    original = _maxcut.derandomize

    def spy(expectation, V0, **kwargs):
        seen["V"] = V0.copy()
        return original(expectation, V0, **kwargs)

    monkeypatch.setattr(_maxcut, "derandomize", spy)
    A = sparse.csr_matrix(gnp(60, 0.2, 1, signed=True))
    mc = fit(A, rounding_rank=rounding_rank)
    V_sdp, V = mc.sdp_vectors_, seen["V"]
    if rounding_rank is None:
        np.testing.assert_allclose(V, V_sdp, atol=1e-12)
        return
    assert V.shape == (60, rounding_rank)
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1.0, rtol=1e-12)
    # Rows of V are the SDP vectors' coordinates on the top principal axes.
    _, _, axes = np.linalg.svd(V_sdp, full_matrices=False)
    coords = V_sdp @ axes[:rounding_rank].T
    coords /= np.linalg.norm(coords, axis=1)[:, None]
    np.testing.assert_allclose(np.abs(V), np.abs(coords), atol=1e-8)


def test_n_tabu_moves_budget():
    # No move: exactly the 1-flip result; a budget: better, summed over graphs.
    gains = []
    for seed in range(3):
        A = sparse.csr_matrix(gnp(150, 0.1, seed, signed=True))
        flip = fit(A, local_search="1-flip")
        idle = fit(A, local_search="tabu", n_tabu_moves=0)
        np.testing.assert_array_equal(idle.labels_, flip.labels_)
        busy = fit(A, local_search="tabu", n_tabu_moves=3000)
        assert busy.cut_value_ == labels_cut(A, busy.labels_)
        gains.append(busy.cut_value_ - flip.cut_value_)
    assert min(gains) >= 0.0 and sum(gains) >= 1.0


@pytest.mark.parametrize(
    "n, params, method, sweeps",
    [
        # Mean degree about 3 (below 16): tempering; 18 of the 20 vertices
        # have edges.
        (20, {}, "tempering", 108),
        # Mean degree about 22 but 150 vertices: tempering.
        (150, {}, "tempering", 900),
        (60, {"n_sweeps": 7, "n_replicas": 3}, "tempering", 7),
    ],
)
def test_verbose_reports_stages_and_the_annealing_budget(
    capsys, n, params, method, sweeps
):
    A = sparse.csr_matrix(gnp(n, 0.15, 0, signed=True))
    params.setdefault("n_sweeps", "auto")
    quiet = fit(A, **params)
    assert capsys.readouterr().out == ""
    mc = fit(A, verbose=1, **params)
    lines = capsys.readouterr().out.splitlines()
    stage_lines = [line for line in lines if " stage " in line]
    assert len(stage_lines) == mc.n_stages_
    # "auto" below 5,000 vertices: 16 replicas and 6 sweeps per vertex (at
    # least 100), tempered (annealed only from 1,500 vertices of mean degree
    # 16).
    improvement = [line for line in lines if f"{method}:" in line]
    assert len(improvement) == 1
    replicas = params.get("n_replicas", 16)
    assert f"{replicas} replicas x {sweeps} sweeps" in improvement[0]
    np.testing.assert_array_equal(quiet.labels_, mc.labels_)  # printing only


@pytest.mark.parametrize(
    "n, n_entries, expected",
    [
        (5, 10, (100, 16)),
        (20, 100, (120, 16)),
        (300, 1_000, (1800, 16)),
        # Sparse (G11-like, 4 entries a vertex): 6 sweeps per vertex.
        (800, 3_200, (4800, 16)),
        # G14-like: the work budget, 16 * 10**6 // (800 + 9,388 // 6) = 6,768,
        # is more; 6 sweeps per vertex.
        (800, 9_388, (4800, 16)),
        # Dense (G1-like): the work budget, 16 * 10**6 // (800 + 38,352 // 6).
        (800, 38_352, (2224, 16)),
        # G43-like: 16 * 10**6 // (1,000 + 19,980 // 6).
        (1_000, 19_980, (3695, 16)),
        # G22-like: the budget would give 1,846; the floor of 2,000.
        (2_000, 39_980, (2000, 16)),
        # Sparse, 2,000 vertices (3-regular, 16 * 10**6 // 3,000).
        (2_000, 6_000, (5333, 16)),
        # Cheaper still (a matching of 2,500 vertices): 16 * 10**6 // 2,916 ...
        (2_500, 2_500, (5486, 16)),
        # ... up to the cap of 8,000.
        (2_100, 4, (7619, 16)),
        (2_000, 4, (8000, 16)),
        (5_000, 24_990_000, (2000, 16)),
        # One chain: 8 * 10**8 / n_entries sweeps, between 10,000 and 20,000.
        (5_001, 15_000, (20_000, 1)),
        # Torus 100 x 100 and planar n = 10,000.
        (10_000, 40_000, (20_000, 1)),
        (10_000, 59_954, (13_343, 1)),
        (20_000, 60_000, (13_333, 1)),
        (100_000, 300_000, (10_000, 1)),
        (40_000, 160_000, (10_000, 1)),
    ],
)
def test_auto_annealing_budget(n, n_entries, expected):
    # Several replicas with 6 sweeps per vertex on small graphs, otherwise a
    # budget of work that counts a vertex like 6 stored entries, between 2,000
    # and 8,000 sweeps; one longer chain (8 * 10**8 / n_entries sweeps,
    # between 10,000 and 20,000) on large ones; an explicit value is kept as is.
    assert _maxcut._annealing_budget(n, n_entries, "auto", "auto") == expected
    assert _maxcut._annealing_budget(n, n_entries, 7, 3) == (7, 3)


@pytest.mark.parametrize(
    "n, n_entries, expected",
    [
        # G11-G21 (mean degree 4 and about 12), planar, 3-regular: tempering.
        (800, 3_200, "tempering"),
        (800, 9_388, "tempering"),
        (2_000, 11_952, "tempering"),
        # Dense but fewer than 1,500 vertices (G1, G43): tempering.
        (800, 38_352, "tempering"),
        (1_000, 19_980, "tempering"),
        (1_499, 30_000, "tempering"),
        # At least 1,500 vertices and mean degree 16 (G22: 20): annealing.
        (1_500, 24_000, "annealing"),
        (2_000, 39_980, "annealing"),
        (5_000, 79_998, "tempering"),
        # One chain beyond 5,000 vertices, sparse or not.
        (5_001, 15_000, "annealing"),
        (10_000, 400_000, "annealing"),
    ],
)
def test_auto_improvement_method(n, n_entries, expected):
    # Tempering up to 5,000 vertices, except annealing on dense graphs (stored
    # entries at least 16 per vertex) of at least 1,500 vertices; annealing on
    # every larger graph; an explicit choice is kept.
    assert _maxcut._improvement_method(n, n_entries, "auto") == expected
    for method in ("tempering", "annealing", "tabu", "1-flip"):
        assert _maxcut._improvement_method(n, n_entries, method) == method


def test_verbose_2_adds_the_solver_progress(capsys):
    A = sparse.csr_matrix(gnp(60, 0.15, 0, signed=True))
    fit(A, verbose=1)
    assert "[minimize_sosp]" not in capsys.readouterr().out
    fit(A, verbose=2)
    out = capsys.readouterr().out
    assert "[minimize_sosp]" in out and "[derandomize] stage 0" in out


def _mixing(A, rank, rng, max_sweeps, tol=0.0):
    from skderand.maxcut._sdp import MixingSolver

    solver = MixingSolver(A, greedy_colouring(A))
    return solver.solve(
        rng.standard_normal((A.shape[0], rank)), tol=tol, max_sweeps=max_sweeps
    )


@pytest.mark.parametrize("seed", range(3))
def test_mixing_sweeps_never_increase_the_objective(seed):
    # Each class update is an exact coordinate minimization of sum w_ij v_i.v_j:
    # the objective falls monotonically, the rows stay unit vectors, and at the
    # end each v_i is (to the tolerance) -g_i / |g_i|, the fixed point.
    A = sparse.csr_matrix(gnp(120, 0.1, seed, signed=seed == 1))
    values = []
    for sweeps in (1, 2, 5, 20, 200):
        V, done = _mixing(A, 6, np.random.default_rng(seed), sweeps)
        assert done == sweeps
        np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1.0, rtol=1e-12)
        values.append(np.einsum("ij,ij->", V, A @ V))
    assert all(b <= a + 1e-9 for a, b in zip(values, values[1:], strict=False))
    G = A @ V
    np.testing.assert_allclose(V, -G / np.linalg.norm(G, axis=1)[:, None], atol=1e-3)


@pytest.mark.parametrize("seed", range(3))
def test_dual_eigenvalue_is_a_lower_bound(seed):
    # n > 200 takes the sparse Lanczos path; compare with a dense eigensolver.
    from skderand.maxcut._sdp import dual_upper_bound

    A = sparse.csr_matrix(gnp(260, 0.05, seed, signed=seed == 1))
    rng = np.random.default_rng(seed)
    # A deliberately inexact SDP solution: the bound must stay valid.
    V, _ = _mixing(A, 8, rng, 5)
    bound, lam_low, y = dual_upper_bound(A, V, rng)
    L = np.diag(np.asarray(A.sum(axis=1)).ravel()) - A.toarray()
    lam_true = np.linalg.eigvalsh(np.diag(y) - L / 4)[0]
    assert lam_low <= lam_true + 1e-9
    assert lam_low >= lam_true - 1e-3 * max(1.0, abs(lam_true))
    assert bound == pytest.approx(y.sum() + 260 * max(0.0, -lam_low))


@pytest.mark.parametrize("fallback", ["dense", "lanczos"])
def test_dual_bound_survives_arpack_failing(monkeypatch, fallback):
    # Near an exact optimum ARPACK may not converge. Up to 2,000 vertices a
    # dense eigensolver takes over (exact but for a margin of round-off);
    # above, Lanczos, whose Ritz value minus its residual must still be a lower
    # bound on lambda_min. The limit is lowered to take the second path here.
    from scipy.sparse.linalg import ArpackNoConvergence

    from skderand.maxcut import _sdp

    def failing_eigsh(*args, **kwargs):
        raise ArpackNoConvergence("no convergence", np.empty(0), np.empty((0, 0)))

    monkeypatch.setattr(_sdp, "eigsh", failing_eigsh)
    if fallback == "lanczos":
        monkeypatch.setattr(_sdp, "_DENSE_FALLBACK_MAX_N", 200)
    A = sparse.csr_matrix(gnp(260, 0.05, 3))
    V, _ = _mixing(A, 8, np.random.default_rng(3), 300, tol=1e-9)
    bound, lam_low, y = _sdp.dual_upper_bound(A, V, np.random.default_rng(0))
    L = np.diag(np.asarray(A.sum(axis=1)).ravel()) - A.toarray()
    lam_true = np.linalg.eigvalsh(np.diag(y) - L / 4)[0]
    slack = 1e-3 if fallback == "lanczos" else 1e-8
    assert lam_true - slack <= lam_low <= lam_true + 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_bound_continuation_tightens_and_stays_valid(seed):
    # An inexact SDP (3 sweeps) leaves a large eigenvalue term; the bound-only
    # continuation may only lower the bound of those vectors (it returns the
    # smallest of valid bounds), must stay above the exact maximum cut, and must
    # leave the vectors the rounding uses untouched.
    from skderand.maxcut._sdp import dual_upper_bound, solve_sdp_adaptive, tighten_bound

    A = sparse.csr_matrix(gnp(16, 0.5, seed, signed=seed % 2 == 1))
    opt = brute_force_max_cut(A.toarray())
    classes = greedy_colouring(A)
    solution = solve_sdp_adaptive(
        A, np.random.default_rng(seed), classes=classes, max_rank=2, max_sweeps=3
    )
    V_before = solution.V.copy()
    own_bound = dual_upper_bound(A, solution.V, np.random.default_rng(0))[0]
    assert own_bound == pytest.approx(solution.bound, rel=1e-12)
    tightened = tighten_bound(
        A, solution, np.random.default_rng(seed), classes=classes, max_rank=6
    )
    np.testing.assert_array_equal(solution.V, V_before)
    assert opt - 1e-9 <= tightened <= min(solution.bounds) + 1e-12
    # The 3-sweep start is far from the SDP optimum: the continuation pays.
    assert tightened < own_bound - 1e-3 * abs(own_bound)


@pytest.mark.parametrize("seed", range(4))
def test_reported_bound_below_own_vectors_bound(seed):
    # The estimator's bound is at most the dual bound of its own SDP vectors
    # (the continuation only tightens it) and at least the exact maximum cut.
    from skderand.maxcut._sdp import dual_upper_bound

    A = gnp(16, 0.5, seed, signed=seed % 2 == 1)
    opt = brute_force_max_cut(A)
    mc = fit(A)
    own = dual_upper_bound(
        sparse.csr_matrix(A), mc.sdp_vectors_, np.random.default_rng(0)
    )[0]
    assert opt - 1e-9 <= mc.upper_bound_ <= own + 1e-9 * abs(own)


@pytest.mark.parametrize("name", ["G11", "G14"])
def test_bound_continuation_leaves_the_cut_unchanged(name, monkeypatch):
    # The continuation runs after every draw the cut depends on: with it
    # switched off the labels are identical and the bound is not smaller.
    A = read_gset(LOCAL_GSET / f"{name}.txt")
    with_continuation = fit(A)
    original = _maxcut.tighten_bound
    monkeypatch.setattr(
        _maxcut,
        "tighten_bound",
        lambda *args, **kwargs: original(*args, **{**kwargs, "n_rounds": 0}),
    )
    without = fit(A)
    np.testing.assert_array_equal(with_continuation.labels_, without.labels_)
    assert with_continuation.cut_value_ == without.cut_value_
    assert with_continuation.upper_bound_ <= without.upper_bound_


# ------------------------------------------------------------- bad inputs


def test_non_square_precomputed():
    with pytest.raises(ValueError, match="square"):
        fit(np.ones((3, 4)))


def test_asymmetric_precomputed():
    A = gnp(6, 0.8, 0)
    A[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        fit(A)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_weights(bad):
    A = gnp(6, 0.8, 0)
    A[0, 1] = A[1, 0] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        fit(A)
    with pytest.raises(ValueError, match="NaN|infinity"):
        fit(sparse.csr_matrix(A))


def test_empty_graph():
    with pytest.raises(ValueError, match="sample"):
        fit(np.zeros((0, 0)))


def test_one_vertex():
    mc = fit(np.zeros((1, 1)))
    np.testing.assert_array_equal(mc.labels_, [0])
    assert mc.cut_value_ == 0.0 and mc.upper_bound_ == 0.0


def test_no_edges():
    mc = fit(sparse.csr_matrix((7, 7)))
    np.testing.assert_array_equal(mc.labels_, np.zeros(7))
    assert mc.cut_value_ == 0.0 and mc.upper_bound_ == 0.0


def test_self_loops_are_ignored():
    A = gnp(12, 0.5, 1)
    looped = A + np.diag(np.arange(1.0, 13.0))
    original = looped.copy()
    mc = fit(looped)
    np.testing.assert_array_equal(looped, original)  # the input is not modified
    plain = fit(A)
    np.testing.assert_array_equal(mc.labels_, plain.labels_)
    assert mc.cut_value_ == brute_force_max_cut(A)


def test_disconnected_graph_and_isolated_vertices():
    # Two 5-cycles (max cut 4 each), an edge (1) and three isolated vertices.
    A = np.zeros((16, 16))
    for start in (0, 5):
        for i in range(5):
            a, b = start + i, start + (i + 1) % 5
            A[a, b] = A[b, a] = 1.0
    A[10, 11] = A[11, 10] = 1.0
    perm = np.random.default_rng(0).permutation(16)
    A = A[perm][:, perm]
    mc = fit(A)
    assert mc.cut_value_ == 9.0 == labels_cut(A, mc.labels_)
    assert mc.upper_bound_ >= 9.0
    isolated = np.flatnonzero(A.sum(axis=1) == 0)
    np.testing.assert_array_equal(mc.labels_[isolated], 0)


def test_all_negative_weights_give_empty_cut():
    mc = fit(-gnp(10, 0.6, 0))
    assert mc.cut_value_ == 0.0
    assert mc.upper_bound_ >= 0.0


def test_networkx_graph_input():
    nx = pytest.importorskip("networkx")
    graph = nx.cycle_graph(5)
    graph.add_edge(0, 0)  # a self-loop, ignored
    mc = DeterministicMaxCut(affinity="precomputed").fit(graph)
    assert mc.cut_value_ == 4.0
    with pytest.raises(ValueError, match="undirected"):
        DeterministicMaxCut(affinity="precomputed").fit(nx.DiGraph(graph))


# ------------------------------------------------------------- affinities


def test_euclidean_affinity_separates_two_blobs():
    X, y = make_blobs(n_samples=40, centers=2, cluster_std=0.5, random_state=0)
    labels = DeterministicMaxCut().fit_predict(X)
    assert adjusted_rand_score(y, labels) == 1.0


def documented_graph(X, affinity, gamma=1.0, n_neighbors=10):
    """Each feature affinity's graph as its docstring defines it, from scratch."""
    diff = X[:, None, :] - X[None, :, :]
    sq_dist = np.einsum("ijk,ijk->ij", diff, diff)
    if affinity == "euclidean":
        A = np.sqrt(sq_dist)
    elif affinity == "rbf":
        A = np.exp(-gamma * sq_dist)
    elif affinity == "nearest_neighbors":
        n = X.shape[0]
        knn = np.zeros((n, n))
        for i in range(n):
            others = np.argsort(np.where(np.arange(n) == i, np.inf, sq_dist[i]))
            knn[i, others[:n_neighbors]] = 1.0
        A = 0.5 * (knn + knn.T)
    else:
        A = np.abs(X[:, :1] - X[:, :1].T)
    np.fill_diagonal(A, 0.0)
    return A


FEATURE_CASES = [
    ("euclidean", {}),
    ("rbf", {"gamma": 0.05}),
    ("rbf", {"gamma": 1.0}),
    ("nearest_neighbors", {"n_neighbors": 2}),
    ("nearest_neighbors", {"n_neighbors": 4}),
    ("callable", {}),
]


@pytest.mark.parametrize("affinity, params", FEATURE_CASES)
@pytest.mark.parametrize("seed", range(2))
def test_feature_affinities_build_the_documented_graph(affinity, params, seed):
    # Small inputs: the cut is checked against the brute-force optimum of the
    # graph the docstring documents, built independently here. A wrong graph
    # makes cut_value_ disagree with the labels' cut on it.
    X, _ = make_blobs(n_samples=13, centers=3, random_state=seed)
    A = documented_graph(X, affinity, **params)
    if affinity == "callable":

        def affinity(Z):
            return np.abs(Z[:, :1] - Z[:, :1].T)

    mc = DeterministicMaxCut(affinity=affinity, **params).fit(X)
    assert mc.cut_value_ == pytest.approx(labels_cut(A, mc.labels_), rel=1e-12)
    optimum = brute_force_max_cut(A)
    assert mc.cut_value_ >= optimum * (1 - 1e-9)
    assert mc.upper_bound_ >= optimum * (1 - 1e-9)


def test_nearest_neighbors_graph_is_sparse_and_symmetric():
    # n_neighbors shapes the graph: weight 1 for mutual neighbours, 1/2 for
    # one-sided ones, so the total weight is between n k / 2 and n k.
    X, _ = make_blobs(n_samples=40, random_state=0)
    for k in (1, 3, 6):
        A = documented_graph(X, "nearest_neighbors", n_neighbors=k)
        assert 40 * k / 2 <= A.sum() / 2 <= 40 * k
        mc = DeterministicMaxCut(affinity="nearest_neighbors", n_neighbors=k).fit(X)
        assert mc.cut_value_ == pytest.approx(labels_cut(A, mc.labels_))
        # An anticlustering: most neighbour pairs are split.
        assert mc.cut_value_ >= 0.6 * A.sum() / 2


def test_callable_affinity_with_wrong_shape():
    with pytest.raises(ValueError, match="n_samples, n_samples"):
        DeterministicMaxCut(affinity=lambda Z: np.ones((2, 2))).fit(np.ones((5, 2)))


def test_pairwise_tag_follows_affinity():
    # With a precomputed adjacency X is n x n, which the common checks must know.
    assert (
        DeterministicMaxCut(affinity="precomputed")
        .__sklearn_tags__()
        .input_tags.pairwise
    )
    assert not DeterministicMaxCut().__sklearn_tags__().input_tags.pairwise


# ------------------------------------------------------------- Gset and CLI


def _gset(name):
    folder = LOCAL_GSET if (LOCAL_GSET / f"{name}.txt").exists() else GSET
    if not (folder / f"{name}.txt").exists():
        pytest.skip("Gset data not available")
    with open(folder / "best_known.csv") as f:
        best = {r["name"]: int(r["best_known_cut"]) for r in csv.DictReader(f)}
    return read_gset(folder / f"{name}.txt"), best[name]


def _check_gset(name):
    A, best = _gset(name)
    mc = DeterministicMaxCut(affinity="precomputed").fit(A)
    assert mc.upper_bound_ >= best
    assert mc.cut_value_ <= best
    # The cut of the labels, recomputed independently of the library.
    assert mc.cut_value_ == labels_cut(A, mc.labels_)
    assert mc.certified_
    # The cheaper rounding keeps the Goemans-Williamson guarantee: its cut is
    # at least the exact expected cut of random-hyperplane rounding.
    assert mc.rounded_cut_value_ >= mc.expected_gw_cut_
    assert mc.cut_value_ >= mc.rounded_cut_value_
    return mc, best


# The default suite's quality bar, on the graphs shipped in tests/data: a
# toroidal +-1 grid and a planar graph, where the defaults reach 1.0000 and
# 0.9984 of the best-known cut (the 1-flip pipeline before the improvement
# phase: 1.0000 and 0.9928).
@pytest.mark.parametrize("name, bar", [("G11", 0.998), ("G14", 0.997)])
def test_gset_default_suite_bound_and_quality(name, bar):
    assert (LOCAL_GSET / f"{name}.txt").exists()  # shipped: a clone runs this
    mc, best = _check_gset(name)
    assert mc.cut_value_ >= bar * best
    # The improvement phase on top of the rounding, never below it.
    assert mc.cut_value_ >= mc.rounded_cut_value_


@pytest.mark.slow
# Also the numerical-hygiene check on every Gset graph: no overflow, division by
# zero or invalid value while fitting (tests/test_resources.py covers the rest).
@pytest.mark.filterwarnings("error::RuntimeWarning")
# G18, 987 of 992 (0.99496) with simulated annealing, reaches 991 with the
# replica exchange; the smallest ratio is now G18's, 991 of 992 (0.9990).
@pytest.mark.parametrize(
    "name", [f"G{i}" for i in list(range(1, 23)) + list(range(43, 48))]
)
def test_gset_all(name):
    mc, best = _check_gset(name)
    # Issue 15's target: every graph at 0.995 or more of the best-known cut.
    assert mc.cut_value_ >= 0.995 * best


def test_cli_maxcut(tmp_path, capsys):
    A = sparse.csr_matrix(gnp(20, 0.4, 0))
    graph = tmp_path / "g.txt"
    write_gset(graph, A)
    out = tmp_path / "labels.txt"
    status = cli_main(
        ["maxcut", str(graph), "--labels", str(out), "--n-sweeps", str(FAST_SWEEPS)]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "certified upper bound" in printed
    labels = np.loadtxt(out, dtype=int)
    expected = fit(A)
    np.testing.assert_array_equal(labels, expected.labels_)
    assert f"{expected.cut_value_:.1f}" in printed


# ------------------------------------------------------------- memory refusals


def _limit_available_memory(monkeypatch, n_bytes):
    """Make the memory checks see ``n_bytes`` available, on any machine."""
    from skderand import _memory

    monkeypatch.setattr(_memory, "available_memory", lambda: n_bytes)


def _peak_bytes_while_raising(func, match):
    """Peak bytes traced while ``func`` runs, asserting it raises ``ValueError``."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match):
            func()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("affinity", ["euclidean", "rbf"])
def test_dense_affinity_on_60000_points_refused_up_front(monkeypatch, affinity):
    X = np.random.default_rng(0).standard_normal((60_000, 2))
    _limit_available_memory(monkeypatch, 16 * 2**30)
    peak = _peak_bytes_while_raising(
        lambda: DeterministicMaxCut(affinity=affinity).fit(X),
        r"(?s)60,000 x 60,000 float64 matrix \(26\.8 GiB alone\).*"
        r"nearest_neighbors.*precomputed",
    )
    # Refused before the dense matrix: at most a copy of X (0.9 MiB) was made.
    assert peak < 4 * X.nbytes


def test_sparse_graph_with_too_many_vertices_refused(monkeypatch):
    n = 10**8
    graph = sparse.coo_matrix(([1.0, 1.0], ([0, n - 1], [n - 1, 0])), shape=(n, n))
    _limit_available_memory(monkeypatch, 2**30)
    peak = _peak_bytes_while_raising(
        lambda: fit(graph), r"100,000,000 vertices.* GiB of memory"
    )
    assert peak < 2**20  # no per-vertex array (0.8 GB each) was allocated


def _huge_gset_file(tmp_path):
    path = tmp_path / "huge.txt"
    path.write_text("2000000000 1\n1 2000000000 1\n")
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        (None, r"2,000,000,000 vertices.* GiB of memory"),
        ("3 1\n1 5 1\n", r"1\.\.3"),
        ("3 1\n1 2 x\n", "not numeric"),
        ("three 1\n", "first line"),
    ],
)
@pytest.mark.parametrize("entry_point", ["python -m skderand", "skderand-maxcut"])
def test_cli_errors_are_one_line_with_status_2(
    tmp_path, capsys, monkeypatch, text, message, entry_point
):
    from skderand._cli import maxcut_main

    _limit_available_memory(monkeypatch, 16 * 2**30)
    if text is None:
        path = _huge_gset_file(tmp_path)
    else:
        path = tmp_path / "g.txt"
        path.write_text(text)
    if entry_point == "skderand-maxcut":
        status = maxcut_main([str(path)])
    else:
        status = cli_main(["maxcut", str(path)])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert re.search(message, lines[0])


def test_cli_missing_file(tmp_path, capsys):
    assert cli_main(["maxcut", str(tmp_path / "absent.txt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "absent.txt" in err
    assert len(err.splitlines()) == 1
