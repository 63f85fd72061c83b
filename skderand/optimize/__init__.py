"""The shared solver: certified approximate second-order stationary points.

Every estimator in skderand trains by :func:`minimize_sosp` and reports the
certificate of the point it returns (gradient norm and smallest Hessian
eigenvalue). :func:`sosp_certificate` computes the same certificate for a point
found by any other optimizer.
"""

from skderand.optimize._certificate import sosp_certificate
from skderand.optimize._sosp import minimize_sosp

__all__ = ["minimize_sosp", "sosp_certificate"]
