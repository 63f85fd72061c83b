"""Derandomize any Gaussian rounding ``y = V z + mu`` by the SOSP lemma.

:func:`derandomize` follows certified second-order stationary points of
``F(V, mu) - alpha ||V||^2`` while ``alpha`` grows, ``F`` the expected payoff
of a randomized algorithm whose randomness is ``y = V z + mu`` with Gaussian
``z``: ``V`` is driven to zero and ``mu`` becomes a deterministic solution.
An expectation follows the small protocol of :class:`RoundingExpectation`;
built in are the cut of signs (:class:`CutExpectation`), Ising problems with
fields and their QUBO, MAX-2-SAT and MAX-DICUT forms
(:class:`IsingExpectation`), and a user's own smooth payoff averaged over fixed
quasi-random points (:class:`SampleAverageExpectation`).
"""

from skderand.derandomize._cut import CutExpectation
from skderand.derandomize._framework import derandomize
from skderand.derandomize._ising import (
    IsingExpectation,
    arcs_to_ising,
    clauses_to_ising,
    maxcut_to_ising,
    qubo_to_ising,
)
from skderand.derandomize._protocol import RoundingExpectation
from skderand.derandomize._sample_average import SampleAverageExpectation

__all__ = [
    "CutExpectation",
    "IsingExpectation",
    "RoundingExpectation",
    "SampleAverageExpectation",
    "arcs_to_ising",
    "clauses_to_ising",
    "derandomize",
    "maxcut_to_ising",
    "qubo_to_ising",
]
