"""The active-set minimax behind LearnedJLTransformer.

Private helpers of :class:`~skderand.embedding.LearnedJLTransformer`:

- :class:`_ActivePairs` keeps the pairs whose distance ratio is near the current
  extremes (the *active set*). The smooth surrogate is optimized over them only;
  between rounds a blocked pass over *all* pairs (:class:`_PairScanner`) finds the
  true extremes, and the pairs that overtake the active set's extremes are added.
  A sharpness stage ends when no pair outside the set moves the extremes.
- :func:`certify_stage` certifies the final stage on the final active set (the
  nonsmooth polish that follows is in ``_polish.py``).

Per-iteration cost then grows with the active set, not with the ``n^2 / 2`` pairs.
"""

import copy

import numpy as np
from scipy.sparse.linalg import LinearOperator, eigsh

from skderand.embedding._objective import (
    _GramObjective,
    _PairObjective,
    difference_matrix,
)
from skderand.embedding._pairs import (
    _HeldGram,
    _PairScanner,
    _SparseGram,
    all_pairs,
    exact_sq_dists,
    span_bytes,
)
from skderand.optimize import minimize_sosp, sosp_certificate
from skderand.optimize._certificate import _lanczos_smallest, certificate_result
from skderand.optimize._lbfgs import minimize_lbfgs

# Pairs whose log-ratio is within BAND / beta of an extreme: beyond it a pair's
# soft-max weight is below exp(-BAND) of the worst pair's, i.e. nothing.
BAND = 30.0
# Rounds of (solve on the active set, blocked pass, add violators) per stage,
# and solver iterations per round: short rounds keep the pairs outside the set
# from drifting far past the extremes before the next pass sees them. See the
# design note, "Active-set rounds".
MAX_ROUNDS = 10
ROUND_ITER = 40
# Where a blocked pass costs many iterations (large n), a round runs PASS_COST *
# n_pairs / n_active iterations, up to 1 / LONGEST_ROUND_FRACTION of the stage's
# budget, so that passes do not dominate. A cost model, not a clock: the fit
# stays deterministic. See the design note, "Active-set rounds".
PASS_COST = 0.05
LONGEST_ROUND_FRACTION = 4
BAND_FRACTION = 0.25
# A round after the first SATURATED_FROM_ROUND of its stage runs at most
# SATURATED_ROUND_ITER iterations when the pass before it added at least
# SATURATED_SHARE of the 2 * (working_set // 4) pairs a round may add: the set
# is saturated, and longer rounds only fit it while pairs outside overtake its
# extremes. See the design note, "Saturated rounds".
SATURATED_FROM_ROUND = 3
SATURATED_SHARE = 0.9
SATURATED_ROUND_ITER = 20
# Active-set rounds of a sharpness below this evaluate the surrogate's pair
# terms in float32 (see _PairObjective.single), as do the rounds on embedded
# points at every sharpness. At higher sharpness float32 rounds kept the final
# stage from converging. See the design note, "Float32 evaluations".
FLOAT32_MAX_SHARPNESS = 100.0
# Every pair is active below this many pairs per variable (see reset).
COMPLETE_PER_VARIABLE = 20
# With every pair active and at most this many points, the surrogate goes through
# the Gram matrix of the embedded points (BLAS products) instead of a pair list:
# several times faster, in GRAM_ARRAYS n x n arrays, less memory than the pair
# list's. See the design note, "Gram form".
GRAM_MAX_SAMPLES = 2000
GRAM_ARRAYS = 14
# With every pair active, at least this many of them and the direct map, the
# stages evaluate the surrogate by _GramObjective._direct; smaller sets gain
# little and keep the pair-vector arithmetic. See the design note, "Gram form".
LEAN_MIN_PAIRS = 10_000
# Candidate pairs kept by a blocked pass (per side, at most): those within
# CANDIDATE_FRACTION of the log-range of the ratios from an extreme. Between
# passes, the exact extremes come from them while the map has moved too little
# for any other pair to overtake them (see _ActivePairs.band). SCAN_SLACK covers
# the round-off of the pass's Gram-form (and float32) ratios.
CANDIDATES = 10_000
# ... and at most one in CANDIDATE_SHARE of all pairs (never fewer than a
# round adds): their exact distances and ratios, and the pass's pools, cost
# about as much as half a pass where passes are cheap. See the design note,
# "Candidate pairs".
CANDIDATE_SHARE = 400
CANDIDATE_FRACTION = 0.4
SCAN_SLACK = 1e-5


class _ActivePairs:
    """The training pairs: a blocked scanner over all of them and an active set.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Centred training data (dense).
    working_set : int
        At most this many pairs enter the active set per side and round; when the
        data has at most this many pairs, every pair is active all the time.
    verbose : int, default=0
        1: a line per active-set round; 2: also the L-BFGS iterations.
    gram : _SparseGram or _HeldGram, default=None
        ``K = X X^T`` by its products and rows, if the caller has it (see
        ``_Span.gram``: sparse products with the data); else ``K`` is formed
        when first needed (see :meth:`gram`).
    factor : _PivotedCholesky, default=None
        Where ``X`` came from (see ``_Span.factor``); None: ``X`` holds the
        principal coordinates of the span (``X^T X`` is diagonal).
    """

    def __init__(self, X, working_set, verbose=0, *, gram=None, factor=None):
        self.X = X
        self.factor = factor
        self.verbose = verbose
        n = X.shape[0]
        self.n = n
        self.working_set = working_set
        # A Cholesky factor's coordinates are lower trapezoidal.
        self.scanner = _PairScanner(X, lower_trapezoidal=factor is not None)
        self.n_pairs = n * (n - 1) // 2
        self.all = None
        self._embedded = None
        self._key = None
        self._ratios = None
        self._gram = gram
        self._largest_cross = None
        # The whitening scales the principal directions; a Cholesky basis has
        # none (its solves on the embedded points are whitened all the same,
        # see _embedded_lbfgs).
        self.scale = _whitening_scale(X) if factor is None else None
        # Data whose span has as many dimensions as centred points can have
        # (n - 1): the active-set rounds optimize the embedded points (see
        # _embedded_lbfgs), unless the span's principal directions spread
        # over more than WHITEN_SPREAD (``scale``; a triangular basis was
        # taken only below it, see _pairs._Span). The embedded solves take
        # the whitened path without its floor, which moves the directions of
        # least variance too far on widely spread spans. See the design note,
        # "Solves on the embedded points".
        self.col_sq = np.einsum("ij,ij->j", X, X)
        self.embedded = (
            n > 2
            and X.shape[1] >= max(n - 1, EMBEDDED_MIN_RANK)
            and self.col_sq.min() > 0
            and (factor is not None or self.scale is None)
        )
        self.reset(1)
        # Blocked passes run and the largest active set, for benchmarks.
        self.stats = {"n_scans": 0, "max_active": self.rows.size}

    def reset(self, k):
        """Start a fit of dimension ``k``: all pairs, or an empty active set.

        Every pair is active when there are at most ``working_set`` of them, or
        fewer than ``COMPLETE_PER_VARIABLE`` per optimized variable: an active set
        small against the number of variables is fitted exactly by the solver
        while the pairs outside it drift past the extremes.
        """
        self.complete = every_pair_active(self.n, self.X.shape[1], k, self.working_set)
        self.sample = None
        self.candidates = None
        if self.complete:
            if self.all is None:
                self.all = all_pairs(self.X)
            self.rows, self.cols, self.d2 = self.all
            if hasattr(self, "stats"):
                self.stats["max_active"] = self.rows.size
        else:
            self.rows = self.cols = np.empty(0, dtype=np.intp)
            self.d2 = np.empty(0)

    def for_another_start(self):
        """A copy on which another start of the fit can run beside this one.

        It shares the data and what is derived from them alone (the stored
        distances of the blocked passes, the list of all pairs, the Gram
        matrix): a fit rebinds the attributes it changes and never writes
        into their arrays (the scanner's cache of triangular masks only gains
        entries, the same for every fit). It has its own scanner state, caches
        of the last map and counts, and a fit (see ``reset``) gives it
        its own active set. A fit on it follows the path it would follow on
        this object in the state it has now, whatever runs on either meanwhile.
        """
        other = copy.copy(self)
        # The last pass's error bound and spread are the scanner's state.
        other.scanner = copy.copy(self.scanner)
        other._embedded = other._key = other._ratios = None
        other.stats = {"n_scans": 0, "max_active": 0}
        return other

    def add_stats(self, other):
        """Count the passes and active set of ``other`` (another start) in these."""
        self.stats["n_scans"] += other.stats["n_scans"]
        self.stats["max_active"] = max(
            self.stats["max_active"], other.stats["max_active"]
        )

    # -- all pairs ----------------------------------------------------------------
    def scan(self, M, n_extreme=0, band=np.inf, range_fraction=0.0, known=None):
        """One blocked pass over all pairs under the map ``M`` (see _PairScanner)."""
        # The embedded points kept for M (the candidates' exact ratios ask for
        # them next; on embedded points the round's own), centred into a new
        # array: the Gram form |y_i|^2 + |y_j|^2 - 2 y_i.y_j stays accurate.
        Y = self._embed(M)
        Y = Y - Y.mean(axis=0)
        out = self.scanner.scan(Y, n_extreme, band, range_fraction, known)
        self.stats["n_scans"] += 1
        return out

    def band(self, M, n_side, band):
        """Exact all-pairs extremes and the pairs within ``band`` of them.

        A blocked pass over all pairs at a map ``M0`` keeps the candidate pairs,
        those with ratios within a margin of the extremes. From ``M0`` to ``M``
        a ratio ``d^T M^T M d / |d|^2`` changes by ``d^T Delta d / |d|^2`` with
        ``Delta = M^T M - M0^T M0``: by at most ``lambda_max(Delta)`` upwards and
        ``-lambda_min(Delta)`` downwards (see :func:`_ratio_movement`). While the
        candidates' smallest ratio stays below the low margin lowered by that
        fall, and their largest above the high margin raised by that rise, no
        other pair can be extreme, and the candidates alone give the exact
        all-pairs extremes. Otherwise a new pass.

        Returns ``(r_min, r_max, low, high)`` as :meth:`_PairScanner.scan`.
        """
        if self.complete:
            if self.rows.size == 0:
                return np.inf, -np.inf, (self.rows,) * 2, (self.rows,) * 2
            rows, cols, r = self.rows, self.cols, self.ratios(M)
            r_min, r_max = float(r.min()), float(r.max())
        for attempt in range(0 if self.complete else 2):
            fresh = self.candidates is None or attempt
            if fresh:
                # The old candidates' ratios at M, measured in the first attempt.
                r = self._new_candidates(M, n_side, band, r if attempt else None)
            rows, cols, d2, M0, lo_limit, hi_limit = self.candidates
            if rows.size == 0:
                return np.inf, -np.inf, (rows, cols), (rows, cols)
            if not fresh:
                r = self._exact_ratios(M, rows, cols, d2)
            fall, rise = _ratio_movement(M, M0)
            slack = SCAN_SLACK * abs(hi_limit)
            r_min, r_max = float(r.min()), float(r.max())
            if r_min <= lo_limit - fall - slack and r_max >= hi_limit + rise + slack:
                break
        lo = np.flatnonzero(r <= r_min * np.exp(band))
        hi = np.flatnonzero(r >= r_max * np.exp(-band))
        if lo.size > n_side:
            lo = lo[np.argpartition(r[lo], n_side - 1)[:n_side]]
        if hi.size > n_side:
            hi = hi[np.argpartition(-r[hi], n_side - 1)[:n_side]]
        return r_min, r_max, (rows[lo], cols[lo]), (rows[hi], cols[hi])

    def _new_candidates(self, M, n_side, band, r_old=None):
        """A blocked pass: the candidate pairs around the extremes at ``M``.

        ``r_old`` holds the current candidates' exact ratios at ``M``, if
        known: the pass's pools then start from their ``n_cand``-th smallest
        and largest (see :meth:`_PairScanner.scan`'s ``known``). Returns the
        new candidates' exact ratios at ``M`` (in their stored order), which
        :meth:`band` would otherwise measure again at once.
        """
        n_cand = max(min(CANDIDATES, self.n_pairs // CANDIDATE_SHARE), 2 * n_side)
        known = None
        if r_old is not None:
            r_old = self._distinct_known_ratios(M, r_old)
        if r_old is not None and r_old.size >= n_cand:
            # At least n_cand pairs lie at or beyond these ratios; SCAN_SLACK
            # covers a float64 pass's round-off. The same candidates, hence
            # bit-identical fits, from shorter pools (see the design note,
            # "Candidate pairs").
            lo = np.partition(r_old, n_cand - 1)[n_cand - 1]
            hi = np.partition(r_old, r_old.size - n_cand)[r_old.size - n_cand]
            known = (lo * (1.0 + SCAN_SLACK), hi * (1.0 - SCAN_SLACK))
        _, _, low, high = self.scan(
            M, n_cand, band, range_fraction=CANDIDATE_FRACTION, known=known
        )
        # A pair in both sides is harmless (the extremes are a min and a max).
        rows = np.concatenate([low[0], high[0]])
        cols = np.concatenate([low[1], high[1]])
        d2 = self._exact(rows, cols)
        # Every pair left out lies between these limits (at M).
        # A float32 pass ranks the pairs with ratios off by at most `error`: a
        # pair left out can lie 2 * error below the largest exact ratio kept on
        # the low side (and above the smallest kept on the high side).
        error = 2.0 * self.scanner.error
        n_low = low[0].size
        r = self._exact_ratios(M, rows, cols, np.maximum(d2, self.scanner.threshold))
        lo_limit = float(r[:n_low].max()) - error if n_low else -np.inf
        hi_limit = float(r[n_low:].min()) + error if r.size > n_low else np.inf
        keep = d2 > self.scanner.threshold
        rows, cols, d2, r = rows[keep], cols[keep], d2[keep], r[keep]
        key = rows * self.n + cols
        order = np.argsort(key)
        self.candidates = (
            rows[order],
            cols[order],
            d2[order],
            M.copy(),
            lo_limit,
            hi_limit,
        )
        self._candidate_key = key[order]
        # The kept pairs' d2 exceed the floor above, so these are the ratios
        # _exact_ratios(M, rows, cols, d2) gives, pair by pair.
        return r[order]

    def _distinct_known_ratios(self, M, r_old):
        """Exact ratios at ``M`` of the old candidates and the active set.

        ``r_old`` holds the old candidates' (in their stored order). Each pair
        counts once (a candidate on both sides is stored twice, and the active
        set shares pairs with the candidates). The active set's pairs are the
        ones the solver pushed towards the extremes: after a long round the
        old candidates' own ratios have been fitted towards 1, and alone they
        would give the pass's pools no useful start (see the design note,
        "Performance notes").
        """
        # Both key arrays are sorted: a candidate counts unless it repeats the
        # one before it or is in the active set (a sorted search, not a sort of
        # the union).
        key = self._candidate_key
        new = np.concatenate([[True], key[1:] != key[:-1]])
        if not self.rows.size:
            return r_old[new]
        active = self._active_key()
        new &= active[np.minimum(np.searchsorted(active, key), active.size - 1)] != key
        return np.concatenate([self.ratios(M), r_old[new]])

    def _exact_ratios(self, M, rows, cols, d2):
        """The ratios of the pairs ``(rows, cols)`` under ``M``, exactly."""
        # The differences by the pairs' difference operator: bit for bit those
        # of two gathers and a subtraction (see difference_matrix), in one
        # pass over the (n_pairs, k) result instead of three (see the design
        # note, "Performance notes").
        diff = difference_matrix(rows, cols, self.n) @ self._embed(M)
        return np.einsum("ij,ij->i", diff, diff) / d2

    def _exact(self, rows, cols):
        """Exact squared distances of pairs, reusing those already measured.

        A pair's distance never changes, and for data of high rank measuring
        tens of thousands of candidate pairs costs as much as a pass; the
        active set and the candidates (both
        sorted by ``row * n + col``) are looked up first.
        """
        key = rows * self.n + cols
        # Looked up in key order: a sorted search runs faster than
        # one of keys in the order of the pass's pools (20,000 of them).
        order = np.argsort(key)
        key = key[order]
        found_d2 = np.empty(key.size)
        found = np.zeros(key.size, dtype=bool)
        known = [(self._active_key(), self.d2)]
        if self.candidates is not None:
            known.append((self._candidate_key, self.candidates[2]))
        for known_key, known_d2 in known:
            if known_key.size == 0 or found.all():
                continue
            pos = np.minimum(np.searchsorted(known_key, key), known_key.size - 1)
            hit = ~found & (known_key[pos] == key)
            found_d2[hit] = known_d2[pos[hit]]
            found |= hit
        d2 = np.empty(key.size)
        d2[order] = found_d2
        missing = np.zeros(key.size, dtype=bool)
        missing[order] = ~found
        d2[missing] = self._measure(rows[missing], cols[missing])
        return d2

    def _measure(self, rows, cols):
        """Squared distances of new pairs: stored Gram forms, else exact.

        In spans of at least ``GRAM_DISTANCE_MIN_RANK`` dimensions gathering
        the pairs' rows is the cost (see the design note, "Performance
        notes"); there the pass's stored
        Gram-form distances are taken where they are within
        ``gram_distance_rtol`` of the exact ones (see
        :meth:`_PairScanner.stored_sq_dists`), the others measured directly.
        """
        if self.X.shape[1] < GRAM_DISTANCE_MIN_RANK:
            return self._direct_sq_dists(rows, cols)
        d2, ok = self.scanner.stored_sq_dists(rows, cols)
        if not ok.all():
            bad = ~ok
            d2[bad] = self._direct_sq_dists(rows[bad], cols[bad])
        return d2

    def _direct_sq_dists(self, rows, cols):
        """Exact squared distances: of the sparse rows when the span has them.

        Their differences have a few hundred terms (see
        ``_SparseGram.sq_dists``), the coordinates' one per dimension.
        """
        if isinstance(self._gram, _SparseGram):
            return self._gram.sq_dists(rows, cols)
        return exact_sq_dists(self.X, rows, cols)

    def _embed(self, M):
        """``X M^T``, kept for the last map asked (band and ratios ask twice)."""
        cached = self._embedded
        if cached is not None and np.array_equal(cached[0], M):
            return cached[1]
        Y = self.X @ M.T
        self._embedded = (M.copy(), Y)
        return Y

    def gram(self):
        """``K = X X^T`` by its products and rows (``_HeldGram`` or the caller's).

        ``K P = X (X^T P)`` for an ``n x k`` array in one ``n x n x k``
        product instead of two ``n x rank x k`` ones (see
        :func:`_embedded_certificate`), and ``X d_p`` for a pair is the
        difference of two of its rows (see ``_polish._EmbeddedSteps``).
        Formed from ``X`` when the caller has no cheaper way; sparse input
        has (see ``_Span.gram``).
        """
        if self._gram is None:
            self._gram = _HeldGram(self.X @ self.X.T)
        return self._gram

    def map_of_points(self, Y):
        """The map ``M`` whose embedded points ``X M^T`` are the centred ``Y``.

        For data of rank ``n - 1`` (the embedded solves, see
        :meth:`_embedded_lbfgs`). In principal coordinates (``X^T X =
        diag(col_sq)``, see ``_Span``) ``M^T = diag(1 / col_sq) X^T Y``; in
        a Cholesky basis one triangular solve (see
        ``_PivotedCholesky.map_of_points``).
        """
        if self.factor is not None:
            return self.factor.map_of_points(Y)
        return ((self.X.T @ Y) / self.col_sq[:, None]).T

    def cross_solve(self, B):
        """``(X^T X)^-1 B`` for ``B`` of shape (rank, m)."""
        if self.factor is not None:
            return self.factor.cross_solve(B)
        return B / self.col_sq[:, None]

    def largest_cross_eigenvalue(self):
        """The largest eigenvalue of ``X^T X`` (and of ``K = X X^T``).

        In principal coordinates the largest ``col_sq``; else by Lanczos on
        ``K``'s products (ARPACK, from a start of a local generator: no global random
        state), to 1e-8 relative: it scales a stopping test of the solves
        only (the certificate measures the gradient itself).
        """
        if self._largest_cross is None:
            if self.factor is None:
                self._largest_cross = self.col_sq.max()
            else:
                start = np.random.default_rng(0).standard_normal(self.n)
                K = LinearOperator(
                    (self.n, self.n),
                    matvec=lambda v: self.gram().product(v.reshape(-1, 1)),
                    dtype=np.float64,
                )
                top = eigsh(K, k=1, which="LA", v0=start, tol=1e-8)[0]
                self._largest_cross = float(top[0])
        return self._largest_cross

    def _active_key(self):
        """``rows * n + cols`` of the active set (sorted, see :meth:`_set`)."""
        if self._key is None or self._key[0] is not self.rows:
            self._key = (self.rows, self.rows * self.n + self.cols)
        return self._key[1]

    def extremes(self, M):
        """Exact smallest and largest ratio over all non-coincident pairs."""
        r_min, r_max, _, _ = self.band(M, 0, 0.0)
        return r_min, r_max

    # -- the active set -----------------------------------------------------------
    def ratios(self, M):
        """The active pairs' exact ratios under ``M`` (read-only).

        Kept for the last map and active set: a round's pass (see
        :meth:`_distinct_known_ratios`) and its convergence check ask for
        the same ones.
        """
        cached = self._ratios
        if (
            cached is not None
            and cached[0] is self.rows
            and np.array_equal(cached[1], M)
        ):
            return cached[2]
        r = self._exact_ratios(M, self.rows, self.cols, self.d2)
        self._ratios = (self.rows, M.copy(), r)
        return r

    def _set(self, rows, cols):
        """Make ``(rows, cols)`` (i < j) the active set, with exact distances."""
        # The sorted distinct keys (np.unique's result), by a sort and a
        # comparison of neighbours.
        key = rows * self.n + cols
        key.sort()
        if key.size:
            distinct = np.empty(key.size, dtype=bool)
            distinct[0] = True
            np.not_equal(key[1:], key[:-1], out=distinct[1:])
            key = key[distinct]
        rows, cols = np.divmod(key, self.n)
        d2 = self._exact(rows, cols)
        keep = d2 > self.scanner.threshold
        self.rows, self.cols, self.d2 = rows[keep], cols[keep], d2[keep]
        self.stats["max_active"] = max(self.stats["max_active"], self.rows.size)

    def _add(self, low, high):
        self._set(
            np.concatenate([self.rows, low[0], high[0]]),
            np.concatenate([self.cols, low[1], high[1]]),
        )

    def objective(self, k, beta, *, derandomized, penalty):
        if self.complete and self.n <= GRAM_MAX_SAMPLES:
            obj = _GramObjective(
                self.X,
                self.scanner.threshold,
                k,
                derandomized=derandomized,
                penalty=penalty,
            )
            obj.beta = beta
            obj.lean = not derandomized and self.n_pairs >= LEAN_MIN_PAIRS
            return obj
        obj = _PairObjective(
            self.X,
            self.rows,
            self.cols,
            self.d2,
            k,
            derandomized=derandomized,
            penalty=penalty,
        )
        obj.beta = beta
        return obj

    def solve_stage(
        self, z, k, beta, *, derandomized, penalty, max_iter, tol, rng, final=False
    ):
        """One sharpness stage of the surrogate: rounds over the active set.

        Returns the end point and the number of solver iterations. The
        ``final`` stage's solves also stop where the certificate's gradient
        test holds (see :meth:`_lbfgs`).

        With every pair active, one solve; otherwise rounds over the active
        set (see :class:`_StageRounds`).
        """
        kwargs = {"derandomized": derandomized, "penalty": penalty}
        if self.complete:
            # Every stage to tol: its end point is the next stage's start, and
            # looser earlier stages lead to worse minimax points. See the
            # design note, "All-pairs stages".
            z, n_iter, _ = self._lbfgs(
                self.objective(k, beta, **kwargs),
                z,
                tol,
                max_iter,
                stop_at_tol=final,
            )
            return z, n_iter
        rounds = _StageRounds(self, k, beta, max_iter=max_iter, tol=tol, **kwargs)
        return rounds.run(z, rng, final=final)

    def _lbfgs(
        self,
        objective,
        z,
        tol,
        max_iter,
        whiten=True,
        embedded=False,
        stop_at_tol=False,
    ):
        """L-BFGS on the active set's surrogate (no certificate: that comes last).

        In whitened coordinates (see :func:`_whitening_scale`) when ``whiten``
        and the data call for it. Returns the end point, the iterations and
        whether it stopped before ``max_iter``. The solver stops where the
        largest entry of the gradient is at most ``tol / sqrt(z.size)`` (which
        implies the certificate's test, a 2-norm at most ``tol``); with
        ``stop_at_tol`` also where the certificate's test holds.

        With ``embedded`` (an active-set round on data whose span has about as
        many dimensions as points, see :meth:`_embedded_lbfgs`) the solver
        runs on the embedded points of the active pairs instead of the map.
        """
        if max_iter < 1:
            return z, 0, False
        if embedded:
            x, n_iter = self._embedded_lbfgs(
                objective, z, tol, max_iter, stop_at_tol=stop_at_tol
            )
            return x, n_iter, n_iter < max_iter
        callback = None
        if self.verbose >= 2:

            def callback(n_iter, value):
                print(f"[L-BFGS] iter {n_iter}: surrogate {value:.9g}", flush=True)

        fun, y = objective, z
        whiten = whiten and self.scale is not None
        scale = 1.0
        if whiten:
            # L-BFGS in whitened coordinates: the map is M = N * scale (each
            # column of N times its direction's scale), so dM = dN * scale and
            # df/dN = df/dM * scale; the Gaussian scale (derandomized) as is.
            n_map = self.scale.size * (z.size // self.scale.size)
            scale = np.ones(z.size)
            scale[:n_map] = np.tile(self.scale, n_map // self.scale.size)

            def fun(y):
                value, grad = objective(y * scale)
                return value, grad * scale

            y = z / scale

        # The certificate's test: the 2-norm of the gradient in the map's
        # coordinates at most tol.
        def stationary(grad):
            return np.linalg.norm(grad / scale) <= tol

        # The inf-norm test alone implies the 2-norm's.
        gtol = tol / np.sqrt(z.size)
        x, n_iter = minimize_lbfgs(
            fun,
            y,
            gtol=gtol,
            max_iter=max_iter,
            memory=LBFGS_MEMORY,
            callback=callback,
            stop=stationary if stop_at_tol else None,
        )
        x = x * scale if whiten else x
        return x, n_iter, n_iter < max_iter

    def _embedded_lbfgs(self, objective, z, tol, max_iter, stop_at_tol=False):
        """L-BFGS on the embedded points ``Y = X M^T`` of the active pairs.

        The span's coordinates ``X`` (n x rank) have centred columns and rank
        ``n - 1``: every centred ``Y`` is ``X M^T`` for exactly one ``M`` (see
        :meth:`map_of_points`). So the map and the centred embedded points are
        the same variables. In principal coordinates (orthogonal columns of
        squared norms ``e``, ``X = U diag(e)^(1/2)`` with ``U`` orthonormal
        columns) ``Y = c U N^T`` with ``N = M diag(e)^(1/2) / c`` and ``c^2 =
        mean(e)``: the solver's variable ``Y / c`` is an orthogonal image of
        the whitened map ``N`` of :func:`_whitening_scale` (without its floor),
        and L-BFGS on it takes the whitened map's path (up to round-off and the
        inf-norm of the stopping test). The points do not depend on the basis:
        in the coordinates of a Cholesky factor (``_Span.factor``) the path is
        the same. The surrogate depends on the active pairs' points only, and
        its gradient vanishes on the other rows of ``Y``, which therefore stay
        where they are: the solver works on those rows alone, an evaluation
        costs ``O(n_active k)`` and not the two ``n x rank x k`` products of
        the map's gradient (the sparse text-like set: rank 1,499 for 1,500
        points), and the map is recovered once per round.
        """
        k = objective.k
        rank = self.X.shape[1]
        M = z.reshape(k, rank)
        Y = self._embed(M).copy()
        used = objective.used
        c = np.sqrt(self.col_sq.mean())

        def fun(y):
            value, grad = objective.embedded(y.reshape(-1, k) * c)
            # In float64 for the solver (the rounds evaluate in float32).
            return float(value), np.multiply(grad.ravel(), c, dtype=np.float64)

        callback = None
        if self.verbose >= 2:

            def callback(n_iter, value):
                print(f"[L-BFGS] iter {n_iter}: surrogate {value:.9g}", flush=True)

        # The map's gradient is (df/dY)^T X, of 2-norm at most that of df/dY
        # times X's largest singular value: a test that implies the
        # certificate's without the n x rank x k product.
        bound = np.sqrt(self.largest_cross_eigenvalue()) / c

        def stationary(grad):
            return np.linalg.norm(grad) * bound <= tol

        x, n_iter = minimize_lbfgs(
            fun,
            (Y[used] / c).ravel(),
            gtol=tol / np.sqrt(z.size),
            max_iter=max_iter,
            memory=EMBEDDED_MEMORY,
            callback=callback,
            stop=stationary if stop_at_tol else None,
        )
        Y[used] = x.reshape(-1, k) * c
        M = self.map_of_points(Y)
        # Y is X M^T up to round-off and a translation (the gradient's rows
        # sum to 0, so the solver keeps Y's column means): the pair
        # differences, all that the ratios see. Kept as the points of M, the
        # next round and the band's exact ratios start from it instead of two
        # n x rank x k products per round (39 rounds on the sparse set).
        self._embedded = (M.copy(), Y)
        return M.ravel(), n_iter


# Spans of at least this many dimensions take new pairs' squared distances from
# the blocked pass's stored Gram form where it is accurate (see _measure).
GRAM_DISTANCE_MIN_RANK = 256

# Active-set rounds on the embedded points (see _ActivePairs._embedded_lbfgs)
# only for spans of at least this many dimensions, where the map's two
# n x rank x k products dominate an evaluation. Their solver is the plain
# L-BFGS of skderand/optimize/_lbfgs.py with EMBEDDED_MEMORY correction pairs,
# a fresh memory each round. See the design note, "Solves on the embedded
# points".
EMBEDDED_MIN_RANK = 256
EMBEDDED_MEMORY = 10
# Rounds per stage there: MAX_ROUNDS * sqrt(beta / EMBEDDED_ROUNDS_BETA) within
# EMBEDDED_ROUNDS (4 / 5 / 10 / 20 for the default stages), of at least
# EMBEDDED_ROUND_ITER iterations. The rounds being cheap, they go where the
# extremes still move, at high sharpness, and catch up with the extremes often.
EMBEDDED_ROUNDS_BETA = 250.0
EMBEDDED_ROUNDS = (4, 2 * MAX_ROUNDS)
EMBEDDED_ROUND_ITER = 20

# A long active-set round (see PASS_COST) after which the exact all-pairs
# distortion is above (1 + UNDO_RISE) times the stage's best so far is undone:
# the stage goes back to its best map, the pairs that overtook the extremes
# join the active set, and later rounds of the stage are 2, 4, ... times
# shorter. Small rises occur in converging stages and are left alone. See the
# design note, "Undoing a long round".
UNDO_RISE = 0.05

# Correction pairs of the stages' L-BFGS. See the design note, "L-BFGS
# memory".
LBFGS_MEMORY = 20

# Iterations the certifying solver may add to the final stage's rounds, and its
# Lanczos budget (the smallest Hessian eigenvalue is exact below this many
# variables).
CERTIFY_ITER = 100
LANCZOS_ITER = 100


# Bytes allowed for the active pairs' operators and work arrays beside the
# certificate's Lanczos vectors, and for the rows of the Gram matrix the polish
# keeps (at most 2^24 numbers, see _polish.KEPT_ROWS_ELEMENTS), so that the
# estimate of fit_bytes stays above the measured peak. See the design note,
# "Memory estimates".
ACTIVE_SET_BYTES = 1 << 27


class _StageRounds:
    """One sharpness stage on an active set: rounds of pass, growth and solve.

    :meth:`_ActivePairs.solve_stage` runs it when not every pair is active.
    Each round takes the exact all-pairs extremes (a blocked pass, see
    :meth:`_ActivePairs.band`), adds the pairs that overtake the set's
    extremes, and solves on the set for the round's iterations (see
    :func:`_round_plan` and :func:`_round_length`). Long rounds (tens of
    thousands of points) keep the stage's best map by exact all-pairs
    distortion and undo a round that raised it by more than ``UNDO_RISE``.
    """

    def __init__(self, pairs, k, beta, *, derandomized, penalty, max_iter, tol):
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
        # Rounds of low sharpness, and every round on embedded points, evaluate
        # the surrogate in float32 (see FLOAT32_MAX_SHARPNESS).
        self.single = not derandomized and (
            pairs.embedded or beta < FLOAT32_MAX_SHARPNESS
        )
        # Long rounds: the best map of the stage by exact all-pairs distortion,
        # how many times a round was undone; and the iterations spent.
        self.best, self.undone, self.total = None, 0, 0

    def _map(self, z):
        rank = self.pairs.X.shape[1]
        return z[: self.k * rank].reshape(self.k, rank)

    def _start(self, M, rng):
        """The stage's first active set at the map ``M``; returns the band.

        Pairs within ``BAND / beta`` of an extreme carry the surrogate's
        weight; pairs within ``BAND_FRACTION`` of the log-range may overtake
        the extremes during a round. The set starts from the old pairs within
        the band and a fixed random sample of pairs, which keeps the bulk of
        the ratios (and the surrogate's centring term) represented at low
        sharpness, where the soft-max weighs many pairs. Larger or weighted
        samples fitted the training pairs better but generalized worse (see
        the design note, "Rejected alternatives").
        """
        pairs = self.pairs
        r_min, r_max, _, _ = pairs.band(M, 0, 0.0)
        band = max(BAND / self.beta, BAND_FRACTION * np.log(r_max / r_min))
        if pairs.sample is None:
            pairs.sample = _random_pairs(rng, pairs.n, pairs.working_set // 2)
        if pairs.rows.size:
            r = pairs.ratios(M)
            near = (r <= r_min * np.exp(band)) | (r >= r_max * np.exp(-band))
            rows, cols = pairs.rows[near], pairs.cols[near]
        else:
            rows = cols = np.empty(0, dtype=np.intp)
        pairs._set(
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
                and (distortion > self.best[0] * (1.0 + UNDO_RISE))
            ):
                # The round fitted the active set while pairs outside it
                # overtook the extremes: its step is undone, the pairs that
                # overtook join the set, and the next round is shorter (see
                # UNDO_RISE).
                pairs._add(low, high)
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
            pairs._add(low, high)
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
                if _scale_free(r_min, r_max) > self.best[0] * (1.0 + UNDO_RISE):
                    z = self.best[1]
        return z, self.total

    def _solve(self, z, round_iter, long_rounds, final):
        """One round's solve on the active set: ``(z, n_iter, converged)``."""
        pairs = self.pairs
        budget = min(round_iter, self.max_iter - self.total)
        objective = pairs.objective(self.k, self.beta, **self.kwargs)
        if self.single:
            # Long rounds (tens of thousands of points) also take the products
            # with X in float32; not on embedded points, which have no product
            # with X (see the design note, "Float32 evaluations").
            objective.single(products=long_rounds and not pairs.embedded)
        return pairs._lbfgs(
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


def _round_plan(beta, *, embedded, final, max_iter):
    """Rounds of an active-set stage, and iterations of its shortest round.

    ``MAX_ROUNDS`` of ``ROUND_ITER``; on embedded points (cheap rounds, see
    ``_ActivePairs._embedded_lbfgs``) ``MAX_ROUNDS * sqrt(beta /
    EMBEDDED_ROUNDS_BETA)`` within ``EMBEDDED_ROUNDS``, spent where the
    extremes still move, at high sharpness. The final stage goes on, round
    after round, until it converges or has spent ``max_iter`` (each round
    spends at least one iteration unless the solver has converged, and then a
    pass that finds no pair overtaking ends the stage): its end point is
    certified, and ``max_iter`` is the budget the ``ConvergenceWarning`` asks
    to raise (see the design note, "The final stage's budget").
    """
    n_rounds, shortest = MAX_ROUNDS, ROUND_ITER
    if embedded:
        shortest = EMBEDDED_ROUND_ITER
        n_rounds = int(
            np.clip(
                round(MAX_ROUNDS * np.sqrt(beta / EMBEDDED_ROUNDS_BETA)),
                EMBEDDED_ROUNDS[0],
                EMBEDDED_ROUNDS[1],
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
):
    """Solver iterations of an active-set round.

    At least ``shortest``; ``PASS_COST * n_pairs / n_active`` where passes are
    expensive, up to ``max_iter // LONGEST_ROUND_FRACTION``; halved for each
    round the stage has ``undone`` (see ``UNDO_RISE``); at most
    ``SATURATED_ROUND_ITER`` from round ``SATURATED_FROM_ROUND`` on when the
    pass before it ``added`` at least ``SATURATED_SHARE`` of the ``capacity``
    (the pairs a round may add), if ``saturable`` (not for the derandomized
    surrogate): the set is not catching up with the pairs that overtake its
    extremes.
    """
    length = min(
        max(shortest, int(PASS_COST * n_pairs / max(n_active, 1))),
        max(shortest, max_iter // LONGEST_ROUND_FRACTION),
    )
    if undone:
        length = max(shortest, length >> undone)
    if (
        round_ >= SATURATED_FROM_ROUND
        and length <= ROUND_ITER
        and saturable
        and added >= SATURATED_SHARE * capacity
    ):
        length = min(length, SATURATED_ROUND_ITER)
    return length


def every_pair_active(n_samples, rank, k, working_set):
    """Whether a fit of dimension ``k`` puts every pair in its objective.

    At most ``working_set`` pairs, or fewer than ``COMPLETE_PER_VARIABLE``
    per variable of a map on a span of ``rank`` dimensions (see
    :meth:`_ActivePairs.reset`).
    """
    n_pairs = n_samples * (n_samples - 1) // 2
    return n_pairs <= max(working_set, COMPLETE_PER_VARIABLE * k * rank)


def embedded_shape(n_samples, n_features):
    """Whether data of this shape can have a span of ``n - 1`` dimensions, at
    least ``EMBEDDED_MIN_RANK``: the shape's answer to whether the active-set
    rounds run on the embedded points (:class:`_ActivePairs` decides from the
    rank, which can only be lower)."""
    return n_features >= n_samples - 1 >= EMBEDDED_MIN_RANK


def solves_on_embedded_points(n_samples, n_features, k, working_set):
    """Whether every solve of a direct fit of dimension ``k`` runs on the
    embedded points (see :meth:`_ActivePairs._embedded_lbfgs`).

    So on data whose span has ``n - 1`` dimensions (see :func:`embedded_shape`)
    when not every pair is active (see :func:`every_pair_active`, at the
    largest rank: with fewer variables it is less so), and while the span is
    near isotropic (see ``_Span``'s ``max_spread``, and ``_ActivePairs``'s
    ``embedded``). Those solves, the certificate and the polish never see the
    span's basis: any orthonormal one serves, and the principal directions,
    which the whitened solves of the map need (see :func:`_whitening_scale`),
    are not needed.
    """
    return embedded_shape(n_samples, n_features) and not every_pair_active(
        n_samples, n_samples - 1, k, working_set
    )


def map_bytes(n_samples, n_features, k, working_set):
    """Peak bytes of a fit of dimension ``k`` beside its span (see ``span_bytes``).

    The map, its random start and their products (``k x n_features`` each),
    the certificate's Lanczos vectors (``LANCZOS_ITER + 1`` of the map's ``k
    x rank`` variables, or, on spans of ``n - 1`` dimensions, of the ``n x
    k`` embedded points with their duals, see :func:`_embedded_certificate`:
    counted in float64, 0.48 GB at 10,000 points and k = 30, as spans whose
    variances spread widely take them, see EMBEDDED_CERTIFICATE_SPREAD; the
    spread is not known before the span), the
    Gram form's ``GRAM_ARRAYS`` arrays of ``n x n`` when every pair is active
    (see :func:`every_pair_active`, with the fit's ``working_set``) and
    ``ACTIVE_SET_BYTES``. Whether the span has ``n - 1`` dimensions is
    decided from the shape, as :class:`_ActivePairs` decides it from the rank
    (which can only be lower).
    """
    rank = min(n_samples, n_features)
    embedded = embedded_shape(n_samples, n_features)
    # Every pair active in the Gram form (see objective): its arrays. The rank
    # is at most min(n, d), so the shape's answer errs towards counting them.
    gram = 0
    if n_samples <= GRAM_MAX_SAMPLES and every_pair_active(
        n_samples, rank, k, working_set
    ):
        gram = GRAM_ARRAYS * n_samples * n_samples * 8
    if embedded:
        lanczos = (LANCZOS_ITER + 1) * 2 * n_samples * k * 8
    else:
        lanczos = (LANCZOS_ITER + 1) * k * rank * 8
    return 4 * k * n_features * 8 + lanczos + gram + ACTIVE_SET_BYTES


def fit_bytes(X, n_components, working_set):
    """Peak bytes of a fit of ``X`` in ``n_components`` dimensions (estimated)."""
    return span_bytes(X) + map_bytes(*X.shape, n_components, working_set)


# The certifying solver runs only from a point whose gradient norm is at most
# CERTIFY_REACH * tol. A final stage that ends further out has spent its rounds'
# budget; more iterations on the fixed final active set then fit those pairs
# while others overtake the extremes, and the point is discarded. Such a point
# is certified as it is, once. See the design note, "The certificate".
CERTIFY_REACH = 2.0


def certify_stage(
    pairs, objective, z, k, *, tol, curvature_tol, max_iter, rng, verbose
):
    """The certificate of the final stage: the surrogate of the final active set.

    The certifying solver gets a short budget from the rounds' end point when
    its gradient norm is within ``CERTIFY_REACH * tol``; on a fixed active set a
    long run would fit those pairs while others overtake the extremes, so its
    point is kept only if the all-pairs distortion did not rise, and otherwise
    the rounds' end point is certified as it is. An end point further from
    stationarity is certified as it is directly (one Lanczos run, not two).

    On active pairs that touch every point of a span of ``n - 1`` dimensions
    the end point is certified as it is, by :func:`_embedded_certificate` (the
    same quantities, in map coordinates; in float32 or float64, or by
    ``sosp_certificate`` in map coordinates, by the span's spread, see
    EMBEDDED_CERTIFICATE_SPREAD). There the final active set's
    surrogate still descends far from the end point while the all-pairs
    distortion rises (see the design note, "The certificate").

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
    # extremes): it decides the precision of the embedded certificate (see
    # EMBEDDED_CERTIFICATE_SPREAD).
    spread = pairs.col_sq.max() / pairs.col_sq.min() if embedded else np.inf

    def certified_where_it_stands():
        if embedded and spread <= EMBEDDED_CERTIFICATE_SPREAD[1]:
            certificate = _embedded_certificate(
                pairs,
                objective,
                z,
                k,
                tol=tol,
                curvature_tol=curvature_tol,
                rng=rng,
                single=spread <= EMBEDDED_CERTIFICATE_SPREAD[0],
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

    if embedded or np.linalg.norm(objective(z)[1]) > CERTIFY_REACH * tol:
        return certified_where_it_stands()
    res = minimize_sosp(
        objective,
        z,
        hessp=hessp,
        method="lbfgs",
        tol=tol,
        curvature_tol=curvature_tol,
        max_iter=max_iter,
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


# Lanczos' stopping tolerance (sosp_certificate's default).
LANCZOS_RTOL = 1e-6

# The embedded certificate (Lanczos in the inner product of K^+) runs in
# float32 up to the first of these lower bounds on the spread of the span's
# variances (see certify_stage), in float64 up to the second; beyond, the map's
# own certificate is computed (sosp_certificate in map coordinates: two
# n x rank x k products per Lanczos step). Directions of K below the
# precision's reach drop out of its products, and Lanczos then misses the
# Hessian's negative curvature there. See the design note, "Precision of the
# embedded certificate".
EMBEDDED_CERTIFICATE_SPREAD = (1e6, 1e12)


def _embedded_certificate(
    pairs, objective, z, k, *, tol, curvature_tol, rng, single=True
):
    """The certificate of ``sosp_certificate`` at ``z``, Lanczos on embedded points.

    For active pairs that touch every point of a span of ``n - 1``
    dimensions (see :meth:`_ActivePairs._embedded_lbfgs`), ``A: V -> X V^T``
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
    start = ((X @ V0.T).ravel(), (X @ pairs.cross_solve(V0.T)).ravel())

    def dual_product(q):
        # K^+ T q = K^+ K H_Y q: H_Y q centred (the range of K), in float64
        # for the Lanczos basis.
        h = objective.embedded_hessp(Y, q.reshape(n, k), single=single)
        h = h.astype(np.float64, copy=False)
        h -= h.mean(axis=0)
        return h.ravel()

    def primal(p):
        return pairs.gram().product(p.reshape(n, k), single=single).ravel()

    eig, vector, n_lanczos, residual = _lanczos_smallest(
        dual_product,
        z.size,
        rng,
        max_iter=LANCZOS_ITER,
        rtol=LANCZOS_RTOL,
        start=start,
        primal=primal,
        dtype=np.float32 if single else np.float64,
    )
    vector = pairs.map_of_points(vector.reshape(n, k)).ravel()
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


# The stages' L-BFGS runs in whitened coordinates when the variances of the
# span's principal directions spread over more than WHITEN_SPREAD. Directions
# with less than WHITEN_FLOOR of the mean variance are scaled as if they had
# that much (at most 10x). See the design note, "Whitening".
WHITEN_SPREAD = 1e3
WHITEN_FLOOR = 1e-2


def _whitening_scale(X):
    """Scales of the columns of the map for the stages' L-BFGS, or None.

    ``X`` holds the data in orthonormal coordinates of their span, the
    principal directions (``X^T X`` is diagonal, see ``_Span``). A pair's
    ratio moves with the map's column ``j`` in proportion to the variance
    ``e_j`` of direction ``j``, so the surrogate's curvature in that column is
    about ``e_j`` times its curvature in the map's image: with variances over
    several decades (data near a low-dimensional subspace) L-BFGS, started
    from the identity's scaling, spends its iterations learning them.
    Optimizing ``N = M / scale`` with ``scale_j = (e_j / mean(e))^(-1/2)``
    (floored) equalizes that factor. The active-set rounds use it only when
    they have the usual length (see :meth:`_StageRounds._solve`). For
    near-isotropic data (spread below WHITEN_SPREAD) whitening only perturbs
    the path, so it returns None there: plain coordinates. See the design
    note, "Whitening".
    """
    e = np.einsum("ij,ij->j", X, X)
    if e.size == 0 or not e.min() > 0 or e.max() <= WHITEN_SPREAD * e.min():
        return None
    e = np.maximum(e / e.mean(), WHITEN_FLOOR)
    return 1.0 / np.sqrt(e)


def _ratio_movement(M, M0):
    """How far any pair's ratio can fall and rise from the map ``M0`` to ``M``.

    Returns ``(-lambda_min(Delta), lambda_max(Delta))``, both at least 0, for
    ``Delta = M^T M - M0^T M0``: the ratio of a pair ``d`` changes by the
    Rayleigh quotient ``d^T Delta d / |d|^2``. ``Delta = A^T S A`` with
    ``A = [M; M0]`` and ``S = diag(I, -I)`` has rank at most ``2k``; with
    ``A^T = Q R`` its non-zero eigenvalues are those of the ``2k x 2k`` matrix
    ``R S R^T`` (the rest are 0). Exact, and up to ``sqrt(2k)`` times tighter
    than the Frobenius norm of ``Delta`` on each side.
    """
    k = M.shape[0]
    A = np.vstack([M, M0])
    R = np.linalg.qr(A.T, mode="r")
    sign = np.concatenate([np.ones(k), -np.ones(k)])
    eig = np.linalg.eigvalsh((R * sign) @ R.T)
    return max(0.0, -float(eig[0])), max(0.0, float(eig[-1]))


def _scale_free(r_min, r_max):
    """``(r_max - r_min) / (r_max + r_min)``: the distortion after calibration."""
    if not np.isfinite(r_min) or r_max <= 0:
        return 0.0
    return float((r_max - r_min) / (r_max + r_min))
