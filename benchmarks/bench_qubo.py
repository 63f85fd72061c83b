"""DeterministicQUBO on the OR-Library bqp instances and dense generated QUBOs.

For each instance (maximize ``x^T Q x``), in one run:

- the derandomized rounding alone (``local_search=None``) against the exact
  expectation of the randomized rounding of the same relaxation and the best
  of 100 randomized roundings (``x_i = [sign(v_i . z) = sign(v_0 . z)]``);
- the default fit: its value, its ratio to the best-known value, its time,
  and the certified bound with its gap to the best-known value;
- dwave-samplers' ``SimulatedAnnealingSampler`` (C++, 10 reads, sweeps
  calibrated to our fit's wall time) and ``TabuSampler`` (one read, timeout
  equal to our fit's wall time), on the same matrix.

The bqp files are read from ``../shared/data/orlib-bqp/`` next to the
repository (they are not shipped with skderand). ``--generated`` adds dense
instances (density 0.5, integer coefficients in [-100, 100], seeded) of
n = 2,000 and 5,000 (``--generated 2000`` for one size, ``--no-bqp`` for
those alone), where the bound's gap is reported against our value.

Run from the repository root, one BLAS thread, on an idle machine::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/bench_qubo.py --generated
"""

import argparse
import csv
import gzip
import io
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from skderand import DeterministicQUBO
from skderand.qubo import read_qubo

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _resources import machine_conditions  # noqa: E402
from bench_maxcut import calibrated_sa  # noqa: E402

ORLIB = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "orlib-bqp"
FILES = ("bqp50", "bqp100", "bqp250", "bqp500")
N_ROUNDINGS = 100
SA_READS = 10
# SA's first calibration run (bench_maxcut.calibrated_sa rescales from it).
CALIBRATION_SWEEPS = 100


def read_instances(name):
    path = ORLIB / f"{name}.txt"
    if path.exists():
        return read_qubo(path)
    with gzip.open(str(path) + ".gz", "rt") as f:
        return read_qubo(io.StringIO(f.read()))


def best_known():
    with open(ORLIB / "best_known.csv") as f:
        return {
            (row["file"], int(row["instance"])): float(row["best_known"])
            for row in csv.DictReader(f)
        }


def generated(n, seed):
    rng = np.random.default_rng(seed)
    upper = rng.integers(-100, 101, (n, n)) * (rng.random((n, n)) < 0.5)
    upper = np.triu(upper)
    return (upper + np.triu(upper, 1).T).astype(float)


def fit(Q, **params):
    with warnings.catch_warnings():
        # A ConvergenceWarning is reported in the table (column "cert").
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        qubo = DeterministicQUBO(sense="maximize", **params).fit(Q)
        qubo.seconds = time.perf_counter() - start
    return qubo


def random_roundings(qubo, Q, rng):
    """The best of N_ROUNDINGS roundings of the relaxation's vectors."""
    V = qubo.cut_estimator_.sdp_vectors_
    signs = np.sign(V @ rng.standard_normal((V.shape[1], N_ROUNDINGS)))
    X = (signs[1:] == signs[:1]).astype(float)
    return float(np.einsum("ik,ik->k", X, Q @ X).max())


def bqm_of(Q):
    """The dimod model of ``max x^T Q x`` as an energy to minimize."""
    import dimod
    from scipy import sparse

    Q = sparse.csr_matrix(Q)
    pairs = sparse.triu(Q + Q.T, k=1).tocoo()
    return dimod.BinaryQuadraticModel.from_numpy_vectors(
        -Q.diagonal(), (pairs.row, pairs.col, -pairs.data), 0.0, "BINARY"
    )


def best_value(Q, sampleset):
    order = np.argsort(np.asarray(list(sampleset.variables)))
    X = sampleset.record.sample[:, order].astype(float)
    dense = Q.toarray() if hasattr(Q, "toarray") else Q
    return float(np.einsum("ik,ik->k", X.T, dense @ X.T).max())


def run_sa(Q, bqm, seconds):
    result, elapsed, _ = calibrated_sa(
        bqm, seconds, SA_READS, first_sweeps=CALIBRATION_SWEEPS
    )
    return best_value(Q, result), elapsed


def run_tabu(Q, bqm, seconds):
    from dwave.samplers import TabuSampler

    start = time.perf_counter()
    result = TabuSampler().sample(
        bqm, num_reads=1, timeout=max(1, int(1000 * seconds)), seed=0
    )
    return best_value(Q, result), time.perf_counter() - start


HEADER = (
    f"{'instance':<10} {'n':>5} {'best-known':>10} {'E[rand]':>9} {'best100':>9} "
    f"{'derand':>9} {'rnd s':>6} {'ours':>9} {'ratio':>7} {'fit s':>6} "
    f"{'cert':>4} {'bound':>10} {'gap':>7} {'SA':>9} {'SA s':>6} {'tabu':>9} "
    f"{'tabu s':>6}"
)


def row(name, Q, reference, dwave, rng):
    alone = fit(Q, local_search=None)
    best100 = random_roundings(alone, Q.toarray() if hasattr(Q, "toarray") else Q, rng)
    ours = fit(Q)
    sa = tabu = (np.nan, np.nan)
    if dwave:
        bqm = bqm_of(Q)
        sa = run_sa(Q, bqm, ours.seconds)
        tabu = run_tabu(Q, bqm, ours.seconds)
    reference = ours.value_ if reference is None else reference
    print(
        f"{name:<10} {Q.shape[0]:>5} {reference:>10.0f} {alone.expected_value_:>9.0f} "
        f"{best100:>9.0f} {alone.rounded_value_:>9.0f} {alone.seconds:>6.2f} "
        f"{ours.value_:>9.0f} {ours.value_ / reference:>7.4f} {ours.seconds:>6.2f} "
        f"{'yes' if ours.certified_ else 'no':>4} {ours.bound_:>10.0f} "
        f"{ours.bound_ / reference - 1:>7.4f} {sa[0]:>9.0f} {sa[1]:>6.2f} "
        f"{tabu[0]:>9.0f} {tabu[1]:>6.2f}",
        flush=True,
    )
    return dict(
        reference=reference,
        derand=alone.rounded_value_,
        best100=best100,
        ours=ours.value_,
        seconds=ours.seconds,
        n=Q.shape[0],
        bound=ours.bound_,
        sa=sa[0],
        tabu=tabu[0],
    )


def summary(rows, dwave):
    r = {key: np.array([x[key] for x in rows]) for key in rows[0]}
    print(
        f"# derandomized rounding >= best of {N_ROUNDINGS} roundings: "
        f"{int(np.sum(r['derand'] >= r['best100']))}/{len(rows)}; mean ratio to "
        f"best-known {np.mean(r['derand'] / r['reference']):.4f}"
    )
    big = r["n"] >= 500
    print(
        f"# defaults: best-known reached {int(np.sum(r['ours'] >= r['reference']))}"
        f"/{len(rows)}; largest fit time at n = 500: "
        f"{r['seconds'][big].max() if big.any() else np.nan:.2f} s; bound >= "
        f"best-known {int(np.sum(r['bound'] >= r['reference']))}/{len(rows)}"
    )
    if dwave:
        print(
            f"# at equal time, ours >= SA on {int(np.sum(r['ours'] >= r['sa']))}"
            f"/{len(rows)}, >= tabu on {int(np.sum(r['ours'] >= r['tabu']))}"
            f"/{len(rows)}"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default=",".join(FILES))
    parser.add_argument(
        "--generated",
        nargs="?",
        const="2000,5000",
        default=None,
        help="add dense generated instances of these sizes (default 2000,5000)",
    )
    parser.add_argument(
        "--no-bqp", action="store_true", help="only the generated instances"
    )
    parser.add_argument("--no-dwave", action="store_true", help="ours only")
    args = parser.parse_args(argv)
    dwave = not args.no_dwave
    print(f"# bench_qubo.py; {machine_conditions()}")
    print(
        "# maximize x^T Q x. E[rand]: exact expectation of the randomized rounding "
        f"of the relaxation; best{N_ROUNDINGS}: best of {N_ROUNDINGS} such "
        "roundings; derand: the derandomized rounding alone (local_search=None), "
        "rnd s its fit time; ours: the defaults; gap: bound / best-known - 1; "
        f"SA: dwave-samplers, {SA_READS} reads, sweeps calibrated to our fit time; "
        "tabu: TabuSampler, 1 read, timeout = our fit time."
    )
    print(HEADER)
    known = best_known()
    rng = np.random.default_rng(0)
    rows = []
    for name in [] if args.no_bqp else args.files.split(","):
        for k, Q in enumerate(read_instances(name), start=1):
            rows.append(row(f"{name}-{k}", Q, known[(name, k)], dwave, rng))
    if rows:
        summary(rows, dwave)
    if args.generated:
        print(
            "# generated: density 0.5, integers in [-100, 100]; ratio and gap "
            "against our own value"
        )
        print(HEADER)
        generated_rows = [
            row(f"dense{n}", generated(n, seed=n), None, dwave, rng)
            for n in map(int, args.generated.split(","))
        ]
        if dwave:
            print(
                "# generated, at equal time: ours >= SA on "
                f"{sum(r['ours'] >= r['sa'] for r in generated_rows)}"
                f"/{len(generated_rows)}"
            )
    print(f"# end: {machine_conditions()}")


if __name__ == "__main__":
    main()
