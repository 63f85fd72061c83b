"""DeterministicMaxCut against dwave-samplers' annealing and tabu, in one run.

For each graph: our default fit (derandomized Goemans-Williamson rounding, then
the improvement phase: up to 5,000 vertices, replica exchange, or 16 annealed
replicas on graphs of 1,500 vertices or more and mean degree 16 or more; one
annealing chain beyond)
with its cut, certified upper bound, cut / bound, ratio to the best-known cut
(Gset only), the cut before the improvement phase, and the
wall time of each stage; then, on the same graph and in the same process,

- ``SimulatedAnnealingSampler`` (dwave-samplers, C++): 10 reads, the number of
  sweeps calibrated so that its wall time equals our fit's (``--sa-reads``);
- ``TabuSampler``: one read with a timeout equal to our fit's wall time.

MAXCUT is the Ising problem ``min sum_{i<j} w_ij s_i s_j`` (``J = w``, ``h = 0``);
every cut below is recomputed from the returned spins. ``--large`` adds the
n = 100,000 graphs (3-regular and toroidal), each fitted in a child process
whose peak resident memory is reported, against annealing with its default
settings.

Run from the repository root, one BLAS thread, under the timing lock::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        flock /tmp/skderand-timing.lock python benchmarks/bench_maxcut.py --large

    python benchmarks/bench_maxcut.py --graphs G1,G14 --no-generated  # a subset
    python benchmarks/bench_maxcut.py --seeds 8 --only planar10k+1  # per seed
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

from skderand import DeterministicMaxCut
from skderand.maxcut import (
    delaunay_graph,
    random_regular_graph,
    read_gset,
    toroidal_grid_graph,
)
from skderand.maxcut._local_search import cut_value

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _resources import machine_conditions, peak_resident_mib  # noqa: E402

GSET = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "gset"
GSET_NAMES = [f"G{i}" for i in list(range(1, 23)) + list(range(43, 48))]
# SA's sweeps are calibrated to our wall time: a first run of this many sweeps,
# then rescaled runs until the wall time is within TIME_MATCH of ours.
CALIBRATION_SWEEPS = 50
CALIBRATION_ROUNDS = 4
TIME_MATCH = 0.15

GENERATED = {
    "torus45x45+-1": lambda: toroidal_grid_graph(45, 45, random_state=0),
    "planar2k+1": lambda: delaunay_graph(2_000, random_state=0),
    "planar2k+-1": lambda: delaunay_graph(2_000, signed=True, random_state=0),
    "3-regular2k+1": lambda: random_regular_graph(2_000, 3, random_state=0),
    "torus100x100+-1": lambda: toroidal_grid_graph(100, 100, random_state=0),
    "planar10k+1": lambda: delaunay_graph(10_000, random_state=0),
    "planar10k+-1": lambda: delaunay_graph(10_000, signed=True, random_state=0),
}
LARGE = {
    "3-regular100k+1": lambda: random_regular_graph(100_000, 3, random_state=0),
    "torus316x316+-1": lambda: toroidal_grid_graph(316, 316, random_state=0),
}


def ising_model(A):
    """The Ising model ``J = w`` (upper triangle), ``h = 0``, of adjacency ``A``."""
    import dimod

    upper = A.tocoo()
    keep = upper.row < upper.col
    return dimod.BinaryQuadraticModel.from_numpy_vectors(
        np.zeros(A.shape[0]),
        (upper.row[keep], upper.col[keep], upper.data[keep]),
        0.0,
        "SPIN",
    )


def best_cut(A, sampleset):
    """Largest cut among the samples, recomputed from the spins."""
    order = np.argsort(np.asarray(list(sampleset.variables)))
    spins = sampleset.record.sample[:, order].astype(np.float64)
    return max(cut_value(A, s) for s in spins)


def calibrated_sa(bqm, seconds, reads, first_sweeps=CALIBRATION_SWEEPS):
    """SA with ``reads`` reads and as many sweeps as fit in ``seconds``.

    The sweeps are rescaled from a short run, then from each full run, until the
    run's wall time is within ``TIME_MATCH`` of ``seconds`` (fixed start-up
    costs make a single short calibration underestimate the sweeps). Returns
    ``(sampleset, elapsed, sweeps)``.
    """
    from dwave.samplers import SimulatedAnnealingSampler

    sampler = SimulatedAnnealingSampler()
    sweeps = first_sweeps
    for _ in range(CALIBRATION_ROUNDS):
        start = time.perf_counter()
        result = sampler.sample(bqm, num_reads=reads, num_sweeps=sweeps, seed=0)
        elapsed = time.perf_counter() - start
        if abs(elapsed - seconds) <= TIME_MATCH * seconds:
            break
        sweeps = max(1, int(sweeps * seconds / elapsed))
    else:
        start = time.perf_counter()
        result = sampler.sample(bqm, num_reads=reads, num_sweeps=sweeps, seed=0)
        elapsed = time.perf_counter() - start
    return result, elapsed, sweeps


def run_sa(A, bqm, seconds, reads):
    """The best cut of :func:`calibrated_sa`, its wall time and sweeps."""
    result, elapsed, sweeps = calibrated_sa(bqm, seconds, reads)
    return best_cut(A, result), elapsed, sweeps


def run_sa_default(A, bqm):
    from dwave.samplers import SimulatedAnnealingSampler

    start = time.perf_counter()
    result = SimulatedAnnealingSampler().sample(bqm, seed=0)
    return best_cut(A, result), time.perf_counter() - start


def run_tabu(A, bqm, seconds):
    from dwave.samplers import TabuSampler

    start = time.perf_counter()
    result = TabuSampler().sample(
        bqm, num_reads=1, timeout=max(1, int(1000 * seconds)), seed=0
    )
    return best_cut(A, result), time.perf_counter() - start


def fit_ours(A, random_state=0):
    """Our default fit; ``mc.cpu_seconds`` is its process CPU time."""
    cpu = time.process_time()
    with warnings.catch_warnings():
        # Benchmark output only: a ConvergenceWarning is reported in the table
        # (column "cert") instead.
        warnings.simplefilter("ignore")
        mc = DeterministicMaxCut(affinity="precomputed", random_state=random_state).fit(
            A
        )
    mc.cpu_seconds = time.process_time() - cpu
    return mc


def stage_times(mc):
    t = mc.timings_
    return (
        f"{t['sdp']:>6.2f} {t['upper_bound']:>6.2f} {t['rounding']:>6.2f} "
        f"{t['local_search']:>6.2f} {t['total']:>6.2f} {mc.cpu_seconds:>6.2f}"
    )


STAGES = (
    f"{'sdp s':>6} {'bnd s':>6} {'rnd s':>6} {'impr s':>6} {'total':>6} {'cpu s':>6}"
)


def gset_section(names, sa_reads, dwave):
    with open(GSET / "best_known.csv") as f:
        best_known = {r["name"]: int(r["best_known_cut"]) for r in csv.DictReader(f)}
    print(
        f"{'graph':>5} {'n':>5} {'m':>6} {'best':>6} {'ours':>6} {'bound':>8} "
        f"{'c/bnd':>6} {'ratio':>7} {'rnded':>7} {'SA':>6} {'ratio':>7} "
        f"{'sweeps':>7} {'SA s':>5} {'tabu':>6} {'ratio':>7} {'>=SA':>4} "
        f"{'>=tabu':>6} {'cert':>4} {STAGES}"
    )
    rows = []
    for name in names:
        A = read_gset(GSET / f"{name}.txt")
        best = best_known[name]
        mc = fit_ours(A)
        seconds = mc.timings_["total"]
        sa = tabu = (float("nan"), float("nan"))
        sweeps = 0
        if dwave:
            bqm = ising_model(A)
            sa_cut, sa_time, sweeps = run_sa(A, bqm, seconds, sa_reads)
            sa = (sa_cut, sa_time)
            tabu = run_tabu(A, bqm, seconds)
        row = {
            "name": name,
            "n": A.shape[0],
            "ratio": mc.cut_value_ / best,
            "bound_ok": mc.upper_bound_ >= best,
            "ge_sa": mc.cut_value_ >= sa[0],
            "ge_tabu": mc.cut_value_ >= tabu[0],
            "total": seconds,
            "cpu": mc.cpu_seconds,
            "sa_ratio": sa[0] / best,
            "tabu_ratio": tabu[0] / best,
        }
        rows.append(row)
        print(
            f"{name:>5} {A.shape[0]:>5} {A.nnz // 2:>6} {best:>6} "
            f"{mc.cut_value_:>6.0f} {mc.upper_bound_:>8.1f} "
            f"{mc.cut_value_ / mc.upper_bound_:>6.4f} {row['ratio']:>7.4f} "
            f"{mc.rounded_cut_value_ / best:>7.4f} {sa[0]:>6.0f} "
            f"{row['sa_ratio']:>7.4f} {sweeps:>7d} {sa[1]:>5.1f} {tabu[0]:>6.0f} "
            f"{row['tabu_ratio']:>7.4f} {str(row['ge_sa'])[0]:>4} "
            f"{str(row['ge_tabu'])[0]:>6} {str(mc.certified_)[0]:>4} "
            f"{stage_times(mc)}",
            flush=True,
        )
    ratios = np.array([r["ratio"] for r in rows])
    slow = [r["name"] for r in rows if r["n"] <= 2000 and r["total"] > 5.0]
    slow_cpu = [r["name"] for r in rows if r["n"] <= 2000 and r["cpu"] > 5.0]
    print(
        f"\nours: mean ratio {ratios.mean():.4f}, min {ratios.min():.4f} "
        f"({rows[int(ratios.argmin())]['name']}); bound >= best-known on "
        f"{sum(r['bound_ok'] for r in rows)}/{len(rows)}; fit over 5 s (n <= 2000): "
        f"wall {len(slow)}/{len(rows)} {slow or ''}, CPU {len(slow_cpu)}/{len(rows)} "
        f"{slow_cpu or ''}"
    )
    if dwave:
        print(
            f"SA ({sa_reads} reads, same time): mean ratio "
            f"{np.mean([r['sa_ratio'] for r in rows]):.4f}; ours >= SA on "
            f"{sum(r['ge_sa'] for r in rows)}/{len(rows)}"
        )
        print(
            f"tabu (same time): mean ratio "
            f"{np.mean([r['tabu_ratio'] for r in rows]):.4f}; ours >= tabu on "
            f"{sum(r['ge_tabu'] for r in rows)}/{len(rows)}"
        )


def generated_section(graphs, sa_reads, dwave):
    print(
        f"{'graph':>16} {'n':>6} {'m':>6} {'ours':>7} {'bound':>9} {'c/bnd':>6} "
        f"{'rnded':>7} {'SA':>7} {'sweeps':>7} {'SA s':>5} {'tabu':>7} "
        f"{'>=SA':>4} {'>=tabu':>6} {'cert':>4} {STAGES}"
    )
    for name, make in graphs.items():
        A = make()
        mc = fit_ours(A)
        seconds = mc.timings_["total"]
        sa, tabu, sweeps = (float("nan"), float("nan")), (float("nan"), 0.0), 0
        if dwave:
            bqm = ising_model(A)
            sa_cut, sa_time, sweeps = run_sa(A, bqm, seconds, sa_reads)
            sa = (sa_cut, sa_time)
            tabu = run_tabu(A, bqm, seconds)
        print(
            f"{name:>16} {A.shape[0]:>6} {A.nnz // 2:>6} {mc.cut_value_:>7.0f} "
            f"{mc.upper_bound_:>9.1f} {mc.cut_value_ / mc.upper_bound_:>6.4f} "
            f"{mc.rounded_cut_value_:>7.0f} {sa[0]:>7.0f} {sweeps:>7d} "
            f"{sa[1]:>5.1f} {tabu[0]:>7.0f} {str(mc.cut_value_ >= sa[0])[0]:>4} "
            f"{str(mc.cut_value_ >= tabu[0])[0]:>6} {str(mc.certified_)[0]:>4} "
            f"{stage_times(mc)}",
            flush=True,
        )


def seeds_section(graphs, n_seeds, sa_reads):
    """Ours and SA over seeds 0 .. n_seeds - 1 at equal time, per graph.

    Our default fit with ``random_state`` = each seed; then SA's sweeps are
    calibrated (seed 0) to the mean of our fits' wall times, and SA runs with
    each seed at that number of sweeps.
    """
    from dwave.samplers import SimulatedAnnealingSampler

    for name, make in graphs.items():
        A = make()
        fits = [fit_ours(A, seed) for seed in range(n_seeds)]
        seconds = float(np.mean([mc.timings_["total"] for mc in fits]))
        bqm = ising_model(A)
        _, _, sweeps = run_sa(A, bqm, seconds, sa_reads)
        print(f"\n### {name}: {n_seeds} seeds; SA {sa_reads} reads x {sweeps} sweeps")
        print(
            f"{'seed':>4} {'ours':>7} {'rnded':>7} {'total s':>7} {'SA':>7} "
            f"{'SA s':>5} {STAGES}"
        )
        sa_cuts = []
        for seed, mc in enumerate(fits):
            start = time.perf_counter()
            result = SimulatedAnnealingSampler().sample(
                bqm, num_reads=sa_reads, num_sweeps=sweeps, seed=seed
            )
            sa_seconds = time.perf_counter() - start
            sa_cuts.append(best_cut(A, result))
            print(
                f"{seed:>4} {mc.cut_value_:>7.0f} {mc.rounded_cut_value_:>7.0f} "
                f"{mc.timings_['total']:>7.2f} {sa_cuts[-1]:>7.0f} "
                f"{sa_seconds:>5.1f} {stage_times(mc)}",
                flush=True,
            )
        ours = np.array([mc.cut_value_ for mc in fits])
        sa_cuts = np.array(sa_cuts)
        print(
            f"ours: mean {ours.mean():.2f}, min {ours.min():.0f}, max "
            f"{ours.max():.0f}, std {ours.std():.2f}; mean fit {seconds:.2f} s\n"
            f"SA:   mean {sa_cuts.mean():.2f}, min {sa_cuts.min():.0f}, max "
            f"{sa_cuts.max():.0f}, std {sa_cuts.std():.2f}; ours >= SA for "
            f"{int(np.sum(ours >= sa_cuts))}/{n_seeds} seeds (same seed)"
        )


def large_child(name):
    """Fit one large graph (in a child process): JSON with cut, times, memory."""
    A = LARGE[name]()
    mc = fit_ours(A)
    result = {
        "n": A.shape[0],
        "m": A.nnz // 2,
        "cut": mc.cut_value_,
        "rounded": mc.rounded_cut_value_,
        "bound": mc.upper_bound_,
        "certified": bool(mc.certified_),
        "timings": mc.timings_,
        "cpu": mc.cpu_seconds,
        "peak_mib": peak_resident_mib(),
    }
    print(json.dumps(result))


def large_section(dwave):
    print(
        f"{'graph':>16} {'n':>6} {'m':>6} {'ours':>7} {'bound':>9} {'c/bnd':>6} "
        f"{'rnded':>7} {'SAdef':>7} {'SA s':>5} {'>=SA':>4} {'peak MiB':>8} "
        f"{'cert':>4} {STAGES}"
    )
    for name in LARGE:
        out = subprocess.run(
            [sys.executable, __file__, "--large-child", name],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        sa = (float("nan"), float("nan"))
        if dwave:
            A = LARGE[name]()
            sa = run_sa_default(A, ising_model(A))
        t = r["timings"]
        print(
            f"{name:>16} {r['n']:>6} {r['m']:>6} {r['cut']:>7.0f} {r['bound']:>9.1f} "
            f"{r['cut'] / r['bound']:>6.4f} {r['rounded']:>7.0f} {sa[0]:>7.0f} "
            f"{sa[1]:>5.1f} {str(r['cut'] >= sa[0])[0]:>4} {r['peak_mib']:>8.0f} "
            f"{str(r['certified'])[0]:>4} {t['sdp']:>6.2f} {t['upper_bound']:>6.2f} "
            f"{t['rounding']:>6.2f} {t['local_search']:>6.2f} {t['total']:>6.2f} "
            f"{r['cpu']:>6.2f}",
            flush=True,
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", help="comma-separated Gset names, e.g. G1,G6")
    parser.add_argument("--no-gset", action="store_true")
    parser.add_argument("--no-generated", action="store_true")
    parser.add_argument("--large", action="store_true", help="n = 100,000 graphs")
    parser.add_argument("--no-dwave", action="store_true", help="ours only")
    parser.add_argument("--sa-reads", type=int, default=10)
    parser.add_argument(
        "--only",
        help="comma-separated generated graphs, e.g. planar10k+1 (default: all)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        help="per-seed table instead: ours and SA over seeds 0 .. SEEDS - 1 "
        "on the generated graphs, at equal (mean) time",
    )
    parser.add_argument("--large-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.large_child:
        large_child(args.large_child)
        return
    dwave = not args.no_dwave
    blas = [
        f"{i['internal_api']}:{i['num_threads']}"
        for i in threadpool_info()
        if i["user_api"] == "blas"
    ]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
    ).stdout.strip()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}")
    print(
        f"# {machine_conditions()}; {os.cpu_count()} cores, BLAS pools "
        f"{', '.join(blas)}"
    )
    print(
        "# ours: DeterministicMaxCut() defaults; stage columns: SDP, dual bound, "
        "derandomized rounding, improvement (up to 5,000 vertices replica "
        "exchange, or 16 annealed replicas if n >= 1,500 and mean degree >= 16; "
        "one annealing chain beyond), total fit (wall s).\n"
        f"# SA: dwave-samplers SimulatedAnnealingSampler, {args.sa_reads} reads, "
        "sweeps calibrated to our wall time; tabu: TabuSampler, 1 read, timeout = "
        "our wall time.\n# rnded: cut (or ratio) before the improvement phase; "
        "c/bnd: cut / certified upper bound."
    )
    generated = GENERATED
    if args.only:
        generated = {name: GENERATED[name] for name in args.only.split(",")}
    if args.seeds:
        seeds_section(generated, args.seeds, args.sa_reads)
    else:
        sections(args, generated, dwave)
    print(f"\n# at the end: {machine_conditions()}")


def sections(args, generated, dwave):
    """The Gset, generated and (with --large) 100,000-vertex sections."""
    if not args.no_gset:
        names = args.graphs.split(",") if args.graphs else GSET_NAMES
        print("\n## Gset")
        gset_section(names, args.sa_reads, dwave)
    if not args.no_generated:
        print("\n## Generated graphs (n = 2,000 and 10,000)")
        generated_section(generated, args.sa_reads, dwave)
    if args.large:
        print("\n## n = 100,000 (child process per fit; SA with its default settings)")
        large_section(dwave)


if __name__ == "__main__":
    main()
