"""How far a discovered subspace is from a planted one."""

import numpy as np


def projection_distance(B, U):
    """``||P_B - P_U||_2``, the sine of the largest principal angle.

    ``B`` and ``U`` hold bases of the two subspaces as rows (they need not be
    orthonormal). 0 means the same subspace, 1 a direction of one orthogonal to the
    other; theory.md section 3 uses it for tests and benchmarks.
    """
    qb = np.linalg.qr(np.asarray(B, dtype=float).T)[0]
    qu = np.linalg.qr(np.asarray(U, dtype=float).T)[0]
    return float(np.linalg.norm(qb @ qb.T - qu @ qu.T, 2))
