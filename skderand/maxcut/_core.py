"""The derandomized rounding: continuation stages, then one certified solve."""

import numpy as np
from scipy.optimize import minimize

from skderand._random import draw_seeds
from skderand.maxcut._rounding import SmoothedCut
from skderand.optimize import minimize_sosp

# The start perturbation of mu, in units of tau: mu = 0 is a stationary point of
# the mu-gradient (the objective is even in mu while V is the SDP's), so a small
# seeded perturbation breaks the symmetry; small enough not to move the start's
# expected cut (it changes each separation probability by O(1e-3)).
_MU_PERTURBATION = 1e-3
# L-BFGS correction pairs, as minimize_sosp uses by default.
_LBFGS_MEMORY = 20
# Lanczos vectors of the final certificate: 30 Krylov vectors resolve the
# smallest Hessian eigenvalue of the smoothed cut at V ~ 0 (the mu block is a
# weighted Laplacian-like matrix) to well below the curvature tolerance. The
# products are exact (SmoothedCut.hessp): the normal tails are evaluated once
# at the certified point, then each product is a few sparse products, where a
# central difference cost two gradient evaluations each.
_CERTIFICATE_LANCZOS_ITER = 30


def expected_gw_cut(rows, cols, weights, V):
    """``sum_{i<j} w_ij arccos(v_i . v_j) / pi``: random-hyperplane rounding's mean."""
    dots = np.clip(np.einsum("ij,ij->i", V[rows], V[cols]), -1.0, 1.0)
    return float(weights @ np.arccos(dots) / np.pi)


def _continuation_stage(objective, z, *, tol, max_iter, callback, memory):
    """First-order L-BFGS on one stage's objective; returns ``(z, n_iter)``.

    Stops when the gradient 2-norm is below ``tol`` or after ``max_iter``
    iterations: the stages only carry ``(V, mu)`` from the SDP vectors towards
    ``V = 0``; the certificate is computed once, on the final point.
    """
    state = {"z": z, "n_iter": 0}
    cached = {}

    def evaluate(x):
        # scipy evaluates each iterate before the callback asks again for its
        # gradient: remember the last one instead of recomputing it.
        if cached.get("x") is None or not np.array_equal(cached["x"], x):
            cached["x"], cached["out"] = np.array(x, copy=True), objective(x)
        return cached["out"]

    def check(intermediate_result):
        state["z"] = np.array(intermediate_result.x, copy=True)
        state["n_iter"] += 1
        value, grad = evaluate(state["z"])
        callback(state["z"], value)
        if np.linalg.norm(grad) <= tol:
            raise StopIteration

    value, grad = evaluate(z)
    if np.linalg.norm(grad) <= tol:
        return z, 0
    res = minimize(
        evaluate,
        z,
        jac=True,
        method="L-BFGS-B",
        callback=check,
        # The stopping rule is the 2-norm in `check`, not scipy's own tests.
        options={
            "maxiter": max_iter,
            "maxcor": memory,
            "gtol": 0.0,
            "ftol": 0.0,
        },
    )
    if evaluate(res.x)[0] < evaluate(state["z"])[0]:
        state["z"] = np.array(res.x, copy=True)
    return state["z"], state["n_iter"]


def derandomized_rounding(
    n,
    rows,
    cols,
    weights,
    V,
    rng,
    *,
    tau,
    alpha,
    alpha_growth,
    max_stages,
    max_iter,
    tol,
    curvature_tol,
    v_tol,
    callback=None,
    memory=_LBFGS_MEMORY,
    verbose=0,
):
    """Maximize the smoothed expected cut minus ``alpha |V|^2``, raising ``alpha``.

    Continuation stages (first-order L-BFGS, ``alpha`` multiplied by
    ``alpha_growth`` after each) run until ``|V|_F <= v_tol sqrt(n)`` or
    ``max_stages`` stages; then :func:`~skderand.optimize.minimize_sosp`, at the
    last ``alpha`` and from the last stage's point, returns a certified
    second-order stationary point (escaping a saddle if there is one). Its
    certificate is the rounding's only one. ``memory`` is the number of
    L-BFGS correction pairs, in the stages and in the certified solve.

    Returns ``(mu, V, info)`` with ``info`` holding ``"result"`` (the final
    ``OptimizeResult``, whose ``grad_norm`` and ``min_hessian_eig`` are the
    certificate), ``"n_iter"`` (all iterations), ``"n_stages"``, ``"alpha"``
    and ``"v_norm"``; the cut is ``sign(mu)`` once ``V`` is ~0.
    """
    rank = V.shape[1]
    objective = SmoothedCut(n, rows, cols, weights, rank, tau)
    mu0 = _MU_PERTURBATION * tau * rng.standard_normal(n)
    z = np.concatenate([V.ravel(), mu0])
    n_iter = 0
    n_stages = 0
    for stage in range(max_stages):
        objective.lam = alpha * alpha_growth**stage

        def record(zk, value, stage=stage, lam=objective.lam):
            if callback is not None:
                Vk, muk = objective.split(zk)
                callback(stage, lam, Vk, muk, -value)

        z, stage_iter = _continuation_stage(
            objective,
            z,
            tol=tol,
            max_iter=max_iter,
            callback=record,
            memory=memory,
        )
        n_iter += stage_iter
        n_stages += 1
        v_norm = float(np.linalg.norm(objective.split(z)[0]))
        if verbose:
            print(
                f"[DeterministicMaxCut] rounding stage {stage}: "
                f"alpha={objective.lam:.3g} |V|={v_norm:.3e} "
                f"expected cut={-objective(z)[0] + objective.lam * v_norm**2:.6g} "
                f"iterations={stage_iter}",
                flush=True,
            )
        if v_norm <= v_tol * np.sqrt(n):
            break
    # The certified solve continues the last stage, at its alpha.
    final_stage = n_stages - 1

    def record_final(r):
        if callback is not None:
            Vk, muk = objective.split(r.x)
            callback(final_stage, objective.lam, Vk, muk, -r.fun)

    # The estimator records the certificate and warns, in its own terms.
    res = minimize_sosp(
        objective,
        z,
        hessp=objective.hessp,
        tol=tol,
        curvature_tol=curvature_tol,
        max_iter=max_iter,
        random_state=draw_seeds(rng),
        callback=record_final,
        verbose=max(0, verbose - 1),
        warn=False,
        options={
            "max_lanczos_iter": min(z.size, _CERTIFICATE_LANCZOS_ITER),
            "memory": memory,
        },
    )
    V_final, mu = objective.split(res.x)
    info = {
        "result": res,
        "n_iter": n_iter + res.n_iter,
        "n_stages": n_stages,
        "alpha": objective.lam,
        "v_norm": float(np.linalg.norm(V_final)),
    }
    if verbose:
        print(
            f"[DeterministicMaxCut] rounding certificate at alpha={objective.lam:.3g}: "
            f"gradient norm {res.grad_norm:.2e}, smallest Hessian eigenvalue "
            f"{res.min_hessian_eig:.2e}, |V|={info['v_norm']:.3e}, "
            f"iterations={res.n_iter}",
            flush=True,
        )
    return mu, V_final, info
