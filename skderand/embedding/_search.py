"""The dimension search of ``LearnedJLTransformer(n_components="auto")``.

Private helper of :class:`~skderand.embedding.LearnedJLTransformer`:
:func:`search_dimension` looks for the smallest dimension whose learned map
reaches ``eps`` (a growth, then a safeguarded interpolation search), and
:func:`watched_stage` runs a candidate's all-pairs stage while :class:`_Watch`
decides it as early as it can. The thresholds that give a candidate up, and
their evidence, are in ``doc/developers/learned_jl_design.rst``.
"""

import numpy as np

from skderand.embedding._active import _scale_free
from skderand.embedding._stages import lbfgs, stage_objective

# An all-pairs candidate whose final stage ends above (1 + FINISH_MARGIN) eps is
# declared failing without its certificate and polish, which lower the
# distortion by less than that margin. One that ends at most eps succeeds; both
# are completed only if returned (see LearnedJLTransformer._finish).
FINISH_MARGIN = 0.02


def _growth_exponent(k0, fit0, k1, fit1):
    """The exponent ``a`` of ``d(k) ~ k^(-a)`` between two failing candidates.

    Measured on the distortions at the end of the last stage both ran (the
    first stages' distortions fall with ``k`` as the final ones do), clipped
    to ``[0.5, 1]``: 0.5 (a random projection's rate) when there is no such
    stage.
    """
    if fit0 is None or k0 < 1:
        return 0.5
    s = min(len(fit0.stages), len(fit1.stages)) - 1
    if s < 0 or not fit0.stages[s] > fit1.stages[s] > 0:
        return 0.5
    exponent = np.log(fit0.stages[s] / fit1.stages[s]) / np.log(k1 / k0)
    return float(np.clip(exponent, 0.5, 1.0))


def _power_law_dimension(lo, d_lo, hi, d_hi, eps):
    """Where ``d(k) = d_hi (k / hi)^(-a)`` through both points reaches ``eps``.

    ``lo`` fails (``d_lo > eps``) and ``hi`` succeeds (``d_hi <= eps``); the
    result is clipped to ``lo + 1 .. hi - 1`` (the midpoint if the distortions
    do not fall with ``k``).
    """
    if not (d_lo > eps >= d_hi > 0) or lo < 1:
        return (lo + hi) // 2
    exponent = np.log(d_lo / d_hi) / np.log(hi / lo)
    # The nearest integer: the crossing itself is a guess, and a guess just
    # above an integer is as likely to succeed at it as to fail.
    k = int(np.round(hi * (d_hi / eps) ** (1.0 / exponent)))
    return min(max(k, lo + 1), hi - 1)


# The growth's first candidate (or the rank of the data, if smaller): smaller
# candidates rarely succeed and each costs a fit. A target reached below it is
# found going down, by bisection. See the design note, "Dimension search".
SEARCH_START = 8


class _Watch:
    """The objective of a search candidate's stage, deciding it on the way.

    Each evaluated map's all-pairs distortion ``d`` is read off the lean evaluation's
    log-ratio range (``tanh`` of half of ``log_range``; otherwise the exact extremes
    every ``every`` evaluations). The candidate succeeds at the first map whose exact
    distortion, re-measured pair by pair, is at most ``eps``: a map of that dimension
    reaching ``eps`` exists, which is what the search asks. In the final stage it fails
    once the lowest ``d`` so far is above ``(1 + FINISH_MARGIN) eps`` and fell by less
    than ``1 / patience`` of its distance to ``eps`` over the last ``window``
    evaluations (a heuristic: the final stage's distortion falls fastest at its start).
    Either sets ``decision`` to the map (on failure, the best one seen) and why;
    :meth:`decided` then ends the solve at the end of its iteration, and later
    evaluations are not watched.
    """

    def __init__(
        self,
        objective,
        pairs,
        k,
        eps,
        final,
        at_start=None,
        *,
        every=10,
        window=25,
        patience=4,
    ):
        self.objective = objective
        self.every, self.window, self.patience = every, window, patience
        self.lean = getattr(objective, "lean", False)
        self.pairs = pairs
        self.k = k
        self.eps = eps
        self.final = final
        # The log-ratios are read only if they give the exact distortion at
        # the stage's start (the first evaluation), when that is known.
        self.read_log = self.lean and at_start is not None
        self.at_start = at_start
        self.n_eval = 0
        self.history = []  # (evaluations, lowest distortion so far)
        self.best_z = None
        self.recheck = 0
        self.decision = None  # (z, reason) once decided

    def _distortion(self, M):
        if self.read_log:
            low, high = self.objective.log_range
            if np.isfinite(high - low):
                d = float(np.tanh(0.5 * (high - low)))
                if self.n_eval > 1 or abs(d - self.at_start) <= 1e-9 * self.at_start:
                    return d
            self.read_log = False
        if self.n_eval % self.every == 1:
            return _scale_free(*self.pairs.extremes(M))
        return None

    def decided(self):
        """Whether the candidate is decided: the solver's second stopping test."""
        return self.decision is not None

    def __call__(self, z):
        out = self.objective(z)
        if self.decision is not None:
            return out
        self.n_eval += 1
        rank = self.pairs.X.shape[1]
        M = z[: self.k * rank].reshape(self.k, rank)
        d = self._distortion(M)
        if d is None or not np.isfinite(d):
            return out
        if d <= self.eps and self.n_eval >= self.recheck:
            if _scale_free(*self.pairs.extremes(M)) <= self.eps:
                self.decision = (z.copy(), "reached eps")
                return out
            # Round-off in the log-ratios' range: measured again later.
            self.recheck = self.n_eval + self.every
        if not self.history or d < self.history[-1][1]:
            self.history.append((self.n_eval, d))
            self.best_z = z.copy()
        if not self.final or self.n_eval < 2 * self.window:
            return out
        lowest = self.history[-1][1]
        earlier = lowest
        for n_eval, value in self.history:
            if n_eval > self.n_eval - self.window:
                break
            earlier = value
        if lowest > self.eps * (1.0 + FINISH_MARGIN) and (
            lowest - self.eps > self.patience * (earlier - lowest)
        ):
            self.decision = (self.best_z, "stalled above eps")
        return out


def search_dimension(
    estimator, span, pairs, seed, curvature_tol, *, give_up=2.5, later_give_up=0.35
):
    """Smallest ``k`` whose learned map reaches ``eps``.

    Growth from ``SEARCH_START``, then a safeguarded interpolation search (the
    bisection, when ``SEARCH_START`` already succeeds). While the candidates fail, the
    next one is the dimension (nearest integer) at which a distortion falling as
    ``k**(-a)`` would reach ``eps``, at least ``k + 1`` and at most ``2 k``, with ``a``
    from :func:`_growth_exponent`. Then, between the largest failing dimension ``lo``
    and the smallest succeeding one ``hi``, the next candidate is where the power law
    through their two distortions reaches ``eps`` (a bisection step instead after two
    candidates with the same outcome in a row, so that a run of one-sided steps stays
    short). A candidate whose first stage ends above ``give_up * eps``, or whose later
    non-final stage ends above ``eps * (1 + later_give_up * stages_left)``, is declared
    failing there (the later stages could not bring it below ``eps``; neither rule
    applies to a stage that ends at a log-range below ``SHARPNESS_RANGE``, where the
    blunt stages leave the ratios near an average fit whatever ``k``; see the design
    note, "Giving up on a candidate"); an all-pairs candidate is decided during its
    stages (``_Watch``). A failing candidate runs again from PCA's map where that is
    better (see ``LearnedJLTransformer._no_worse_than_pca``). Only the returned
    candidate is completed (``LearnedJLTransformer._finish``).

    Returns the fit and every candidate's fit as the search left it (before
    that completion), by dimension in the order tried.
    """
    cache = {}
    n_stages = estimator.n_stages
    give_up_above = [give_up * estimator.eps] + [
        estimator.eps * (1.0 + later_give_up * (n_stages - 1 - stage))
        for stage in range(1, n_stages - 1)
    ]

    def fit_k(k):
        if k not in cache:
            search = {"give_up_above": give_up_above, "decide_at": estimator.eps}
            cache[k] = estimator._fit_dimension(
                span, pairs, k, seed, curvature_tol, **search
            )
            # A failing candidate may sit in a local minimum above PCA's map.
            if cache[k].distortion > estimator.eps:
                cache[k] = estimator._no_worse_than_pca(
                    span, pairs, cache[k], seed, curvature_tol, **search
                )
            if estimator.verbose:
                stopped = cache[k].stopped_after
                print(
                    f"[LearnedJLTransformer] n_components={k}: distortion "
                    f"{cache[k].distortion:.4f} (eps={estimator.eps})"
                    + (f", stopped after stage {stopped}" if stopped else ""),
                    flush=True,
                )
        return cache[k]

    # At the rank of the centred data an isometry of its span exists (and
    # _fit_dimension returns it), so the search is bounded and succeeds.
    k_max = pairs.X.shape[1]
    lo, hi = 0, k_max  # the dimension lo fails (0 trivially), hi succeeds
    k = min(SEARCH_START, k_max)
    while k < k_max:
        fit = fit_k(k)
        if fit.distortion <= estimator.eps:
            hi = k
            break
        exponent = _growth_exponent(lo, cache.get(lo), k, fit)
        lo = k
        predicted = int(
            np.round(k * (fit.distortion / estimator.eps) ** (1 / exponent))
        )
        k = min(max(k + 1, predicted), 2 * k, k_max)
    outcomes = []
    while hi - lo > 1:
        mid = (lo + hi) // 2
        same_twice = len(outcomes) >= 2 and outcomes[-1] == outcomes[-2]
        if lo in cache and hi in cache and not same_twice:
            mid = _power_law_dimension(
                lo, cache[lo].distortion, hi, cache[hi].distortion, estimator.eps
            )
        success = fit_k(mid).distortion <= estimator.eps
        outcomes.append(success)
        if success:
            hi = mid
        else:
            lo = mid
    fit = fit_k(hi)
    tried = dict(cache)
    if fit.pending is not None:
        fit = estimator._finish(pairs, fit, curvature_tol)
    return fit, tried


def decide_after_stage(
    decided, stage, distortion, best_distortion, *, final, watched, eps
):
    """Whether a search candidate is decided at the end of stage ``stage``.

    Returns ``(decided, resume)``: why it is decided (None: not decided) and
    the stage a completed fit resumes from. ``decided`` is what a watched
    stage already said (it then resumes that same stage); ``eps`` is None
    outside the search (and at the rank). A non-final stage that ends at most
    ``eps`` and below ``best_distortion`` is decided, and the next stage
    resumes it (an active set is rebuilt there). A final stage run to its end
    is decided unless just above ``eps`` (the certificate and polish may still
    bring it below), if it is watched (see :func:`watched_stage`).
    """
    if decided is not None or eps is None or (final and not watched):
        return decided, stage
    if distortion <= min(eps, best_distortion):
        if final:
            return "at most eps at the end of the final stage", stage + 1
        return "reached eps at the end of the stage", stage + 1
    if final and distortion > eps * (1.0 + FINISH_MARGIN):
        return "above the margin at the end of the final stage", stage + 1
    return None, stage


def gives_up(stage, distortion, give_up_above):
    """Whether a candidate is declared failing after non-final stage ``stage``.

    ``give_up_above[stage]`` is the stage's threshold (see
    :func:`search_dimension`); a fit outside the search has none.
    """
    return stage < len(give_up_above) and distortion > give_up_above[stage]


def watched_stage(pairs, z, k, beta, final, eps, kwargs, at_z, *, tol, max_iter):
    """One all-pairs stage of a search candidate, decided as soon as it can be.

    Returns ``(z, n_iter, decided)``: ``decided`` is None when the stage ran
    to its end, else why it stopped early (see ``_Watch``); ``n_iter`` then
    counts the objective's evaluations.
    """
    objective = stage_objective(pairs, k, beta, **kwargs)
    watch = _Watch(objective, pairs, k, eps, final, at_z)
    z, n_iter, _ = lbfgs(
        pairs, watch, z, tol, max_iter, stop_at_tol=final, until=watch.decided
    )
    if watch.decision is None:
        return z, n_iter, None
    z, reason = watch.decision
    return z, watch.n_eval, reason
