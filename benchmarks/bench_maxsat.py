"""Derandomized MAX-2-SAT against Goemans-Williamson's rounding and RC2's optimum.

Seeded random MAX-2-SAT instances (each clause two distinct variables, signs at
random, unit weights), n = 30 ... 1,000 variables and clause ratios m / n = 2 ...
10. For each, in one run: the exact expectation of the randomized rounding of
the relaxation (``x_i = [sign(v_i . z) = sign(v_0 . z)]``), the best of 100
such roundings, the derandomized rounding alone
(``DeterministicQUBO(local_search=None)`` on :func:`clauses_to_ising`), the
default fit and its certified bound, and for n <= 60 and m <= 250 the exact
optimum by python-sat's RC2 (MaxSAT by core relaxation) with its time.

Run from the repository root, one BLAS thread, on an idle machine::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/bench_maxsat.py
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from skderand import DeterministicQUBO
from skderand.derandomize import clauses_to_ising

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _resources import machine_conditions  # noqa: E402

SIZES = (30, 40, 50, 60, 100, 200, 500, 1000)
RATIOS = (2, 4, 6, 10)
EXACT_MAX_N = 60
# RC2's time grows steeply with the clauses: seconds at m = 200, tens of
# seconds at m = 300 and n = 50 on a 2-core machine.
EXACT_MAX_M = 250
N_ROUNDINGS = 100


def instance(n, m, seed):
    rng = np.random.default_rng(seed)
    clauses = []
    for _ in range(m):
        variables = rng.choice(n, 2, replace=False) + 1
        signs = rng.choice([-1, 1], 2)
        clauses.append(tuple(int(v * s) for v, s in zip(variables, signs, strict=True)))
    return clauses


def satisfied(clauses, truth):
    """Clauses satisfied by each column of ``truth`` (n x k booleans)."""
    literals = np.array(clauses)
    index, positive = np.abs(literals) - 1, literals > 0
    held = truth[index] == positive[:, :, None]
    return held.any(axis=1).sum(axis=0)


def fit(h, J, offset, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the table's "cert" column reports it
        start = time.perf_counter()
        est = DeterministicQUBO(sense="maximize", **params).fit_ising(h, J, offset)
        est.seconds = time.perf_counter() - start
    return est


def best_of_roundings(est, clauses, rng):
    V = est.cut_estimator_.sdp_vectors_
    signs = np.sign(V @ rng.standard_normal((V.shape[1], N_ROUNDINGS)))
    return int(satisfied(clauses, signs[1:] == signs[:1]).max())


def exact(clauses):
    from pysat.examples.rc2 import RC2
    from pysat.formula import WCNF

    wcnf = WCNF()
    for clause in clauses:
        wcnf.append(list(clause), weight=1)
    start = time.perf_counter()
    with RC2(wcnf) as solver:
        solver.compute()
        cost = solver.cost
    return len(clauses) - cost, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--ratios", default=",".join(map(str, RATIOS)))
    parser.add_argument(
        "--exact-max-m",
        type=int,
        default=EXACT_MAX_M,
        help="RC2 on instances of at most this many clauses (and n <= 60); 0 skips it",
    )
    args = parser.parse_args(argv)
    print(f"# bench_maxsat.py; {machine_conditions()}")
    print(
        "# random MAX-2-SAT, unit weights. E[GW]: exact expectation of the "
        f"randomized rounding; best{N_ROUNDINGS}: best of {N_ROUNDINGS} roundings; "
        "derand: the derandomized rounding alone; ours: the defaults (with the "
        "tabu search); bound: certified upper bound; RC2: exact optimum "
        f"(n <= {EXACT_MAX_N}, m <= {args.exact_max_m})."
    )
    print(
        f"{'n':>5} {'m':>6} {'E[GW]':>9} {'best100':>7} {'derand':>7} {'rnd s':>6} "
        f"{'ours':>6} {'fit s':>6} {'cert':>4} {'bound':>8} {'RC2':>6} {'RC2 s':>6}"
    )
    rng = np.random.default_rng(0)
    rows = []
    for n in map(int, args.sizes.split(",")):
        for ratio in map(int, args.ratios.split(",")):
            clauses = instance(n, ratio * n, seed=1000 * n + ratio)
            h, J, offset = clauses_to_ising(clauses, n_variables=n)
            alone = fit(h, J, offset, local_search=None)
            best100 = best_of_roundings(alone, clauses, rng)
            ours = fit(h, J, offset)
            optimum, rc2_seconds = np.nan, np.nan
            if n <= EXACT_MAX_N and len(clauses) <= args.exact_max_m:
                optimum, rc2_seconds = exact(clauses)
            rows.append(
                (
                    alone.expected_value_,
                    best100,
                    alone.rounded_value_,
                    ours.value_,
                    optimum,
                )
            )
            print(
                f"{n:>5} {len(clauses):>6} {alone.expected_value_:>9.1f} "
                f"{best100:>7d} {alone.rounded_value_:>7.0f} {alone.seconds:>6.2f} "
                f"{ours.value_:>6.0f} {ours.seconds:>6.2f} "
                f"{'yes' if ours.certified_ else 'no':>4} {ours.bound_:>8.1f} "
                f"{optimum:>6.0f} {rc2_seconds:>6.2f}",
                flush=True,
            )
    expected, best100, derand, ours, optimum = map(np.array, zip(*rows, strict=True))
    exact_rows = ~np.isnan(optimum)
    print(
        f"# derandomized >= E[GW]: {int(np.sum(derand >= expected))}/{len(rows)}; "
        f">= best of {N_ROUNDINGS}: {int(np.sum(derand >= best100))}/{len(rows)}"
    )
    if exact_rows.any():
        print(
            f"# with RC2's optimum: derandomized / optimum mean "
            f"{np.mean(derand[exact_rows] / optimum[exact_rows]):.4f}, defaults / "
            f"optimum mean {np.mean(ours[exact_rows] / optimum[exact_rows]):.4f}"
        )
    print(f"# end: {machine_conditions()}")


if __name__ == "__main__":
    main()
