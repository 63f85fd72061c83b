"""The demonstration that ``python -m skderand`` (the README's first command) runs.

It is the one demo path of the package; this checks that each section runs and
that what it prints holds: the solver's certificates, a cut no larger than its
bound, a QUBO's stages below its bound, the planted dimensions found, learned
maps better than random ones.
"""

import re

import pytest

from skderand._cli import main

pytestmark = pytest.mark.slow


def _numbers(line):
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e[-+]\d+)?", line)]


def test_demonstration_runs_and_what_it_prints_holds(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    sections = re.split(r"^== ", out, flags=re.M)[1:]
    titles = [s.splitlines()[0] for s in sections]
    assert len(titles) == 5, titles
    solver, maxcut, qubo, structure, jl = sections

    # Both solver methods escape the saddle with a certificate.
    rows = [
        line.split()
        for line in solver.splitlines()
        if line.strip()[:4] in {"lbfg", "pgd "}
    ]
    assert {row[0] for row in rows} == {"lbfgs", "pgd"}
    assert all(row[-1] == "True" for row in rows)

    # The cut is at most its certified bound, and at least the derandomized
    # rounding it started from.
    value = {}
    for line in maxcut.splitlines():
        for key in ("cut value", "certified upper bound", "derandomized rounding"):
            if line.strip().startswith(key):
                value[key] = _numbers(line)[0]
    assert value["derandomized rounding"] <= value["cut value"]
    assert value["cut value"] <= value["certified upper bound"]

    # The QUBO: the randomized rounding's expectation <= the derandomized
    # rounding <= the final value <= the bound.
    value = {}
    for line in qubo.splitlines():
        for key in ("randomized", "derandomized", "after the tabu", "certified"):
            if line.strip().startswith(key):
                value[key] = _numbers(line)[0]
    assert value["randomized"] <= value["derandomized"] <= value["after the tabu"]
    assert value["after the tabu"] <= value["certified"]

    # Each planted dimension is found, close to the planted subspace.
    table = structure.split("top singular values")[1].strip().splitlines()
    assert len(table) == 3
    for row in table:
        fields = row.split()
        k, found, distance = int(fields[1]), int(fields[2]), float(fields[4])
        assert found == k and distance <= 0.15

    # The learned maps beat the best of 20 Gaussian projections, certified.
    best_random = _numbers(re.search(r"best (\S+)", jl).group(0))[0]
    learned = [float(x) for x in re.findall(r"\): eps (\d+\.\d+)", jl)]
    assert len(learned) == 2 and max(learned) < best_random
    assert jl.count("certified True") == 2
