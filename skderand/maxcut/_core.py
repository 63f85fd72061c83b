"""The MAXCUT pipeline on an edge list: SDP, derandomized rounding, polish, bound."""

import numpy as np

from skderand.maxcut._rounding import SmoothedCut
from skderand.optimize import minimize_sosp


def expected_gw_cut(rows, cols, weights, V):
    """``sum_{i<j} w_ij arccos(v_i . v_j) / pi``: random-hyperplane rounding's mean."""
    dots = np.clip(np.einsum("ij,ij->i", V[rows], V[cols]), -1.0, 1.0)
    return float(weights @ np.arccos(dots) / np.pi)


def derandomized_rounding(
    n,
    rows,
    cols,
    weights,
    V,
    rng,
    *,
    tau,
    lambda_init,
    lambda_growth,
    max_stages,
    max_iter,
    tol,
    v_tol,
    max_lanczos_iter,
    callback=None,
    verbose=0,
):
    """Maximize the smoothed expected cut minus ``lam |V|^2``, raising ``lam``.

    Returns ``(mu, V, info)``; the cut is ``sign(mu)`` once ``V`` is ~0.
    """
    rank = V.shape[1]
    objective = SmoothedCut(n, rows, cols, weights, rank, tau)
    # mu = 0 is a stationary point of the mu-gradient (the objective is even in
    # mu when V is): a small seeded perturbation breaks the symmetry.
    mu0 = 1e-3 * tau * rng.standard_normal(n)
    z = np.concatenate([V.ravel(), mu0])
    lam = lambda_init
    n_iter = 0
    stages = []
    res = None
    for stage in range(max_stages):
        objective.lam = lam

        def stage_callback(r, stage=stage, lam=lam):
            if callback is not None:
                Vk, muk = objective.split(r.x)
                callback(stage, lam, Vk, muk, -r.fun)

        # The estimator warns, in its own terms, on the final certificate.
        res = minimize_sosp(
            objective,
            z,
            tol=tol,
            max_iter=max_iter,
            random_state=int(rng.integers(2**31 - 1)),
            callback=stage_callback,
            warn=False,
            options={"max_lanczos_iter": max_lanczos_iter, "memory": 20},
        )
        z = res.x
        n_iter += res.n_iter
        Vk, muk = objective.split(z)
        v_norm = float(np.linalg.norm(Vk))
        stages.append((lam, v_norm, -res.fun, res.n_iter))
        if verbose:
            print(
                f"[DeterministicMaxCut] stage {stage}: lambda={lam:.3g} "
                f"|V|={v_norm:.3e} objective={-res.fun:.6g} iters={res.n_iter} "
                f"grad={res.grad_norm:.2e} min_eig={res.min_hessian_eig:.2e}"
            )
        if v_norm <= v_tol * np.sqrt(n):
            break
        lam *= lambda_growth
    V_final, mu = objective.split(z)
    info = {
        "n_iter": n_iter,
        "n_stages": len(stages),
        "stages": stages,
        "result": res,
        "lambda": lam,
        "v_norm": float(np.linalg.norm(V_final)),
    }
    return mu, V_final, info
