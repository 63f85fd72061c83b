"""MAXCUT: derandomized Goemans-Williamson rounding with a certified upper bound.

:class:`DeterministicMaxCut` is the estimator; :func:`read_gset`,
:func:`write_gset` and :func:`graph_to_adjacency` move graphs in and out.
"""

from skderand.maxcut._graph_io import graph_to_adjacency, read_gset, write_gset
from skderand.maxcut._maxcut import DeterministicMaxCut

__all__ = ["DeterministicMaxCut", "graph_to_adjacency", "read_gset", "write_gset"]
