"""The shared solver: certified approximate second-order stationary points.

Every estimator in skderand trains by :func:`minimize_sosp` and reports the
certificate of the point it returns (gradient norm and smallest Hessian
eigenvalue). :func:`sosp_certificate` computes the same certificate for a point
found by any other optimizer. :func:`matrix_factorization` and
:func:`double_well` are test problems with strict saddles.
"""

from skderand.optimize._certificate import sosp_certificate
from skderand.optimize._problems import double_well, matrix_factorization
from skderand.optimize._sosp import minimize_sosp

__all__ = ["double_well", "matrix_factorization", "minimize_sosp", "sosp_certificate"]
