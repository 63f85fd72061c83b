"""The ``maxcut`` command: ``skderand-maxcut FILE``, ``python -m skderand maxcut``."""

import os
import sys
import time

import numpy as np

from skderand._memory import check_fits_in_memory, sparse_adjacency_bytes
from skderand.maxcut._graph_io import read_gset
from skderand.maxcut._maxcut import DeterministicMaxCut, _fit_memory_bytes


def report_cut(mc, elapsed):
    """Print the cut, its certified bound, their ratio and the fit time."""
    ratio = mc.cut_value_ / mc.upper_bound_ if mc.upper_bound_ > 0 else 1.0
    print(f"  cut value             {mc.cut_value_:12.1f}")
    print(
        f"  certified upper bound {mc.upper_bound_:12.1f}   (cut / bound = {ratio:.4f})"
    )
    print(f"  time                  {elapsed:12.2f} s")


_MAXCUT_DESCRIPTION = (
    "Compute a deterministic large cut of a weighted graph and a certified upper "
    "bound on the maximum cut."
)


def add_maxcut_arguments(parser):
    """Add the ``maxcut`` command's arguments to an ``argparse`` parser."""
    parser.add_argument("graph_file", help="edge list: 'n m', then 'i j w' lines")
    parser.add_argument(
        "--labels", metavar="OUT", help="write the side (0/1) of each vertex here"
    )
    parser.add_argument(
        "--local-search",
        choices=["auto", "tempering", "annealing", "1-flip", "tabu", "none"],
        default="auto",
        help="improvement of the rounded cut (default: auto, i.e. tempering up "
        "to 5,000 vertices, or annealing of 16 replicas from 1,500 vertices if "
        "the mean degree is 16 or more; one annealing chain beyond)",
    )
    parser.add_argument(
        "--n-sweeps",
        type=int,
        default=None,
        help="tempering or annealing budget in sweeps over all vertices "
        "(default: up to 5,000 vertices, 6 per vertex, at least 100, at most "
        "16 * 10**6 / (n + nnz / 6) clipped to 2,000 to 8,000; beyond, "
        "8 * 10**8 / nnz, 10,000 to 20,000)",
    )
    parser.add_argument("--verbose", "-v", action="count", default=0)
    return parser


def add_maxcut_parser(subparsers):
    """Register ``python -m skderand maxcut GRAPH_FILE [--labels OUT]``."""
    parser = subparsers.add_parser(
        "maxcut",
        help="Cut a graph given as a Gset 'n m / i j w' edge-list file.",
        description=_MAXCUT_DESCRIPTION,
    )
    return add_maxcut_arguments(parser)


def _header_counts(path):
    """``(n, m)`` from a Gset file's header line, or ``None`` if it has none.

    Reads only up to the first non-comment line; malformed headers are left to
    :func:`read_gset`, which names the problem.
    """
    with open(os.fspath(path)) as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0][0] in "#%":
                continue
            try:
                return int(fields[0]), int(fields[1])
            except (IndexError, ValueError):
                return None
    return None


def run_maxcut(args):
    """Run the ``maxcut`` sub-command; returns the exit status.

    Errors (a missing or malformed file, a graph too large for the memory) are
    printed as one line ``error: ...`` on standard error, with exit status 2.
    """
    try:
        return _run_maxcut(args)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _run_maxcut(args):
    counts = _header_counts(args.graph_file)
    if counts is not None and min(counts) >= 0:
        # The whole run, before the file is read: reading a tiny file whose
        # header announces billions of vertices must not allocate first.
        n, m = counts
        check_fits_in_memory(
            sparse_adjacency_bytes(n, m) + _fit_memory_bytes(n, 2 * m),
            f"{args.graph_file}: the header announces {n:,} vertices and {m:,} "
            "edges; reading and cutting the graph",
            "Every announced vertex costs memory, even without edges: check the "
            "vertex count in the header 'n m'.",
        )
    A = read_gset(args.graph_file)
    local_search = None if args.local_search == "none" else args.local_search
    start = time.perf_counter()
    mc = DeterministicMaxCut(
        affinity="precomputed",
        local_search=local_search,
        n_sweeps="auto" if args.n_sweeps is None else args.n_sweeps,
        verbose=args.verbose,
    ).fit(A)
    elapsed = time.perf_counter() - start
    print(f"graph                 {args.graph_file}")
    print(f"vertices, edges       {A.shape[0]}, {A.nnz // 2}")
    report_cut(mc, elapsed)
    if args.labels:
        np.savetxt(args.labels, mc.labels_, fmt="%d")
        print(f"labels written to     {args.labels}")
    return 0
