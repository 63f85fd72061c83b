"""What :func:`~skderand.derandomize.derandomize` asks of an expectation."""

import numpy as np

__all__ = ["RoundingExpectation"]


class RoundingExpectation:
    """Base class of an expectation ``F(V, mu) = E_z[g(V z + mu)]`` to derandomize.

    A randomized algorithm whose randomness is ``y = V z + mu``, with ``z`` a
    standard Gaussian vector of ``V.shape[1]`` entries and one offset ``mu_i``
    per coordinate, is described to :func:`~skderand.derandomize.derandomize`
    by an object with the methods below. Subclass this class and implement at
    least :meth:`value_and_grad` and :meth:`solution_value`; the others have
    defaults. Any object with the same methods and attributes serves as well.

    ``F`` is maximized: it is the expected payoff of the randomized algorithm.
    It must be smooth in ``(V, mu)`` near ``V = 0`` (a payoff of signs is
    smoothed by independent Gaussian noise, see
    :class:`~skderand.derandomize.CutExpectation`).

    Attributes
    ----------
    n_coordinates : int
        Number of coordinates of ``y`` (rows of ``V``, entries of ``mu``).
    mu_scale : float
        The scale of ``mu`` on which the payoff changes (the smoothing noise's
        standard deviation for a payoff of signs). ``derandomize`` perturbs a
        zero start of ``mu`` by ``1e-3 * mu_scale`` and stops raising ``alpha``
        once ``||V||_F <= 1e-3 * mu_scale * sqrt(n_coordinates)``.
    exact_finish : bool
        Whether :meth:`finish` guarantees a solution whose exact value is at
        least ``F(0, mu)`` (the method of conditional expectations).

    See Also
    --------
    skderand.derandomize.derandomize : The continuation that drives ``V`` to 0.
    skderand.derandomize.CutExpectation : A closed-form expectation of signs.
    skderand.derandomize.SampleAverageExpectation : A user's own smooth payoff.

    Examples
    --------
    The expected payoff ``E[-(y - 1)**2] = -(mu - 1)**2 - ||v||**2`` of one
    coordinate ``y = v . z + mu``:

    >>> import numpy as np
    >>> from skderand.derandomize import RoundingExpectation, derandomize
    >>> class Quadratic(RoundingExpectation):
    ...     n_coordinates = 1
    ...     def value_and_grad(self, V, mu):
    ...         value = -((mu[0] - 1.0) ** 2) - np.sum(V * V)
    ...         return value, -2.0 * V, -2.0 * (mu - 1.0)
    ...     def solution_value(self, solution):
    ...         return -float((solution[0] - 1.0) ** 2)
    >>> res = derandomize(Quadratic(), np.ones((1, 2)), random_state=0)
    >>> bool(res.certified), round(float(res.solution[0]), 3)
    (True, 1.0)
    """

    n_coordinates = None
    mu_scale = 1.0
    exact_finish = False

    def value_and_grad(self, V, mu):
        """``F(V, mu)`` and its gradient ``(dF/dV, dF/dmu)``.

        Parameters
        ----------
        V : ndarray of shape (n_coordinates, rank)
        mu : ndarray of shape (n_coordinates,)

        Returns
        -------
        value : float
        grad_V : ndarray of shape (n_coordinates, rank)
        grad_mu : ndarray of shape (n_coordinates,)
        """
        raise NotImplementedError

    def value(self, V, mu):
        """``F(V, mu)`` alone (by default from :meth:`value_and_grad`)."""
        return float(self.value_and_grad(V, mu)[0])

    # An exact Hessian-vector product, ``hessp(V, mu, dV, dmu) -> (hV, hmu)``,
    # the Hessian of F at (V, mu) applied to (dV, dmu), is optional: without
    # one, derandomize uses central differences of gradients.
    hessp = None

    def solution(self, mu):
        """The deterministic solution that ``mu`` stands for (by default ``mu``)."""
        return np.array(mu, dtype=np.float64, copy=True)

    def finish(self, mu):
        """The solution after the finishing step (by default :meth:`solution`)."""
        return self.solution(mu)

    def solution_value(self, solution):
        """The exact payoff of a deterministic solution."""
        raise NotImplementedError
