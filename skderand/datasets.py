"""Planted data sets: targets with a known low-dimensional structure.

Like :func:`sklearn.datasets.make_friedman1`, these generators make problems
whose answer is known, to check on one's own machine what an estimator
recovers. Graph generators for MAXCUT live in :mod:`skderand.maxcut`.
"""

import numbers

import numpy as np

from skderand._random import seeded_generator

__all__ = ["make_multi_index_regression", "subspace_distance"]


def _relu(t):
    return np.maximum(t, 0.0)


# link name -> (number of directions k, h applied to the k projections z = X U^T)
_LINKS = {
    "relu": (1, lambda z: _relu(z[:, 0])),
    "square": (1, lambda z: z[:, 0] ** 2),
    "tanh+square": (2, lambda z: np.tanh(z[:, 0]) + 0.5 * z[:, 1] ** 2),
    "product": (2, lambda z: z[:, 0] * z[:, 1]),
    "relu_sum": (3, lambda z: _relu(z[:, :3]).sum(axis=1)),
}
MULTI_INDEX_LINKS = tuple(_LINKS)


def make_multi_index_regression(
    n_samples=1000,
    n_features=20,
    *,
    link="relu",
    n_directions=None,
    noise=0.1,
    random_state=None,
):
    """Gaussian inputs and a target that depends on a few directions of them.

    ``y = h(X U^T) + noise * e`` with ``X`` and ``e`` standard normal and ``U``
    of ``k`` random orthonormal rows: the target depends on the inputs only
    through the ``k``-dimensional subspace spanned by ``U``, the structure that
    :class:`~skderand.StructureDiscoveryRegressor` discovers (``subspace_``).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples.
    n_features : int, default=20
        Number of features (the ambient dimension).
    link : {"relu", "square", "tanh+square", "product", "relu_sum"} or callable, \
default="relu"
        The function ``h`` of the projections ``z = X U^T``: ``"relu"``:
        ``max(z1, 0)`` (k = 1); ``"square"``: ``z1**2`` (k = 1, an even link
        that methods based on correlation with ``y`` cannot see); ``"tanh+square"``:
        ``tanh(z1) + 0.5 z2**2`` (k = 2); ``"product"``: ``z1 z2`` (k = 2);
        ``"relu_sum"``: ``max(z1, 0) + max(z2, 0) + max(z3, 0)`` (k = 3). A
        callable takes the array ``z`` of shape ``(n_samples, n_directions)``
        and returns ``n_samples`` targets.
    n_directions : int, default=None
        ``k``; required for a callable ``link``, fixed by a named one.
    noise : float, default=0.1
        Standard deviation of the Gaussian noise added to the target.
    random_state : int, RandomState instance or None, default=None
        Draws ``U``, then ``X``, then the noise.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The inputs.
    y : ndarray of shape (n_samples,)
        The target.
    directions : ndarray of shape (n_directions, n_features)
        ``U``, orthonormal rows spanning the subspace the target depends on.

    See Also
    --------
    subspace_distance : How far a recovered subspace is from ``directions``.

    Examples
    --------
    >>> from skderand.datasets import make_multi_index_regression
    >>> X, y, U = make_multi_index_regression(200, 5, link="product", random_state=0)
    >>> X.shape, y.shape, U.shape
    ((200, 5), (200,), (2, 5))
    """
    for name, value in (("n_samples", n_samples), ("n_features", n_features)):
        if not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if callable(link):
        if not isinstance(n_directions, numbers.Integral) or n_directions < 1:
            raise ValueError(
                "A callable link needs n_directions, a positive integer; got "
                f"{n_directions!r}."
            )
        k, h = int(n_directions), link
    elif link in _LINKS:
        k, h = _LINKS[link]
        if n_directions is not None and n_directions != k:
            raise ValueError(
                f"link={link!r} depends on {k} direction(s); got n_directions="
                f"{n_directions}."
            )
    else:
        raise ValueError(
            f"link must be one of {sorted(_LINKS)} or a callable, got {link!r}."
        )
    if k > n_features:
        raise ValueError(
            f"link={link!r} needs {k} orthonormal directions, more than "
            f"n_features={n_features}."
        )
    if not isinstance(noise, numbers.Real) or not noise >= 0:
        raise ValueError(f"noise must be a non-negative number, got {noise!r}.")
    rng = seeded_generator(random_state)
    directions = np.linalg.qr(rng.standard_normal((n_features, k)))[0].T
    X = rng.standard_normal((n_samples, n_features))
    y = np.asarray(h(X @ directions.T), dtype=np.float64).reshape(n_samples)
    y = y + noise * rng.standard_normal(n_samples)
    return X, y, directions


def subspace_distance(A, B):
    """``||P_A - P_B||_2``: the sine of the largest principal angle.

    Parameters
    ----------
    A, B : array-like of shape (k_A, n_features) and (k_B, n_features)
        Bases of the two subspaces as rows (they need not be orthonormal).

    Returns
    -------
    distance : float
        0 for the same subspace; 1 when a direction of one is orthogonal to the
        other (always, when ``k_A != k_B``).

    Examples
    --------
    >>> import numpy as np
    >>> from skderand.datasets import subspace_distance
    >>> round(subspace_distance([[1.0, 0.0, 0.0]], [[2.0, 0.0, 0.0]]), 12)
    0.0
    >>> round(subspace_distance([[1.0, 0.0]], [[1.0, 1.0]]), 4)  # 45 degrees
    0.7071
    """
    qa = np.linalg.qr(np.atleast_2d(np.asarray(A, dtype=np.float64)).T)[0]
    qb = np.linalg.qr(np.atleast_2d(np.asarray(B, dtype=np.float64)).T)[0]
    return float(np.linalg.norm(qa @ qa.T - qb @ qb.T, 2))
