"""Small saddle-rich objectives shared by the demonstration, tests and benchmark."""

import numpy as np


def matrix_factorization(m, n, rank, seed=0, *, unit_scale=False):
    """``0.5 * ||U V^T - M||^2`` for a planted rank-``rank`` ``M`` of shape (m, n).

    Every point with ``U = V = 0`` is a strict saddle (zero gradient, smallest
    Hessian eigenvalue ``-sigma_1(M)``), and every second-order stationary point is
    a global minimum with ``U V^T = M``.

    Returns ``(fun, target, n_variables)``; ``fun(z) -> (value, gradient)`` with
    ``z`` the flattened ``(U, V)``. ``unit_scale=True`` scales ``M`` to a unit top
    singular value, so that problems of different sizes are comparable.
    """
    rng = np.random.default_rng(seed)
    target = rng.standard_normal((m, rank)) @ rng.standard_normal((rank, n))
    if unit_scale:
        target /= np.linalg.norm(target, 2)

    def fun(z):
        u = z[: m * rank].reshape(m, rank)
        v = z[m * rank :].reshape(n, rank)
        residual = u @ v.T - target
        grad = np.concatenate([(residual @ v).ravel(), (residual.T @ u).ravel()])
        return 0.5 * np.sum(residual**2), grad

    return fun, target, (m + n) * rank


def double_well(x):
    """``sum((x**2 - 1)**2) / 4`` and its gradient: a strict saddle at the origin."""
    return np.sum((x**2 - 1) ** 2) / 4, x**3 - x
