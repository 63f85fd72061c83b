"""One sharpness stage of LearnedJLTransformer, and the final stage's certificate.

Private helpers of :class:`~skderand.embedding.LearnedJLTransformer`:

- :func:`solve_stage` minimizes the smooth surrogate of one sharpness: with
  every pair active, one L-BFGS solve; otherwise rounds (:class:`_StageRounds`)
  of a blocked pass over all pairs, growth of the active set
  (:class:`~skderand.embedding._active._ActivePairs`) and a short solve on it.
- :func:`lbfgs` is every stage's solver (the shared L-BFGS of
  :mod:`skderand.optimize`), on the map or on the embedded points.
- :func:`certify_stage` certifies the final stage on the final active set (the
  nonsmooth polish that follows is in ``_polish.py``).
"""

import numpy as np

from skderand.embedding._active import (
    _scale_free,
    embedded_shape,
    every_pair_active,
)
from skderand.embedding._objective import _GramObjective, _PairObjective
from skderand.embedding._pairs import span_bytes
from skderand.optimize import minimize_sosp, sosp_certificate
from skderand.optimize._certificate import _lanczos_smallest, certificate_result
from skderand.optimize._lbfgs import minimize_lbfgs

# With every pair active and at most this many points, the surrogate goes through
# the Gram matrix of the embedded points (BLAS products) instead of a pair list:
# several times faster, in less memory than the pair list's (see map_bytes). See
# the design note, "Gram form".
GRAM_MAX_SAMPLES = 2000
# The certificate's Lanczos budget (the smallest Hessian eigenvalue is exact
# below this many variables).
LANCZOS_ITER = 100


# Rounds of (solve on the active set, blocked pass, add violators) per stage,
# and solver iterations per round: short rounds keep the pairs outside the set
# from drifting far past the extremes before the next pass sees them. See the
# design note, "Active-set rounds".
MAX_ROUNDS = 10
ROUND_ITER = 40
# Where a blocked pass costs many iterations (large n), a round runs PASS_COST *
# n_pairs / n_active iterations (see _round_length), so that passes do not
# dominate. A cost model, not a clock: the fit stays deterministic. See the
# design note, "Active-set rounds".
PASS_COST = 0.05


def stage_objective(pairs, k, beta, *, derandomized, penalty, lean_min_pairs=10_000):
    """The surrogate of sharpness ``beta`` on the pairs the stage optimizes.

    With every pair active and at most ``GRAM_MAX_SAMPLES`` points, through
    the Gram matrix of the embedded points (see the design note, "Gram form"),
    evaluated by ``_GramObjective._direct`` for the direct map and at least
    ``lean_min_pairs`` pairs (smaller sets gain little and keep the
    pair-vector arithmetic); otherwise on the list of active pairs.
    """
    kwargs = {"derandomized": derandomized, "penalty": penalty}
    if pairs.complete and pairs.n <= GRAM_MAX_SAMPLES:
        lean = not derandomized and pairs.n_pairs >= lean_min_pairs
        objective = _GramObjective(
            pairs.X, pairs.scanner.threshold, k, lean=lean, **kwargs
        )
    else:
        objective = _PairObjective(
            pairs.X, pairs.rows, pairs.cols, pairs.d2, k, **kwargs
        )
    objective.beta = beta
    return objective


def solve_stage(
    pairs, z, k, beta, *, derandomized, penalty, max_iter, tol, rng, final=False
):
    """One sharpness stage of the surrogate: rounds over the active set.

    Returns the end point and the number of solver iterations. The
    ``final`` stage's solves also stop where the certificate's gradient
    test holds (see :func:`lbfgs`).

    With every pair active, one solve; otherwise rounds over the active
    set (see :class:`_StageRounds`).
    """
    kwargs = {"derandomized": derandomized, "penalty": penalty}
    if pairs.complete:
        # Every stage to tol: its end point is the next stage's start, and
        # looser earlier stages lead to worse minimax points. See the
        # design note, "All-pairs stages".
        objective = stage_objective(pairs, k, beta, **kwargs)
        z, n_iter, _ = lbfgs(pairs, objective, z, tol, max_iter, stop_at_tol=final)
        return z, n_iter
    rounds = _StageRounds(pairs, k, beta, max_iter=max_iter, tol=tol, **kwargs)
    return rounds.run(z, rng, final=final)


def lbfgs(
    pairs,
    objective,
    z,
    tol,
    max_iter,
    *,
    whiten=True,
    embedded=False,
    stop_at_tol=False,
    until=None,
    memory=20,
):
    """L-BFGS on a stage's surrogate (no certificate: that comes last).

    In whitened coordinates (see :func:`_whitening_scale`) when ``whiten``
    and the data call for it. Returns the end point, the iterations and
    whether it stopped before ``max_iter``. The solver stops where the
    largest entry of the gradient is at most ``tol / sqrt(z.size)`` (which
    implies the certificate's test, a 2-norm at most ``tol``); with
    ``stop_at_tol`` also where the certificate's test holds, and with
    ``until`` (a function of no arguments) at the end of the first iteration
    after which it returns True (on the map only: the dimension search
    watches all-pairs stages, never embedded rounds).

    With ``embedded`` (an active-set round on data whose span has about as
    many dimensions as points, see :func:`_lbfgs_on_points`) the solver
    runs on the embedded points of the active pairs instead of the map.
    ``memory`` correction pairs are kept on the map, a fresh memory each
    solve (see the design note, "L-BFGS memory").
    """
    if max_iter < 1:
        return z, 0, False
    if embedded:
        x, n_iter = _lbfgs_on_points(
            pairs, objective, z, tol, max_iter, stop_at_tol=stop_at_tol
        )
        return x, n_iter, n_iter < max_iter
    fun, y = objective, z
    whiten = whiten and pairs.scale is not None
    scale = 1.0
    if whiten:
        # L-BFGS in whitened coordinates: the map is M = N * scale (each
        # column of N times its direction's scale), so dM = dN * scale and
        # df/dN = df/dM * scale; the Gaussian scale (derandomized) as is.
        n_map = pairs.scale.size * (z.size // pairs.scale.size)
        scale = np.ones(z.size)
        scale[:n_map] = np.tile(pairs.scale, n_map // pairs.scale.size)

        def fun(y):
            value, grad = objective(y * scale)
            return value, grad * scale

        y = z / scale

    # The second stopping test: ``until``, or the certificate's test (the
    # 2-norm of the gradient in the map's coordinates at most tol).
    def stop(grad):
        if until is not None and until():
            return True
        return stop_at_tol and np.linalg.norm(grad / scale) <= tol

    # The inf-norm test alone implies the 2-norm's.
    x, n_iter = minimize_lbfgs(
        fun,
        y,
        gtol=tol / np.sqrt(z.size),
        max_iter=max_iter,
        memory=memory,
        callback=_progress(pairs.verbose),
        stop=stop if stop_at_tol or until is not None else None,
    )
    x = x * scale if whiten else x
    return x, n_iter, n_iter < max_iter


def _progress(verbose):
    """The solvers' callback at ``verbose >= 2``: a line per iteration."""
    if verbose < 2:
        return None

    def report(n_iter, value):
        print(f"[L-BFGS] iter {n_iter}: surrogate {value:.9g}", flush=True)

    return report


def _lbfgs_on_points(pairs, objective, z, tol, max_iter, stop_at_tol=False, memory=10):
    """L-BFGS on the embedded points ``Y = X M^T`` of the active pairs.

    The span's coordinates ``X`` (n x rank) have centred columns and rank
    ``n - 1``: every centred ``Y`` is ``X M^T`` for exactly one ``M`` (see
    :meth:`_SpanPoints.map_of_points`). So the map and the centred embedded
    points are the same variables. In principal coordinates (orthogonal
    columns of squared norms ``e``, ``X = U diag(e)^(1/2)`` with ``U``
    orthonormal columns) ``Y = c U N^T`` with ``N = M diag(e)^(1/2) / c`` and
    ``c^2 = mean(e)``: the solver's variable ``Y / c`` is an orthogonal image
    of the whitened map ``N`` of :func:`_whitening_scale` (without its floor),
    and L-BFGS on it takes the whitened map's path (up to round-off and the
    inf-norm of the stopping test). The points do not depend on the basis:
    in the coordinates of a Cholesky factor (``_Span.factor``) the path is
    the same. The surrogate depends on the active pairs' points only, and
    its gradient vanishes on the other rows of ``Y``, which therefore stay
    where they are: the solver works on those rows alone, an evaluation
    costs ``O(n_active k)`` and not the two ``n x rank x k`` products of
    the map's gradient, and the map is recovered once per round. ``memory``
    correction pairs, a fresh memory each round (see the design note, "Solves
    on the embedded points").
    """
    points = pairs.points
    k = objective.k
    M = z.reshape(k, points.X.shape[1])
    Y = points.embed(M).copy()
    used = objective.used
    c = np.sqrt(points.col_sq.mean())

    def fun(y):
        value, grad = objective.embedded(y.reshape(-1, k) * c)
        # In float64 for the solver (the rounds evaluate in float32).
        return float(value), np.multiply(grad.ravel(), c, dtype=np.float64)

    # The map's gradient is (df/dY)^T X, of 2-norm at most that of df/dY
    # times X's largest singular value: a test that implies the
    # certificate's without the n x rank x k product.
    bound = np.sqrt(points.largest_cross_eigenvalue()) / c

    def stationary(grad):
        return np.linalg.norm(grad) * bound <= tol

    x, n_iter = minimize_lbfgs(
        fun,
        (Y[used] / c).ravel(),
        gtol=tol / np.sqrt(z.size),
        max_iter=max_iter,
        memory=memory,
        callback=_progress(pairs.verbose),
        stop=stationary if stop_at_tol else None,
    )
    Y[used] = x.reshape(-1, k) * c
    M = points.map_of_points(Y)
    # Y is X M^T up to round-off and a translation (the gradient's rows
    # sum to 0, so the solver keeps Y's column means): the pair
    # differences, all that the ratios see. Kept as the points of M, the
    # next round and the band's exact ratios start from it instead of two
    # n x rank x k products per round.
    points.remember(M, Y)
    return M.ravel(), n_iter


class _StageRounds:
    """One sharpness stage on an active set: rounds of pass, growth and solve.

    :func:`solve_stage` runs it when not every pair is active.
    Each round takes the exact all-pairs extremes (a blocked pass, see
    :meth:`_ActivePairs.band`), adds the pairs that overtake the set's
    extremes, and solves on the set for the round's iterations (see
    :func:`_round_plan` and :func:`_round_length`). Long rounds (tens of
    thousands of points) keep the stage's best map by exact all-pairs
    distortion and undo a round that raised it by more than ``undo_rise``
    (relative): the stage goes back to its best map, the pairs that overtook
    the extremes join the active set, and later rounds of the stage are 2, 4,
    ... times shorter (small rises occur in converging stages and are left
    alone; see the design note, "Undoing a long round"). Rounds of a sharpness
    below ``float32_below``, and every round on embedded points, evaluate the
    surrogate's pair terms in float32 (see ``_PairObjective.single``; at
    higher sharpness float32 rounds kept the final stage from converging; see
    the design note, "Float32 evaluations").
    """

    def __init__(
        self,
        pairs,
        k,
        beta,
        *,
        derandomized,
        penalty,
        max_iter,
        tol,
        undo_rise=0.05,
        float32_below=100.0,
    ):
        self.pairs = pairs
        self.k = k
        self.beta = beta
        self.derandomized = derandomized
        self.kwargs = {"derandomized": derandomized, "penalty": penalty}
        self.max_iter = max_iter
        self.tol = tol
        # Pairs added per side and round: with fewer, the set lags behind the
        # pairs that overtake its extremes; with more, each iteration costs
        # more than the iterations saved. See the design note, "Pairs added
        # per round and the random sample".
        self.n_side = pairs.working_set // 4
        self.undo_rise = undo_rise
        self.single = not derandomized and (pairs.embedded or beta < float32_below)
        # Long rounds: the best map of the stage by exact all-pairs distortion,
        # how many times a round was undone; and the iterations spent.
        self.best, self.undone, self.total = None, 0, 0

    def _map(self, z):
        rank = self.pairs.X.shape[1]
        return z[: self.k * rank].reshape(self.k, rank)

    def _start(self, M, rng):
        """The stage's first active set at the map ``M``; returns the band.

        Pairs within ``30 / beta`` of an extreme carry the surrogate's
        weight (beyond, a pair's soft-max weight is below ``exp(-30)`` of the
        worst pair's); pairs within a quarter of the log-range may overtake
        the extremes during a round. The set starts from the old pairs within
        the band and a fixed random sample of pairs, which keeps the bulk of
        the ratios (and the surrogate's centring term) represented at low
        sharpness, where the soft-max weighs many pairs. Larger or weighted
        samples fitted the training pairs better but generalized worse (see
        the design note, "Rejected alternatives").
        """
        pairs = self.pairs
        r_min, r_max, _, _ = pairs.band(M, 0, 0.0)
        band = max(30.0 / self.beta, 0.25 * np.log(r_max / r_min))
        if pairs.sample is None:
            pairs.sample = _random_pairs(rng, pairs.n, pairs.working_set // 2)
        if pairs.rows.size:
            r = pairs.ratios(M)
            near = (r <= r_min * np.exp(band)) | (r >= r_max * np.exp(-band))
            rows, cols = pairs.rows[near], pairs.cols[near]
        else:
            rows = cols = np.empty(0, dtype=np.intp)
        pairs.set_active(
            np.concatenate([rows, pairs.sample[0]]),
            np.concatenate([cols, pairs.sample[1]]),
        )
        return band

    def run(self, z, rng, *, final):
        """The stage's rounds from ``z``: the end point and the iterations."""
        pairs = self.pairs
        M = self._map(z)
        band = self._start(M, rng)
        converged = False
        n_rounds, shortest = _round_plan(
            self.beta,
            embedded=pairs.embedded and not self.derandomized,
            final=final,
            max_iter=self.max_iter,
        )
        for round_ in range(n_rounds):
            r_min, r_max, low, high = pairs.band(M, self.n_side, band)
            long_rounds = int(PASS_COST * pairs.n_pairs / max(pairs.rows.size, 1)) > (
                shortest
            )
            distortion = _scale_free(r_min, r_max)
            if (
                long_rounds
                and self.best is not None
                and (distortion > self.best[0] * (1.0 + self.undo_rise))
            ):
                # The round fitted the active set while pairs outside it
                # overtook the extremes: its step is undone, the pairs that
                # overtook join the set, and the next round is shorter.
                pairs.add(low, high)
                z, self.undone, converged = self.best[1], self.undone + 1, False
                M = self._map(z)
                r_min, r_max, low, high = pairs.band(M, self.n_side, band)
            elif long_rounds and (self.best is None or distortion < self.best[0]):
                self.best = (distortion, z)
            if round_:
                # (From the second round on, not once iterations were spent: a
                # solver that converged at once, as at an isometry, spends none,
                # and the stage would go on for max_iter rounds of one pass
                # each.)
                r = pairs.ratios(M)
                inside = r_max <= r.max() * (1 + 1e-9) and r_min >= r.min() * (1 - 1e-9)
                # No pair outside the set moves the extremes, and the solver has
                # converged on the set: the stage is done.
                if (inside and converged) or self.total >= self.max_iter:
                    break
            before = pairs.rows.size
            # The set only grows within a stage: the pairs fitted in earlier
            # rounds sit near the extremes (the minimax evens them out) and
            # come back past them when dropped (see the design note,
            # "Rejected alternatives").
            pairs.add(low, high)
            round_iter = _round_length(
                pairs.n_pairs,
                pairs.rows.size,
                pairs.rows.size - before,
                round_=round_,
                shortest=shortest,
                max_iter=self.max_iter,
                undone=self.undone,
                capacity=2 * self.n_side,
                saturable=not self.derandomized,
            )
            z, n_iter, converged = self._solve(z, round_iter, long_rounds, final)
            self.total += n_iter
            M = self._map(z)
            if pairs.verbose:
                print(
                    f"[LearnedJLTransformer] k={self.k} "
                    f"softmax_sharpness={self.beta:.4g} round {round_ + 1}: "
                    f"{n_iter} iterations on {pairs.rows.size} active pairs "
                    f"(all-pairs distortion before the round "
                    f"{_scale_free(r_min, r_max):.4f})",
                    flush=True,
                )
        else:
            # The rounds ran out before a pass measured the last one.
            if self.best is not None:
                r_min, r_max = pairs.extremes(M)
                if _scale_free(r_min, r_max) > self.best[0] * (1.0 + self.undo_rise):
                    z = self.best[1]
        return z, self.total

    def _solve(self, z, round_iter, long_rounds, final):
        """One round's solve on the active set: ``(z, n_iter, converged)``."""
        pairs = self.pairs
        budget = min(round_iter, self.max_iter - self.total)
        objective = stage_objective(pairs, self.k, self.beta, **self.kwargs)
        if self.single:
            # Long rounds (tens of thousands of points) also take the products
            # with X in float32; not on embedded points, which have no product
            # with X (see the design note, "Float32 evaluations").
            objective.single(products=long_rounds and not pairs.embedded)
        return lbfgs(
            pairs,
            objective,
            z,
            self.tol,
            budget,
            embedded=pairs.embedded and not self.derandomized,
            # Whitened coordinates only in rounds of the usual length: in the
            # long rounds of tens of thousands of points the whitened solver
            # moves the low-variance directions far enough to fit the active
            # set while pairs outside it overtake the extremes (see the design
            # note, "Whitening").
            whiten=round_iter <= ROUND_ITER,
            stop_at_tol=final,
        )


def _random_pairs(rng, n, size):
    """``size`` pairs ``(i, j)``, ``i <= j``, drawn uniformly (``i == j``: none)."""
    a = rng.randint(n, size=size)
    b = rng.randint(n, size=size)
    return np.minimum(a, b), np.maximum(a, b)


def _round_plan(
    beta,
    *,
    embedded,
    final,
    max_iter,
    embedded_beta=250.0,
    embedded_rounds=(4, 2 * MAX_ROUNDS),
    embedded_round_iter=20,
):
    """Rounds of an active-set stage, and iterations of its shortest round.

    ``MAX_ROUNDS`` of ``ROUND_ITER``; on embedded points (cheap rounds, see
    :func:`_lbfgs_on_points`) ``MAX_ROUNDS * sqrt(beta / embedded_beta)``
    within ``embedded_rounds`` (4 / 5 / 10 / 20 for the default stages), of
    at least ``embedded_round_iter`` iterations: spent where the extremes
    still move, at high sharpness, catching up with them often. The final
    stage goes on, round after round, until it converges or has spent
    ``max_iter`` (each round
    spends at least one iteration unless the solver has converged, and then a
    pass that finds no pair overtaking ends the stage): its end point is
    certified, and ``max_iter`` is the budget the ``ConvergenceWarning`` asks
    to raise (see the design note, "The final stage's budget").
    """
    n_rounds, shortest = MAX_ROUNDS, ROUND_ITER
    if embedded:
        shortest = embedded_round_iter
        n_rounds = int(
            np.clip(
                round(MAX_ROUNDS * np.sqrt(beta / embedded_beta)),
                embedded_rounds[0],
                embedded_rounds[1],
            )
        )
    if final:
        n_rounds = max(n_rounds, max_iter)
    return n_rounds, shortest


def _round_length(
    n_pairs,
    n_active,
    added,
    *,
    round_,
    shortest,
    max_iter,
    undone,
    capacity,
    saturable,
    longest_fraction=4,
    saturated_from=3,
    saturated_share=0.9,
    saturated_iter=20,
):
    """Solver iterations of an active-set round.

    At least ``shortest``; ``PASS_COST * n_pairs / n_active`` where passes are
    expensive, up to ``max_iter // longest_fraction``; halved for each
    round the stage has ``undone`` (see :class:`_StageRounds`); at most
    ``saturated_iter`` from round ``saturated_from`` on when the
    pass before it ``added`` at least ``saturated_share`` of the ``capacity``
    (the pairs a round may add), if ``saturable`` (not for the derandomized
    surrogate): the set is saturated, and longer rounds only fit it while
    pairs outside overtake its extremes (see the design note, "Saturated
    rounds").
    """
    length = min(
        max(shortest, int(PASS_COST * n_pairs / max(n_active, 1))),
        max(shortest, max_iter // longest_fraction),
    )
    if undone:
        length = max(shortest, length >> undone)
    if (
        round_ >= saturated_from
        and length <= ROUND_ITER
        and saturable
        and added >= saturated_share * capacity
    ):
        length = min(length, saturated_iter)
    return length


def certify_stage(
    pairs,
    objective,
    z,
    k,
    *,
    tol,
    curvature_tol,
    max_iter,
    rng,
    verbose,
    certify_iter=100,
    reach=2.0,
    embedded_spread=(1e6, 1e12),
):
    """The certificate of the final stage: the surrogate of the final active set.

    The certifying solver gets a short budget from the rounds' end point when
    its gradient norm is within ``reach * tol``; on a fixed active set a
    long run would fit those pairs while others overtake the extremes, so its
    point is kept only if the all-pairs distortion did not rise, and otherwise
    the rounds' end point is certified as it is. The certifying solver runs at
    most ``min(certify_iter, max_iter)`` iterations. An end point further from
    stationarity is certified as it is directly (one Lanczos run, not two; see
    the design note, "The certificate").

    On active pairs that touch every point of a span of ``n - 1`` dimensions
    the end point is certified as it is, by :func:`_embedded_certificate` (the
    same quantities, in map coordinates; in float32 or float64, or by
    ``sosp_certificate`` in map coordinates, by the span's spread, see
    ``embedded_spread`` below). There the final active set's
    surrogate still descends far from the end point while the all-pairs
    distortion rises (see the design note, "The certificate").

    The embedded certificate (Lanczos in the inner product of ``K^+``) runs
    in float32 up to the first of ``embedded_spread``, lower bounds on the
    spread of the span's variances, in float64 up to the second; beyond, the
    map's own certificate is computed (two ``n x rank x k`` products per
    Lanczos step). Directions of ``K`` below the precision's reach drop out of
    its products, and Lanczos then misses the Hessian's negative curvature
    there (see the design note, "Precision of the embedded certificate").

    Returns the point, the solver iterations spent on it and its certificate.
    """
    rank = pairs.X.shape[1]
    # Exact Hessian-vector products (one evaluation each, against two gradients
    # for a central difference, and no step: see _derandomized_hessp).
    hessp = objective.hessp

    # Active pairs on every point of a span of n - 1 dimensions (see the
    # docstring).
    embedded = (
        pairs.embedded
        and not pairs.complete
        and not objective.derandomized
        and objective.used.size == pairs.n
    )
    # A lower bound on the spread of the span's variances (the largest and
    # smallest eigenvalue of X^T X are at least and at most its diagonal's
    # extremes): it decides the precision of the embedded certificate.
    spread = (
        pairs.points.col_sq.max() / pairs.points.col_sq.min() if embedded else np.inf
    )

    def certified_where_it_stands():
        if embedded and spread <= embedded_spread[1]:
            certificate = _embedded_certificate(
                pairs,
                objective,
                z,
                k,
                tol=tol,
                curvature_tol=curvature_tol,
                rng=rng,
                single=spread <= embedded_spread[0],
            )
        else:
            certificate = sosp_certificate(
                objective,
                z,
                hessp=hessp,
                tol=tol,
                curvature_tol=curvature_tol,
                max_lanczos_iter=LANCZOS_ITER,
                random_state=rng,
            )
        return z, 0, certificate

    if embedded or np.linalg.norm(objective(z)[1]) > reach * tol:
        return certified_where_it_stands()
    res = minimize_sosp(
        objective,
        z,
        hessp=hessp,
        method="lbfgs",
        tol=tol,
        curvature_tol=curvature_tol,
        max_iter=min(certify_iter, max_iter),
        random_state=rng,
        verbose=max(0, verbose - 1),
        # The estimator warns once, in its own terms, from this certificate.
        warn=False,
        options={"max_lanczos_iter": LANCZOS_ITER},
    )
    before = _scale_free(*pairs.extremes(z[: k * rank].reshape(k, rank)))
    after = _scale_free(*pairs.extremes(res.x[: k * rank].reshape(k, rank)))
    if after <= before:
        return res.x, res.n_iter, res
    return certified_where_it_stands()


def _embedded_certificate(
    pairs, objective, z, k, *, tol, curvature_tol, rng, single=True
):
    """The certificate of ``sosp_certificate`` at ``z``, Lanczos on embedded points.

    For active pairs that touch every point of a span of ``n - 1``
    dimensions (see :func:`_lbfgs_on_points`), ``A: V -> X V^T``
    maps the map's directions one to one onto the centred ``n x k`` arrays,
    and ``<A U, A V> = tr(U X^T K^+ X V^T) = <U, V>`` for ``K = X X^T``
    (``X^T K^+ X = I`` as ``X`` has full column rank): ``A`` is an isometry
    onto the centred arrays with the inner product ``<P, Q> = tr(P^T K^+ Q)``.
    The map's Hessian is ``H_M = A^T H_Y A`` with ``H_Y`` the embedded
    points' (see :meth:`_PairObjective.embedded_hessp`), so ``A H_M = K H_Y
    A``: ``T = K H_Y`` is ``H_M`` in these coordinates, self-adjoint in that
    inner product, and Lanczos on ``T`` from ``A v0`` is Lanczos on ``H_M``
    from ``v0`` (the same tridiagonal matrix, hence the same Ritz values, up
    to round-off), from the same random ``v0``. A step costs one product
    with ``K`` (times a dual vector, the centred ``H_Y q``; for sparse input
    two sparse products with the rows, see ``_pairs._SparseGram``)
    instead of the map's two ``n x rank x k`` ones. The gradient norm is the map's, as
    ``sosp_certificate`` computes it; the smallest Ritz value is a Rayleigh
    quotient of ``H_M`` (at ``A^-1`` of the Ritz vector), an upper bound on
    its smallest eigenvalue as in map coordinates. The eigenvector is
    returned in map coordinates.

    The gradient (and its norm's test) is float64's; with ``single``,
    ``H_Y``'s products and ``K``'s run in float32, as the rounds on embedded
    points evaluate the surrogate, and the Lanczos basis is stored in float32
    (half the memory of the basis and duals, ``2 (LANCZOS_ITER + 1) n k``
    numbers). The products' round-off moves the smallest Ritz value far less
    than the ``curvature_tol`` it is tested against. For sparse input ``K``'s
    products are sparse products in float64, cheaper than ``K`` in float32.
    See the design note, "Precision of the embedded certificate".
    """
    X = pairs.X
    n, rank = X.shape
    value, grad = objective(z)
    Y = X @ z.reshape(k, rank).T
    # sosp_certificate's start, drawn the same way, and its image: A v0 and
    # its dual K^+ A v0 = X (X^T X)^-1 v0^T (K X (X^T X)^-1 = X).
    V0 = rng.standard_normal(z.size).reshape(k, rank)
    start = ((X @ V0.T).ravel(), (X @ pairs.points.cross_solve(V0.T)).ravel())

    def dual_product(q):
        # K^+ T q = K^+ K H_Y q: H_Y q centred (the range of K), in float64
        # for the Lanczos basis.
        h = objective.embedded_hessp(Y, q.reshape(n, k), single=single)
        h = h.astype(np.float64, copy=False)
        h -= h.mean(axis=0)
        return h.ravel()

    def primal(p):
        return pairs.points.gram().product(p.reshape(n, k), single=single).ravel()

    eig, vector, n_lanczos, residual = _lanczos_smallest(
        dual_product,
        z.size,
        rng,
        max_iter=LANCZOS_ITER,
        rtol=1e-6,  # sosp_certificate's default
        start=start,
        primal=primal,
        dtype=np.float32 if single else np.float64,
    )
    vector = pairs.points.map_of_points(vector.reshape(n, k)).ravel()
    certificate = certificate_result(
        z,
        value,
        grad,
        (eig, vector, n_lanczos, residual),
        tol=tol,
        curvature_tol=curvature_tol,
    )
    certificate.nfev, certificate.nhev = 1, n_lanczos
    return certificate


def map_bytes(
    n_samples, n_features, k, working_set, *, gram_arrays=14, active_set_bytes=1 << 27
):
    """Peak bytes of a fit of dimension ``k`` beside its span (see ``span_bytes``).

    The map, its random start and their products (``k x n_features`` each),
    the certificate's Lanczos vectors (``LANCZOS_ITER + 1`` of the map's ``k
    x rank`` variables, or, on spans of ``n - 1`` dimensions, of the ``n x
    k`` embedded points with their duals, see :func:`_embedded_certificate`:
    counted in float64, 0.48 GB at 10,000 points and k = 30, as spans whose
    variances spread widely take them, see certify_stage; the
    spread is not known before the span), the
    Gram form's ``gram_arrays`` arrays of ``n x n`` when every pair is active
    (see :func:`every_pair_active`, with the fit's ``working_set``) and
    ``active_set_bytes``: the active pairs' operators and work arrays beside
    the Lanczos vectors, and the rows of the Gram matrix the polish keeps (at
    most 2^24 numbers, see ``_polish.KEPT_ROWS_ELEMENTS``), so that the
    estimate stays above the measured peak (see the design note, "Memory
    estimates"). Whether the span has ``n - 1`` dimensions is decided from the
    shape, as :class:`_ActivePairs` decides it from the rank (which can only be
    lower).
    """
    rank = min(n_samples, n_features)
    embedded = embedded_shape(n_samples, n_features)
    # Every pair active in the Gram form (see objective): its arrays. The rank
    # is at most min(n, d), so the shape's answer errs towards counting them.
    gram = 0
    if n_samples <= GRAM_MAX_SAMPLES and every_pair_active(
        n_samples, rank, k, working_set
    ):
        gram = gram_arrays * n_samples * n_samples * 8
    if embedded:
        lanczos = (LANCZOS_ITER + 1) * 2 * n_samples * k * 8
    else:
        lanczos = (LANCZOS_ITER + 1) * k * rank * 8
    return 4 * k * n_features * 8 + lanczos + gram + active_set_bytes


def fit_bytes(X, n_components, working_set):
    """Peak bytes of a fit of ``X`` in ``n_components`` dimensions (estimated)."""
    return span_bytes(X) + map_bytes(*X.shape, n_components, working_set)
