"""Command line: ``python -m skderand`` (the demonstration, or a sub-command),
``skderand-maxcut`` and ``skderand-qubo``."""

import argparse

from skderand._demo import demo
from skderand.maxcut._command import (
    _MAXCUT_DESCRIPTION,
    add_maxcut_arguments,
    add_maxcut_parser,
    run_maxcut,
)
from skderand.qubo._command import (
    _QUBO_DESCRIPTION,
    add_qubo_arguments,
    add_qubo_parser,
    run_qubo,
)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m skderand",
        description="Derandomized structure discovery. Without a command, runs the "
        "demonstration.",
    )
    subparsers = parser.add_subparsers(dest="command")
    add_maxcut_parser(subparsers)
    add_qubo_parser(subparsers)
    args = parser.parse_args(argv)
    if args.command is None:
        return demo()
    if args.command == "maxcut":
        return run_maxcut(args)
    if args.command == "qubo":
        return run_qubo(args)
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


def qubo_main(argv=None):
    """``skderand-qubo FILE``: the ``qubo`` command on its own.

    Errors are printed as one line ``error: ...`` with exit status 2.
    """
    parser = argparse.ArgumentParser(
        prog="skderand-qubo", description=_QUBO_DESCRIPTION
    )
    add_qubo_arguments(parser)
    return run_qubo(parser.parse_args(argv))
