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

of the size of ``H`` and ``L`` (64 to 128 pairs each), whatever the number of variables
``k * rank``: the Gram matrix of the ``g_p`` is ``4 (y_p . y_q)(d_p . d_q) /
(|y_p|^2 |y_q|^2)``. The step is ``D = -rho (sum lam_p g_p - sum mu_q g_q)``. A
step is kept when the active set's true ``F`` falls by a fair share of what the
model predicts; ``rho`` grows after good steps and shrinks after bad ones, and
a side's pair set doubles when pairs left out of it undid a step. The method
stops where the model predicts no decrease at any ``rho`` (a first-order
(Clarke) stationary point of the active-set minimax, the nonsmooth counterpart
of the smoothed stages' certificate), when a few steps in a row gained almost
nothing, or at its step budget. It is a first-order method: near a minimax
whose active pairs curve, its steps shrink, so it finishes the smoothed stages
rather than replacing them (see the developers' design note, "The polish").
"""

import math

import numpy as np

from skderand.embedding._active import _scale_free
from skderand.embedding._pairs import difference_matrix
from skderand.embedding._stages import GRAM_MAX_SAMPLES

# Pairs per side in each step's model to start with: enough for the minimax's
# active pairs at the smoothed stages' end (a few dozen carry weight), few
# enough that the dual costs milliseconds. A side grows when pairs left out of
# its model overtake its extreme in a trial step (see prox_linear_steps).
POLISH_PAIRS = 64
# Rows of the Gram matrix the embedded polish keeps (see _EmbeddedSteps), in
# float64 numbers: 128 MiB, 1,600 rows at 10,000 points.
KEPT_ROWS_ELEMENTS = 1 << 24


def _project_simplices(V, ind=None, rows=None):
    """Euclidean projection of each row of ``V`` onto the probability simplex.

    Sort-based, all rows at once (one call per dual iteration instead of one
    per simplex halves its Python overhead). ``ind`` and ``rows`` are
    ``arange(1, m + 1)`` and ``arange(n_rows)``, when the caller keeps them.
    """
    n_rows, m = V.shape
    # Descending rows as a reversed view of the ascending sort: the same values
    # as sorting -V, without two negations of the array.
    U = np.sort(V, axis=1)[:, ::-1]
    css = np.cumsum(U, axis=1)
    css -= 1.0
    if ind is None:
        ind = np.arange(1, m + 1)
    if rows is None:
        rows = np.arange(n_rows)
    # U - css / ind > 0, and below V - theta clipped at 0, with the same
    # operations written into one work array each (this runs up to 150 times
    # per polish step).
    gap = np.divide(css, ind)
    np.subtract(U, gap, out=gap)
    cond = gap > 0
    # The last index where the condition holds (it holds at index 0 always).
    last = m - 1 - np.argmax(cond[:, ::-1], axis=1)
    theta = css[rows, last] / (last + 1)
    out = V - theta[:, None]
    return np.maximum(out, 0.0, out=out)


def _dual(c, Q, n_high, rho, u0, top=None, *, max_iter=150, gap=1e-3, check=10):
    """Maximize ``c.u - rho/2 u^T Q u`` over two simplices (FISTA).

    Stops at ``max_iter`` iterations (warm-started from the last step's
    ``u0``), when an iteration moves ``u`` by less than ``1e-12``, or when the
    relative duality gap (:func:`_dual_gap`) is at most ``gap``, checked every
    ``check`` iterations (see the design note, "The polish").

    ``u[:n_high]`` and ``u[n_high:]`` each lie on a probability simplex. The
    shorter part is padded, for the projection, with entries 2 below its
    largest: the projection's threshold is at least the largest entry minus 1,
    so such entries project to 0 and leave the others' projection unchanged.
    Parts of equal size are projected as the two rows of a view of the
    iterate, without the copies (the same numbers). ``top`` is the largest
    eigenvalue of ``Q`` when the caller knows it.
    """
    if top is None:
        top = np.linalg.eigvalsh(Q)[-1]
    lipschitz = rho * max(top, 1e-300)
    step = 1.0 / lipschitz
    n_low = u0.size - n_high
    width = max(n_high, n_low)
    even = n_high == n_low
    padded = np.empty((2, width))
    ind, rows = np.arange(1, width + 1), np.arange(2)
    u = u0.copy()
    z = u.copy()
    t = 1.0
    for iteration in range(max_iter):
        # z + step * (c - rho * (Q z)), one temporary for the products.
        w = Q @ z
        w *= rho
        np.subtract(c, w, out=w)
        w *= step
        w += z
        if even:
            u_new = _project_simplices(w.reshape(2, width), ind, rows).ravel()
        else:
            padded[0, :n_high] = w[:n_high]
            padded[1, :n_low] = w[n_high:]
            padded[0, n_high:] = w[:n_high].max() - 2.0
            padded[1, n_low:] = w[n_high:].max() - 2.0
            projected = _project_simplices(padded, ind, rows)
            u_new = np.concatenate([projected[0, :n_high], projected[1, :n_low]])
        t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        change = u_new - u
        z = u_new + ((t - 1.0) / t_new) * change
        if np.abs(change).max() < 1e-12:
            u = u_new
            break
        u, t = u_new, t_new
        if iteration % check == check - 1 and _dual_gap(c, Q, n_high, rho, u) <= gap:
            break
    return u


def _dual_gap(c, Q, n_high, rho, u):
    """The duality gap of :func:`_dual` at ``u``, relative to its distance to ``F``.

    With ``v = c - rho Q u`` the primal (the proximal minimax at the step ``u``
    gives) is ``max v_high + max v_low + rho/2 u^T Q u`` and the dual ``c.u -
    rho/2 u^T Q u``: their gap is ``max v_high + max v_low - v.u >= 0``. It is
    divided by ``F - dual``, with ``F = max c_high + max c_low`` the minimax
    at a zero step: at least the decrease the proximal model offers from
    ``F`` (the dual is at most its optimum).
    """
    Qu = Q @ u
    v = c - rho * Qu
    gap = v[:n_high].max() + v[n_high:].max() - v @ u
    dual = c @ u - 0.5 * rho * (u @ Qu)
    distance = c[:n_high].max() + c[n_high:].max() - dual
    return gap / max(distance, 1e-300)


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
        if not self.gram:
            self.B = difference_matrix(self.ri, self.ci, n_used)

    def __call__(self, W):
        Y = self.X @ W.T
        if self.gram:
            sq = np.einsum("ij,ij->i", Y, Y)
            gram = (Y @ Y.T).ravel()
            q = sq[self.ri] + sq[self.ci] - 2.0 * gram[self.flat]
        else:
            diff = self.B @ Y
            q = np.einsum("ij,ij->i", diff, diff)
        return np.log(np.maximum(q, 1e-300)) - self.log_d2


class _MapSteps:
    """The polish's points as maps ``W``: pairs' differences ``d_p`` from ``X``."""

    def __init__(self, X, rows, cols, d2, W):
        self.X = X
        self.logratio = _ActiveLogRatios(X, rows, cols, d2)
        self.start = W
        self._D = None

    def log_ratios(self, W):
        return self.logratio(W)

    def selected(self, W, a, b):
        """``W d_p`` and the Gram matrix ``d_p . d_q`` of the pairs ``(a, b)``."""
        D = self.X[a] - self.X[b]
        self._D = D
        return D @ W.T, D @ D.T

    def step(self, W, C):
        """``W + sum_p c_p d_p^T`` for the rows ``c_p`` of ``C`` (last pairs)."""
        return W + C.T @ self._D

    def map(self, W):
        return W


class _EmbeddedSteps:
    """The polish's points as embedded points ``Y = X W^T`` of all ``n`` points.

    For coordinates ``X`` of rank ``n - 1`` the map is recovered from the
    points once at the end (``map_of_points``, see
    ``_SpanPoints.map_of_points``). A step ``W + sum_p c_p d_p^T`` moves ``Y``
    by ``sum_p (X d_p) c_p^T``, and ``X d_p = K[:, i] - K[:, j]`` and
    ``d_p . d_q`` come from the rows of the Gram matrix ``K = X X^T`` (see
    ``_SpanPoints.gram``; for sparse input from sparse products): per trial step
    ``O(n m k)`` for the ``m`` pairs of the model instead of the
    ``n x rank x k`` product ``X W^T`` and the ``m x rank`` differences of
    the map's form.
    """

    def __init__(self, X, rows, cols, d2, W, gram, map_of_points):
        self.X = X
        self.B = difference_matrix(rows, cols, X.shape[0])
        self.log_d2 = np.log(d2)
        self.K = gram
        self.map_of_points = map_of_points
        self.start = X @ W.T
        self._G = None
        # K's rows by point, kept for the polish: the steps' models share most
        # of their pairs, and K's rows of sparse input come from sparse
        # products (see _SpanPoints.gram).
        self._rows = {}

    def _gram_rows(self, points):
        missing = np.setdiff1d(points, np.fromiter(self._rows, dtype=np.intp))
        if missing.size:
            if (len(self._rows) + missing.size) * self.X.shape[0] > KEPT_ROWS_ELEMENTS:
                self._rows.clear()
                missing = np.unique(points)
            self._rows.update(zip(missing.tolist(), self.K.rows(missing), strict=True))
        return np.stack([self._rows[p] for p in points.tolist()])

    def log_ratios(self, Y):
        diff = self.B @ Y
        q = np.einsum("ij,ij->i", diff, diff)
        return np.log(np.maximum(q, 1e-300)) - self.log_d2

    def selected(self, Y, a, b):
        # Rows p of G are (X d_p)^T; their columns a, b give d_q . d_p.
        rows = self._gram_rows(np.concatenate([a, b]))
        G = rows[: a.size] - rows[a.size :]
        self._G = G
        DD = G[:, a] - G[:, b]
        # Symmetric as the map's D D^T (round-off differs with the order).
        DD += DD.T
        DD *= 0.5
        return Y[a] - Y[b], DD

    def step(self, Y, C):
        return Y + self._G.T @ C

    def map(self, Y):
        return self.map_of_points(Y)


def _model(space, P, l, rows, cols, m_hi, m_lo):
    """The step's model: the ``m_hi`` highest and ``m_lo`` lowest log-ratios ``l``.

    Returns their indices (``high``, ``low`` and ``sel``, high first), the
    selected pairs' embedded differences ``Y`` and squared norms ``y2``, their
    signs (+1 high, -1 low) and the Gram matrix ``Q`` of ``s_p g_p``.
    """
    order = np.argpartition(l, (m_lo - 1, l.size - m_hi))
    low, high = order[:m_lo], order[l.size - m_hi :]
    sel = np.concatenate([high, low])
    Y, DD = space.selected(P, rows[sel], cols[sel])
    y2 = np.einsum("ij,ij->i", Y, Y)
    sign = np.concatenate([np.ones(m_hi), -np.ones(m_lo)])
    # Gram matrix of s_p g_p: 4 s_p s_q (y_p . y_q)(d_p . d_q) / (y2_p y2_q).
    Q = 4.0 * (Y @ Y.T) * DD / np.outer(y2, y2)
    Q *= np.outer(sign, sign)
    return high, low, sel, Y, y2, sign, Q


def prox_linear_steps(
    X,
    rows,
    cols,
    d2,
    W,
    *,
    max_steps=40,
    embedded=None,
    accept=0.1,
    min_decrease=1e-7,
    min_rho=1e-8,
    stall_steps=6,
    stall_decrease=2e-5,
    max_pairs=128,
    saturated=0.9,
):
    """Prox-linear steps on the minimax of the active pairs' log-ratios.

    Returns the new map (scaled so that its extreme log-ratios are symmetric
    about 0 on these pairs), the number of steps taken and whether the model
    predicted no further decrease (first-order stationarity).

    With ``embedded = (K, map_of_points)`` (``K = X X^T`` by its rows, see
    ``_SpanPoints.gram``, and the map of centred embedded points, see
    ``_SpanPoints.map_of_points``) the steps move the embedded points instead
    of the map (see :class:`_EmbeddedSteps`): the same steps, in other
    arithmetic.

    The method's constants (see the design note, "The polish"): a step is
    kept when the true decrease of ``F`` reaches ``accept`` times the model's.
    The steps stop at ``max_steps`` (a longer polish does not replace the
    smoothed final stage's iterations), where the model predicts a decrease
    below ``min_decrease`` (log units: about that much in distortion), when
    ``rho`` has shrunk below ``min_rho`` times its start, or when the last
    ``stall_steps`` steps lowered ``F`` by less than ``stall_decrease`` in
    all. Each side's model starts with ``POLISH_PAIRS`` pairs and doubles, up
    to ``max_pairs``, when a rejected trial step was undone by pairs outside
    it and the side is ``saturated`` (the dual weighs that share of its pairs):
    otherwise the trust region would shrink step after step while the model's
    predicted decrease stays real; beyond ``max_pairs`` the dual's cost grows
    as the square of its size for little gain.
    """
    if embedded is None:
        space = _MapSteps(X, rows, cols, d2, W)
    else:
        space = _EmbeddedSteps(X, rows, cols, d2, W, *embedded)
    # The current point: the map, or its embedded points.
    P = space.start
    l = space.log_ratios(P)
    F = l.max() - l.min()
    # With |g_p| about 2 / sqrt(r_p) and ratios near 1, rho = 1e-2 |W| moves the
    # map by about 1 % to start with.
    rho0 = 1e-2 * np.linalg.norm(W)
    rho = rho0
    # Model pairs per side (high, low), each growing when pairs left out of it
    # undo a trial step.
    cap = max(1, l.size // 2)
    m_hi = m_lo = min(POLISH_PAIRS, cap)
    u = None
    last_Q = top = None
    stationary = False
    n_steps = 0
    history = [F]
    while n_steps < max_steps:
        n_steps += 1
        high, low, sel, Y, y2, sign, Q = _model(space, P, l, rows, cols, m_hi, m_lo)
        c = sign * l[sel]
        if u is None or u.size != sel.size:
            u = np.concatenate([np.full(m_hi, 1.0 / m_hi), np.full(m_lo, 1.0 / m_lo)])
        # After a rejected step (or a change of rho alone) the model's Q is the
        # same: its largest eigenvalue too.
        if last_Q is None or last_Q.shape != Q.shape or not np.array_equal(last_Q, Q):
            last_Q, top = Q, np.linalg.eigvalsh(Q)[-1]
        u = _dual(c, Q, m_hi, rho, u, top)
        # <g_p, D> for the selected pairs, and the model's value of F.
        moved = l[sel] - rho * sign * (Q @ u)
        model = moved[:m_hi].max() - moved[m_hi:].min()
        predicted = F - model
        if predicted < -min_decrease:
            # An exact dual never predicts an increase (D = 0 is feasible): this
            # one is inexact, as FISTA's fixed budget leaves it at large rho.
            # A smaller rho conditions it better; declaring stationarity here
            # would stop the polish early.
            rho *= 0.25
            if rho < min_rho * rho0:
                break
            continue
        if predicted <= min_decrease:
            if rho >= rho0:
                stationary = True
                break
            rho *= 4.0
            continue
        coef = -rho * 2.0 * sign * u / y2
        trial = space.step(P, coef[:, None] * Y)
        l_trial = space.log_ratios(trial)
        F_trial = l_trial.max() - l_trial.min()
        if F - F_trial >= accept * predicted:
            if F - F_trial > 0.75 * predicted:
                rho *= 2.0
            # Keep the ratios centred at 1 (the minimax is scale-invariant).
            P = trial * np.exp(-0.25 * (l_trial.max() + l_trial.min()))
            l = l_trial - 0.5 * (l_trial.max() + l_trial.min())
            F = F_trial
        else:
            # Pairs outside a side's model that overtook its extreme: that side
            # was too small, and shrinking rho would only hide it.
            # Only a saturated side grows (the dual weighs nearly all its pairs):
            # otherwise the model already holds the pairs that matter there.
            weighed = u > 1e-9
            outside_hi = l_trial.max() > l_trial[high].max() and (
                np.count_nonzero(weighed[:m_hi]) >= saturated * m_hi
            )
            outside_lo = l_trial.min() < l_trial[low].min() and (
                np.count_nonzero(weighed[m_hi:]) >= saturated * m_lo
            )
            grown = False
            if outside_hi and m_hi < min(max_pairs, cap):
                m_hi, grown = min(2 * m_hi, max_pairs, cap), True
            if outside_lo and m_lo < min(max_pairs, cap):
                m_lo, grown = min(2 * m_lo, max_pairs, cap), True
            if not grown:
                rho *= 0.25
                if rho < min_rho * rho0:
                    stationary = True
                    break
        history.append(F)
        if (
            len(history) > stall_steps
            and history[-1 - stall_steps] - F < stall_decrease
        ):
            break
    return space.map(P), n_steps, stationary


def polish_minimax(pairs, W, *, verbose=0, max_rounds=2):
    """Minimize the true worst distortion: prox-linear rounds over the active set.

    Between rounds (at most ``max_rounds``) a blocked pass over all pairs adds
    the pairs that overtake the active set's extremes. Returns the map with the
    lowest all-pairs distortion seen (the input if none is lower), that
    distortion and the number of steps.
    """
    r_min, r_max = pairs.extremes(W)
    best_W, best = W, _scale_free(r_min, r_max)
    W = W / np.sqrt((r_min + r_max) / 2.0)
    total = 0
    # Active-set fits on spans of n - 1 dimensions (see _EmbeddedSteps).
    embedded = None
    if pairs.embedded and not pairs.complete:
        embedded = (pairs.points.gram(), pairs.points.map_of_points)
    for round_ in range(max_rounds):
        W, n_steps, stationary = prox_linear_steps(
            pairs.X, pairs.rows, pairs.cols, pairs.d2, W, embedded=embedded
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
        pairs.add(low, high)
    return best_W, best, total
