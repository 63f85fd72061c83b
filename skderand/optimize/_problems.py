"""Test problems with strict saddles, for the solver and for users' own checks.

As :func:`scipy.optimize.rosen` is for minimizers, these are for second-order
methods: each has a saddle point that a first-order method started there cannot
leave, and a known set of second-order stationary points.
"""

import numpy as np

from skderand._random import seeded_generator

__all__ = ["double_well", "matrix_factorization"]


def matrix_factorization(m, n, rank, random_state=0, *, unit_scale=False):
    """``0.5 * ||U V^T - M||_F^2`` for a planted matrix ``M`` of rank ``rank``.

    Every point with ``U = V = 0`` is a strict saddle (zero gradient, smallest
    Hessian eigenvalue ``-sigma_1(M)``), and every second-order stationary point
    is a global minimum, with ``U V^T = M``.

    Parameters
    ----------
    m, n : int
        Shape of ``M``.
    rank : int
        Rank of ``M`` and number of columns of ``U`` and ``V``.
    random_state : int, RandomState instance or None, default=0
        Draws the two Gaussian factors of ``M``.
    unit_scale : bool, default=False
        Scale ``M`` to a unit top singular value, so that problems of different
        sizes are comparable.

    Returns
    -------
    fun : callable
        ``fun(z) -> (value, gradient)`` with ``z`` the flattened ``(U, V)``, ``U``
        of shape ``(m, rank)`` first.
    target : ndarray of shape (m, n)
        ``M``.
    n_variables : int
        ``(m + n) * rank``.

    Examples
    --------
    >>> import numpy as np
    >>> from skderand.optimize import matrix_factorization, minimize_sosp
    >>> fun, M, n_vars = matrix_factorization(8, 6, 2)
    >>> res = minimize_sosp(fun, np.zeros(n_vars), random_state=0)
    >>> res.success, bool(res.fun < 1e-8)
    (True, True)
    """
    rng = seeded_generator(random_state)
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
    """``sum((x**2 - 1)**2) / 4`` and its gradient: a strict saddle at the origin.

    The minima are the ``2**d`` points with every coordinate ``+-1``; the origin
    is a maximum of each coordinate's well (Hessian ``-I``).

    Parameters
    ----------
    x : ndarray of shape (d,)
        The point.

    Returns
    -------
    value : float
    gradient : ndarray of shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> from skderand.optimize import double_well, minimize_sosp
    >>> res = minimize_sosp(double_well, np.zeros(3), random_state=0)
    >>> np.round(np.abs(res.x), 3)
    array([1., 1., 1.])
    """
    x = np.asarray(x, dtype=np.float64)
    return np.sum((x**2 - 1) ** 2) / 4, x**3 - x
