"""The true minimax of the log distance ratios, by prox-linear steps.

Private helper of :class:`~skderand.embedding.LearnedJLTransformer`. After the
smoothed stages, :func:`polish_minimax` minimizes the nonsmooth objective itself,

    F(W) = max_p l_p(W) - min_p l_p(W),   l_p(W) = log(|W d_p|^2 / |d_p|^2),

over the pairs ``p`` of the active set (``d_p`` the pair's difference vector).
The calibrated distortion is ``tanh(F / 2)``, so lowering ``F`` lowers it.

Each step linearizes the log-ratios of the pairs nearest the extremes,
``l_p(W + D) ~ l_p + <g_p, D>`` with ``g_p = 2 (W d_p) d_p^T / |W d_p|^2``, and
takes the prox-linear step

    min_D  max_{p in H} (l_p + <g_p, D>) - min_{q in L} (l_q + <g_q, D>)
           + |D|_F^2 / (2 rho).

Its dual is a concave quadratic over two simplices (weights ``lam`` on the top
pairs ``H``, ``mu`` on the bottom pairs ``L``),

    max  lam . l_H - mu . l_L - rho / 2 |sum lam_p g_p - sum mu_q g_q|_F^2,

of the size of ``H`` and ``L`` (tens of pairs), whatever the number of variables
``k * rank``: the Gram matrix of the ``g_p`` is ``4 (y_p . y_q)(d_p . d_q) /
(|y_p|^2 |y_q|^2)``. The step is ``D = -rho (sum lam_p g_p - sum mu_q g_q)``. A
step is kept when the active set's true ``F`` falls by a fair share of what the
model predicts; ``rho`` grows after good steps and shrinks after bad ones. The
method stops where the model predicts no decrease at any ``rho``: a first-order
(Clarke) stationary point of the active-set minimax, the nonsmooth counterpart
of the smoothed stages' certificate.
"""

import time

import numpy as np

from skderand.embedding._active import GRAM_MAX_SAMPLES, _scale_free

# Pairs per side in each step's model: enough for the minimax's active pairs on
# the benchmark sets (a few dozen carry weight at the optimum), few enough that
# the dual (2 * POLISH_PAIRS variables) costs milliseconds.
POLISH_PAIRS = 64
# Steps of one polish, and rounds of (steps on the active set, blocked pass over
# all pairs, add the pairs that overtake the extremes).
POLISH_STEPS = 40
POLISH_ROUNDS = 2
# Acceptance of a step: the true decrease must reach this share of the model's.
ACCEPT = 0.1
# Stop when the model predicts a decrease of F below this (log units: about
# 1e-7 in distortion), or when rho has shrunk this far below its start.
MIN_DECREASE = 1e-7
RHO_SHRINK_LIMIT = 1e-8
# Projected-gradient iterations of the dual (warm-started from the last step).
DUAL_ITER = 150


def _project_simplices(V):
    """Euclidean projection of each row of ``V`` onto the probability simplex.

    Sort-based, all rows at once (the dual has two simplices of equal size, and
    one call per iteration instead of two halves its Python overhead).
    """
    n_rows, m = V.shape
    U = -np.sort(-V, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    ind = np.arange(1, m + 1)
    cond = U - css / ind > 0
    # The last index where the condition holds (it holds at index 0 always).
    last = m - 1 - np.argmax(cond[:, ::-1], axis=1)
    theta = css[np.arange(n_rows), last] / (last + 1)
    return np.maximum(V - theta[:, None], 0.0)


def _dual(c, Q, n_high, rho, u0):
    """Maximize ``c.u - rho/2 u^T Q u`` over two simplices (FISTA).

    ``u[:n_high]`` and ``u[n_high:]`` each lie on a probability simplex, both of
    size ``n_high``.
    """
    lipschitz = rho * max(np.linalg.eigvalsh(Q)[-1], 1e-300)
    step = 1.0 / lipschitz
    u = u0.copy()
    z = u.copy()
    t = 1.0
    for _ in range(DUAL_ITER):
        g = c - rho * (Q @ z)
        w = z + step * g
        u_new = _project_simplices(w.reshape(2, n_high)).ravel()
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        z = u_new + ((t - 1.0) / t_new) * (u_new - u)
        if np.abs(u_new - u).max() < 1e-12:
            u = u_new
            break
        u, t = u_new, t_new
    return u


class _ActiveLogRatios:
    """Log-ratios of the active pairs under a map, and their extremes."""

    def __init__(self, X, rows, cols, d2):
        used, inverse = np.unique(np.concatenate([rows, cols]), return_inverse=True)
        self.X = X[used]
        self.ri, self.ci = inverse[: rows.size], inverse[rows.size :]
        self.log_d2 = np.log(d2)
        # When the pairs are most of those of few points (every pair, for small
        # n), the Gram form, as in the smoothed stages' objective, is one BLAS
        # product instead of a (n_pairs, k) array of differences.
        n_used = used.size
        self.gram = n_used <= GRAM_MAX_SAMPLES and 4 * rows.size >= n_used**2
        self.flat = self.ri * n_used + self.ci

    def __call__(self, W):
        Y = self.X @ W.T
        if self.gram:
            sq = np.einsum("ij,ij->i", Y, Y)
            gram = (Y @ Y.T).ravel()
            q = sq[self.ri] + sq[self.ci] - 2.0 * gram[self.flat]
        else:
            diff = Y[self.ri] - Y[self.ci]
            q = np.einsum("ij,ij->i", diff, diff)
        return np.log(np.maximum(q, 1e-300)) - self.log_d2


def prox_linear_steps(X, rows, cols, d2, W, *, max_steps=POLISH_STEPS):
    """Prox-linear steps on the minimax of the active pairs' log-ratios.

    Returns the new map (scaled so that its extreme log-ratios are symmetric
    about 0 on these pairs), the number of steps taken and whether the model
    predicted no further decrease (first-order stationarity).
    """
    k, rank = W.shape
    logratio = _ActiveLogRatios(X, rows, cols, d2)
    l = logratio(W)
    F = l.max() - l.min()
    # With |g_p| about 2 / sqrt(r_p) and ratios near 1, rho = 1e-2 |W| moves the
    # map by about 1 % to start with.
    rho0 = 1e-2 * np.linalg.norm(W)
    rho = rho0
    m = min(POLISH_PAIRS, max(1, l.size // 2))
    u = None
    stationary = False
    n_steps = 0
    while n_steps < max_steps:
        n_steps += 1
        order = np.argpartition(l, (m - 1, l.size - m))
        low, high = order[:m], order[l.size - m :]
        sel = np.concatenate([high, low])
        D = X[rows[sel]] - X[cols[sel]]
        Y = D @ W.T
        y2 = np.einsum("ij,ij->i", Y, Y)
        sign = np.concatenate([np.ones(m), -np.ones(m)])
        # Gram matrix of s_p g_p: 4 s_p s_q (y_p . y_q)(d_p . d_q) / (y2_p y2_q).
        Q = 4.0 * (Y @ Y.T) * (D @ D.T) / np.outer(y2, y2)
        Q *= np.outer(sign, sign)
        c = sign * l[sel]
        if u is None or u.size != 2 * m:
            u = np.full(2 * m, 1.0 / m)
        u = _dual(c, Q, m, rho, u)
        # <g_p, D> for the selected pairs, and the model's value of F.
        moved = l[sel] - rho * sign * (Q @ u)
        model = moved[:m].max() - moved[m:].min()
        predicted = F - model
        if predicted <= MIN_DECREASE:
            if rho >= rho0:
                stationary = True
                break
            rho *= 4.0
            continue
        coef = -rho * 2.0 * sign * u / y2
        trial = W + (coef[:, None] * Y).T @ D
        l_trial = logratio(trial)
        F_trial = l_trial.max() - l_trial.min()
        if F - F_trial >= ACCEPT * predicted:
            if F - F_trial > 0.75 * predicted:
                rho *= 2.0
            # Keep the ratios centred at 1 (the minimax is scale-invariant).
            W = trial * np.exp(-0.25 * (l_trial.max() + l_trial.min()))
            l = l_trial - 0.5 * (l_trial.max() + l_trial.min())
            F = F_trial
        else:
            rho *= 0.25
            if rho < RHO_SHRINK_LIMIT * rho0:
                stationary = True
                break
    return W, n_steps, stationary


def polish_minimax(pairs, W, *, verbose=0):
    """Minimize the true worst distortion: prox-linear rounds over the active set.

    Between rounds a blocked pass over all pairs adds the pairs that overtake
    the active set's extremes. Returns the map with the lowest all-pairs
    distortion seen (the input if none is lower), that distortion and the number
    of steps.
    """
    start = time.perf_counter()
    r_min, r_max = pairs.extremes(W)
    best_W, best = W, _scale_free(r_min, r_max)
    W = W / np.sqrt((r_min + r_max) / 2.0)
    total = 0
    for round_ in range(POLISH_ROUNDS):
        W, n_steps, stationary = prox_linear_steps(
            pairs.X, pairs.rows, pairs.cols, pairs.d2, W
        )
        total += n_steps
        r_min, r_max = pairs.extremes(W)
        distortion = _scale_free(r_min, r_max)
        if verbose:
            print(
                f"[LearnedJLTransformer] polish round {round_ + 1}: all-pairs "
                f"distortion {distortion:.4f} ({n_steps} prox-linear steps, "
                f"active set {pairs.rows.size} pairs"
                f"{', stationary' if stationary else ''})",
                flush=True,
            )
        if distortion < best:
            best_W, best = W, distortion
        r = pairs.ratios(W)
        if r_max <= r.max() * (1 + 1e-9) and r_min >= r.min() * (1 - 1e-9):
            break
        # Pairs outside the set that overtake the active extremes join it.
        _, _, low, high = pairs.scan(W, 4 * POLISH_PAIRS, 1e-2)
        pairs._add(low, high)
    pairs.stats["polish_s"] += time.perf_counter() - start
    return best_W, best, total
