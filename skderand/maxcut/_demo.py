"""The MAXCUT section of ``python -m skderand`` and the ``maxcut`` sub-command."""

import os
import sys
import time

import numpy as np
from scipy import sparse

from skderand._random import seeded_generator
from skderand.maxcut._graph_io import read_gset
from skderand.maxcut._local_search import cut_value, one_flip
from skderand.maxcut._maxcut import DeterministicMaxCut, _fit_memory_bytes
from skderand.maxcut._memory import check_fits_in_memory, sparse_adjacency_bytes


def random_signed_graph(n_vertices=500, density=0.04, seed=0):
    """An Erdos-Renyi graph with +-1 weights (like Gset's G6-G13), as sparse CSR."""
    rng = seeded_generator(seed)
    upper = sparse.random(
        n_vertices, n_vertices, density=density, random_state=rng, format="coo"
    )
    upper = sparse.triu(upper, k=1).tocoo()
    weights = rng.choice([-1.0, 1.0], size=upper.nnz)
    A = sparse.coo_matrix((weights, (upper.row, upper.col)), shape=upper.shape)
    return (A + A.T).tocsr()


def _report(mc, A, elapsed):
    ratio = mc.cut_value_ / mc.upper_bound_ if mc.upper_bound_ > 0 else 1.0
    print(f"  cut value             {mc.cut_value_:12.1f}")
    print(
        f"  certified upper bound {mc.upper_bound_:12.1f}   (cut / bound = {ratio:.4f})"
    )
    print(f"  time                  {elapsed:12.2f} s")


def demo_maxcut():
    """Derandomized Goemans-Williamson on a generated signed graph."""
    print("== MAXCUT (skderand.DeterministicMaxCut) ==")
    A = random_signed_graph()
    n, m = A.shape[0], A.nnz // 2
    print(
        f"A random graph with {n} vertices and {m} edges of weight +-1 (the kind\n"
        "of Gset's hardest instances). Goemans-Williamson rounds the SDP vectors\n"
        "with a random hyperplane: a different cut per seed. The derandomized\n"
        "rounding optimizes the expected cut while a penalty drives the random\n"
        "part V to zero, leaving one deterministic cut."
    )
    start = time.perf_counter()
    mc = DeterministicMaxCut(affinity="precomputed").fit(A)
    elapsed = time.perf_counter() - start
    rng = seeded_generator(0)
    V = mc.sdp_vectors_
    signs = np.where(V @ rng.standard_normal((V.shape[1], 100)) >= 0, 1.0, -1.0)
    gw = np.array([cut_value(A, s) for s in signs.T])
    gw_flip = np.array([cut_value(A, one_flip(A, s)[0]) for s in signs.T])
    print(f"  SDP value             {mc.sdp_value_:12.1f}")
    print(f"  GW expected cut       {mc.expected_gw_cut_:12.1f}   (closed form)")
    print(
        f"  100 GW roundings      {gw.mean():12.1f}   mean, best {gw.max():.0f}; "
        f"with 1-flip best {gw_flip.max():.0f}"
    )
    print(f"  derandomized rounding {mc.rounded_cut_value_:12.1f}   (sign(mu))")
    print(
        f"  rounding certificate  |V| = {mc.rounding_v_norm_:.1e}, gradient norm "
        f"{mc.grad_norm_:.1e}, min Hessian eig {mc.min_hessian_eig_:.1e}, "
        f"{mc.n_stages_} alpha stages"
    )
    print("  after the annealing phase (the default local_search):")
    _report(mc, A, elapsed)
    print()


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
        choices=["annealing", "1-flip", "tabu", "none"],
        default="annealing",
        help="improvement of the rounded cut (default: annealing)",
    )
    parser.add_argument(
        "--n-sweeps",
        type=int,
        default=None,
        help="annealing budget in sweeps over all vertices (default: 1000, "
        "fewer below 1000 vertices)",
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
    _report(mc, A, elapsed)
    if args.labels:
        np.savetxt(args.labels, mc.labels_, fmt="%d")
        print(f"labels written to     {args.labels}")
    return 0
