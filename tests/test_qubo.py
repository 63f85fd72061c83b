"""DeterministicQUBO, its tabu search, the QUBO / WCNF readers and the command."""

import csv
import io
import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse

from skderand import DeterministicQUBO
from skderand._cli import main as cli_main
from skderand._cli import qubo_main
from skderand.derandomize import IsingExpectation, clauses_to_ising
from skderand.qubo import _tabu, read_qubo, read_wcnf
from skderand.qubo._tabu import coupling_matrix, ising_value, tabu_search

ORLIB = Path(__file__).parents[1] / ".." / "shared" / "data" / "orlib-bqp"


def _brute_force(Q):
    """``(min, max)`` of ``x^T Q x`` over every ``x`` in {0, 1}^n."""
    points = np.array(list(itertools.product((0.0, 1.0), repeat=Q.shape[0])))
    values = np.einsum("ki,ij,kj->k", points, Q, points)
    return values.min(), values.max()


def _random_qubo(n, seed, density=0.6):
    rng = np.random.default_rng(seed)
    Q = rng.integers(-20, 21, (n, n)).astype(float)
    return Q * (rng.random((n, n)) < density)


def _limit_available_memory(monkeypatch, n_bytes):
    from skderand import _memory

    monkeypatch.setattr(_memory, "available_memory", lambda: n_bytes)


# ------------------------------------------------------------- the estimator


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sense", ["minimize", "maximize"])
def test_optimum_and_bound_on_small_qubos(seed, sense):
    # Asymmetric, signed, with a diagonal: the exact optimum by enumeration;
    # the reported value is the solution's, the bound on the right side of it.
    Q = _random_qubo(11, seed)
    low, high = _brute_force(Q)
    qubo = DeterministicQUBO(sense=sense).fit(Q)
    x = qubo.solution_
    assert set(np.unique(x)) <= {0.0, 1.0} and x.shape == (11,)
    assert qubo.value_ == pytest.approx(x @ Q @ x, abs=1e-9)
    if sense == "minimize":
        assert qubo.value_ == pytest.approx(low, abs=1e-9)
        assert qubo.bound_ <= low + 1e-6 and qubo.rounded_value_ >= low - 1e-9
    else:
        assert qubo.value_ == pytest.approx(high, abs=1e-9)
        assert qubo.bound_ >= high - 1e-6 and qubo.rounded_value_ <= high + 1e-9
    # The lemma can hold with equality (the gradient all in V): round-off only.
    assert qubo.certified_ and qubo.v_norm_ <= qubo.v_norm_bound_ * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_rounding_alone_is_the_derandomized_solution(seed):
    # Without the tabu search the solution is the rounding's, and the
    # rounding's finishing step keeps it at least F(0, mu) of the cut it
    # solves (checked on the fitted cut of n + 1 vertices).
    Q = _random_qubo(40, seed, density=0.3)
    qubo = DeterministicQUBO(sense="maximize", local_search=None).fit(Q)
    x = qubo.solution_
    # Integer Q: every value is exact, not merely close.
    assert qubo.value_ == qubo.rounded_value_ == x @ Q @ x
    best = DeterministicQUBO(sense="maximize").fit(Q)
    assert best.value_ >= qubo.value_ - 1e-9


def test_asymmetric_matrix_is_read_through_its_symmetric_part():
    Q = _random_qubo(12, 3)
    a = DeterministicQUBO().fit(Q)
    b = DeterministicQUBO().fit((Q + Q.T) / 2)
    assert a.value_ == pytest.approx(b.value_, abs=1e-9)
    assert a.bound_ == pytest.approx(b.bound_, rel=1e-6)


def test_sparse_and_dense_input_agree_and_input_is_not_modified():
    Q = _random_qubo(15, 4, density=0.3)
    copy = Q.copy()
    dense = DeterministicQUBO().fit(Q)
    np.testing.assert_array_equal(Q, copy)
    for container in (sparse.csr_matrix, sparse.coo_matrix, sparse.csc_matrix):
        fitted = DeterministicQUBO().fit(container(Q))
        assert fitted.value_ == pytest.approx(dense.value_, abs=1e-9)


def test_fit_ising_matches_the_qubo_it_came_from():
    # The same problem given as spins: offset + h.t + t^T J t at x = (1 + t)/2.
    Q = _random_qubo(10, 5)
    ising = IsingExpectation.from_qubo(Q)
    spins = DeterministicQUBO().fit_ising(ising.h, ising.J, ising.offset)
    assert spins.vartype_ == "SPIN" and set(np.unique(spins.solution_)) <= {-1, 1}
    assert spins.value_ == pytest.approx(_brute_force(Q)[0], abs=1e-9)
    t = spins.solution_
    assert spins.value_ == pytest.approx(
        ising.offset + ising.h @ t + t @ ising.J @ t, abs=1e-9
    )


def test_max2sat_through_the_ising_form():
    # Random MAX-2-SAT: the optimum by enumeration, reached; the bound above it.
    rng = np.random.default_rng(0)
    n = 10
    clauses = [
        tuple(int(v) * int(rng.choice([-1, 1])) for v in rng.choice(n, 2, False) + 1)
        for _ in range(45)
    ]
    h, J, offset = clauses_to_ising(clauses)
    fitted = DeterministicQUBO(sense="maximize").fit_ising(h, J, offset)
    best = 0
    for bits in itertools.product((False, True), repeat=n):
        held = sum(any(bits[abs(lit) - 1] == (lit > 0) for lit in c) for c in clauses)
        best = max(best, held)
    assert fitted.value_ == best and fitted.bound_ >= best - 1e-6


@pytest.mark.parametrize("vartype", ["BINARY", "SPIN"])
def test_dimod_models_are_solved_as_energies(vartype):
    dimod = pytest.importorskip("dimod")
    rng = np.random.default_rng(1)
    linear = {f"v{i}": float(rng.integers(-5, 6)) for i in range(8)}
    quadratic = {
        (f"v{i}", f"v{j}"): float(rng.integers(-5, 6))
        for i, j in itertools.combinations(range(8), 2)
        if rng.random() < 0.6
    }
    bqm = dimod.BinaryQuadraticModel(linear, quadratic, 1.5, vartype)
    fitted = DeterministicQUBO().fit(bqm)
    sample = dict(zip(fitted.variables_, fitted.solution_, strict=True))
    assert fitted.value_ == pytest.approx(bqm.energy(sample), abs=1e-9)
    lowest = dimod.ExactSolver().sample(bqm).first.energy
    assert fitted.value_ == pytest.approx(lowest, abs=1e-9)
    assert fitted.bound_ <= lowest + 1e-6


@pytest.mark.parametrize(
    "X, message",
    [
        (np.ones((3, 4)), "square"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
        (np.array([[1.0, np.inf], [0.0, 1.0]]), "infinity"),
        (np.zeros((0, 0)), "0 sample"),
    ],
)
def test_bad_matrices_are_refused(X, message):
    with pytest.raises(ValueError, match=message):
        DeterministicQUBO().fit(X)


def test_too_large_a_problem_is_refused_up_front(monkeypatch):
    _limit_available_memory(monkeypatch, 2**20)
    with pytest.raises(ValueError, match=r"DeterministicQUBO on 300 variables"):
        DeterministicQUBO().fit(_random_qubo(300, 0, density=0.1))


# ------------------------------------------------------------- tabu search


@pytest.mark.parametrize("chains", [2, 32])
@pytest.mark.parametrize("seed", range(3))
def test_tabu_value_is_exact_and_never_below_the_start(monkeypatch, seed, chains):
    # With 2 chains side by side, ended phases hand their rows to new ones.
    monkeypatch.setattr(_tabu, "_CHAINS", chains)
    rng = np.random.default_rng(seed)
    n = 60
    J = rng.standard_normal((n, n))
    K = coupling_matrix(J)
    np.testing.assert_allclose(K, K.T)
    assert np.all(np.diag(K) == 0)
    h = rng.standard_normal(n)
    start = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    for couplings in (K, sparse.csr_matrix(K)):
        t, value = tabu_search(h, couplings, 2.0, start, n_restarts=4, rng=rng)
        assert value == pytest.approx(ising_value(h, K, 2.0, t), abs=1e-9)
        assert value >= ising_value(h, K, 2.0, start)
        # A local optimum: no single flip gains.
        gains = -2 * t * (h + 2 * K @ t)
        assert gains.max() <= 1e-9


# ------------------------------------------------------------- OR-Library


def _best_known():
    with open(ORLIB / "best_known.csv") as f:
        return {
            (r["file"], int(r["instance"])): float(r["best_known"])
            for r in csv.DictReader(f)
        }


@pytest.mark.skipif(not ORLIB.exists(), reason="shared OR-Library data not present")
def test_bqp50_best_known_reached_and_bounded():
    best = _best_known()
    matrices = read_qubo(ORLIB / "bqp50.txt")
    assert len(matrices) == 10
    for k, Q in enumerate(matrices, start=1):
        qubo = DeterministicQUBO(sense="maximize").fit(Q)
        assert qubo.value_ == best[("bqp50", k)]
        assert qubo.bound_ >= best[("bqp50", k)]


# ------------------------------------------------------------- readers


def test_read_qubo_formats():
    [plain] = read_qubo(io.StringIO("1 1 -1\n1 2 3\n# a comment\n2 1 1\n"))
    np.testing.assert_array_equal(plain.toarray(), [[-1, 3], [1, 0]])
    [header] = read_qubo(io.StringIO("3 1\n2 2 5\n"))
    assert header.shape == (3, 3) and header[1, 1] == 5
    two = read_qubo(io.StringIO("2\n2 2\n1 1 4\n1 2 -3\n1 1\n1 1 7\n"))
    np.testing.assert_array_equal(two[0].toarray(), [[4, -3], [-3, 0]])
    np.testing.assert_array_equal(two[1].toarray(), [[7]])


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("2 2\n1 1 1\n", "announces 2 entries but 1"),
        ("2 1\n1 3 1\n", r"1\.\.2"),
        ("2 1\n1 x 1\n", "not numeric"),
        ("2 1\n1 2 nan\n", "finite"),
        ("2\n2 1\n1 1 1\n", "2 instances announced"),
        ("1\n2 2\n1 1 1\n", "announces 2 lines"),
        ("x\n", "number of instances"),
    ],
)
def test_read_qubo_errors_name_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        read_qubo(io.StringIO(text))


def test_read_qubo_refuses_a_huge_header_before_allocating(monkeypatch):
    import tracemalloc

    # Row pointers alone: 4 GB for 10**9 variables.
    _limit_available_memory(monkeypatch, 2 * 2**30)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"1,000,000,000 variables.*GiB"):
            read_qubo(io.StringIO("1\n1000000000 1\n1 1 5\n"))
        with pytest.raises(ValueError, match=r"largest index is 1,000,000,000"):
            read_qubo(io.StringIO("1 1 5\n1 1000000000 3\n"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20


def test_read_wcnf():
    text = "c a comment\np wcnf 3 4 100\n2 1 -3 0\n1 2 0\n100 -1 0\n5 3 3 0\n"
    clauses, weights, n = read_wcnf(io.StringIO(text))
    assert clauses == [(1, -3), (2,), (-1,), (3, 3)] and n == 3
    np.testing.assert_array_equal(weights, [2, 1, 100, 5])
    clauses, weights, n = read_wcnf(io.StringIO("h 1 2 0\n3 -2 0\n"))
    assert n == 2 and weights.tolist() == [4.0, 3.0]


@pytest.mark.parametrize(
    "text, message",
    [
        ("p wcnf 3 1\n1 1 2 3 0\n", "3 literals"),
        ("p wcnf 2 1\n1 1 3 0\n", "variable 3, beyond"),
        ("p wcnf 2 1\n1 1 2\n", "must end with 0"),
        ("p wcnf 2 2\n1 1 2 0\n", "announces 2 clauses but 1"),
        ("p cnf 2 1\n1 2 0\n", "p wcnf"),
        ("p wcnf 2 1\nx 1 0\n", "not numeric"),
    ],
)
def test_read_wcnf_errors_name_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        read_wcnf(io.StringIO(text))


def test_read_wcnf_refuses_a_huge_header(monkeypatch):
    _limit_available_memory(monkeypatch, 2**30)
    with pytest.raises(ValueError, match=r"1,000,000,000 variables"):
        read_wcnf(io.StringIO("p wcnf 1000000000 1\n1 1 0\n"))


# ------------------------------------------------------------- command


def test_command_solves_and_writes_the_solution(tmp_path, capsys):
    path = tmp_path / "q.txt"
    path.write_text("1 1 -1\n1 2 3\n2 2 -1\n")
    out = tmp_path / "x.txt"
    assert cli_main(["qubo", str(path), "--solution", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "value" in printed and "certified bound" in printed
    assert np.loadtxt(out).tolist() == [0.0, 1.0] or np.loadtxt(out).tolist() == [
        1.0,
        0.0,
    ]


@pytest.mark.parametrize(
    "text, args",
    [
        ("1 2\n", []),
        ("1\n1000000000 1\n1 1 5\n", []),
        ("1 1 5\n1 1000000000 3\n", []),
        ("1 1 5\n", ["--instance", "2"]),
    ],
)
def test_command_errors_are_one_line_with_status_2(tmp_path, capsys, text, args):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    assert qubo_main([str(path), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
