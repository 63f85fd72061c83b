"""Record the golden outputs of LearnedJLTransformer: ``learned_jl_golden.npz``.

One small fit per regime of ``skderand/embedding/`` (see ``CASES``), each
reached through public parameters and the size of its data alone. The test
``tests/test_learned_jl_golden.py`` fits the same cases again and compares
``components_``, ``distortion_``, ``n_components_``, ``n_iter_`` and
``certified_`` with these records, to within round-off.

When to re-record: only when a change is *meant* to change what a fit
returns (a new heuristic, a bug fix), and then in the same commit as that
change, saying so in its message. A refactoring must leave the records as they
are: the golden test is what proves it changed nothing. The fits' paths
follow the round-off of the BLAS library, so the records hold for the
environment they were made in (saved in the file as ``environment``): on
another CPU or BLAS the test may fail without any change to the code, and the
records are then re-made there, before the change under test.

Run from the repository's root, with one BLAS thread (the script sets it)::

    python tests/data/make_learned_jl_golden.py
"""

import platform
import warnings
from pathlib import Path

import numpy as np
from scipy import sparse

# Imported before any BLAS limit is set: threadpoolctl limits only the
# libraries loaded when the limit is entered, and skderand loads scipy's.
from skderand import LearnedJLTransformer

GOLDEN_PATH = Path(__file__).with_name("learned_jl_golden.npz")

# The attributes recorded per case; floats compared to within round-off, the
# int and the bool exactly.
ATTRIBUTES = ("components_", "distortion_", "n_components_", "n_iter_", "certified_")


def _gaussian(n, d, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def _spread(n, d, seed=0):
    # Column standard deviations over 2.5 decades: principal variances spread
    # over more than WHITEN_SPREAD, so the solves run in whitened coordinates.
    return _gaussian(n, d, seed) * np.logspace(0.0, -2.5, d)


def _large_sparse(seed=0):
    # n * d above SPARSE_DENSIFY_ELEMENTS with n < d: the span comes from the
    # rows' Gram matrix and is never densified; with n - 1 >= EMBEDDED_MIN_RANK
    # dimensions and k small, every solve runs on the embedded points in the
    # pivoted Cholesky basis.
    return sparse.random(300, 14_000, density=0.002, format="csr", random_state=seed)


# name: (data, parameters of LearnedJLTransformer). Each comment says what
# puts the fit in its regime (the thresholds are in _active.py and _pairs.py).
CASES = {
    # 1,770 pairs, at most working_set: every pair in the objective, through
    # the Gram matrix with the pair-vector arithmetic (fewer than
    # LEAN_MIN_PAIRS pairs).
    "all_pairs": (lambda: _gaussian(60, 200), {"n_components": 10}),
    # 11,175 pairs, at most COMPLETE_PER_VARIABLE per variable (15 x 40): every
    # pair active, at least LEAN_MIN_PAIRS of them: the lean Gram-form
    # evaluation.
    "gram_form": (lambda: _gaussian(150, 40, seed=1), {"n_components": 15}),
    # 7,140 pairs, more than working_set and COMPLETE_PER_VARIABLE per
    # variable: active-set rounds with blocked passes over all pairs.
    "active_set": (lambda: _gaussian(120, 4, seed=2), {"n_components": 3}),
    # A span of n - 1 >= EMBEDDED_MIN_RANK dimensions, near isotropic (d well
    # above n), pairs not all active: the rounds solve on the embedded points,
    # in a QR basis.
    "embedded": (
        lambda: _gaussian(260, 800, seed=3),
        {"n_components": 3, "max_iter": 300},
    ),
    # Principal variances spread over more than WHITEN_SPREAD.
    "whitened": (lambda: _spread(80, 12, seed=4), {"n_components": 4}),
    # Large sparse input (see _large_sparse).
    "sparse": (_large_sparse, {"n_components": 2, "max_iter": 300}),
    "derandomized": (
        lambda: _gaussian(60, 200, seed=5),
        {"n_components": 10, "algorithm": "derandomized"},
    ),
    "n_init_n_jobs": (
        lambda: _gaussian(40, 30, seed=6),
        {"n_components": 5, "n_init": 2, "n_jobs": 2},
    ),
    "auto": (lambda: _gaussian(40, 30, seed=7), {"n_components": "auto", "eps": 0.3}),
}


def fit_case(name):
    """Fit case ``name`` (seeded) and return its recorded attributes.

    The caller sets one BLAS thread: the fits' paths follow its round-off.
    """
    make_data, params = CASES[name]
    X = make_data()
    jl = LearnedJLTransformer(random_state=0, **params)
    with warnings.catch_warnings():
        # An uncertified fit is recorded as it is (certified_ says so).
        warnings.simplefilter("ignore")
        jl.fit(X)
    return {attribute: getattr(jl, attribute) for attribute in ATTRIBUTES}


def environment():
    """The versions the records' round-off depends on, for failure messages."""
    import scipy
    from threadpoolctl import threadpool_info

    blas = [
        f"{info['internal_api']} {info['version']} ({info.get('architecture')})"
        for info in threadpool_info()
        if info["user_api"] == "blas"
    ]
    return (
        f"numpy {np.__version__}, scipy {scipy.__version__}, "
        f"{', '.join(blas)}, {platform.machine()}"
    )


def main():
    from threadpoolctl import threadpool_limits

    records = {"environment": np.array(environment())}
    with threadpool_limits(limits=1, user_api="blas"):
        for name in CASES:
            for attribute, value in fit_case(name).items():
                records[f"{name}/{attribute}"] = np.asarray(value)
    np.savez_compressed(GOLDEN_PATH, **records)
    print(f"wrote {GOLDEN_PATH} ({GOLDEN_PATH.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
