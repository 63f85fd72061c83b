"""The derandomization continuation: certified points of ``F - alpha ||V||^2``."""

import numbers

import numpy as np
from scipy.optimize import OptimizeResult, minimize

from skderand._random import draw_seeds, seeded_generator
from skderand.optimize import minimize_sosp
from skderand.optimize._certificate import _check_tolerances

__all__ = ["derandomize"]

# A zero start of mu is a stationary point of the mu-gradient when the payoff
# is even in mu (a cut is); a perturbation this small, in units of mu_scale,
# breaks the symmetry without moving the start's expectation (it changes a
# separation probability by O(1e-3)). Also the stopping level of the stages:
# ||V||_F <= _MU_PERTURBATION * mu_scale * sqrt(n).
_MU_PERTURBATION = 1e-3
# Lanczos vectors of the final certificate: at V ~ 0 the Hessian's smallest
# eigenvalue sits in the mu block (for a cut, a weighted Laplacian-like
# matrix), which 30 Krylov vectors resolve well below the curvature tolerance.
_CERTIFICATE_LANCZOS_ITER = 30


class _Penalized:
    """``-(F(V, mu) - alpha ||V||_F**2)`` over ``x = (V.ravel(), mu)``.

    The flat, minimized form :func:`~skderand.optimize.minimize_sosp` and
    scipy's L-BFGS-B work on; ``alpha`` is changed between stages.
    """

    def __init__(self, expectation, n, rank, alpha=0.0):
        self.expectation = expectation
        self.n = n
        self.rank = rank
        self.alpha = alpha
        user_hessp = getattr(expectation, "hessp", None)
        self.hessp = None if user_hessp is None else self._hessp

    def split(self, x):
        n, r = self.n, self.rank
        return x[: n * r].reshape(n, r), x[n * r :]

    def __call__(self, x):
        V, mu = self.split(x)
        value, grad_V, grad_mu = self.expectation.value_and_grad(V, mu)
        grad_V = grad_V - 2.0 * self.alpha * V
        value = value - self.alpha * np.sum(V * V)
        return -value, -np.concatenate([np.ravel(grad_V), np.ravel(grad_mu)])

    def _hessp(self, x, dx):
        V, mu = self.split(x)
        dV, dmu = self.split(dx)
        hv_V, hv_mu = self.expectation.hessp(V, mu, dV, dmu)
        hv_V = hv_V - 2.0 * self.alpha * dV
        return -np.concatenate([np.ravel(hv_V), np.ravel(hv_mu)])


def _continuation_stage(objective, x, *, tol, max_iter, callback, memory):
    """First-order L-BFGS on one stage's objective.

    Returns ``(x, n_iter, value)``, ``value`` the objective at ``x``.

    Stops when the gradient 2-norm is below ``tol`` or after ``max_iter``
    iterations: the stages only carry ``(V, mu)`` towards ``V = 0``; the
    certificate is computed once, on the final point.
    """
    state = {"x": x, "n_iter": 0}
    cached = {}

    def evaluate(y):
        # scipy evaluates each iterate before the callback asks again for its
        # gradient: remember the last one instead of recomputing it.
        if cached.get("y") is None or not np.array_equal(cached["y"], y):
            cached["y"], cached["out"] = np.array(y, copy=True), objective(y)
        return cached["out"]

    def check(intermediate_result):
        state["x"] = np.array(intermediate_result.x, copy=True)
        state["n_iter"] += 1
        value, grad = evaluate(state["x"])
        callback(state["x"], value)
        if np.linalg.norm(grad) <= tol:
            raise StopIteration

    value, grad = evaluate(x)
    if np.linalg.norm(grad) <= tol:
        return x, 0, value
    res = minimize(
        evaluate,
        x,
        jac=True,
        method="L-BFGS-B",
        callback=check,
        # The stopping rule is the 2-norm in `check`, not scipy's own tests.
        options={"maxiter": max_iter, "maxcor": memory, "gtol": 0.0, "ftol": 0.0},
    )
    if evaluate(res.x)[0] < evaluate(state["x"])[0]:
        state["x"] = np.array(res.x, copy=True)
    return state["x"], state["n_iter"], evaluate(state["x"])[0]


def _check_start(expectation, V0, mu0):
    n = getattr(expectation, "n_coordinates", None)
    V0 = np.array(V0, dtype=np.float64, copy=True)
    if V0.ndim != 2 or V0.shape[0] == 0 or V0.shape[1] == 0:
        raise ValueError(
            f"V0 must be a non-empty 2-D array (n_coordinates, rank); got shape "
            f"{V0.shape}."
        )
    if n is not None and V0.shape[0] != n:
        raise ValueError(
            f"V0 has {V0.shape[0]} rows but the expectation has {n} coordinates."
        )
    if not np.all(np.isfinite(V0)):
        raise ValueError("V0 contains NaN or infinite entries.")
    if mu0 is not None:
        mu0 = np.array(mu0, dtype=np.float64, copy=True)
        if mu0.shape != (V0.shape[0],):
            raise ValueError(
                f"mu0 must have shape ({V0.shape[0]},) to match V0; got {mu0.shape}."
            )
        if not np.all(np.isfinite(mu0)):
            raise ValueError("mu0 contains NaN or infinite entries.")
    return V0, mu0


def _check_positive(name, value, minimum=0.0):
    if not isinstance(value, numbers.Real) or not value > minimum:
        raise ValueError(f"{name} must be a number > {minimum}; got {value!r}.")


def v_norm_bound(grad_norm, min_hessian_eig, alpha):
    """The lemma's a-posteriori bound ``g / (2 alpha - max(0, -lambda_min))``.

    ``inf`` when the denominator is not positive (``alpha`` too small for the
    measured curvature).
    """
    denominator = 2.0 * alpha - max(0.0, -min_hessian_eig)
    return grad_norm / denominator if denominator > 0 else np.inf


def _stages(objective, x, *, alphas, v_stop, tol, max_iter, memory, verbose, callback):
    """The continuation: one L-BFGS stage per ``alpha`` until ``|V| <= v_stop``.

    Returns the last point, the path per stage and the penalty paid: raising
    ``alpha`` by ``d`` at a point costs ``d ||V||**2`` of the expectation.
    """
    path = {"alpha": [], "expectation": [], "v_norm": [], "n_iter": []}
    penalty_paid, previous_alpha = 0.0, 0.0
    for stage, stage_alpha in enumerate(alphas):
        objective.alpha = float(stage_alpha)
        V_before = objective.split(x)[0]
        penalty_paid += (objective.alpha - previous_alpha) * float(
            np.sum(V_before * V_before)
        )
        previous_alpha = objective.alpha

        def record(xk, value, stage=stage, stage_alpha=objective.alpha):
            if callback is not None:
                Vk, muk = objective.split(xk)
                expected = -value + stage_alpha * np.sum(Vk * Vk)
                callback(stage, stage_alpha, Vk, muk, expected)

        x, stage_iter, penalized = _continuation_stage(
            objective, x, tol=tol, max_iter=max_iter, callback=record, memory=memory
        )
        v_norm = float(np.linalg.norm(objective.split(x)[0]))
        value = -penalized + objective.alpha * v_norm**2
        for key, entry in zip(
            path, (objective.alpha, value, v_norm, stage_iter), strict=True
        ):
            path[key].append(entry)
        if verbose:
            print(
                f"[derandomize] stage {stage}: alpha={objective.alpha:.3g} "
                f"|V|={v_norm:.3e} expectation={value:.6g} iterations={stage_iter}",
                flush=True,
            )
        if v_norm <= v_stop:
            break
    return x, path, penalty_paid


def derandomize(
    expectation,
    V0,
    mu0=None,
    *,
    alpha=0.1,
    alpha_growth=3.0,
    max_stages=20,
    max_iter=30,
    tol=1e-3,
    curvature_tol=None,
    v_tol=None,
    memory=20,
    finish=True,
    random_state=None,
    verbose=0,
    callback=None,
):
    """Derandomize a Gaussian rounding ``y = V z + mu`` by the SOSP lemma.

    Maximizes ``F(V, mu) - alpha ||V||_F**2``, ``F`` the expected payoff of
    the randomized algorithm, while ``alpha`` grows: first-order continuation
    stages (L-BFGS, ``alpha`` multiplied by ``alpha_growth`` after each) until
    ``||V||_F <= v_tol * sqrt(n)``, then a certified second-order stationary
    point at the last ``alpha``
    (:func:`~skderand.optimize.minimize_sosp`). By the lemma of Tsikouras et
    al., such a point has ``V ~ 0``: the randomness is gone and ``mu`` is a
    deterministic solution, read out (and, where the expectation has one,
    improved by an exact finishing step) by the expectation.

    Parameters
    ----------
    expectation : RoundingExpectation
        The expected payoff ``F(V, mu)`` (see
        :class:`~skderand.derandomize.RoundingExpectation` for the protocol).
    V0 : array-like of shape (n_coordinates, rank)
        The randomized algorithm's ``V`` (e.g. the vectors of a semidefinite
        relaxation). Copied, never modified.
    mu0 : array-like of shape (n_coordinates,), default=None
        The start of the offsets. ``None`` means zero plus a seeded
        perturbation of ``1e-3 * expectation.mu_scale`` (a zero start is a
        stationary point of the offsets for payoffs even in ``mu``).
    alpha : float, default=0.1
        Penalty weight of the first stage.
    alpha_growth : float, default=3.0
        Factor by which ``alpha`` grows from one stage to the next (> 1).
    max_stages : int, default=20
        Largest number of stages.
    max_iter : int, default=30
        Largest number of L-BFGS iterations per stage, and of the certified
        solve.
    tol : float, default=1e-3
        Gradient-norm tolerance of the certificate, in the units of ``F``.
    curvature_tol : float, default=None
        The certificate requires the smallest Hessian eigenvalue of ``-(F -
        alpha ||V||**2)`` to be at least ``-curvature_tol``; ``None`` means
        ``sqrt(tol)``.
    v_tol : float, default=None
        The stages end once ``||V||_F <= v_tol * sqrt(n_coordinates)``;
        ``None`` means ``1e-3 * expectation.mu_scale``.
    memory : int, default=20
        L-BFGS correction pairs, in the stages and in the certified solve.
    finish : bool, default=True
        Apply the expectation's finishing step (its ``finish`` method) to
        ``mu``, and keep the finished solution where its exact value is
        higher than that of ``mu`` read out as it is (``solution``); ``False``
        keeps the read-out.
    random_state : int, Generator, RandomState instance or None, default=None
        Seeds the perturbation of a default ``mu0`` and the certified solve's
        Lanczos starts. A ``Generator`` is drawn from, not copied.
    verbose : int, default=0
        ``1`` prints a line per stage and the certificate; ``2`` also prints
        the certified solve's progress.
    callback : callable, default=None
        ``callback(stage, alpha, V, mu, value)`` after every iteration, with
        ``value = F(V, mu)`` (penalty excluded).

    Returns
    -------
    res : scipy.optimize.OptimizeResult
        - ``solution``, ``value``: the deterministic solution and its exact
          value (``expectation.solution_value``); with an exact finishing
          step, ``value >= expectation_at_zero``;
        - ``rounded_solution``, ``rounded_value``: ``mu`` read out without the
          finishing step;
        - ``mu``, ``V``, ``v_norm`` (``||V||_F`` at the end);
        - ``v_norm_bound``: the lemma's a-posteriori bound
          ``grad_norm / (2 alpha - max(0, -min_hessian_eig))`` (``inf`` when
          not positive);
        - ``start_expectation``: ``F(V0, mu0)``, the randomized algorithm's
          expected payoff; ``expectation``: ``F(V, mu)`` at the end;
          ``expectation_at_zero``: ``F(0, mu)``;
        - ``penalty_paid``: ``sum_s (alpha_s - alpha_{s-1}) ||V_{s-1}||**2``
          over the raises of ``alpha`` (``alpha_{-1} = 0``, ``V_{-1} = V0``),
          so that ``expectation >= start_expectation - penalty_paid`` (each
          stage's penalized objective never decreases);
        - the certificate: ``grad_norm``, ``min_hessian_eig``, ``certified``
          (also ``success``), ``tol``, ``curvature_tol``, ``alpha`` (the last
          stage's);
        - ``path``: per stage, arrays ``"alpha"``, ``"expectation"``,
          ``"v_norm"`` and ``"n_iter"`` (the last entry is the certified
          solve, at the last stage's ``alpha``);
        - ``n_iter``, ``n_stages``, ``message``, ``optimize_result`` (the
          certified solve's own result).

    See Also
    --------
    RoundingExpectation : The protocol of ``expectation``.
    skderand.optimize.minimize_sosp : The certified solver.

    Notes
    -----
    The lemma: with Gaussian ``z``, Stein's identity gives ``dF/dV = H_mu V``
    (``H_mu`` the Hessian of ``F`` in ``mu``), so at a point whose gradient
    norm is ``g`` and whose Hessian's smallest eigenvalue is ``lambda_min``,
    ``||V||_F <= g / (2 alpha - max(0, -lambda_min))``. It holds exactly for
    closed-form expectations; a sample average over fixed points only
    approximates Stein's identity (see
    :class:`~skderand.derandomize.SampleAverageExpectation`). The curvature is
    a Lanczos estimate, so the bound is as accurate as that estimate.

    References
    ----------
    .. [1] N. Tsikouras, C. Pantis, I. Mitliagkas, C. Tzamos. "A
       Derandomization Framework for Structure Discovery: Applications in
       Neural Networks and Beyond." ICLR 2026, arXiv:2510.19382.

    Examples
    --------
    Derandomized Goemans-Williamson on a 5-cycle, whose maximum cut is 4:

    >>> import numpy as np
    >>> from skderand.derandomize import CutExpectation, derandomize
    >>> cycle = np.roll(np.eye(5), 1, axis=1)
    >>> cycle = cycle + cycle.T
    >>> angles = 4 * np.pi * np.arange(5) / 5  # the SDP's optimal vectors
    >>> V0 = np.column_stack([np.cos(angles), np.sin(angles)])
    >>> res = derandomize(CutExpectation(cycle), V0, random_state=0)
    >>> res.value, bool(res.certified), bool(res.v_norm <= res.v_norm_bound)
    (4.0, True, True)
    """
    V0, mu0 = _check_start(expectation, V0, mu0)
    _check_positive("alpha", alpha)
    _check_positive("alpha_growth", alpha_growth, 1.0)
    for name, value in (("max_stages", max_stages), ("max_iter", max_iter)):
        if not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {value!r}.")
    tol, curvature_tol = _check_tolerances(tol, curvature_tol)
    n, rank = V0.shape
    mu_scale = float(getattr(expectation, "mu_scale", 1.0))
    if v_tol is None:
        v_tol = _MU_PERTURBATION * mu_scale
    rng = seeded_generator(random_state)
    if mu0 is None:
        mu0 = _MU_PERTURBATION * mu_scale * rng.standard_normal(n)

    objective = _Penalized(expectation, n, rank)
    start_expectation = float(expectation.value(V0, mu0))
    x, path, penalty_paid = _stages(
        objective,
        np.concatenate([V0.ravel(), mu0]),
        alphas=alpha * alpha_growth ** np.arange(max_stages),
        v_stop=v_tol * np.sqrt(n),
        tol=tol,
        max_iter=max_iter,
        memory=memory,
        verbose=verbose,
        callback=callback,
    )
    n_stages = len(path["alpha"])
    final_stage = n_stages - 1

    def record_final(r):
        if callback is not None:
            Vk, muk = objective.split(r.x)
            callback(
                final_stage,
                objective.alpha,
                Vk,
                muk,
                -r.fun + objective.alpha * np.sum(Vk * Vk),
            )

    res = minimize_sosp(
        objective,
        x,
        hessp=objective.hessp,
        tol=tol,
        curvature_tol=curvature_tol,
        max_iter=max_iter,
        random_state=draw_seeds(rng),
        callback=record_final,
        verbose=max(0, verbose - 1),
        warn=False,
        options={
            "max_lanczos_iter": min(x.size, _CERTIFICATE_LANCZOS_ITER),
            "memory": memory,
        },
    )
    return _result(
        expectation,
        objective,
        res,
        finish=finish,
        start_expectation=start_expectation,
        penalty_paid=penalty_paid,
        path=path,
        n_stages=n_stages,
        verbose=verbose,
    )


def _result(expectation, objective, res, *, finish, path, verbose, **fields):
    """The ``OptimizeResult`` of :func:`derandomize` from the certified solve."""
    V, mu = objective.split(res.x)
    V, mu = V.copy(), mu.copy()
    alpha = objective.alpha
    v_norm = float(np.linalg.norm(V))
    value = -res.fun + alpha * v_norm**2
    for key, entry in zip(path, (alpha, value, v_norm, res.n_iter), strict=True):
        path[key].append(entry)
    rounded = expectation.solution(mu)
    rounded_value = float(expectation.solution_value(rounded))
    solution, value_of_solution = rounded, rounded_value
    if finish:
        # The finished solution where it is strictly better: on a tie the
        # read-out is kept, and its value then meets the finishing step's
        # guarantee as well.
        finished = expectation.finish(mu)
        finished_value = float(expectation.solution_value(finished))
        if finished_value > rounded_value:
            solution, value_of_solution = finished, finished_value
    bound = v_norm_bound(res.grad_norm, res.min_hessian_eig, alpha)
    if verbose:
        print(
            f"[derandomize] certificate at alpha={alpha:.3g}: gradient norm "
            f"{res.grad_norm:.2e}, smallest Hessian eigenvalue "
            f"{res.min_hessian_eig:.2e}, |V|={v_norm:.3e} (bound {bound:.3e}), "
            f"iterations={res.n_iter}",
            flush=True,
        )
    return OptimizeResult(
        solution=solution,
        value=value_of_solution,
        rounded_solution=rounded,
        rounded_value=rounded_value,
        mu=mu,
        V=V,
        v_norm=v_norm,
        v_norm_bound=bound,
        expectation=float(value),
        expectation_at_zero=float(expectation.value(np.zeros_like(V), mu)),
        grad_norm=res.grad_norm,
        min_hessian_eig=res.min_hessian_eig,
        certified=bool(res.success),
        success=bool(res.success),
        tol=res.tol,
        curvature_tol=res.curvature_tol,
        alpha=alpha,
        path={key: np.asarray(entries) for key, entries in path.items()},
        n_iter=int(sum(path["n_iter"])),
        message=res.message,
        optimize_result=res,
        **fields,
    )
