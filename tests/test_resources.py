"""Numerical hygiene and memory on the benchmark data sets (slow: run by CI).

Fits must emit no RuntimeWarning (overflow, division by zero, invalid value), and
their peak memory, measured by tracemalloc (which sees numpy's allocations), must
stay within the bounds stated here: far below the dense n x n matrices that the
methods avoid.
"""

import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from skderand import (
    DeterministicMaxCut,
    LearnedJLTransformer,
    StructureDiscoveryRegressor,
)
from skderand.maxcut import read_gset

GSET = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "gset"

pytestmark = pytest.mark.slow


def _fit_strict(est, X, y=None):
    """Fit with RuntimeWarning as an error; return the peak traced memory in MiB."""
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            with np.errstate(
                over="warn", divide="warn", invalid="warn", under="ignore"
            ):
                est.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / 2**20


@pytest.mark.parametrize("graph, bound_mib", [("G11", 50), ("G22", 100)])
def test_maxcut_on_gset_no_runtime_warning_and_bounded_memory(graph, bound_mib):
    path = GSET / f"{graph}.txt"
    if not path.exists():
        pytest.skip("Gset graphs not available")
    adjacency = read_gset(path)
    est = DeterministicMaxCut(affinity="precomputed")
    peak = _fit_strict(est, adjacency)
    n = adjacency.shape[0]
    dense_sdp_mib = n * n * 8 / 2**20
    print(f"{graph}: peak {peak:.1f} MiB (one dense n x n matrix: {dense_sdp_mib:.1f})")
    assert peak < bound_mib


@pytest.mark.parametrize("k", [10, 20])
def test_learned_jl_on_digits_no_runtime_warning_and_bounded_memory(k):
    X = load_digits().data
    est = LearnedJLTransformer(n_components=k, random_state=0)
    peak = _fit_strict(est, X)
    print(f"digits k={k}: peak {peak:.1f} MiB")
    # All-pairs distances of 1797 points would be 1797^2 * 8 B = 25 MiB per
    # matrix; the working set keeps the peak to a few such matrices.
    assert peak < 200


@pytest.mark.parametrize("seed", [0, 1])
def test_structure_discovery_on_teachers_no_runtime_warning(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((2000, 50))
    u = np.linalg.qr(rng.standard_normal((50, 2)))[0].T
    y = np.tanh(X @ u[0]) + 0.5 * (X @ u[1]) ** 2 + 0.1 * rng.standard_normal(2000)
    peak = _fit_strict(StructureDiscoveryRegressor(random_state=seed), X, y)
    print(f"structure discovery n=2000 d=50: peak {peak:.1f} MiB")
    assert peak < 500
