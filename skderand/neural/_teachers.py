"""Multi-index teachers shared by the demonstration, tests and benchmark."""

import numpy as np


def _relu(t):
    return np.maximum(t, 0.0)


# name -> (k, link h): y = h(U x) depends on x only through k directions.
TEACHERS = {
    "relu(u1.x)": (1, lambda z: _relu(z[:, 0])),
    "(u1.x)^2": (1, lambda z: z[:, 0] ** 2),
    "tanh(u1.x)+0.5(u2.x)^2": (2, lambda z: np.tanh(z[:, 0]) + 0.5 * z[:, 1] ** 2),
    "(u1.x)(u2.x)": (2, lambda z: z[:, 0] * z[:, 1]),
    "sum_i<=3 relu(ui.x)": (3, lambda z: _relu(z[:, :3]).sum(axis=1)),
}


def make_teacher(name, d, n, seed, noise=0.1):
    """``y = h(U x) + noise * e`` with Gaussian ``x`` in ``d`` dimensions.

    ``U`` has ``k`` random orthonormal rows (``k`` and ``h`` from
    ``TEACHERS[name]``); ``seed`` draws ``U``, then ``X``, then the noise.

    Returns ``(X, y, U)`` of shapes ``(n, d)``, ``(n,)`` and ``(k, d)``.
    """
    k, link = TEACHERS[name]
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, k)))[0].T
    X = rng.standard_normal((n, d))
    y = link(X @ U.T) + noise * rng.standard_normal(n)
    return X, y, U
