"""Numerical hygiene and memory on the benchmark data sets (slow: run by CI).

Fitting must emit no RuntimeWarning (overflow, division by zero, invalid value) on
any benchmark data set: every data set and target dimension of
``benchmarks/bench_jl.py`` for both algorithms of LearnedJLTransformer, and every
teacher of ``benchmarks/bench_structure_discovery.py`` at d = 50, n = 2000 for
StructureDiscoveryRegressor. The data come from the benchmark modules themselves,
so there is one definition of each set. (Every Gset graph is fitted once, under
the same rule, by ``test_gset_all`` in ``tests/test_maxcut.py``.)

A few of those fits also have their peak memory measured by tracemalloc (which sees
numpy's allocations; it slows fits down, so the sweeps run without it): it must
stay within the bounds stated here, far below the dense n x n matrices that the
methods avoid.

ConvergenceWarnings are not what these tests check: they point at the line that
called ``fit`` (in this module), so they show in pytest's warnings summary and
fail nothing here.
"""

import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from benchmarks.bench_jl import N_COMPONENTS as JL_N_COMPONENTS
from benchmarks.bench_jl import datasets as jl_datasets
from benchmarks.bench_structure_discovery import table_teacher
from skderand import (
    DeterministicMaxCut,
    LearnedJLTransformer,
    StructureDiscoveryRegressor,
)
from skderand.datasets import MULTI_INDEX_LINKS
from skderand.maxcut import read_gset

GSET = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "gset"

# The data sets (built once), target dimensions and algorithms of bench_jl.main().
JL_DATA = jl_datasets()
JL_ALGORITHMS = ("direct", "derandomized")
JL_CASES = [
    (name, k) for name, X in JL_DATA.items() for k in JL_N_COMPONENTS if k < X.shape[1]
]

# The size of bench_structure_discovery.py's table that these tests use.
SD_D, SD_N = 50, 2000

pytestmark = pytest.mark.slow


def _fit_strict(est, X, y=None):
    """Fit with RuntimeWarning an error and numpy warning on overflow, divide and
    invalid. Other warnings pass on to pytest's warnings summary."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with np.errstate(over="warn", divide="warn", invalid="warn", under="ignore"):
            est.fit(X, y)
    return est


def _fit_strict_peak_mib(est, X, y=None):
    """``_fit_strict`` under tracemalloc; return the peak traced memory in MiB."""
    tracemalloc.start()
    try:
        _fit_strict(est, X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / 2**20


def _gset(graph):
    path = GSET / f"{graph}.txt"
    if not path.exists():
        pytest.skip("Gset graphs not available")
    return read_gset(path)


@pytest.mark.parametrize("graph, bound_mib", [("G11", 50), ("G22", 100)])
def test_maxcut_on_gset_no_runtime_warning_and_bounded_memory(graph, bound_mib):
    adjacency = _gset(graph)
    est = DeterministicMaxCut(affinity="precomputed")
    peak = _fit_strict_peak_mib(est, adjacency)
    n = adjacency.shape[0]
    dense_sdp_mib = n * n * 8 / 2**20
    print(f"{graph}: peak {peak:.1f} MiB (one dense n x n matrix: {dense_sdp_mib:.1f})")
    assert peak < bound_mib


@pytest.mark.parametrize("algorithm", JL_ALGORITHMS)
@pytest.mark.parametrize("dataset, k", JL_CASES)
def test_learned_jl_on_bench_data_no_runtime_warning(dataset, k, algorithm):
    X = JL_DATA[dataset]
    _fit_strict(LearnedJLTransformer(k, algorithm=algorithm, random_state=0), X)


@pytest.mark.parametrize("k", [10, 20])
def test_learned_jl_on_digits_no_runtime_warning_and_bounded_memory(k):
    X = load_digits().data
    est = LearnedJLTransformer(n_components=k, random_state=0)
    peak = _fit_strict_peak_mib(est, X)
    print(f"digits k={k}: peak {peak:.1f} MiB")
    # All-pairs distances of 1797 points would be 1797^2 * 8 B = 25 MiB per
    # matrix; the working set keeps the peak to a few such matrices.
    assert peak < 200


def _teacher(name):
    X, y, _ = table_teacher(name, SD_D, SD_N)
    return X, y


@pytest.mark.parametrize("teacher", list(MULTI_INDEX_LINKS))
def test_structure_discovery_on_bench_teachers_no_runtime_warning(teacher):
    X, y = _teacher(teacher)
    _fit_strict(StructureDiscoveryRegressor(random_state=0), X, y)


def test_structure_discovery_bounded_memory():
    X, y = _teacher("tanh+square")
    peak = _fit_strict_peak_mib(StructureDiscoveryRegressor(random_state=0), X, y)
    print(f"structure discovery n={SD_N} d={SD_D}: peak {peak:.1f} MiB")
    assert peak < 500
