"""DeterministicMaxCut's rounding: this checkout against a baseline checkout.

For each graph, fits with the default parameters alternate between a baseline
tree (``--baseline PATH``, e.g. a ``git worktree`` of an earlier commit) and
this checkout, each in a fresh child process that imports skderand from its
tree, ``--repeats`` times. The table gives the median rounding time
(``timings_["rounding"]``) of each, their ratio, the rounded cut
(``rounded_cut_value_``) and the final cut of each, and whether ``labels_``
and ``mu_`` are identical.

Run from the repository root, one BLAS thread, on an idle machine::

    git worktree add /tmp/baseline <commit>
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/bench_maxcut_rounding.py --baseline /tmp/baseline
"""

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _resources import machine_conditions  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GSET = ROOT / ".." / "shared" / "data" / "gset"
GSET_NAMES = ("G1", "G11", "G14", "G15", "G18", "G22", "G43")
GNP = [
    (n, p, seed, signed)
    for n, p in ((80, 0.15), (150, 0.1))
    for seed in range(3)
    for signed in (False, True)
]


def _child(tree, graph):
    """Fit one graph with skderand imported from ``tree``; print a JSON line."""
    sys.meta_path[:] = [
        finder for finder in sys.meta_path if "editable" not in repr(finder).lower()
    ]
    sys.path.insert(0, tree)
    import skderand
    from skderand import DeterministicMaxCut
    from skderand.maxcut import read_gset

    assert Path(skderand.__file__).resolve().is_relative_to(Path(tree).resolve())
    if graph.startswith("gnp"):
        _, n, p, seed, signed = graph.split(":")
        rng = np.random.default_rng(int(seed))
        upper = np.triu(rng.random((int(n), int(n))) < float(p), k=1).astype(float)
        if signed == "1":
            upper *= rng.choice([-1.0, 1.0], size=upper.shape)
        A = upper + upper.T
    else:
        A = read_gset(GSET / f"{graph}.txt")
    mc = DeterministicMaxCut(affinity="precomputed").fit(A)
    print(
        json.dumps(
            {
                "rounding": mc.timings_["rounding"],
                "rounded": mc.rounded_cut_value_,
                "cut": mc.cut_value_,
                "labels": hashlib.sha1(mc.labels_.tobytes()).hexdigest(),
                "mu": hashlib.sha1(mc.mu_.tobytes()).hexdigest(),
            }
        )
    )


def run(tree, graph):
    out = subprocess.run(
        [sys.executable, __file__, "--child", tree, graph],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=False, help="the baseline tree")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(*args.child)
    if not args.baseline:
        parser.error("--baseline PATH is required")
    graphs = [f"gnp:{n}:{p}:{seed}:{int(signed)}" for n, p, seed, signed in GNP]
    graphs += [name for name in GSET_NAMES if (GSET / f"{name}.txt").exists()]
    print(f"# bench_maxcut_rounding.py; {machine_conditions()}")
    print(
        f"# baseline {args.baseline} against {ROOT}; median of {args.repeats} "
        "alternating fits per tree; rounding = timings_['rounding'] (s)"
    )
    print(
        f"{'graph':<22} {'base s':>7} {'new s':>7} {'ratio':>6} {'base rnd':>9} "
        f"{'new rnd':>9} {'base cut':>9} {'new cut':>9} {'labels':>6} {'mu':>4}"
    )
    totals = np.zeros(2)
    for graph in graphs:
        times = [[], []]
        for _ in range(args.repeats):
            for side, tree in enumerate((args.baseline, str(ROOT))):
                result = run(tree, graph)
                times[side].append(result["rounding"])
                if side == 0:
                    base = result
                else:
                    new = result
        medians = np.median(times, axis=1)
        totals += medians
        print(
            f"{graph:<22} {medians[0]:>7.3f} {medians[1]:>7.3f} "
            f"{medians[1] / medians[0]:>6.3f} {base['rounded']:>9.0f} "
            f"{new['rounded']:>9.0f} {base['cut']:>9.0f} {new['cut']:>9.0f} "
            f"{'same' if base['labels'] == new['labels'] else 'diff':>6} "
            f"{'same' if base['mu'] == new['mu'] else 'diff':>4}",
            flush=True,
        )
    print(
        f"# summed medians: baseline {totals[0]:.2f} s, new {totals[1]:.2f} s, "
        f"ratio {totals[1] / totals[0]:.3f}"
    )
    print(f"# end: {machine_conditions()}")


if __name__ == "__main__":
    main()
