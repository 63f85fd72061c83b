"""The ``qubo`` command: ``skderand-qubo FILE``, ``python -m skderand qubo FILE``."""

import sys
import time

import numpy as np

from skderand.qubo._io import _read_qubo
from skderand.qubo._qubo import DeterministicQUBO, fit_memory_bytes

_QUBO_DESCRIPTION = (
    "Solve quadratic binary problems x^T Q x deterministically, with a certified "
    "bound on the optimum. FILE is an OR-Library bqp file (several instances, "
    "each pair once and read symmetrically) or a plain list of entries "
    "'i j q' (1-based, an optional header 'n m')."
)


def add_qubo_arguments(parser):
    """Add the ``qubo`` command's arguments to an ``argparse`` parser."""
    parser.add_argument("qubo_file", help="OR-Library bqp file or 'i j q' list")
    parser.add_argument(
        "--sense",
        choices=["minimize", "maximize"],
        default="minimize",
        help="minimize (default, as dimod) or maximize (the OR-Library's bqp "
        "convention) x^T Q x",
    )
    parser.add_argument(
        "--instance",
        type=int,
        default=None,
        help="solve only this instance of a multi-instance file (1-based)",
    )
    parser.add_argument(
        "--solution",
        metavar="OUT",
        help="write x (one 0/1 per line) here; with several instances, one "
        "column per instance",
    )
    parser.add_argument(
        "--n-restarts",
        type=int,
        default=20,
        help="tabu phases after the first, each from a random point (default 20)",
    )
    parser.add_argument(
        "--no-tabu",
        action="store_true",
        help="report the derandomized rounding's solution, without the tabu search",
    )
    parser.add_argument("--verbose", "-v", action="count", default=0)
    return parser


def add_qubo_parser(subparsers):
    """Register ``python -m skderand qubo FILE``."""
    parser = subparsers.add_parser(
        "qubo",
        help="Solve a QUBO given as an OR-Library bqp file or an 'i j q' list.",
        description=_QUBO_DESCRIPTION,
    )
    return add_qubo_arguments(parser)


def run_qubo(args):
    """Run the ``qubo`` sub-command; returns the exit status.

    Errors (a missing or malformed file, a problem too large for the memory)
    are printed as one line ``error: ...`` on standard error, with exit
    status 2.
    """
    try:
        return _run_qubo(args)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _run_qubo(args):
    if args.n_restarts < 0:
        raise ValueError(f"--n-restarts must be >= 0, got {args.n_restarts}.")
    # The fit's memory is refused with the file's, before anything is built.
    matrices = _read_qubo(args.qubo_file, also_needs=fit_memory_bytes)
    numbers = range(1, len(matrices) + 1)
    if args.instance is not None:
        if not 1 <= args.instance <= len(matrices):
            raise ValueError(
                f"--instance {args.instance}: the file holds {len(matrices)} "
                "instance(s)."
            )
        numbers = [args.instance]
    solutions = []
    for number in numbers:
        Q = matrices[number - 1]
        start = time.perf_counter()
        qubo = DeterministicQUBO(
            sense=args.sense,
            local_search=None if args.no_tabu else "tabu",
            n_restarts=args.n_restarts,
            verbose=args.verbose,
        ).fit(Q)
        elapsed = time.perf_counter() - start
        gap = abs(qubo.bound_ - qubo.value_) / max(abs(qubo.bound_), 1e-300)
        print(f"instance {number}: {Q.shape[0]} variables, {Q.nnz} entries")
        print(f"  value                 {qubo.value_:14.1f}")
        print(f"  rounded value         {qubo.rounded_value_:14.1f}")
        print(f"  certified bound       {qubo.bound_:14.1f}   (gap {gap:.4f})")
        print(f"  time                  {elapsed:14.2f} s")
        solutions.append(qubo.solution_.astype(int))
    if args.solution:
        if len({s.size for s in solutions}) > 1:
            raise ValueError(
                "--solution: the instances have different sizes; choose one with "
                "--instance."
            )
        np.savetxt(args.solution, np.column_stack(solutions), fmt="%d")
        print(f"solution written to   {args.solution}")
    return 0
