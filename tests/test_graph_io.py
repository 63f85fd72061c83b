"""Tests of the Gset edge-list reader and writer and the networkx conversion."""

import io
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse

from skderand.maxcut import graph_to_adjacency, read_gset, write_gset

GSET = Path(__file__).parents[1] / ".." / "shared" / "data" / "gset"


def random_graph(n, density, seed, integral=True):
    rng = np.random.default_rng(seed)
    upper = sparse.triu(
        sparse.random(n, n, density=density, random_state=rng), k=1
    ).tocsr()
    if integral:
        upper.data = rng.choice([-2.0, -1.0, 1.0, 3.0], size=upper.nnz)
    else:
        upper.data = rng.standard_normal(upper.nnz)
    return (upper + upper.T).tocsr()


@pytest.mark.parametrize("integral", [True, False])
def test_round_trip(tmp_path, integral):
    A = random_graph(50, 0.1, 0, integral)
    path = tmp_path / "graph.txt"
    write_gset(path, A)
    B = read_gset(path)
    assert B.shape == A.shape
    np.testing.assert_array_equal(B.toarray(), A.toarray())  # repr is exact
    header = path.read_text().splitlines()[0]
    assert header == f"50 {A.nnz // 2}"


def test_round_trip_file_objects_and_dense_input():
    A = random_graph(20, 0.3, 1).toarray()
    A[3, 3] = 5.0  # the diagonal is not written
    buffer = io.StringIO()
    write_gset(buffer, A)
    B = read_gset(io.StringIO(buffer.getvalue()))
    np.fill_diagonal(A, 0.0)
    np.testing.assert_array_equal(B.toarray(), A)


def test_gset_file_matches_header():
    path = GSET / "G11.txt"
    if not path.exists():
        pytest.skip("Gset data not available")
    A = read_gset(path)
    assert A.shape == (800, 800) and A.nnz == 2 * 1600
    np.testing.assert_array_equal((A - A.T).data, 0)
    assert set(np.unique(A.data)) <= {-1.0, 1.0}


def test_missing_weight_means_one_and_comments_skipped():
    A = read_gset(io.StringIO("# a comment\n3 2\n1 2\n2 3 4\n"))
    np.testing.assert_array_equal(A.toarray(), [[0, 1, 0], [1, 0, 4], [0, 4, 0]])


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "empty"),
        ("three 2\n", "first line"),
        ("3 2\n1 2 1\n", "announces 2 edges"),
        ("3 1\n1 4 1\n", "1..3"),
        ("3 1\n0 2 1\n", "1..3"),
        ("3 1\n1 2 x\n", "not numeric"),
        ("3 1\n1 2 nan\n", "finite"),
        ("3 1\n1 2 1 7\n", "'i j w'"),
    ],
)
def test_malformed_files(text, match):
    with pytest.raises(ValueError, match=match):
        read_gset(io.StringIO(text))


def test_write_rejects_non_square():
    with pytest.raises(ValueError, match="square"):
        write_gset(io.StringIO(), np.zeros((2, 3)))


def test_networkx_conversion():
    nx = pytest.importorskip("networkx")
    graph = nx.Graph()
    graph.add_edge("a", "b", weight=2.0)
    graph.add_edge("b", "c")
    graph.add_edge("c", "c", weight=9.0)
    A = graph_to_adjacency(graph)
    np.testing.assert_array_equal(A.toarray(), [[0, 2, 0], [2, 0, 1], [0, 1, 0]])
    with pytest.raises(TypeError, match="networkx"):
        graph_to_adjacency(np.eye(2))


def _limit_available_memory(monkeypatch, n_bytes):
    """Make the memory checks see ``n_bytes`` available, on any machine."""
    from skderand import _memory

    monkeypatch.setattr(_memory, "available_memory", lambda: n_bytes)


def test_huge_header_refused_before_any_allocation(tmp_path, monkeypatch):
    import tracemalloc

    path = tmp_path / "huge.txt"
    path.write_text("2000000000 1\n1 2000000000 1\n")  # 28 bytes
    # Its adjacency alone needs 8 GB of row pointers.
    _limit_available_memory(monkeypatch, 4 * 2**30)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"2,000,000,000 vertices.*GiB of memory"):
            read_gset(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A row pointer per announced vertex alone would be 8 GB: nothing of that
    # size was allocated before the refusal.
    assert peak < 2**20


def test_header_within_memory_is_read(monkeypatch):
    # The same check lets through what fits: isolated vertices cost only their
    # row pointers.
    _limit_available_memory(monkeypatch, 16 * 2**30)
    A = read_gset(io.StringIO("100000 1\n1 100000 2\n"))
    assert A.shape == (100_000, 100_000) and A.nnz == 2
