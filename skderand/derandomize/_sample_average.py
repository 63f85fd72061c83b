"""A user's own smooth payoff, averaged over fixed quasi-random Gaussian points."""

import numpy as np
from scipy.special import ndtri
from scipy.stats import qmc

from skderand._random import seeded_generator
from skderand.derandomize._protocol import RoundingExpectation

__all__ = ["SampleAverageExpectation"]


class SampleAverageExpectation(RoundingExpectation):
    """``F(V, mu) = mean_k g(V z_k + mu)`` over fixed Gaussian points ``z_k``.

    For a payoff ``g`` with no closed-form expectation: the points are a
    scrambled Sobol sequence mapped to the Gaussian by the normal quantile,
    each with its antithetic twin ``-z_k`` (so that ``V = 0`` stays a
    stationary point in ``V`` for every ``mu``, as it is for the true
    expectation). Fixed points make ``F`` deterministic and as smooth as
    ``g``.

    Parameters
    ----------
    payoff : callable
        ``payoff(Y)`` for ``Y`` of shape ``(m, n_coordinates)`` returns the
        ``m`` payoffs, one per row.
    gradient : callable
        ``gradient(Y)`` returns the payoffs' gradients, shape ``(m,
        n_coordinates)``.
    n_coordinates : int
        Length of ``y``.
    rank : int
        Length of ``z`` (columns of ``V``).
    n_samples : int, default=1024
        Number of points, rounded up to twice a power of two.
    hessp : callable, default=None
        ``hessp(Y, dY)``: each row's Hessian of ``g`` at ``Y[k]`` applied to
        ``dY[k]``, shape ``(m, n_coordinates)``. Without it,
        :func:`~skderand.derandomize.derandomize` uses central differences.
    solution : callable, default=None
        Reads a deterministic solution out of ``mu``; ``None`` means ``mu``
        itself.
    solution_value : callable, default=None
        The exact payoff of a solution; ``None`` means ``payoff`` at ``mu``.
    mu_scale : float, default=1.0
        The scale of ``mu`` on which ``g`` changes (see
        :class:`RoundingExpectation`).
    random_state : int, Generator, RandomState instance or None, default=0
        Seeds the Sobol scrambling.

    Attributes
    ----------
    points : ndarray of shape (n_samples, rank)
        The points ``z_k``, antithetic twins in the second half.

    Notes
    -----
    The guarantee is weaker than a closed form's. Stein's identity
    ``E[grad g(y) z^T] = E[hess g(y)] V``, which makes every second-order
    stationary point of ``F - alpha ||V||**2`` have ``V = 0`` for any
    ``alpha > 0``, holds for the Gaussian, not for a finite set of points. On
    the sample, ``V`` is driven to 0 once ``2 alpha`` exceeds the curvature of
    the sample average in ``V``; ``derandomize`` raises ``alpha`` until then,
    and its ``v_norm_bound`` is then a diagnostic, not a proof. The value of
    the solution (``g`` at ``mu`` for the default read-out) is exact.

    Examples
    --------
    A smooth payoff with a unique best point, ``g(y) = -|y - c|**2 +
    cos(y_1)``:

    >>> import numpy as np
    >>> from skderand.derandomize import SampleAverageExpectation, derandomize
    >>> c = np.array([0.5, -1.0])
    >>> payoff = lambda Y: -np.sum((Y - c) ** 2, axis=1) + np.cos(Y[:, 0])
    >>> def gradient(Y):
    ...     G = -2 * (Y - c)
    ...     G[:, 0] -= np.sin(Y[:, 0])
    ...     return G
    >>> F = SampleAverageExpectation(payoff, gradient, n_coordinates=2, rank=2)
    >>> res = derandomize(F, np.eye(2), random_state=0)
    >>> bool(res.v_norm < 1e-3), res.value >= res.start_expectation
    (True, True)
    """

    def __init__(
        self,
        payoff,
        gradient,
        n_coordinates,
        rank,
        *,
        n_samples=1024,
        hessp=None,
        solution=None,
        solution_value=None,
        mu_scale=1.0,
        random_state=0,
    ):
        for name, function in (("payoff", payoff), ("gradient", gradient)):
            if not callable(function):
                raise TypeError(f"{name} must be callable.")
        if int(n_coordinates) < 1 or int(rank) < 1 or int(n_samples) < 2:
            raise ValueError(
                "n_coordinates and rank must be >= 1 and n_samples >= 2; got "
                f"{n_coordinates}, {rank}, {n_samples}."
            )
        self.payoff = payoff
        self.gradient = gradient
        self.n_coordinates = int(n_coordinates)
        self.mu_scale = float(mu_scale)
        self._user_hessp = hessp
        self._solution = solution
        self._solution_value = solution_value
        log2 = int(np.ceil(np.log2(int(n_samples) / 2)))
        sobol = qmc.Sobol(int(rank), scramble=True, seed=seeded_generator(random_state))
        # Sobol points lie in (0, 1) after scrambling; the clip guards the
        # quantile against an exact 0 or 1.
        half = ndtri(np.clip(sobol.random_base2(log2), 1e-12, 1 - 1e-12))
        self.points = np.vstack([half, -half])
        if hessp is None:
            self.hessp = None

    def _rows(self, V, mu):
        return self.points @ V.T + mu

    def value(self, V, mu):
        """``F(V, mu)``."""
        return float(np.mean(self.payoff(self._rows(V, mu))))

    def value_and_grad(self, V, mu):
        """``F(V, mu)`` and its gradient ``(dF/dV, dF/dmu)``."""
        Y = self._rows(V, mu)
        G = np.asarray(self.gradient(Y), dtype=np.float64)
        m = self.points.shape[0]
        return float(np.mean(self.payoff(Y))), G.T @ self.points / m, G.mean(axis=0)

    def hessp(self, V, mu, dV, dmu):
        """The Hessian of ``F`` applied to ``(dV, dmu)`` from the user's ``hessp``."""
        Y = self._rows(V, mu)
        HY = np.asarray(self._user_hessp(Y, self._rows(dV, dmu)), dtype=np.float64)
        return HY.T @ self.points / self.points.shape[0], HY.mean(axis=0)

    def solution(self, mu):
        """The user's read-out of ``mu`` (``mu`` itself by default)."""
        if self._solution is None:
            return np.array(mu, dtype=np.float64, copy=True)
        return self._solution(mu)

    def solution_value(self, solution):
        """The user's exact value, or ``payoff`` at the solution."""
        if self._solution_value is not None:
            return float(self._solution_value(solution))
        return float(self.payoff(np.asarray(solution, dtype=np.float64)[None, :])[0])
