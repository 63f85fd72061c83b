"""DeterministicMaxCut on the Gset graphs against best-known cuts and GW rounding.

For each graph: n, m, the best-known cut, our cut and its ratio to best-known, the
certified upper bound, the exact expected Goemans-Williamson cut of the same SDP
vectors, the best of ``--n-gw`` random-hyperplane roundings without and with the
same local search as ours, and the wall time of each stage. With ``--tabu`` a
column shows what the optional ``local_search="tabu"`` reaches from our rounding.
If cvxpy is installed, GW with a generic SDP solver (SCS) is timed on the
smallest graphs as an anchor.

Run from the repository root::

    python benchmarks/bench_maxcut.py                 # all 27 graphs
    python benchmarks/bench_maxcut.py --graphs G1,G6  # a subset

Wall times depend on the load of the machine; the "cpu s" column is the CPU time
of the fit (one BLAS thread), which does not.
"""

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from skderand import DeterministicMaxCut
from skderand.maxcut import read_gset
from skderand.maxcut._local_search import cut_value, one_flip, tabu_search

GSET = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "gset"


def gw_roundings(A, V, local_search, n_rounds, seed):
    """Best cut of ``n_rounds`` random hyperplanes, raw and after local search."""
    rng = np.random.default_rng(seed)
    signs = np.where(V @ rng.standard_normal((V.shape[1], n_rounds)) >= 0, 1.0, -1.0)
    raw, polished = [], []
    for s in signs.T:
        raw.append(cut_value(A, s))
        if local_search == "tabu":
            s = tabu_search(A, s, 20 * A.shape[0], rng)[0]
        elif local_search == "1-flip":
            s = one_flip(A, s)[0]
        polished.append(cut_value(A, s))
    return max(raw), max(polished)


def cvxpy_gw(A):
    """Solve the GW SDP with cvxpy + SCS; return ``(value, seconds)``."""
    import cvxpy as cp

    n = A.shape[0]
    L = np.diag(np.asarray(A.sum(axis=1)).ravel()) - A.toarray()
    X = cp.Variable((n, n), PSD=True)
    problem = cp.Problem(cp.Maximize(cp.trace(L @ X) / 4), [cp.diag(X) == 1])
    start = time.perf_counter()
    problem.solve(solver=cp.SCS)
    return problem.value, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", help="comma-separated names, e.g. G1,G6")
    parser.add_argument("--n-gw", type=int, default=100, help="GW roundings")
    parser.add_argument(
        "--local-search", default="1-flip", choices=["1-flip", "tabu", "none"]
    )
    parser.add_argument(
        "--tabu", action="store_true", help="also run tabu from our rounding"
    )
    parser.add_argument(
        "--cvxpy-graphs", default="G11", help="graphs for the cvxpy+SCS anchor"
    )
    args = parser.parse_args(argv)
    local_search = None if args.local_search == "none" else args.local_search

    with open(GSET / "best_known.csv") as f:
        best_known = {
            row["name"]: int(row["best_known_cut"]) for row in csv.DictReader(f)
        }
    names = sorted(best_known, key=lambda s: int(s[1:]))
    if args.graphs:
        names = [g.strip() for g in args.graphs.split(",")]

    columns = (
        f"{'graph':>5} {'n':>5} {'m':>6} {'best':>6} {'ours':>6} {'ratio':>7} "
        f"{'bound':>8} {'E[GW]':>8} {'GWbest':>6} {'GW+LS':>6} {'>GW+LS':>6} "
        + (f"{'tabu':>6} {'ratio':>7} " if args.tabu else "")
        + f"{'|V|':>7} {'cert':>4} {'sdp s':>6} {'bnd s':>6} {'rnd s':>6} "
        f"{'LS s':>5} {'total':>6} {'cpu s':>6}"
    )
    print(f"local search: {args.local_search}; GW roundings: {args.n_gw}")
    print(columns)
    ratios, wins, tabu_ratios, slow, slow_cpu = [], [], [], [], []
    for name in names:
        A = read_gset(GSET / f"{name}.txt")
        n, m = A.shape[0], A.nnz // 2
        cpu = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mc = DeterministicMaxCut(
                affinity="precomputed", local_search=local_search
            ).fit(A)
        cpu = time.process_time() - cpu
        t = mc.timings_
        with threadpool_limits(1):
            gw_raw, gw_ls = gw_roundings(A, mc.sdp_vectors_, local_search, args.n_gw, 0)
        best = best_known[name]
        ratio = mc.cut_value_ / best
        ratios.append(ratio)
        wins.append(mc.cut_value_ > gw_ls)
        if n <= 2000 and t["total"] >= 10:
            slow.append(name)
        if n <= 2000 and cpu >= 10:
            slow_cpu.append(name)
        line = (
            f"{name:>5} {n:>5} {m:>6} {best:>6} {mc.cut_value_:>6.0f} {ratio:>7.4f} "
            f"{mc.upper_bound_:>8.1f} {mc.expected_gw_cut_:>8.1f} {gw_raw:>6.0f} "
            f"{gw_ls:>6.0f} {str(bool(wins[-1])):>6} "
        )
        if args.tabu:
            spins = np.where(mc.mu_ >= 0, 1.0, -1.0)
            with threadpool_limits(1):
                spins, _ = tabu_search(A, spins, 20 * n, np.random.default_rng(0))
            tabu_cut = cut_value(A, spins)
            tabu_ratios.append(tabu_cut / best)
            line += f"{tabu_cut:>6.0f} {tabu_cut / best:>7.4f} "
        line += (
            f"{mc.rounding_v_norm_:>7.1e} {str(mc.certified_)[0]:>4} "
            f"{t['sdp']:>6.2f} {t['upper_bound']:>6.2f} {t['rounding']:>6.2f} "
            f"{t['local_search']:>5.2f} {t['total']:>6.2f} {cpu:>6.2f}"
        )
        print(line, flush=True)
    print(
        f"\nmean ratio {np.mean(ratios):.4f}, min ratio {np.min(ratios):.4f}; "
        f"ours > best of {args.n_gw} GW + same local search on {sum(wins)}/"
        f"{len(wins)} graphs; n <= 2000 graphs at or over 10 s: wall {slow or 'none'}, "
        f"CPU {slow_cpu or 'none'}"
    )
    if tabu_ratios:
        print(
            f"with tabu from our rounding: mean ratio {np.mean(tabu_ratios):.4f}, "
            f"min ratio {np.min(tabu_ratios):.4f}"
        )

    try:
        import cvxpy  # noqa: F401
    except ImportError:
        print("cvxpy not installed: no SCS anchor.")
        return
    print("\ncvxpy + SCS Goemans-Williamson SDP (time anchor):")
    for name in [g for g in args.cvxpy_graphs.split(",") if g]:
        A = read_gset(GSET / f"{name}.txt")
        value, seconds = cvxpy_gw(A)
        mc = DeterministicMaxCut(affinity="precomputed").fit(A)
        print(
            f"{name}: SCS SDP value {value:.1f} in {seconds:.1f} s; ours: SDP "
            f"{mc.sdp_value_:.1f}, bound {mc.upper_bound_:.1f} in "
            f"{mc.timings_['sdp'] + mc.timings_['upper_bound']:.1f} s"
        )


if __name__ == "__main__":
    main()
