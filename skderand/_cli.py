"""``python -m skderand``: a demonstration of every tool, and sub-commands."""

import argparse
import time

import numpy as np

from skderand.embedding._demo import demo_learned_jl
from skderand.maxcut._demo import (
    _MAXCUT_DESCRIPTION,
    add_maxcut_arguments,
    add_maxcut_parser,
    demo_maxcut,
    run_maxcut,
)
from skderand.neural._demo import demo_structure_discovery
from skderand.optimize import matrix_factorization, minimize_sosp


def demo_solver():
    """Escape the saddle at zero of a low-rank factorization with both methods."""
    print("== The SOSP solver (skderand.optimize.minimize_sosp) ==")
    print(
        "Low-rank factorization 0.5*||U V^T - M||^2 of a rank-3, 60 x 40 matrix,\n"
        "started exactly at the strict saddle U = V = 0 (gradient zero), where plain\n"
        "gradient descent or L-BFGS would stay forever."
    )
    fun, _, n_vars = matrix_factorization(60, 40, 3, random_state=0)
    header = (
        f"{'method':>7} {'objective':>11} {'grad norm':>10} {'min eig':>10} "
        f"{'escapes':>7} {'nfev':>6} {'time s':>7} certified"
    )
    print(header)
    for method in ("lbfgs", "pgd"):
        res = minimize_sosp(
            fun, np.zeros(n_vars), method=method, random_state=0, max_iter=50_000
        )
        print(
            f"{method:>7} {res.fun:>11.3e} {res.grad_norm:>10.2e} "
            f"{res.min_hessian_eig:>10.2e} {res.n_perturbations:>7d} {res.nfev:>6d} "
            f"{res.time:>7.2f} {res.success}"
        )
    print()


SECTIONS = [demo_solver, demo_maxcut, demo_structure_discovery, demo_learned_jl]


def demo():
    start = time.perf_counter()
    print("skderand demonstration\n")
    for section in SECTIONS:
        section()
    print(f"Demonstration finished in {time.perf_counter() - start:.1f} s.")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m skderand",
        description="Derandomized structure discovery. Without a command, runs the "
        "demonstration.",
    )
    subparsers = parser.add_subparsers(dest="command")
    add_maxcut_parser(subparsers)
    args = parser.parse_args(argv)
    if args.command is None:
        return demo()
    if args.command == "maxcut":
        return run_maxcut(args)
    return 0


def maxcut_main(argv=None):
    """``skderand-maxcut GRAPH_FILE``: the ``maxcut`` command on its own.

    Errors are printed as one line ``error: ...`` with exit status 2.
    """
    parser = argparse.ArgumentParser(
        prog="skderand-maxcut", description=_MAXCUT_DESCRIPTION
    )
    add_maxcut_arguments(parser)
    return run_maxcut(parser.parse_args(argv))
