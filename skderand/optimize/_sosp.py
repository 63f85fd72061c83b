"""Certified approximate second-order stationary points (SOSPs).

Two methods share one contract: ``minimize_sosp`` returns a point together with its
certificate (gradient norm and smallest Hessian eigenvalue), and ``success`` is
true only when the certificate holds.

- ``"pgd"``: perturbed gradient descent (Jin et al., 2017) with a backtracking step.
- ``"lbfgs"``: scipy's L-BFGS to first-order stationarity, then a Lanczos check of
  the curvature and, if it is negative, a line search along the eigenvector;
  repeated. The same certificate, usually far fewer function evaluations.
"""

import numbers
import time
import warnings

import numpy as np
from scipy.optimize import OptimizeResult, minimize
from sklearn.exceptions import ConvergenceWarning

from skderand._random import check_random_state
from skderand.optimize._certificate import (
    _certify,
    _check_tolerances,
    _check_x,
    _Objective,
    certificate_message,
)

__all__ = ["minimize_sosp"]

METHODS = ("lbfgs", "pgd")

# Perturbed gradient descent's escape test waits t_thres steps after a
# perturbation for the objective to drop. Its default is the time a component
# along curvature -curvature_tol needs to grow by _ESCAPE_GROWTH * sqrt(n)
# (from ~ r / sqrt(n), its share of the uniform perturbation, to ~ 10 r, well past
# the ball), clipped to [_MIN_ESCAPE_ITER, _MAX_ESCAPE_ITER]: at least a few steps
# for the step size to settle, and a bound when curvature_tol is tiny.
_ESCAPE_GROWTH = 10.0
_MIN_ESCAPE_ITER = 10
_MAX_ESCAPE_ITER = 10_000


class _Stop(Exception):
    """The user's callback asked to stop."""


def _negative_curvature_step(objective, x, value, grad, direction, eig):
    """Decrease ``fun`` along a negative-curvature direction by a line search.

    The quadratic model ``alpha * g.v + alpha**2 * eig / 2`` decreases for every
    ``alpha > 0`` once ``v`` is signed so that ``g.v <= 0``; the true function
    bends away from it at a scale set by the unknown third derivative, so the step
    is doubled while the decrease keeps growing and halved until it is real.
    """
    if grad @ direction > 0:
        direction = -direction
    slope = grad @ direction

    def predicted(alpha):
        return alpha * slope + 0.5 * eig * alpha**2

    alpha = 1.0
    best_alpha, best_value = 0.0, value
    for _ in range(60):
        trial = objective(x + alpha * direction)[0]
        if trial <= value + 0.5 * predicted(alpha):
            best_alpha, best_value = alpha, trial
            break
        alpha /= 2.0
    if best_alpha == 0.0:
        return None
    for _ in range(30):
        trial = objective(x + 2 * best_alpha * direction)[0]
        if trial >= best_value:
            break
        best_alpha, best_value = 2 * best_alpha, trial
    return x + best_alpha * direction


class _Progress:
    """Iteration counting, the user's callback and ``verbose`` printing."""

    def __init__(self, method, callback, verbose, max_iter):
        self.method = method
        self.callback = callback
        self.verbose = verbose
        self.max_iter = max_iter
        self.n_iter = 0
        self.start = time.perf_counter()
        self.block = 1 if verbose >= 2 else max(1, min(100, max_iter // 20))
        if verbose:
            print(f"[minimize_sosp] method={method!r}, max_iter={max_iter}")
            print(f"{'iter':>8} {'objective':>16} {'grad norm':>11} {'time (s)':>9}")

    def step(self, x, value, grad_norm):
        self.n_iter += 1
        if self.verbose and self.n_iter % self.block == 0:
            self.report(value, grad_norm)
        if self.callback is not None:
            try:
                self.callback(
                    OptimizeResult(x=x, fun=value, grad_norm=grad_norm, nit=self.n_iter)
                )
            except StopIteration:
                raise _Stop from None

    def report(self, value, grad_norm, note=""):
        if self.verbose:
            elapsed = time.perf_counter() - self.start
            print(
                f"{self.n_iter:>8} {value:>16.9g} {grad_norm:>11.3e} "
                f"{elapsed:>9.2f} {note}".rstrip()
            )

    @property
    def exhausted(self):
        return self.n_iter >= self.max_iter


def _run_lbfgs(objective, x, state, tol, progress, memory):
    """L-BFGS until the gradient norm is below ``tol`` (or it stalls)."""
    value, grad = objective(x)
    if np.linalg.norm(grad) <= tol or progress.exhausted:
        return x

    def check(intermediate_result):
        value, grad = objective(intermediate_result.x)
        grad_norm = np.linalg.norm(grad)
        state["x"] = np.array(intermediate_result.x, copy=True)
        progress.step(state["x"], value, grad_norm)
        if grad_norm <= tol or progress.exhausted:
            raise StopIteration

    state["x"] = x
    # gtol=0 and ftol=0: the stopping rule is ours (the 2-norm of the gradient, in
    # `check`), not scipy's infinity-norm and relative-decrease tests.
    res = minimize(
        objective,
        x,
        jac=True,
        method="L-BFGS-B",
        callback=check,
        options={
            "maxiter": max(1, progress.max_iter - progress.n_iter),
            "maxcor": memory,
            "gtol": 0.0,
            "ftol": 0.0,
            "maxls": 40,
        },
    )
    # On a line-search failure scipy returns its best point, which `check` may not
    # have seen; keep whichever has the lower objective.
    if objective(res.x)[0] < objective(state["x"])[0]:
        state["x"] = np.array(res.x, copy=True)
    return state["x"]


def _lbfgs_sosp(objective, x, *, tol, curvature_tol, rng, progress, options):
    """Alternate L-BFGS to first-order stationarity and negative-curvature steps."""
    n_escapes = 0
    stalls = 0
    state = {}
    while True:
        x = _run_lbfgs(objective, x, state, tol, progress, options["memory"])
        cert = _certify(objective, x, rng=rng, **options["certify"])
        if cert.success or progress.exhausted:
            return x, cert, n_escapes
        if cert.min_hessian_eig < -curvature_tol:
            new_x = _negative_curvature_step(
                objective,
                x,
                cert.fun,
                cert.jac,
                cert.min_hessian_eigvec,
                cert.min_hessian_eig,
            )
            if new_x is None:
                return x, cert, n_escapes
            n_escapes += 1
            progress.report(
                objective(new_x)[0],
                np.linalg.norm(objective(new_x)[1]),
                f"negative curvature {cert.min_hessian_eig:.3e}: stepped along it",
            )
            x = new_x
            stalls = 0
        else:
            # The gradient is still too large but L-BFGS stopped: its line search
            # failed, typically because the remaining decrease is below the
            # round-off of the objective. Newton steps judged by the gradient norm
            # do not depend on objective differences.
            polished = _newton_polish(objective, x, tol, progress)
            if np.linalg.norm(objective(polished)[1]) < cert.grad_norm:
                x, stalls = polished, 0
            else:
                stalls += 1
            if stalls > 1:
                return x, cert, n_escapes


def _roundoff(value):
    """Objective changes below this are indistinguishable from round-off."""
    return 1e-12 * (abs(value) + 1.0)


def _newton_polish(objective, x, tol, progress, max_steps=50, max_cg_iter=50):
    """Truncated Newton-CG steps accepted when they shrink the gradient norm.

    Used where the gradient must shrink further but the objective no longer
    resolves the decrease (so value-based line searches fail). CG stops at
    non-positive curvature; a step is accepted when ``||grad||`` decreases and the
    objective does not rise beyond round-off.
    """
    value, grad = objective(x)
    grad_norm = np.linalg.norm(grad)
    for _ in range(max_steps):
        if grad_norm <= tol or progress.exhausted:
            break
        step = np.zeros_like(x)
        residual = -grad
        direction = residual.copy()
        rr = residual @ residual
        for _ in range(max_cg_iter):
            h_dir = objective.hessp(x, direction)
            curvature = direction @ h_dir
            if curvature <= 0:
                if not step.any():
                    step = -grad
                break
            a = rr / curvature
            step += a * direction
            residual -= a * h_dir
            rr_new = residual @ residual
            if np.sqrt(rr_new) <= min(0.1, np.sqrt(grad_norm)) * grad_norm:
                break
            direction = residual + (rr_new / rr) * direction
            rr = rr_new
        alpha = 1.0
        for _ in range(30):
            trial = x + alpha * step
            trial_value, trial_grad = objective(trial)
            trial_norm = np.linalg.norm(trial_grad)
            if trial_norm < grad_norm and trial_value <= value + _roundoff(value):
                break
            alpha /= 2
        else:
            break
        x, value, grad, grad_norm = trial, trial_value, trial_grad, trial_norm
        progress.step(x, value, grad_norm)
    return x


def _uniform_ball(rng, n, radius):
    direction = rng.standard_normal(n)
    direction /= np.linalg.norm(direction)
    return radius * rng.uniform() ** (1.0 / n) * direction


def _pgd_sosp(objective, x, *, tol, curvature_tol, rng, progress, options):
    """Perturbed gradient descent (Jin et al., 2017) with a backtracking step size.

    Gradient steps ``x - eta * g`` with ``eta`` halved until the sufficient-decrease
    condition of an ``L = 1/eta`` smooth function holds (and grown slowly again
    afterwards). When the gradient is below ``tol`` and no perturbation happened in
    the last ``t_thres`` steps, the point is remembered and a uniform draw from the
    ball of radius ``r`` is added. If ``t_thres`` steps later the objective has not
    dropped by ``f_thres``, the remembered point is returned, once its certificate
    confirms it; otherwise the descent goes on.
    """
    n = x.size
    radius = options["perturbation_radius"]
    eta = options["step_size"]
    value, grad = objective(x)
    grad_norm = np.linalg.norm(grad)
    anchor = None  # (x_tilde, f_tilde, t_noise, t_thres) while an escape is tested
    n_perturbations = 0
    cert = None
    while not progress.exhausted:
        if anchor is None and grad_norm <= tol:
            if cert is None or not np.array_equal(cert.x, x):
                cert = _certify(objective, x, rng=rng, **options["certify"])
            if cert.success and options["certify_early"]:
                return x, cert, n_perturbations
            t_thres = options["escape_iter"]
            if t_thres is None:
                # Steps for a component along curvature -curvature_tol to grow from
                # ~ r / sqrt(n) to ~ r: the escape time of Jin et al.'s analysis.
                growth = np.log(_ESCAPE_GROWTH * np.sqrt(n))
                rate = np.log1p(eta * max(curvature_tol, 1e-12))
                t_thres = int(min(np.ceil(growth / rate), _MAX_ESCAPE_ITER))
            anchor = (x, value, progress.n_iter, max(t_thres, _MIN_ESCAPE_ITER))
            x = x + _uniform_ball(rng, n, radius)
            value, grad = objective(x)
            grad_norm = np.linalg.norm(grad)
            n_perturbations += 1
        # Backtracking gradient step.
        while True:
            trial = x - eta * grad
            trial_value, trial_grad = objective(trial)
            if trial_value <= value - 0.5 * eta * grad_norm**2:
                break
            # Once the predicted decrease is below round-off, Armijo cannot be
            # checked on values: accept by the approximate Wolfe condition of
            # Hager and Zhang (2005), the slope at the trial from the gradient.
            if (
                0.5 * eta * grad_norm**2 < _roundoff(value)
                and trial_value <= value + _roundoff(value)
                and trial_grad @ grad >= -0.8 * grad_norm**2
            ):
                break
            eta *= 0.5
            if eta < 1e-30:
                warnings.warn(
                    "Backtracking could not find a step that decreases the "
                    "objective: the gradient may be inconsistent with fun.",
                    RuntimeWarning,
                    stacklevel=4,
                )
                cert = _certify(objective, x, rng=rng, **options["certify"])
                return x, cert, n_perturbations
        x, value, grad = trial, trial_value, trial_grad
        grad_norm = np.linalg.norm(grad)
        eta *= options["step_growth"]
        progress.step(x, value, grad_norm)
        if anchor is not None:
            x_tilde, f_tilde, t_noise, t_thres = anchor
            f_thres = options["escape_decrease"]
            if f_thres is None:
                f_thres = 0.5 * curvature_tol * radius**2
            if value - f_tilde <= -f_thres:
                # The escape test can only pass from here on: end it now rather
                # than wait out the remaining t_thres steps.
                progress.report(value, grad_norm, "escaped a saddle")
                anchor = None
            elif progress.n_iter - t_noise >= t_thres:
                # No escape: the remembered point is an approximate SOSP with high
                # probability. Confirm before claiming it.
                cert = _certify(objective, x_tilde, rng=rng, **options["certify"])
                if cert.success:
                    return x_tilde, cert, n_perturbations
                progress.report(value, grad_norm, "escape test inconclusive")
                anchor = None
    if anchor is not None and anchor[1] < value:
        x = anchor[0]
    return x, _certify(objective, x, rng=rng, **options["certify"]), n_perturbations


def _method_settings(method, options, tol, curvature_tol):
    """The method's settings: its defaults, updated by the user's ``options``.

    ``max_lanczos_iter`` and ``lanczos_rtol`` go to the certificate (key
    ``"certify"``), the rest to the method; an unknown option is an error.
    """
    options = dict(options or {})
    certify = {
        "tol": tol,
        "curvature_tol": curvature_tol,
        "max_lanczos_iter": options.pop("max_lanczos_iter", 100),
        "lanczos_rtol": options.pop("lanczos_rtol", 1e-6),
    }
    defaults = {
        "lbfgs": {"memory": 20},
        "pgd": {
            "step_size": 1.0,
            "step_growth": 1.1,
            "perturbation_radius": np.sqrt(tol),
            "escape_iter": None,
            "escape_decrease": None,
            "certify_early": True,
        },
    }[method]
    unknown = set(options) - set(defaults)
    if unknown:
        raise ValueError(
            f"Unknown options for method {method!r}: {sorted(unknown)}; "
            f"valid ones are {sorted(defaults) + ['lanczos_rtol', 'max_lanczos_iter']}."
        )
    return {**defaults, **options, "certify": certify}


def _outcome_message(cert, tol, curvature_tol, max_iter, stopped, exhausted):
    """``(message, advice)``: how the run ended, and what to change if it failed."""
    if cert.success:
        return "Certified approximate second-order stationary point.", ""
    if stopped:
        return "Stopped by the callback before the certificate held.", ""
    summary = certificate_message(
        cert.grad_norm, tol, cert.min_hessian_eig, curvature_tol
    )
    if exhausted:
        return (
            f"max_iter={max_iter} reached before the certificate held ({summary}).",
            " Increase max_iter, or loosen tol / curvature_tol.",
        )
    return (
        f"The method stalled before the certificate held ({summary}).",
        " Round-off limits how small the gradient can get: loosen tol, or "
        "rescale the problem so the objective is of order one.",
    )


def minimize_sosp(
    fun,
    x0,
    *,
    hessp=None,
    method="lbfgs",
    tol=1e-6,
    curvature_tol=None,
    max_iter=10_000,
    random_state=None,
    callback=None,
    verbose=0,
    warn=True,
    options=None,
):
    """Find a certified approximate second-order stationary point of ``fun``.

    A point ``x`` is an approximate second-order stationary point (SOSP) when
    ``||grad f(x)|| <= tol`` and ``lambda_min(hess f(x)) >= -curvature_tol``.
    First-order methods can stop at saddle points; both methods here escape strict
    saddles and return the certificate of the point they return.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)`` for a flat float64 vector ``x``.
    x0 : array-like of shape (n_variables,)
        Starting point. It is copied, never modified.
    hessp : callable, default=None
        ``hessp(x, v)`` returning the Hessian at ``x`` times ``v``. Without it,
        Hessian-vector products are central differences of gradients.
    method : {"lbfgs", "pgd"}, default="lbfgs"
        ``"lbfgs"``: L-BFGS to first-order stationarity, Lanczos curvature check,
        line search along the negative-curvature eigenvector, repeated.
        ``"pgd"``: perturbed gradient descent of Jin et al. (2017) with a
        backtracking step size. ``"lbfgs"`` is the default because it reaches the
        same certificate with far fewer evaluations (see
        ``benchmarks/bench_solver.py``).
    tol : float, default=1e-6
        Gradient-norm tolerance.
    curvature_tol : float, default=None
        Smallest Hessian eigenvalue allowed is ``-curvature_tol``. ``None`` means
        ``sqrt(tol)``.
    max_iter : int, default=10_000
        Maximum number of iterations (gradient steps for ``"pgd"``, L-BFGS
        iterations for ``"lbfgs"``).
    random_state : int, RandomState or Generator instance, or None, default=None
        Seeds the perturbations and the Lanczos start vectors. ``None`` seeds
        from the operating system (never from numpy's global generator).
    callback : callable, default=None
        Called after each iteration with an ``OptimizeResult`` holding ``x``,
        ``fun``, ``grad_norm`` and ``nit``. Raise ``StopIteration`` in it to stop.
    verbose : int, default=0
        ``1`` prints the objective and gradient norm every block of iterations and
        at each escape; ``2`` prints every iteration.
    warn : bool, default=True
        Raise a :class:`~sklearn.exceptions.ConvergenceWarning` when the
        certificate does not hold. Estimators pass ``False`` and warn in their
        own terms (their parameter names), instead of silencing this one with a
        process-wide warning filter.
    options : dict, default=None
        Method settings. Both methods: ``max_lanczos_iter`` (100),
        ``lanczos_rtol`` (1e-6). ``"lbfgs"``: ``memory`` (20 correction pairs).
        ``"pgd"``: ``step_size`` (initial, 1.0), ``step_growth`` (1.1, the factor
        by which an accepted step is enlarged), ``perturbation_radius``
        (``sqrt(tol)``), ``escape_iter`` (``t_thres``; ``None`` derives it from
        the step size and ``curvature_tol``), ``escape_decrease`` (``f_thres``;
        ``None`` means ``curvature_tol * r**2 / 2``), ``certify_early`` (True:
        stop as soon as a point passes the certificate, skipping the escape test).

    Returns
    -------
    res : scipy.optimize.OptimizeResult
        ``x``, ``fun``, ``jac``, ``grad_norm``, ``min_hessian_eig``,
        ``min_hessian_eigvec``, ``n_iter`` (also ``nit``), ``n_perturbations``
        (random perturbations for ``"pgd"``, negative-curvature steps for
        ``"lbfgs"``), ``nfev``, ``nhev`` (Hessian-vector products), ``success``
        (the certificate holds), ``message``, ``method``, ``tol``,
        ``curvature_tol`` and ``time``.

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` runs out before the certificate holds (unless
        ``warn=False``).

    See Also
    --------
    sosp_certificate : The certificate of a point found by any optimizer.

    References
    ----------
    .. [1] C. Jin, R. Ge, P. Netrapalli, S. Kakade, M. I. Jordan. "How to Escape
       Saddle Points Efficiently." ICML 2017.
    .. [2] N. Tsikouras, C. Pantis, I. Mitliagkas, C. Tzamos. "A Derandomization
       Framework for Structure Discovery: Applications in Neural Networks and
       Beyond." ICLR 2026, arXiv:2510.19382.

    Examples
    --------
    The double well ``sum((x**2 - 1)**2) / 4`` has a strict saddle at the origin,
    where gradient descent alone would stay forever.

    >>> import numpy as np
    >>> from skderand.optimize import minimize_sosp
    >>> def double_well(x):
    ...     return np.sum((x**2 - 1) ** 2) / 4, x**3 - x
    >>> res = minimize_sosp(double_well, np.zeros(3), random_state=0)
    >>> res.success, np.round(np.abs(res.x), 6)
    (True, array([1., 1., 1.]))
    >>> round(res.min_hessian_eig, 3)
    2.0
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    if not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}.")
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable or None.")
    x = _check_x(x0, "x0")
    tol, curvature_tol = _check_tolerances(tol, curvature_tol)
    settings = _method_settings(method, options, tol, curvature_tol)

    objective = _Objective(fun, x.size, hessp)
    objective(x)  # validate fun's output at the start, before any work
    rng = check_random_state(random_state)
    progress = _Progress(method, callback, verbose, max_iter)
    solver = {"lbfgs": _lbfgs_sosp, "pgd": _pgd_sosp}[method]
    n_escapes = 0
    try:
        x, cert, n_escapes = solver(
            objective,
            x,
            tol=tol,
            curvature_tol=curvature_tol,
            rng=rng,
            progress=progress,
            options=settings,
        )
        stopped_by_callback = False
    except _Stop:
        x = _check_x(objective._last_x)
        cert = _certify(objective, x, rng=rng, **settings["certify"])
        stopped_by_callback = True

    message, advice = _outcome_message(
        cert, tol, curvature_tol, max_iter, stopped_by_callback, progress.exhausted
    )
    if warn and not cert.success and not stopped_by_callback:
        warnings.warn(message + advice, ConvergenceWarning, stacklevel=2)
    progress.report(cert.fun, cert.grad_norm, "done")
    res = OptimizeResult(
        x=x,
        fun=cert.fun,
        jac=cert.jac,
        grad_norm=cert.grad_norm,
        min_hessian_eig=cert.min_hessian_eig,
        min_hessian_eigvec=cert.min_hessian_eigvec,
        n_iter=progress.n_iter,
        nit=progress.n_iter,
        n_perturbations=n_escapes,
        nfev=objective.nfev,
        nhev=objective.nhev,
        success=cert.success,
        status=0 if cert.success else 1,
        message=message,
        method=method,
        tol=tol,
        curvature_tol=curvature_tol,
        time=time.perf_counter() - progress.start,
    )
    if verbose:
        print(f"[minimize_sosp] {message}")
    return res
