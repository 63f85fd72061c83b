"""MAXCUT: derandomized Goemans-Williamson rounding with a certified upper bound.

:class:`DeterministicMaxCut` is the estimator; :func:`read_gset`,
:func:`write_gset` and :func:`graph_to_adjacency` move graphs in and out;
:func:`erdos_renyi_graph`, :func:`toroidal_grid_graph`, :func:`delaunay_graph`
and :func:`random_regular_graph` generate benchmark graphs.
"""

from skderand.maxcut._generators import (
    delaunay_graph,
    erdos_renyi_graph,
    random_regular_graph,
    toroidal_grid_graph,
)
from skderand.maxcut._graph_io import graph_to_adjacency, read_gset, write_gset
from skderand.maxcut._maxcut import DeterministicMaxCut

__all__ = [
    "DeterministicMaxCut",
    "delaunay_graph",
    "erdos_renyi_graph",
    "graph_to_adjacency",
    "random_regular_graph",
    "read_gset",
    "toroidal_grid_graph",
    "write_gset",
]
