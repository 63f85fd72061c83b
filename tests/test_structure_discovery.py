"""StructureDiscoveryRegressor / Classifier: recovery of planted subspaces."""

import math
import threading
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.utils._testing import assert_allclose

from skderand import StructureDiscoveryClassifier, StructureDiscoveryRegressor
from skderand.datasets import (
    MULTI_INDEX_LINKS,
    make_multi_index_regression,
    subspace_distance,
)
from skderand.neural import _structure_discovery


def _teacher(name, seed, d=10, n=2000):
    return make_multi_index_regression(n, d, link=name, random_state=seed)


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return est.fit(X, y)


@pytest.mark.parametrize("name", list(MULTI_INDEX_LINKS))
@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_planted_subspace_and_its_dimension(name, seed):
    # Even links and products, where SIR fails, included; "auto" must find k.
    X, y, U = _teacher(name, seed)
    est = _fit(
        StructureDiscoveryRegressor(hidden_layer_sizes=16, random_state=seed), X, y
    )
    assert est.certified_
    assert est.n_components_ == U.shape[0]
    assert subspace_distance(est.subspace_, U) <= 0.15
    assert est.score(X, y) > 0.9


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MULTI_INDEX_LINKS))
@pytest.mark.parametrize("seed", range(2, 7))
def test_recovers_planted_subspace_seed_sweep(name, seed):
    X, y, U = _teacher(name, seed, d=30, n=3000)
    est = _fit(StructureDiscoveryRegressor(random_state=seed), X, y)
    assert est.n_components_ == U.shape[0]
    assert subspace_distance(est.subspace_, U) <= 0.15


@pytest.mark.parametrize("seed", [0, 1])
def test_whitening_recovers_subspace_of_correlated_shifted_inputs(seed):
    # x = A g + shift with g ~ N(0, I) and an ill-conditioned A; y depends on
    # V g, i.e. on x through the rows of V A^{-1}: that is the subspace to find,
    # in the user's coordinates, after the internal whitening.
    rng = np.random.default_rng(seed)
    d, n = 10, 3000
    A = rng.standard_normal((d, d)) @ np.diag(np.geomspace(0.1, 10.0, d))
    G = rng.standard_normal((n, d))
    X = G @ A.T + 5.0 * rng.standard_normal(d)
    V = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    U = V @ np.linalg.inv(A)
    Z = G @ V.T
    y = np.tanh(Z[:, 0]) + Z[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    est = _fit(
        StructureDiscoveryRegressor(
            hidden_layer_sizes=16, n_components=2, whiten=True, random_state=seed
        ),
        X,
        y,
    )
    assert est.n_components_ == 2
    assert subspace_distance(est.subspace_, U) <= 0.15
    # Exposed in input coordinates: predict from coefs_, transform from subspace_.
    assert_allclose(est.transform(X), (X - X.mean(axis=0)) @ est.subspace_.T)
    assert_allclose(est.subspace_ @ est.subspace_.T, np.eye(2), atol=1e-10)


def test_multi_output_and_pseudo_huber_with_outliers():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 8))
    U = np.linalg.qr(rng.standard_normal((8, 2)))[0].T
    Z = X @ U.T
    Y = np.column_stack([np.maximum(Z[:, 0], 0.0), Z[:, 1] ** 2])
    Y += 0.1 * rng.standard_normal(Y.shape)
    Y[rng.choice(2000, 40, replace=False)] += 50.0  # gross outliers
    est = _fit(
        StructureDiscoveryRegressor(
            loss="pseudo_huber", hidden_layer_sizes=16, random_state=0
        ),
        X,
        Y,
    )
    assert est.predict(X).shape == (2000, 2)
    # n_components is fixed: with one link much flatter than the other (s_2
    # about 0.3 s_1 here) the 0.1 s_1 floor of "auto" can hide the second one.
    assert subspace_distance(est.subspace_, U) <= 0.15


def test_singular_values_show_the_gap_and_attributes_are_consistent():
    X, y, U = _teacher("product", 0, d=12)
    est = _fit(StructureDiscoveryRegressor(hidden_layer_sizes=8, random_state=0), X, y)
    s = est.singular_values_
    assert s.shape == (8,)
    assert np.all(np.diff(s) <= 0)
    assert s[2] < 0.2 * s[1]
    # The network in input coordinates reproduces predict.
    a = np.tanh(X @ est.coefs_[0] + est.intercepts_[0])
    assert_allclose(est.predict(X), (a @ est.coefs_[1] + est.intercepts_[1]).ravel())
    fixed = _fit(
        StructureDiscoveryRegressor(
            hidden_layer_sizes=8, n_components=3, random_state=0
        ),
        X,
        y,
    )
    assert fixed.subspace_.shape == (3, 12)
    assert fixed.get_feature_names_out().tolist() == [
        "structurediscoveryregressor0",
        "structurediscoveryregressor1",
        "structurediscoveryregressor2",
    ]


def _restart_objectives(X, y, params, random_state, n_init):
    """Objective of each restart of ``n_init``, each fitted on its own.

    ``_fit_network`` draws the restarts' seeds as
    ``RandomState(random_state).randint(int32 max, size=n_init)``: restart ``i``
    is the single fit whose generator has already made ``i`` of those draws.
    """
    objectives = []
    for i in range(n_init):
        rng = np.random.RandomState(random_state)
        rng.randint(np.iinfo(np.int32).max, size=i)
        single = _fit(
            StructureDiscoveryRegressor(n_init=1, random_state=rng, **params), X, y
        )
        objectives.append(single)
    return objectives


# Seeds where the four restarts end at different local minima and the best
# one is not the first. Which restart is best depends on the platform's
# round-off (seed 8: the last in earlier environments, the second with
# numpy 2.4.6 / scipy 1.17.1), so the test finds it rather than naming it.
@pytest.mark.parametrize("random_state", [4, 8])
def test_n_init_keeps_the_best_restart_and_runs_in_parallel(random_state, monkeypatch):
    X, y, _ = make_multi_index_regression(
        300, 6, link="product", noise=0.3, random_state=1
    )
    # A fixed alpha and n_components: every restart starts from a random network.
    params = dict(hidden_layer_sizes=6, alpha=1e-2, n_components=2)
    singles = _restart_objectives(X, y, params, random_state, n_init=4)
    objectives = np.array([single.loss_ for single in singles])
    best = int(np.argmin(objectives))
    # Keeping the first restart would not pass for these seeds.
    assert best != 0
    others = np.delete(objectives, best)
    assert np.all(others > objectives[best] + 1e-5)  # distinct minima
    kept = _fit(
        StructureDiscoveryRegressor(n_init=4, random_state=random_state, **params),
        X,
        y,
    )
    assert kept.loss_ == pytest.approx(objectives.min(), rel=1e-12, abs=0)
    for a, b in zip(kept.coefs_, singles[best].coefs_, strict=True):
        assert_allclose(a, b, rtol=1e-10, atol=1e-12)

    # n_jobs=2 runs two restarts at the same time: each waits at a barrier
    # for the other (a sequential run would time out there), and the result is
    # bit-identical.
    import skderand.neural._structure_discovery as sd

    barrier = threading.Barrier(2, timeout=30)
    fit_one = sd._fit_one
    threads = []

    def fit_one_in_pairs(*args, **kwargs):
        threads.append(threading.get_ident())
        barrier.wait()  # BrokenBarrierError unless another restart runs too
        return fit_one(*args, **kwargs)

    monkeypatch.setattr(sd, "_fit_one", fit_one_in_pairs)
    parallel = _fit(
        StructureDiscoveryRegressor(
            n_init=4, n_jobs=2, random_state=random_state, **params
        ),
        X,
        y,
    )
    assert len(threads) == 4 and len(set(threads)) == 2
    assert parallel.loss_ == kept.loss_
    for a, b in zip(parallel.coefs_, kept.coefs_, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(parallel.subspace_, kept.subspace_)


def test_transform_in_pipeline_with_pandas_output():
    pd = pytest.importorskip("pandas")
    X, y, _ = _teacher("relu", 0, d=6, n=500)
    Xdf = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    pipe = make_pipeline(
        StructureDiscoveryRegressor(hidden_layer_sizes=8, random_state=0)
    ).set_output(transform="pandas")
    out = pipe.fit_transform(Xdf, y)
    assert list(out.columns) == ["structurediscoveryregressor0"]


def test_input_is_not_modified():
    X, y, _ = _teacher("relu", 0, d=5, n=300)
    X_copy, y_copy = X.copy(), y.copy()
    est = StructureDiscoveryRegressor(hidden_layer_sizes=4, random_state=0).fit(X, y)
    est.predict(X)
    est.transform(X)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(y, y_copy)


def test_constant_and_duplicated_features_give_finite_results():
    X, y, _ = _teacher("relu", 0, d=4, n=500)
    X = np.column_stack([X, np.full(500, 3.0), X[:, 0]])
    est = StructureDiscoveryRegressor(hidden_layer_sizes=8, random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.subspace_))
    assert np.all(np.isfinite(est.predict(X)))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_components": 7}, "n_components=7 is larger"),
        ({"hidden_layer_sizes": (4, 0)}, "hidden_layer_sizes"),
        ({"alpha": -1.0}, "alpha"),
        ({"activation": "relu"}, "activation"),
    ],
)
def test_bad_parameters_raise(params, match):
    X, y, _ = _teacher("relu", 0, d=5, n=50)
    est = StructureDiscoveryRegressor(**{"hidden_layer_sizes": (6,), **params})
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)


def test_bad_input_raises():
    X, y, _ = _teacher("relu", 0, d=5, n=50)
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        StructureDiscoveryRegressor().fit(X_nan, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        StructureDiscoveryRegressor().fit(X, y[:-1])
    with pytest.raises(ValueError, match="could not convert|numeric"):
        StructureDiscoveryRegressor().fit(X, np.array(["a"] * 50, dtype=object))
    with pytest.raises(ValueError, match="only one class"):
        StructureDiscoveryClassifier().fit(X, np.zeros(50))
    est = StructureDiscoveryRegressor(hidden_layer_sizes=4, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :3])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_recovers_subspace(n_classes):
    rng = np.random.default_rng(n_classes)
    X = rng.standard_normal((2000, 8))
    U = np.linalg.qr(rng.standard_normal((8, 2)))[0].T
    Z = X @ U.T
    if n_classes == 2:
        y = np.where(Z[:, 0] * Z[:, 1] > 0, "same", "different")
    else:
        y = np.digitize(Z[:, 0] ** 2 + np.tanh(2 * Z[:, 1]), [0.5, 1.5])
    clf = _fit(
        StructureDiscoveryClassifier(hidden_layer_sizes=16, random_state=0), X, y
    )
    proba = clf.predict_proba(X)
    assert proba.shape == (2000, n_classes)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.score(X, y) > 0.9
    assert clf.n_components_ == 2
    assert subspace_distance(clf.subspace_, U) <= 0.15


def test_subspace_distance_is_the_sine_of_the_largest_principal_angle():
    e = np.eye(3)
    assert subspace_distance(e[:1], 5 * e[:1]) == pytest.approx(0.0, abs=1e-12)
    assert subspace_distance(e[:1], e[1:2]) == pytest.approx(1.0)
    tilted = np.array([[np.cos(0.3), np.sin(0.3), 0.0]])
    assert subspace_distance(e[:1], tilted) == pytest.approx(np.sin(0.3))
    # Bases need not be orthonormal: the span is what counts.
    assert subspace_distance(e[:2], [[1, 1, 0], [1, -2, 0]]) == pytest.approx(
        0.0, abs=1e-12
    )


def _one_standard_error_refit(cv_results):
    """GridSearchCV refit rule: the largest alpha within one standard error of
    the best (or 0.005 of R^2), the rule ``alpha="auto"`` documents."""
    n_splits = sum(key.startswith("split") for key in cv_results)
    scores = np.column_stack(
        [cv_results[f"split{i}_test_score"] for i in range(n_splits)]
    )
    alphas = np.asarray(cv_results["param_alpha"], dtype=float)
    top = scores[np.argmax(scores.mean(axis=1))]
    good = []
    for i, row in enumerate(scores):
        diff = top - row
        stderr = diff.std(ddof=1) / np.sqrt(diff.size)
        if diff.mean() <= max(stderr, 5e-3):
            good.append(i)
    return max(good, key=lambda i: alphas[i])


@pytest.mark.parametrize("name", ["relu", "product"])
def test_auto_alpha_picks_what_grid_search_over_the_same_folds_picks(name):
    from sklearn.model_selection import GridSearchCV, KFold

    X, y, _ = make_multi_index_regression(400, 6, link=name, noise=0.5, random_state=0)
    alphas = [1e-3, 1e-2, 1e-1, 1.0]
    folds = KFold(4, shuffle=True, random_state=0)
    params = dict(hidden_layer_sizes=8, n_components=2, random_state=0)
    auto = StructureDiscoveryRegressor(alphas=alphas, cv=folds, **params).fit(X, y)
    grid = GridSearchCV(
        StructureDiscoveryRegressor(**params),
        {"alpha": alphas},
        cv=folds,
        scoring="r2",
        refit=_one_standard_error_refit,
    ).fit(X, y)
    assert auto.alpha_ == grid.best_params_["alpha"]
    # Warm starts along the path score as cold fits do at the chosen decay, and
    # never worse elsewhere (at large decays a cold start can fall into the
    # collapsed first layer that the path, coming from below, stays out of).
    # (The path may stop past the peak: compare the decays it scored.)
    n_scored = len(auto.alphas_)
    auto_mean = auto.cv_scores_.mean(axis=1)
    grid_mean = grid.cv_results_["mean_test_score"][:n_scored]
    pick = alphas.index(auto.alpha_)
    assert abs(auto_mean[pick] - grid_mean[pick]) <= 0.02
    assert np.all(auto_mean >= grid_mean - 0.02)
    assert auto.cv_scores_.shape == (n_scored, 4)
    assert_allclose(auto.alphas_, alphas[:n_scored])


def test_decay_path_stops_past_the_peak_without_changing_the_choice(monkeypatch):
    # Many clean samples want a small decay: the path stops once two decays in
    # a row fall below the best by more than the one-standard-error rule
    # allows, and the whole path would have chosen the same decay.
    X, y, _ = make_multi_index_regression(
        1500, 10, link="relu", noise=0.05, random_state=0
    )
    params = dict(hidden_layer_sizes=8, n_components=1, random_state=0)
    stopped = StructureDiscoveryRegressor(**params).fit(X, y)
    monkeypatch.setattr(_structure_discovery, "_PATH_PATIENCE", 100)
    whole = StructureDiscoveryRegressor(**params).fit(X, y)
    n_scored = len(stopped.alphas_)
    assert n_scored < len(whole.alphas_) == 7
    assert_allclose(stopped.alphas_, whole.alphas_[:n_scored])
    assert_allclose(stopped.cv_scores_, whole.cv_scores_[:n_scored])
    assert stopped.alpha_ == whole.alpha_
    top = stopped.cv_scores_[np.argmax(stopped.cv_scores_.mean(axis=1))]
    for row in stopped.cv_scores_[-2:]:
        assert not _structure_discovery._as_good(row, top, 1.0)


def test_auto_alpha_follows_the_sample_size_and_noise():
    # Few noisy samples need a large decay, many clean ones a small decay: no
    # constant serves both, which is why the default chooses it.
    few, y_few, _ = make_multi_index_regression(
        150, 10, link="relu", noise=1.0, random_state=0
    )
    many, y_many, _ = make_multi_index_regression(
        2000, 10, link="relu", noise=0.05, random_state=0
    )
    params = dict(hidden_layer_sizes=8, n_components=1, random_state=0)
    noisy = StructureDiscoveryRegressor(**params).fit(few, y_few)
    clean = StructureDiscoveryRegressor(**params).fit(many, y_many)
    assert noisy.alpha_ >= 10 * clean.alpha_
    assert_allclose(noisy.alphas_, np.logspace(-3, 0, 7))


def test_auto_alpha_on_real_data_matches_ridge():
    # sklearn's diabetes (442 x 10), standardized, a fixed split: the old fixed
    # decay of 1e-3 interpolated noise (5-fold R^2 -0.15) where RidgeCV gets 0.49.
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import RidgeCV
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    ridge = make_pipeline(StandardScaler(), RidgeCV()).fit(X_train, y_train)
    ours = make_pipeline(
        StandardScaler(), StructureDiscoveryRegressor(random_state=0)
    ).fit(X_train, y_train)
    fixed = make_pipeline(
        StandardScaler(), StructureDiscoveryRegressor(alpha=1e-4, random_state=0)
    ).fit(X_train, y_train)
    assert ours.score(X_test, y_test) >= ridge.score(X_test, y_test) - 0.03
    assert fixed.score(X_test, y_test) < ours.score(X_test, y_test) - 0.1


def test_auto_n_components_is_all_directions_without_structure():
    # An additive target in every coordinate has no smaller sufficient
    # reduction: "auto" must keep all of them, not read a spurious gap.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 4))
    y = np.sin(2 * X).sum(axis=1) + 0.05 * rng.standard_normal(1500)
    est = StructureDiscoveryRegressor(hidden_layer_sizes=16, random_state=0).fit(X, y)
    assert est.n_components_ == 4
    # Each rank tried below 4 scored clearly worse on the held-out folds.
    for rank, scores in est.rank_cv_scores_.items():
        if rank < 4:
            assert scores.mean() < est.cv_scores_.max(axis=0).mean() - 0.05


def test_too_few_samples_for_the_folds_is_a_clear_error():
    X, y, _ = make_multi_index_regression(8, 3, link="relu", random_state=0)
    with pytest.raises(ValueError, match="needs at least 10 samples"):
        StructureDiscoveryRegressor().fit(X, y)
    # A fixed alpha and n_components need no folds.
    est = StructureDiscoveryRegressor(alpha=1e-2, n_components=1).fit(X, y)
    assert not hasattr(est, "cv_scores_")


# Behaviour of each parameter (issue 12). A numeric alpha and an integer
# n_components skip the cross-validation: one fit from a random network.
_FIXED = dict(hidden_layer_sizes=6, alpha=1e-2, n_components=1, random_state=0)


def _relu_teacher(n=400, seed=0):
    return make_multi_index_regression(n, 6, link="relu", noise=0.1, random_state=seed)


_ACTIVATIONS = {
    "tanh": np.tanh,
    "softplus": lambda t, s=1.0: np.logaddexp(0.0, s * t) / s,
    "sigmoid": lambda t: 1.0 / (1.0 + np.exp(-t)),
    "gelu": lambda t: t * 0.5 * (1.0 + np.vectorize(math.erf)(t / np.sqrt(2.0))),
}


def _forward(est, X, act):
    """The network of ``coefs_``/``intercepts_`` with activation ``act``."""
    a = X
    for layer, (coef, intercept) in enumerate(
        zip(est.coefs_, est.intercepts_, strict=True)
    ):
        a = a @ coef + intercept
        if layer < len(est.coefs_) - 1:
            a = act(a)
    return a


def _objective(est, X, y):
    """``loss_`` recomputed from the fitted attributes, as documented: the mean
    of ``0.5 r**2`` over the standardized targets, plus ``alpha ||W||_F^2`` on the
    first layer in whitened coordinates and ``alpha_other ||W_l||^2`` on the
    later ones (the output layer's in standardized target units).

    In input coordinates ``coefs_[0] = M W^T`` with ``M`` the whitening matrix,
    so ``||W||_F^2 = tr(coefs_[0]^T S coefs_[0])`` with ``S`` the covariance
    of ``X`` (``whiten=True``) or its diagonal (``whiten=False``).
    """
    y_std = y.std()
    residual = (est.predict(X) - y) / y_std
    cov = np.cov(X, rowvar=False, bias=True)
    if not est.whiten:
        cov = np.diag(np.diag(cov))
    first = np.trace(est.coefs_[0].T @ cov @ est.coefs_[0])
    later = [c for c in est.coefs_[1:-1]] + [est.coefs_[-1] / y_std]
    return (
        0.5 * np.mean(residual**2)
        + est.alpha_ * first
        + est.alpha_other * sum(np.sum(c**2) for c in later)
    )


@pytest.mark.parametrize(
    "params",
    [
        {"alpha": 0.0},
        {"alpha": 0.05, "alpha_other": 0.1},
        {"alpha": 0.05, "whiten": True, "hidden_layer_sizes": (5, 4)},
    ],
)
def test_loss_is_the_documented_objective(params):
    # Correlated, shifted, scaled inputs, so that whitening and scaling matter.
    X, y, _ = _relu_teacher(n=300)
    X = X @ np.random.default_rng(1).standard_normal((6, 6)) + 3.0
    y = 4.0 * y - 2.0
    est = StructureDiscoveryRegressor(**{**_FIXED, "alpha_other": 0.02, **params})
    est = _fit(est, X, y)
    assert est.alpha_ == params["alpha"]
    assert est.loss_ == pytest.approx(_objective(est, X, y), rel=1e-9)


def test_alpha_zero_leaves_the_first_layer_free():
    # With no decay nothing drives the first layer's part outside span(U) to
    # zero: the network fits the noise through it. A decay removes it (the lemma).
    X, y, U = _relu_teacher()
    outside = np.eye(6) - U.T @ U
    free = _fit(StructureDiscoveryRegressor(**{**_FIXED, "alpha": 0.0}), X, y)
    decayed = _fit(StructureDiscoveryRegressor(**{**_FIXED, "alpha": 0.1}), X, y)
    assert np.linalg.norm(outside @ free.coefs_[0]) > 10.0
    assert np.linalg.norm(outside @ decayed.coefs_[0]) < 0.05
    # curvature_tol=None means alpha_, or sqrt(tol) when alpha_ is 0.
    assert free.curvature_tol_ == pytest.approx(np.sqrt(free.tol))
    assert decayed.curvature_tol_ == 0.1
    explicit = _fit(
        StructureDiscoveryRegressor(**{**_FIXED, "curvature_tol": 0.3}), X, y
    )
    assert explicit.curvature_tol_ == 0.3


def test_alpha_other_shrinks_the_later_layers():
    X, y, _ = _relu_teacher()
    norms = []
    for alpha_other in (0.0, 1e-2, 1e-1):
        est = StructureDiscoveryRegressor(**{**_FIXED, "alpha_other": alpha_other})
        with warnings.catch_warnings():
            # Undecayed output weights grow without bound: no certificate.
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y)
        norms.append(np.linalg.norm(est.coefs_[1]))
    # Measured 126, 0.89, 0.45.
    assert norms[0] > 10 * norms[1]
    assert norms[1] > 1.5 * norms[2]


def test_small_huber_delta_resists_outliers():
    # 5 % of the targets shifted by 30: a small delta (robust) still finds the
    # direction and the clean function; a large one behaves as the squared error
    # and is dragged by the outliers.
    X, y, U = _relu_teacher()
    _, clean, _ = make_multi_index_regression(
        400, 6, link="relu", noise=0.0, random_state=0
    )
    y = y.copy()
    y[np.random.default_rng(0).choice(400, 20, replace=False)] += 30.0
    fits = {
        delta: _fit(
            StructureDiscoveryRegressor(
                loss="pseudo_huber", huber_delta=delta, **_FIXED
            ),
            X,
            y,
        )
        for delta in (0.1, 1000.0)
    }
    squared = _fit(StructureDiscoveryRegressor(**_FIXED), X, y)

    def rmse(est):
        return np.sqrt(np.mean((est.predict(X) - clean) ** 2))

    # Measured: 0.26 and 0.06 for delta=0.1; 2.35 and 0.999 for delta=1000.
    assert rmse(fits[0.1]) < 0.4
    assert subspace_distance(fits[0.1].subspace_, U) < 0.15
    assert rmse(fits[1000.0]) > 1.5
    assert subspace_distance(fits[1000.0].subspace_, U) > 0.5
    # delta -> infinity is the squared error (delta**2 (sqrt(1 + r**2/delta**2)
    # - 1) -> r**2 / 2): from the same start, the same fit.
    assert_allclose(fits[1000.0].predict(X), squared.predict(X), rtol=0, atol=1e-2)


@pytest.mark.parametrize("activation", ["softplus", "sigmoid", "gelu"])
def test_other_activations_recover_the_subspace(activation):
    X, y, U = _relu_teacher()
    est = _fit(StructureDiscoveryRegressor(**_FIXED, activation=activation), X, y)
    assert est.certified_
    assert subspace_distance(est.subspace_, U) < 0.05
    assert est.score(X, y) > 0.95
    # predict is the network with this activation (and no other).
    out = _forward(est, X, _ACTIVATIONS[activation]).ravel()
    assert_allclose(est.predict(X), out, rtol=1e-10, atol=1e-10)
    assert np.max(np.abs(est.predict(X) - _forward(est, X, np.tanh).ravel())) > 1e-2


def test_sharpness_scales_the_softplus_and_is_ignored_otherwise():
    X, y, _ = _relu_teacher(n=200)
    sharp = _fit(
        StructureDiscoveryRegressor(
            **_FIXED, activation="softplus", softplus_sharpness=4.0
        ),
        X,
        y,
    )

    def softplus(s):
        return lambda t: np.logaddexp(0.0, s * t) / s

    assert_allclose(sharp.predict(X), _forward(sharp, X, softplus(4.0)).ravel())
    # ... and the network trained was that one: loss_ is its objective.
    assert sharp.loss_ == pytest.approx(_objective(sharp, X, y), rel=1e-9)
    assert (
        np.max(np.abs(sharp.predict(X) - _forward(sharp, X, softplus(1.0)).ravel()))
        > 1e-2
    )
    tanh = [
        _fit(StructureDiscoveryRegressor(**_FIXED, softplus_sharpness=s), X, y)
        for s in (1.0, 4.0)
    ]
    np.testing.assert_array_equal(tanh[0].coefs_[0], tanh[1].coefs_[0])


def test_several_hidden_layers():
    X, y, U = _relu_teacher()
    est = _fit(
        StructureDiscoveryRegressor(**{**_FIXED, "hidden_layer_sizes": (8, 5)}), X, y
    )
    assert [c.shape for c in est.coefs_] == [(6, 8), (8, 5), (5, 1)]
    assert [b.shape for b in est.intercepts_] == [(8,), (5,), (1,)]
    assert est.singular_values_.shape == (6,)
    assert_allclose(est.predict(X), _forward(est, X, np.tanh).ravel(), rtol=1e-10)
    assert est.certified_
    assert subspace_distance(est.subspace_, U) < 0.05
    assert est.score(X, y) > 0.95


def test_freeze_first_bias_keeps_the_first_layer_through_the_mean():
    # The bias is zero in whitened (centred) coordinates, so in input
    # coordinates the first layer is (x - mean_) @ coefs_[0]: every hidden unit
    # is at zero pre-activation at the mean input.
    X, y, _ = _relu_teacher()
    X = X + 3.0
    frozen = _fit(StructureDiscoveryRegressor(**_FIXED, freeze_first_bias=True), X, y)
    free = _fit(StructureDiscoveryRegressor(**_FIXED), X, y)
    assert_allclose(frozen.intercepts_[0], -frozen.mean_ @ frozen.coefs_[0], atol=1e-12)
    gap = free.intercepts_[0] + free.mean_ @ free.coefs_[0]
    assert np.max(np.abs(gap)) > 0.1
    # Without a trainable bias, tanh units are odd around the mean: a kink away
    # from it (relu) is fitted worse (measured R^2 0.76 against 0.97).
    assert frozen.score(X, y) < free.score(X, y) - 0.1


@pytest.mark.parametrize("seed", [0, 1])
def test_whiten_recovers_the_subspace_of_correlated_inputs_where_scaling_does_not(
    seed,
):
    # x = A g with an ill-conditioned A; y depends on v.g, i.e. on x through
    # v A^{-1}. Scaling per feature leaves the correlations, where the decay
    # tilts the first layer toward the high-variance directions.
    rng = np.random.default_rng(seed)
    d, n = 6, 1000
    A = rng.standard_normal((d, d)) @ np.diag(np.geomspace(0.1, 10.0, d))
    G = rng.standard_normal((n, d))
    X = G @ A.T
    v = np.linalg.qr(rng.standard_normal((d, 1)))[0].T
    y = np.tanh(2 * G @ v[0]) + 0.1 * rng.standard_normal(n)
    U = v @ np.linalg.inv(A)
    params = {**_FIXED, "random_state": seed}
    white = _fit(StructureDiscoveryRegressor(**params, whiten=True), X, y)
    scaled = _fit(StructureDiscoveryRegressor(**params), X, y)
    # Measured 0.003 / 0.013 whitened, 0.11 / 0.85 scaled.
    assert subspace_distance(white.subspace_, U) < 0.05
    assert (
        subspace_distance(scaled.subspace_, U)
        > 2 * subspace_distance(white.subspace_, U) + 0.05
    )


def test_solver_pgd_is_used_and_certifies():
    # Perturbed gradient descent from the same start reaches the same minimum
    # as L-BFGS (to the looser tol), in more, cheaper iterations.
    X, y, U = _relu_teacher()
    params = {**_FIXED, "tol": 1e-3, "max_iter": 20_000}
    pgd = _fit(StructureDiscoveryRegressor(**params, solver="pgd"), X, y)
    lbfgs = _fit(StructureDiscoveryRegressor(**params), X, y)
    assert pgd.certified_ and pgd.grad_norm_ <= 1e-3
    assert pgd.loss_ == pytest.approx(lbfgs.loss_, rel=1e-2)
    assert subspace_distance(pgd.subspace_, U) < 0.05
    # Measured 326 against 49.
    assert pgd.n_iter_ > 3 * lbfgs.n_iter_


def _lines(out, tag):
    return [line for line in out.splitlines() if line.startswith(tag)]


def test_verbose_prints_the_path_and_the_restarts(capsys):
    X, y, _ = _relu_teacher(n=200)
    params = dict(
        hidden_layer_sizes=6,
        alphas=[1e-2, 1e-1],
        cv=2,
        n_components=1,
        n_init=2,
        random_state=0,
    )
    quiet = _fit(StructureDiscoveryRegressor(**params), X, y)
    assert capsys.readouterr().out == ""
    one = _fit(StructureDiscoveryRegressor(**params, verbose=1), X, y)
    out = capsys.readouterr().out
    tag = "[StructureDiscoveryRegressor]"
    lines = _lines(out, tag)
    # One line per decay on the path, the choice, one line per restart.
    assert len(lines) == 5 and len(out.splitlines()) == 5
    for line, alpha, scores in zip(
        lines[:2], ["0.01", "0.1"], one.cv_scores_, strict=True
    ):
        assert line == (
            f"{tag} alpha {alpha}: mean held-out score {scores.mean():.4f} over 2 folds"
        )
    chosen = one.cv_scores_[list(one.alphas_).index(one.alpha_)]
    assert lines[2] == (
        f"{tag} alpha_={one.alpha_:.3g} (mean held-out score {chosen.mean():.4f})"
    )
    assert lines[3].startswith(f"{tag} restart 1/2: objective ")
    assert lines[4].startswith(f"{tag} restart 2/2: objective ")
    objectives = [
        float(line.split("objective ")[1].split(",")[0]) for line in lines[3:]
    ]
    assert min(objectives) == pytest.approx(one.loss_, rel=1e-5)
    assert "[minimize_sosp]" not in out
    # Printing changes nothing.
    np.testing.assert_array_equal(one.coefs_[0], quiet.coefs_[0])

    two = _fit(StructureDiscoveryRegressor(**params, verbose=2), X, y)
    out = capsys.readouterr().out
    assert _lines(out, tag) == lines
    # The solver's own progress for each restart: its header and its result.
    assert len(_lines(out, "[minimize_sosp] method='lbfgs'")) == 2
    assert len(_lines(out, "[minimize_sosp] Certified")) == 2
    assert len(out.splitlines()) > len(lines) + 4
    np.testing.assert_array_equal(two.coefs_[0], quiet.coefs_[0])

    # With n_components="auto" the choice line names the chosen rank too.
    auto = _fit(
        StructureDiscoveryRegressor(**{**params, "n_components": "auto"}, verbose=1),
        X,
        y,
    )
    lines = _lines(capsys.readouterr().out, tag)
    # Each rank the search tries, as it is scored, then the choice.
    ranks = list(auto.rank_cv_scores_)
    assert len(ranks) >= 1
    tried = lines[2 : 2 + len(ranks)]
    assert sorted(tried) == sorted(
        f"{tag} rank {rank}: mean held-out score "
        f"{auto.rank_cv_scores_[rank].mean():.4f}"
        for rank in ranks
    )
    chosen = lines[2 + len(ranks)]
    assert chosen.startswith(f"{tag} alpha_={auto.alpha_:.3g} (mean held-out")
    assert chosen.endswith(f", n_components_={auto.n_components_}")


def test_alphas_are_the_decays_tried():
    X, y, _ = _relu_teacher(n=200)
    params = dict(hidden_layer_sizes=6, cv=2, n_components=1, random_state=0)
    est = _fit(StructureDiscoveryRegressor(**params, alphas=[0.3, 1e-3, 0.03]), X, y)
    assert_allclose(est.alphas_, [1e-3, 0.03, 0.3])  # sorted: the path goes up
    assert est.cv_scores_.shape == (3, 2)
    assert est.alpha_ in est.alphas_
    # A single decay is the only choice: the fit is at that decay.
    only = _fit(StructureDiscoveryRegressor(**params, alphas=[0.07]), X, y)
    assert only.alpha_ == 0.07 and only.curvature_tol_ == 0.07
    assert_allclose(only.alphas_, [0.07])


def test_cv_int_splitter_and_iterable():
    from sklearn.model_selection import KFold, StratifiedKFold

    X, y, _ = _relu_teacher(n=150)
    params = dict(hidden_layer_sizes=4, alphas=[1e-2, 1e-1], n_components=1)
    params["random_state"] = 0
    as_int = _fit(StructureDiscoveryRegressor(**params, cv=3), X, y)
    assert as_int.cv_scores_.shape == (2, 3)
    # An int is KFold for a regressor (no shuffling), as in check_cv.
    kfold = _fit(StructureDiscoveryRegressor(**params, cv=KFold(3)), X, y)
    np.testing.assert_array_equal(as_int.cv_scores_, kfold.cv_scores_)
    splits = list(KFold(3).split(X))
    listed = _fit(StructureDiscoveryRegressor(**params, cv=splits), X, y)
    np.testing.assert_array_equal(as_int.cv_scores_, listed.cv_scores_)
    # Other folds, other held-out scores: the splitter is what is used.
    shuffled = _fit(
        StructureDiscoveryRegressor(
            **params, cv=KFold(3, shuffle=True, random_state=0)
        ),
        X,
        y,
    )
    assert np.max(np.abs(shuffled.cv_scores_ - as_int.cv_scores_)) > 1e-3
    # For the classifier an int means stratified folds.
    labels = np.where(y > np.quantile(y, 0.8), "high", "low")  # unbalanced
    clf = dict(params, hidden_layer_sizes=4)
    as_int = _fit(StructureDiscoveryClassifier(**clf, cv=3), X, labels)
    strat = _fit(StructureDiscoveryClassifier(**clf, cv=StratifiedKFold(3)), X, labels)
    np.testing.assert_array_equal(as_int.cv_scores_, strat.cv_scores_)


# ------------------------------------------------------------- large tables


def _recording_folds(monkeypatch):
    """Record the rows (and targets) each cross-validation fold was built from."""
    seen = []
    original = _structure_discovery._Fold.__init__

    def init(self, X, Y, train, test, **kwargs):
        seen.append((X.shape[0], Y))
        original(self, X, Y, train, test, **kwargs)

    monkeypatch.setattr(_structure_discovery._Fold, "__init__", init)
    return seen


@pytest.mark.parametrize("seed", [0, 1])
def test_choice_on_a_subsample_then_refit_on_every_row(monkeypatch, seed):
    # 3,000 rows, choice on 800 of them: the folds see 800 rows, the refit all
    # 3,000, and the planted subspace and its dimension are still found.
    X, y, U = make_multi_index_regression(
        3000, 10, link="tanh+square", random_state=seed
    )
    seen = _recording_folds(monkeypatch)
    refits = []
    original = _structure_discovery._BaseStructureDiscovery._certified_refit

    def refit(self, Xw, *args):
        refits.append(Xw.shape[0])
        return original(self, Xw, *args)

    monkeypatch.setattr(
        _structure_discovery._BaseStructureDiscovery, "_certified_refit", refit
    )
    params = dict(hidden_layer_sizes=16, random_state=seed)
    est = _fit(StructureDiscoveryRegressor(**params, cv_max_samples=800), X, y)
    assert [rows for rows, _ in seen] == [800] * 5
    assert refits == [3000]
    assert est.n_components_ == 2
    assert subspace_distance(est.subspace_, U) < 0.1
    assert est.certified_
    # None chooses on every row.
    seen.clear()
    StructureDiscoveryRegressor(
        **params, cv_max_samples=None, alphas=[0.01], n_components=2
    ).fit(X, y)
    assert [rows for rows, _ in seen] == [3000] * 5


def test_classifier_subsample_keeps_the_class_proportions(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 5))
    # 10 % positives.
    y = (X[:, 0] > np.quantile(X[:, 0], 0.9)).astype(int)
    seen = _recording_folds(monkeypatch)
    StructureDiscoveryClassifier(
        hidden_layer_sizes=8,
        alphas=[0.01],
        n_components=1,
        cv_max_samples=500,
        random_state=0,
    ).fit(X, y)
    rows, Y = seen[0]
    assert rows == 500
    assert Y[:, 0].sum() == pytest.approx(50, abs=1)
