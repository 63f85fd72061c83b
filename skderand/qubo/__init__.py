"""QUBO and Ising problems: deterministic solutions with a certified bound.

:class:`DeterministicQUBO` is the estimator; :func:`read_qubo` reads the
OR-Library ``bqp`` format and plain ``i j q`` lists, :func:`read_wcnf` weighted
MAX-2-SAT instances in DIMACS WCNF.
"""

from skderand.qubo._io import read_qubo, read_wcnf
from skderand.qubo._qubo import DeterministicQUBO

__all__ = ["DeterministicQUBO", "read_qubo", "read_wcnf"]
