"""An unconstrained L-BFGS with a strong Wolfe line search.

Private part of the shared solver. The first-order phase of :func:`minimize_sosp`
uses scipy's ``L-BFGS-B``; this one serves problems with no bounds where that
solver's bound-constrained machinery costs more than the objective: every
sharpness stage of ``LearnedJLTransformer``. Here: the
L-BFGS inverse Hessian in the compact form of Byrd, Nocedal and Schnabel (two
matrix-vector products with the stored pairs per direction) and a strong Wolfe
line search (Nocedal and Wright, Algorithms 3.5 and 3.6, cubic interpolation in
the zoom). Measurements: doc/developers/maxcut_design.rst, "Shared solver
pieces".
"""

import numpy as np
from scipy.linalg.lapack import dtrtrs as _trtrs

# Sufficient decrease and curvature constants of the strong Wolfe conditions
# (those of scipy's L-BFGS-B line search).
C1 = 1e-4
C2 = 0.9
# Evaluations a line search may spend before it gives up.
LINE_SEARCH_EVALS = 20


class LBFGSMemory:
    """The last ``size`` curvature pairs ``(s, y)`` with ``s . y > 0``.

    Kept as rows of one ``(2 size, n)`` array (slot ``i`` holds ``s`` in row
    ``2 i`` and ``y`` in row ``2 i + 1``; the slots fill from 0, so the pairs
    held are always the first rows) with their inner products, so that a
    direction costs two matrix-vector products (the compact form of Byrd,
    Nocedal and Schnabel) instead of the two-loop recursion's ``4 size``
    vector operations, which cost several times more per iteration.

    The products of the rows with a gradient are kept for the next call
    (see :meth:`push`): an iteration then reads the rows twice, once for the
    new gradient and once to form the direction, and not four times.
    """

    def __init__(self, size):
        self.size = size
        self.rows = None  # (2 size, n): s_0, y_0, s_1, y_1, ... by slot
        self.sy = np.zeros((size, size))  # s_i . y_j, by slot
        self.yy = np.zeros((size, size))  # y_i . y_j
        self.order = []  # slots, oldest first
        self.clear()

    def __len__(self):
        return len(self.order)

    def clear(self):
        self.order = []
        self._idx = np.empty(0, dtype=np.intp)
        # (gradient, the held rows' products with it), the last two asked for.
        self._products = []

    def _with(self, g):
        """``rows @ g`` over the pairs held (by row), computed once per gradient.

        The gradients are recognized by identity: the solver never writes to
        one it has passed here.
        """
        for known, products in self._products:
            if known is g:
                return products
        products = self.rows[: 2 * len(self.order)] @ g
        self._products = self._products[-1:] + [(g, products)]
        return products

    def push(self, s, y, gradients=None):
        """Store the pair ``(s, y)`` unless ``s . y`` is not positive.

        With ``gradients = (g, g_new)``, ``y = g_new - g``: the new pair's
        products with the rows held come from the rows' products with the two
        gradients (the one of the last :meth:`direction`, and the one of the
        next, computed here once for both). Without, they are computed from
        ``y``.
        """
        sy = float(s @ y)
        yy = float(y @ y)
        # A pair without positive curvature would make the inverse Hessian
        # model indefinite: skipped (the Wolfe conditions exclude it in exact
        # arithmetic; round-off near a stationary point does not).
        if not sy > 1e-12 * yy:
            return
        m = self.size
        if self.rows is None or self.rows.shape[1] != s.size:
            self.rows = np.empty((2 * m, s.size))
            self.clear()
        held = len(self.order)
        if held == 0:
            with_y = np.empty(0)
        elif gradients is None:
            with_y = self.rows[: 2 * held] @ y
        else:
            g, g_new = gradients
            # The difference of the two products is rows @ y up to round-off
            # relative to |g| (not to |y|): far below what the directions need.
            with_y = self._with(g_new) - self._with(g)
        if held == m:
            slot = self.order.pop(0)
        else:
            slot = held
        # Inner products of the new pair with every stored one, by slot (the
        # evicted slot's entries are overwritten by the new pair's own).
        # s_new . y_j of an older j lies below the diagonal of R, never read.
        self.sy[:held, slot] = with_y[0::2]  # s_i . y_new
        self.yy[:held, slot] = self.yy[slot, :held] = with_y[1::2]
        self.sy[slot, slot] = sy
        self.yy[slot, slot] = yy
        self.rows[2 * slot] = s
        self.rows[2 * slot + 1] = y
        self.order.append(slot)
        if gradients is not None:
            # The next direction's products, with the new slot's two entries
            # (computed above when pairs were held).
            g_new = gradients[1]
            products = self._with(g_new) if held else np.empty(0)
            new = [s @ g_new, y @ g_new]
            if slot == held:
                products = np.append(products, new)
            else:
                products[2 * slot : 2 * slot + 2] = new
            self._products = [(g_new, products)]
        else:
            self._products = []
        # The small matrices in chronological order, for direction().
        idx = self._idx = np.array(self.order)
        sy_c = self.sy[idx][:, idx]
        # R is the upper triangle of sy_c: the triangular solves read only
        # that, so no np.triu copy is made per push.
        self._R = sy_c
        self._D = sy_c.diagonal().copy()
        self._yy_c = self.yy[idx][:, idx]
        # H0 = gamma I with gamma = s.y / y.y of the newest pair.
        self._gamma = sy / yy

    def direction(self, g):
        """``-H g`` for the L-BFGS inverse Hessian ``H`` (``-g`` with no pairs).

        With ``S``, ``Y`` the stored pairs (oldest first), ``R`` the upper
        triangle of ``S^T Y``, ``D`` its diagonal, ``a = S^T g`` and
        ``b = Y^T g``: ``H g = gamma g + S p + Y q`` with ``t = R^-1 a``,
        ``p = R^-T ((D + gamma Y^T Y) t - gamma b)`` and ``q = -gamma t``.
        """
        if not self.order:
            return -g
        held = len(self.order)
        idx = self._idx
        gamma = self._gamma
        ab = self._with(g)
        a, b = ab[2 * idx], ab[2 * idx + 1]
        t, _ = _trtrs(self._R, a)
        rhs = self._D * t
        rhs += gamma * (self._yy_c @ t - b)
        p, _ = _trtrs(self._R, rhs, trans=1)
        coef = np.empty(2 * held)
        coef[2 * idx] = p
        coef[2 * idx + 1] = -gamma * t
        d = self.rows[: 2 * held].T @ coef
        d += gamma * g
        return np.negative(d, out=d)


def minimize_lbfgs(fun, x0, *, gtol, max_iter, memory=20, callback=None, stop=None):
    """Minimize ``fun`` (``x -> (value, gradient)``) from ``x0`` by L-BFGS.

    Parameters
    ----------
    fun : callable
        Returns the value and the gradient at a flat float64 vector; the
        gradient must be a new array (or one the caller never writes to again).
    x0 : ndarray
        Start (not modified).
    gtol : float
        Stop when the largest absolute entry of the gradient is at most this
        (as ``gtol`` of scipy's L-BFGS-B).
    max_iter : int
        Iterations (accepted steps) at most.
    memory : int, default=20
        Curvature pairs kept.
    callback : callable, default=None
        ``callback(n_iter, value)`` after each iteration.
    stop : callable, default=None
        ``stop(gradient) -> bool``: a second stopping test, also checked at the
        start and after each iteration (for instance on another norm of the
        gradient).

    Returns
    -------
    x : ndarray
        The last iterate.
    n_iter : int
        Iterations taken. Fewer than ``max_iter`` when a gradient test
        stopped it, or when no step along the steepest descent satisfies the
        Wolfe conditions any more (round-off: no further progress possible).
    """
    state = LBFGSMemory(memory)
    x = np.array(x0, dtype=np.float64)
    f, g = fun(x)
    f = float(f)
    n_iter = 0
    while (
        n_iter < max_iter
        and float(np.max(np.abs(g), initial=0.0)) > gtol
        and not (stop is not None and stop(g))
    ):
        d = state.direction(g)
        slope = float(g @ d)
        if not slope < 0.0:
            # Not a descent direction (round-off in the memory): start over.
            state.clear()
            d = -g
            slope = -float(g @ g)
        # No memory yet: a first step of unit length (as L-BFGS-B's).
        step = 1.0 if len(state) else 1.0 / max(np.sqrt(-slope), 1e-300)
        found = _wolfe_search(fun, x, f, g, d, slope, step)
        if found is None:
            if len(state):
                # Retry along the steepest descent with no memory.
                state.clear()
                continue
            break
        alpha, f_new, g_new = found
        s = alpha * d
        state.push(s, g_new - g, gradients=(g, g_new))
        x = x + s
        f, g = f_new, g_new
        n_iter += 1
        if callback is not None:
            callback(n_iter, f)
    return x, n_iter


def _wolfe_search(fun, x, f0, g0, d, slope0, step):
    """A step satisfying the strong Wolfe conditions along ``d``, or None.

    Returns ``(step, value, gradient)``.
    """
    evals = 0
    a_prev, f_prev, slope_prev, g_prev = 0.0, f0, slope0, g0
    a = step
    while evals < LINE_SEARCH_EVALS:
        f, g = fun(x + a * d)
        f = float(f)
        evals += 1
        if not np.isfinite(f):
            # Overshot into round-off trouble: shrink.
            a = 0.5 * (a_prev + a)
            continue
        slope = float(g @ d)
        if f > f0 + C1 * a * slope0 or (evals > 1 and f >= f_prev):
            return _zoom(
                fun,
                x,
                f0,
                slope0,
                d,
                (a_prev, f_prev, slope_prev, g_prev),
                (a, f, slope),
                LINE_SEARCH_EVALS - evals,
            )
        if abs(slope) <= -C2 * slope0:
            return a, f, g
        if slope >= 0.0:
            return _zoom(
                fun,
                x,
                f0,
                slope0,
                d,
                (a, f, slope, g),
                (a_prev, f_prev, slope_prev),
                LINE_SEARCH_EVALS - evals,
            )
        a_prev, f_prev, slope_prev, g_prev = a, f, slope, g
        a = 4.0 * a
    return None


def _zoom(fun, x, f0, slope0, d, lo, hi, evals):
    """Nocedal and Wright's zoom: ``lo`` satisfies sufficient decrease.

    ``lo`` is ``(step, value, slope, gradient)``, ``hi`` ``(step, value, slope)``.
    """
    a_lo, f_lo, s_lo, g_lo = lo
    a_hi, f_hi, s_hi = hi
    for _ in range(evals):
        a = _cubic_min(a_lo, f_lo, s_lo, a_hi, f_hi, s_hi)
        f, g = fun(x + a * d)
        f = float(f)
        slope = float(g @ d)
        if not np.isfinite(f) or f > f0 + C1 * a * slope0 or f >= f_lo:
            a_hi, f_hi, s_hi = a, f if np.isfinite(f) else np.inf, slope
        else:
            if abs(slope) <= -C2 * slope0:
                return a, f, g
            if slope * (a_hi - a_lo) >= 0.0:
                a_hi, f_hi, s_hi = a_lo, f_lo, s_lo
            a_lo, f_lo, s_lo, g_lo = a, f, slope, g
        if abs(a_hi - a_lo) <= 1e-12 * max(abs(a_lo), 1e-300):
            break
    # No Wolfe point within the budget: the best point of sufficient decrease,
    # if it moved at all.
    if a_lo > 0.0:
        return a_lo, f_lo, g_lo
    return None


def _cubic_min(a, fa, sa, b, fb, sb):
    """Minimizer of the cubic through both ends (values and slopes), safeguarded
    to the middle 80 % of the interval (bisection when the cubic has none)."""
    lo, hi = min(a, b), max(a, b)
    width = hi - lo
    mid = 0.5 * (a + b)
    if not np.all(np.isfinite([fa, fb, sa, sb])):
        return mid
    d1 = sa + sb - 3.0 * (fa - fb) / (a - b)
    disc = d1 * d1 - sa * sb
    if disc < 0.0:
        return mid
    d2 = np.copysign(np.sqrt(disc), b - a)
    denom = sb - sa + 2.0 * d2
    if denom == 0.0:
        return mid
    t = b - (b - a) * (sb + d2 - d1) / denom
    if not np.isfinite(t):
        return mid
    return float(min(max(t, lo + 0.1 * width), hi - 0.1 * width))
