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
import time

import numpy as np
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, eigsh

from skderand.embedding._pairs import (
    _GramObjective,
    _HeldGram,
    _PairObjective,
    _PairScanner,
    _SparseGram,
    all_pairs,
    difference_matrix,
    exact_sq_dists,
    span_bytes,
)
from skderand.optimize import minimize_sosp, sosp_certificate
from skderand.optimize._certificate import _lanczos_smallest, certificate_result
from skderand.optimize._lbfgs import minimize_lbfgs

# Pairs whose log-ratio is within BAND / beta of an extreme: beyond it a pair's
# soft-max weight is below exp(-BAND) of the worst pair's, i.e. nothing.
BAND = 30.0
# Safety margin of the final all-pairs measurement: the blocked pass measures
# ratios through Gram matrices (and stored float32 distances for large n), so
# the pairs within this relative margin of its extremes are re-measured exactly.
EXACT_MARGIN = 1e-3
EXACT_CANDIDATES = 256
# Rounds of (solve on the active set, blocked pass, add violators) per stage,
# and solver iterations per round: short rounds keep the pairs outside the set
# from drifting far past the extremes before the next pass sees them. Fewer
# rounds in the stages before the last save time and cost distortion (digits
# k = 20, seeds 0-3, 0.2753 on average): 6 rounds per stage 0.2769 in about
# 30 % less time; MAX_ROUNDS * sqrt(beta / 250) rounds within 4-10 (4 / 5 / 10
# for the default stages) 0.2774. Longer rounds where the set has settled (in
# the final stage, a round twice the last one's iterations, up to a quarter of
# max_iter, after a pass that added at most 10 % of what a round may add and a
# solve that ran out) certified digits k = 10 on 4 of 8 seeds against 3, at
# 0.64783 against 0.64647 on average (breast_cancer k = 8 0.41544 against
# 0.41533 in 5 % fewer iterations; digits k = 20 / 40 within 0.0001).
MAX_ROUNDS = 10
ROUND_ITER = 40
# A blocked pass costs as much as 0.1-0.3 solver iterations per n_pairs /
# n_active (measured: digits, 0.1 s against 3 ms per iteration on 15,000 pairs;
# 20,000 points in 100 dimensions, 25 s against 15 ms on 14,000). A round runs
# PASS_COST * n_pairs / n_active iterations when that exceeds ROUND_ITER (large
# n only: digits keeps 40), up to a quarter of the stage's budget, so that
# passes do not dominate. A cost model, not a clock: the fit stays deterministic.
PASS_COST = 0.05
LONGEST_ROUND_FRACTION = 4
BAND_FRACTION = 0.25
# A round after the first SATURATED_FROM_ROUND of its stage runs at most
# SATURATED_ROUND_ITER iterations when the pass before it added at least
# SATURATED_SHARE of the 2 * (working_set // 4) pairs a round may add: the set
# is saturated, pairs outside keep overtaking its extremes, and longer rounds
# only fit the set (digits k = 20, sharpness 15.6: 2,000 new pairs every round,
# the all-pairs distortion going 0.60, 0.65, 0.68, 0.59, ...). Digits k = 20,
# seeds 0-7: 1,515 -> 1,387 iterations on average, distortion 0.27392 ->
# 0.27349 on average (round-off noise of one seed: +-0.001); breast_cancer k = 8
# unchanged (its first rounds only are saturated); k = 10 / 40 within noise.
# The first rounds keep their length: shortened from the first round on (at
# 1,000 new pairs), breast_cancer k = 8 seed 0 went 0.415 -> 0.441, digits k = 10
# seed 2 0.649 -> 0.670, k = 40 seed 0 0.0515 -> 0.0528 (digits k = 20: 1,185
# iterations on average, 0.27363).
SATURATED_FROM_ROUND = 3
SATURATED_SHARE = 0.9
SATURATED_ROUND_ITER = 20
# Active-set rounds of a sharpness below this evaluate the surrogate's pair
# terms in float32 (see _PairObjective.single): the default stages 15.6 and
# 62.5, about 60 % of the pair evaluations of digits k = 20. An evaluation on
# 15,000 / 25,000 / 32,000 pairs, k = 20: 0.82 / 1.19 / 1.44 -> 0.65 / 0.89 /
# 1.06 ms (k = 40, 32,000 pairs: 2.58 -> 1.69 ms; k = 10: 1.04 -> 0.90 ms),
# alone. Digits k = 20 seeds 0-7 distortion 0.27392 -> 0.27356 on average. Not
# in the later stages: float32 rounds at sharpness 250 and 1000 kept the final
# stage from converging (digits k = 20: its full 400 iterations on 5 of 8
# seeds, against 3 of 8 in float64). The rounds on embedded points (see
# _embedded_lbfgs) run in float32 at every sharpness: there the pair terms are
# the whole evaluation (no product with X), and the final stage converges as
# in float64. The sparse text-like set, k = 30, seeds 0 / 1 / 2, alone,
# alternating: max_iter=2000 0.35889 / 0.35802 / 0.35971 in 15.8 / 16.5 /
# 14.7 s -> 0.35850 / 0.36010 / 0.35984 in 11.7 / 10.5 / 10.1 s, certified
# both ways; the default max_iter 0.36878 / 0.36685 / 0.36940 in 9.2 / 9.2 /
# 9.9 s -> 0.36753 / 0.36762 / 0.36950 in 8.7 / 8.9 / 8.1 s, uncertified both
# ways; Gaussian 1,200 x 2,000, k = 20, seeds 0 / 1: 0.46595 / 0.46780 in 5.5
# / 5.2 s -> 0.46532 / 0.46533 in 4.8 / 4.7 s. The all-pairs stages' Gram
# evaluation (_GramObjective._direct) stays float64: in float32 (its products,
# log-ratios and weights) an evaluation of Gaussian 300 x 1000, k = 20 took
# 1.20 against 1.58 ms (a machine 1.6x slower than the benchmark's), and the
# fits moved by at most 0.6 % (below this sharpness, seeds 0 / 1 / 2: 0.32087 /
# 0.32035 / 0.32099 in 619 / 593 / 653 iterations against 0.32137 / 0.32032 /
# 0.32133 in 547 / 658 / 602; k = 40 seeds 0 / 1, higher on both: 0.18237 /
# 0.18164 against 0.18144 / 0.18083): at most about 10 % of a fit (stages 1-2
# are 322 of k = 20's 547 iterations), not the 2x its time target asks.
FLOAT32_MAX_SHARPNESS = 100.0
# Every pair is active below this many pairs per variable (see reset).
COMPLETE_PER_VARIABLE = 20
# With every pair active and at most this many points, the surrogate goes through
# the Gram matrix of the embedded points (BLAS products) instead of a pair list.
# One evaluation, alone, one BLAS thread, Gaussian n x 2n, sharpness 250: pair
# list against Gram form 29 / 6.9 ms at n = 800, k = 25; 90 / 19 ms at 1,200,
# k = 40; 186 / 41 ms at 1,600, k = 50; 364 / 74 ms at 2,000, k = 60. Gaussian
# 1,200 x 2,000, k = 40 (every pair active), seed 0: 0.2693 in 74 s (104 ms per
# iteration, certificate 14 s) -> 0.2696 in 24.5 s (24 ms, 3.4 s), certified.
# Its memory, GRAM_ARRAYS n x n arrays (152 / 422 MiB at 1,200 / 2,000
# points, tracemalloc over evaluations and Hessian products), is below the
# pair list's (n^2 / 2 pairs times k numbers per product).
GRAM_MAX_SAMPLES = 2000
GRAM_ARRAYS = 14
# With every pair active, at least this many of them and the direct map, the
# stages evaluate the surrogate by _GramObjective._direct and run the shared
# solver's plain L-BFGS (skderand/optimize/_lbfgs.py) instead of scipy's
# L-BFGS-B (see _ActivePairs._lbfgs): Gaussian 300 x 1000 (44,850 pairs),
# k = 20, 4.8 -> 3.3 ms per iteration. Smaller sets (the paper's 100 points,
# 4,950 pairs: 1.3 s fits) gain little, and their paths, chaotic in round-off,
# moved the wrong way at the fourth decimal (k = 20: 0.2196 -> 0.2199,
# k = 40: 0.1028 -> 0.1029): they keep the earlier arithmetic and solver. So
# does the derandomized surrogate (its evaluation is not the lean one, and its
# paper rows moved both ways, k = 20 to 0.2197 and uncertified).
LEAN_MIN_PAIRS = 10_000
# Candidate pairs kept by a blocked pass (per side, at most): those within
# CANDIDATE_FRACTION of the log-range of the ratios from an extreme. Between
# passes, the exact extremes come from them while the map has moved too little
# for any other pair to overtake them (see _ActivePairs.band). SCAN_SLACK covers
# the round-off of the pass's Gram-form (and float32) ratios.
CANDIDATES = 10_000
# ... and at most one in CANDIDATE_SHARE of all pairs (never fewer than a
# round adds): their exact distances and ratios, and the pass's pools, cost
# about as much as half a pass where passes are cheap. Digits (1.6 M pairs,
# 4,000 candidates per side instead of 10,000): passes and candidates 0.69-0.73
# -> 0.53-0.59 s of a k = 20 fit, alone; the fits themselves unchanged
# (distortion, iterations and passes of digits k = 10 / 20 / 40 and
# breast_cancer k = 8, seeds 0-2). Tens of thousands of points keep 10,000.
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
        # the whitened path without its floor: on 400 x 1,000 Gaussian rows
        # of standard deviations i^-p (p = 0.75 / 1 / 1.5, spreads 8e3 /
        # 6e5 / 3e8), k = 5, seeds 0 / 1, they ended at 0.798 / 0.817,
        # 0.662 / 0.718, 0.370 / 0.405 against 0.723 / 0.737, 0.563 /
        # 0.544, 0.308 / 0.307 whitened with the floor (in 1 s against 2-3
        # s; with four times the iterations, in about the same time, at
        # 0.618 / 0.683 for p = 1 and 0.353 / 0.379 for p = 1.5, alone, one
        # BLAS thread); at p = 2.5 their map, off in the directions of least
        # variance, distorted held-out points 0.96 / 0.92 against 0.51 /
        # 0.51, and their certificate (Lanczos in the inner product of K^+)
        # read -289 and 3.7 for the smallest Hessian eigenvalue, against
        # 1.4e-5 and 1.8e-5 in map coordinates. The map's solves cost two
        # n x rank x k products per evaluation: text-like 1,200 x 6,000 rows
        # with Zipf-weighted columns (spread 8e6), k = 20, 0.404 / 0.403 in
        # 3.5 s became 0.384 / 0.383 in 15.4 s (the embedded points: 0.374
        # / 0.377 in 9.0 s with max_iter=3000).
        self.col_sq = np.einsum("ij,ij->j", X, X)
        self.embedded = (
            n > 2
            and X.shape[1] >= max(n - 1, EMBEDDED_MIN_RANK)
            and self.col_sq.min() > 0
            and (factor is not None or self.scale is None)
        )
        self.reset(1)
        # Time split and size of the active set, for verbose output and benchmarks.
        self.stats = {
            "solve_s": 0.0,
            "scan_s": 0.0,
            "polish_s": 0.0,
            "certify_s": 0.0,
            "n_scans": 0,
            "max_active": self.rows.size,
        }

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
        of the last map and time split, and a fit (see ``reset``) gives it
        its own active set. A fit on it follows the path it would follow on
        this object in the state it has now, whatever runs on either meanwhile.
        """
        other = copy.copy(self)
        # The last pass's error bound and spread are the scanner's state.
        other.scanner = copy.copy(self.scanner)
        other._embedded = other._key = other._ratios = None
        other.stats = {key: 0 * value for key, value in self.stats.items()}
        return other

    def add_stats(self, other):
        """Count the time split and passes of ``other`` (another start) in these."""
        for key, value in other.stats.items():
            if key == "max_active":
                self.stats[key] = max(self.stats[key], value)
            else:
                self.stats[key] += value

    def mark(self):
        """A start for :meth:`charge`: the clock and the passes' time so far."""
        return time.perf_counter(), self.stats["scan_s"]

    def charge(self, key, mark):
        """Add the time since ``mark`` to ``stats[key]``, less the passes' in it.

        Passes run inside the polish and the certificate count in ``scan_s``
        only, so that the parts of the time split are disjoint.
        """
        start, scanned = mark
        elapsed = time.perf_counter() - start
        self.stats[key] += elapsed - (self.stats["scan_s"] - scanned)

    # -- all pairs ----------------------------------------------------------------
    def scan(self, M, n_extreme=0, band=np.inf, range_fraction=0.0, known=None):
        """One blocked pass over all pairs under the map ``M`` (see _PairScanner)."""
        start = time.perf_counter()
        # The embedded points kept for M (the candidates' exact ratios ask for
        # them next; on embedded points the round's own), centred into a new
        # array: the Gram form |y_i|^2 + |y_j|^2 - 2 y_i.y_j stays accurate.
        Y = self._embed(M)
        Y = Y - Y.mean(axis=0)
        out = self.scanner.scan(Y, n_extreme, band, range_fraction, known)
        self.stats["scan_s"] += time.perf_counter() - start
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
            # bit-identical fits; passes alone: digits k = 20 0.47-0.55 ->
            # 0.34-0.37 s, 20,000 x 100 k = 20 21 -> 18 s (25 passes).
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
        old candidates' own ratios have been fitted towards 1 (20,000 x 100,
        k = 20: their 10,000th smallest and largest were both about 1.0, and
        the pools took about 190,000 entries per pass, in 13 cuts).
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
        # pass over the (n_pairs, k) result instead of three. Fits unchanged;
        # alone, one BLAS thread, alternating with the gathers into kept work
        # arrays: the sparse text-like set, k = 30, 6.62 / 6.62 -> 6.34 / 6.30
        # s (the band's exact ratios, 0.53 s of 228 calls on up to 58,000
        # pairs, at a third of the cost); digits k = 20 2.43 / 2.36 -> 2.28 /
        # 2.32 s.
        diff = difference_matrix(rows, cols, self.n) @ self._embed(M)
        return np.einsum("ij,ij->i", diff, diff) / d2

    def _exact(self, rows, cols):
        """Exact squared distances of pairs, reusing those already measured.

        A pair's distance never changes, and for data of high rank (the sparse
        text-like set: 1,500 dimensions) measuring 20,000 candidate pairs
        costs as much as a pass; the active set and the candidates (both
        sorted by ``row * n + col``) are looked up first.
        """
        key = rows * self.n + cols
        # Looked up in key order: a sorted search runs about 3x faster than
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
        the pairs' rows is the cost (the sparse text-like set: 1,500
        dimensions, 17 s of a fit for 400,000 pairs); there the pass's stored
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
        Formed from ``X`` when the caller has no cheaper way (0.07 s for
        1,500 points in 1,499 dimensions); sparse input has (see
        ``_Span.gram``).
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

        On spans of ``n - 1`` dimensions (see ``_embedded_lbfgs``) a stage has
        ``MAX_ROUNDS * sqrt(beta / EMBEDDED_ROUNDS_BETA)`` rounds (within
        ``EMBEDDED_ROUNDS``).
        """
        rank = self.X.shape[1]
        kwargs = {"derandomized": derandomized, "penalty": penalty}
        if self.complete:
            # Every stage to tol: its end point is the next stage's start, and
            # looser earlier stages lead to worse minimax points. Gaussian 300 x
            # 1000, k = 20, seeds 0 / 1 / 2: 0.3214 / 0.3203 / 0.3213 in 547 /
            # 658 / 602 iterations; stages 1-3 to 3 tol 0.3279 / 0.3271 / 0.3268
            # in 307-326; stopped also by the certificate's 2-norm test (as the
            # final stage is) 0.3319 / 0.3300 / 0.3308 in 341-384. Neither
            # does a predicted start cut the iterations: stage s + 1 from the
            # secant step z_s + c (z_s - z_{s-1}) took 645 / 719 / 780 (c =
            # 0.5) and 875 / 972 / 863 (c = 1) iterations, distortions within
            # 0.1 %. Nor does trust-region Newton-CG (scipy's trust-krylov /
            # trust-ncg on the exact Hessian products) in stages 3-4, seeds
            # 0 / 1: stage 3 took 112-165 products against 197 / 305 L-BFGS
            # iterations, but a product costs about two evaluations, and the
            # final stage 217-404 products against 28 / 30 iterations.
            z, n_iter, _ = self._lbfgs(
                self.objective(k, beta, **kwargs),
                z,
                tol,
                max_iter,
                stop_at_tol=final,
            )
            return z, n_iter
        # Pairs added per side and round. Set apart from the random sample
        # (working_set // 2, below), on the sparse text-like set (k = 30, seed
        # 0, alone): 250 / 500 / 1,000 (this) / 4,000 / 16,000 per side gave
        # 0.4127 / 0.3764 / 0.3681 / 0.3598 / 0.3581 (certified from 4,000 on)
        # in 0.82 / 0.84 / 1 / 1.15 / 1.67 times the time: with fewer, the set
        # lags behind the pairs that overtake its extremes; with more, each
        # iteration costs more than the iterations saved.
        n_side = self.working_set // 4
        M = z[: k * rank].reshape(k, rank)
        r_min, r_max, low, high = self.band(M, 0, 0.0)
        # Pairs within BAND / beta of an extreme carry the surrogate's weight;
        # pairs within BAND_FRACTION of the log-range may overtake the extremes
        # during a round.
        band = max(BAND / beta, BAND_FRACTION * np.log(r_max / r_min))
        if self.sample is None:
            # A fixed random sample of pairs keeps the bulk of the ratios (and
            # the surrogate's centring term) represented at low sharpness, where
            # the soft-max weighs many pairs. A larger one in the first stage
            # only (n_pairs / 160 pairs, at most 10,000, so that breast_cancer
            # keeps its 2,000) lowered digits k = 10 / 20, seeds 0-7, from
            # 0.64647 / 0.27458 to 0.64180 / 0.27344 on average (k = 10 seed
            # 0 0.64517 -> 0.63657), but moved the benchmark's other seed-0
            # fits to worse basins: digits derandomized k = 10 0.63687 ->
            # 0.64441, digits k = 20 held out (fitted on 1,437 points) 0.4602
            # -> 0.5802, k = 40 0.05190 -> 0.05207.
            # The sample's pairs weighted by the share of all pairs each
            # stands for, (n_pairs - other active pairs) / sample size in the
            # soft-max and centring terms, so that the stages before the last
            # estimate the all-pairs surrogate (n_pairs / 160 pairs, at most
            # 10,000, where that exceeds this sample; seeds 0-7): digits
            # k = 10 0.64647 -> 0.63639 on average, every seed certified
            # (seed 0 0.63499), k = 20 0.27458 -> 0.27335, k = 40 (seeds
            # 0-3) 0.05164 both ways, the sparse text-like set (seeds 0-2)
            # 0.36714 -> 0.36577. But the maps generalized worse: digits held
            # out (fitted on 1,437 points) k = 40 0.1403 -> 0.1761 on average,
            # higher on every seed but one (k = 10 0.8614 -> 0.8526, k = 20
            # 0.5027 -> 0.5118); so did the same sample unweighted (k = 40
            # 0.1619). And breast_cancer k = 8 with this sample weighted, in
            # every stage before the last or the first only: 0.41533 ->
            # 0.42516 / 0.42461 (the filing's all-pairs path ended at 0.446).
            n_random = self.working_set // 2
            a = rng.randint(self.n, size=n_random)
            b = rng.randint(self.n, size=n_random)
            self.sample = (np.minimum(a, b), np.maximum(a, b))
        if self.rows.size:
            r = self.ratios(M)
            near = (r <= r_min * np.exp(band)) | (r >= r_max * np.exp(-band))
            rows, cols = self.rows[near], self.cols[near]
        else:
            rows = cols = np.empty(0, dtype=np.intp)
        self._set(
            np.concatenate([rows, self.sample[0]]),
            np.concatenate([cols, self.sample[1]]),
        )
        total = 0
        converged = False
        # Rounds of low sharpness, and every round on embedded points, evaluate
        # the surrogate in float32 (see FLOAT32_MAX_SHARPNESS).
        single = not derandomized and (self.embedded or beta < FLOAT32_MAX_SHARPNESS)
        n_rounds, shortest = MAX_ROUNDS, ROUND_ITER
        if self.embedded and not derandomized:
            shortest = EMBEDDED_ROUND_ITER
            # Cheap rounds (see _embedded_lbfgs): spent where the extremes
            # still move, at high sharpness.
            n_rounds = int(
                np.clip(
                    round(MAX_ROUNDS * np.sqrt(beta / EMBEDDED_ROUNDS_BETA)),
                    EMBEDDED_ROUNDS[0],
                    EMBEDDED_ROUNDS[1],
                )
            )
        if final:
            # The final stage goes on, round after round, until it converges
            # or has spent max_iter (each round spends at least one iteration
            # unless the solver has converged, and then a pass that finds no
            # pair overtaking ends the stage): its end point is certified, and
            # max_iter is the budget the ConvergenceWarning asks to raise.
            # Capped at n_rounds, the stage ended at 400 iterations whatever
            # max_iter was (digits k = 5: the same uncertified map at 1,000 and
            # 5,000). Fits whose final stage converged within n_rounds are
            # unchanged; the others (seed 0 unless said, alone, one BLAS thread):
            # clustered 6,000 x 50 k = 10 seeds 0 / 2 and 8,000 x 50 seed 1
            # uncertified at 0.297638 / 0.297637 / 0.328437 -> certified at
            # 0.297504 / 0.297585 / 0.328321 (+1.3-1.9 s); digits derandomized
            # k = 10 0.642406 -> 0.642146, certified (+0.4 s); the sparse
            # text-like set k = 30 0.3903 in 4.9 s -> 0.3688 in 8.3 s, still
            # uncertified (max_iter=2000: 0.3589 in 13.1 s, certified;
            # max_iter=400: the former 0.3903 in 5.2 s); breast_cancer k = 4,
            # digits and low-rank 500 x 200 k = 5 (distortion above 0.86, far
            # from stationary) 0.9416 / 0.9682 / 0.8632 -> 0.9367 / 0.9679 /
            # 0.8601, uncertified, +0.3-0.4 s each.
            n_rounds = max(n_rounds, max_iter)
        # Long rounds (tens of thousands of points): the best map of the stage
        # by exact all-pairs distortion, and how many times a round was undone.
        best, undone = None, 0
        for round_ in range(n_rounds):
            r_min, r_max, low, high = self.band(M, n_side, band)
            long_rounds = int(PASS_COST * self.n_pairs / max(self.rows.size, 1)) > (
                shortest
            )
            distortion = _scale_free(r_min, r_max)
            if (
                long_rounds
                and best is not None
                and (distortion > best[0] * (1.0 + UNDO_RISE))
            ):
                # The round fitted the active set while pairs outside it
                # overtook the extremes: its step is undone, the pairs that
                # overtook join the set, and the next round is shorter (see
                # UNDO_RISE).
                self._add(low, high)
                z, undone, converged = best[1], undone + 1, False
                M = z[: k * rank].reshape(k, rank)
                r_min, r_max, low, high = self.band(M, n_side, band)
            elif long_rounds and (best is None or distortion < best[0]):
                best = (distortion, z)
            if round_:
                # (From the second round on, not once iterations were spent: a
                # solver that converged at once, as at an isometry, spends none,
                # and the stage went on for max_iter rounds of one pass each;
                # clustered 1,500 x 20, k = 20: 1,008 passes, 23 s.)
                r = self.ratios(M)
                inside = r_max <= r.max() * (1 + 1e-9) and r_min >= r.min() * (1 - 1e-9)
                # No pair outside the set moves the extremes, and the solver has
                # converged on the set: the stage is done.
                if (inside and converged) or total >= max_iter:
                    break
            before = self.rows.size
            # The set only grows within a stage: the pairs fitted in earlier
            # rounds sit near the extremes (the minimax evens them out) and
            # come back past them when dropped. Pruned each round to the
            # pairs within 3 BAND / beta of the extremes, the sparse text-like
            # set's final stage kept 95 % of them (seed 0: 0.3664 against
            # 0.3681, no faster); within BAND / beta, 0.543.
            self._add(low, high)
            round_iter = min(
                max(shortest, int(PASS_COST * self.n_pairs / max(self.rows.size, 1))),
                max(shortest, max_iter // LONGEST_ROUND_FRACTION),
            )
            if undone:
                round_iter = max(shortest, round_iter >> undone)
            if (
                round_ >= SATURATED_FROM_ROUND
                and round_iter <= ROUND_ITER
                and not derandomized
                and self.rows.size - before >= SATURATED_SHARE * 2 * n_side
            ):
                # The set is not catching up with the pairs that overtake its
                # extremes (see SATURATED_ROUND_ITER).
                round_iter = min(round_iter, SATURATED_ROUND_ITER)
            budget = min(round_iter, max_iter - total)
            objective = self.objective(k, beta, **kwargs)
            if single:
                # In the long rounds of tens of thousands of points too (once
                # they moved 20,000 x 100 from 0.457 to 0.462; long rounds that
                # make things worse are now undone, see UNDO_RISE): 20,000 x
                # 100 seeds 0 / 1 / 2 0.20099 / 0.20076 / 0.20069 in 62-67 /
                # 61 / 61 s -> 0.20019 / 0.20313 / 0.20042 in 56 / 49 / 51 s;
                # 50,000 x 50 (this and the final stage's stop at tol, see
                # _lbfgs) 0.2708 in 299 s -> 0.2732 in 254 s (solves 116 ->
                # 72 s); all certified, alone, one BLAS thread.
                # Long rounds also take the products with X in float32:
                # 20,000 x 100 seeds 0-4, alternating with float64 products
                # under the timing lock: 0.20019 / 0.20313 / 0.20042 / 0.20170
                # / 0.20132 in 41 / 47 / 47 / 55 / 50 s -> 0.20112 / 0.20230 /
                # 0.20211 / 0.20113 / 0.20304 in 36 / 38 / 41 / 41 / 52 s
                # (solves 9.3 -> 7.3 ms per iteration; 0.3 % higher on average);
                # 50,000 x 50 seed 0 0.27322 in 183 s -> 0.27490 in 150-187 s.
                # (Not on embedded points: no product with X there, and the
                # copy would be n x (n - 1).)
                objective.single(products=long_rounds and not self.embedded)
            z, n_iter, converged = self._lbfgs(
                objective,
                z,
                tol,
                budget,
                embedded=self.embedded and not derandomized,
                # Whitened coordinates only in rounds of the usual length: in
                # the long rounds of tens of thousands of points the whitened
                # solver moves the low-variance directions far enough to fit
                # the active set while pairs outside it overtake the extremes
                # (20,000 x 100, k = 20: stage 3 at 0.61 after stage 2 at 0.35,
                # final 0.431-0.437 against 0.411 unwhitened).
                whiten=round_iter <= ROUND_ITER,
                stop_at_tol=final,
            )
            total += n_iter
            M = z[: k * rank].reshape(k, rank)
            if self.verbose:
                print(
                    f"[LearnedJLTransformer] k={k} softmax_sharpness={beta:.4g} "
                    f"round {round_ + 1}: {n_iter} iterations on "
                    f"{self.rows.size} active pairs (all-pairs distortion before "
                    f"the round {_scale_free(r_min, r_max):.4f})",
                    flush=True,
                )
        else:
            # The rounds ran out before a pass measured the last one.
            if best is not None:
                r_min, r_max = self.extremes(M)
                if _scale_free(r_min, r_max) > best[0] * (1.0 + UNDO_RISE):
                    z = best[1]
        return z, total

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

        For the lean all-pairs evaluation (see ``LEAN_MIN_PAIRS``: one solve
        per stage, thousands of variables, an evaluation of about 2 ms) the
        plain L-BFGS of :mod:`skderand.optimize._lbfgs`: scipy's
        bound-constrained L-BFGS-B spent 1.5 ms per iteration in its own
        machinery there (Gaussian 300 x 1000, k = 20: 6,000 variables), this
        one 0.4-0.6 ms. The
        active-set rounds keep L-BFGS-B: their variables are few
        (breast_cancer 240, digits k = 20 1,280), so it saves little there,
        and the rounds' paths (chaotic in round-off, see the benchmark
        notes) stay those measured. Measured with this solver in the rounds:
        L-BFGS-B's machinery took about 0.3 s of a digits k = 20 fit (4.7 s
        under cProfile, 3.3 s without, on a machine 1.6x slower than the
        benchmark's), but the fits moved to other basins: breast_cancer
        k = 8 seeds 0-7 0.41533 -> 0.41773 on average (seed 5 at 0.434),
        digits k = 10 0.64647 -> 0.64803, k = 20 0.27458 both, k = 40
        (seeds 0-3) 0.05164 -> 0.05180. Over more seeds that is the basin
        lottery, not a shift (paired by seed): breast_cancer seeds 0-63
        0.42038 -> 0.42055 on average (+0.0002 +- 0.0007; 16 of 64 fits
        above 0.42 both ways), digits k = 10 seeds 0-23 0.64525 -> 0.64513
        (-0.0001 +- 0.0017), k = 20 0.27416 -> 0.27447 (+0.0003 +- 0.0004);
        the benchmark's seed 0 digits k = 20 0.27275 -> 0.2737, k = 10
        0.6452 -> 0.6440, breast_cancer 0.41625 -> 0.41575. Its time gain is
        smaller than whole fits suggested: digits k = 20 seed 0, alternated
        in one process (alone, one BLAS thread), read 0.83-0.95 times
        L-BFGS-B's time in two runs and 0.90-1.03 in a third. The solves'
        time outside the evaluations (the solvers' own work, medians of three
        alternated fits on a machine 1.2-1.6x slower than the benchmark's)
        does not drift that way: digits k = 20 0.28 -> 0.20 s, k = 40 0.54
        -> 0.30 s, the low-rank set k = 20 0.38 -> 0.19 s, breast_cancer
        0.13 -> 0.12 s, with 0.4-2 % more evaluations. That is about 3 % of
        a digits k = 20 fit, not the 10 % its 2 s target asks, for moving
        every seed's basin: not taken.

        With ``embedded`` (an active-set round on data whose span has about as
        many dimensions as points, see :meth:`_embedded_lbfgs`) the solver
        runs on the embedded points of the active pairs instead of the map.
        """
        if max_iter < 1:
            return z, 0, False
        start = time.perf_counter()
        if embedded:
            x, n_iter = self._embedded_lbfgs(
                objective, z, tol, max_iter, stop_at_tol=stop_at_tol
            )
            self.stats["solve_s"] += time.perf_counter() - start
            return x, n_iter, n_iter < max_iter
        own = getattr(objective, "lean", False)
        callback = None
        if self.verbose >= 2:

            def report(n_iter, value):
                print(f"[L-BFGS] iter {n_iter}: surrogate {value:.9g}", flush=True)

            if own:
                callback = report
            else:
                iteration = iter(range(1, max_iter + 1))

                # scipy passes its OptimizeResult to a parameter of this name.
                def callback(intermediate_result):
                    report(next(iteration, max_iter), intermediate_result.fun)

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
        if own:
            x, n_iter = minimize_lbfgs(
                fun,
                y,
                gtol=gtol,
                max_iter=max_iter,
                memory=LBFGS_MEMORY,
                callback=callback,
                stop=stationary if stop_at_tol else None,
            )
        else:
            solved, on_iteration = fun, callback
            if stop_at_tol:
                # L-BFGS-B accepts the last point it evaluated: the callback
                # sees that point's gradient and stops the solver there.
                last = [None, None]

                def solved(y):
                    value, grad = fun(y)
                    last[:] = y.copy(), grad
                    return value, grad

                def on_iteration(intermediate_result):
                    if callback is not None:
                        callback(intermediate_result)
                    if np.array_equal(intermediate_result.x, last[0]) and (
                        stationary(last[1])
                    ):
                        raise StopIteration

            res = minimize(
                solved,
                y,
                jac=True,
                method="L-BFGS-B",
                callback=on_iteration,
                options={
                    "maxiter": max_iter,
                    "gtol": gtol,
                    "ftol": 1e-13,
                    "maxcor": LBFGS_MEMORY,
                },
            )
            x, n_iter = res.x, int(res.nit)
        self.stats["solve_s"] += time.perf_counter() - start
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
# L-BFGS of skderand/optimize/_lbfgs.py with EMBEDDED_MEMORY correction pairs:
# with 45,000 variables (the sparse text-like set, k = 30) scipy's L-BFGS-B
# spent 1.7 ms per iteration in its own machinery and 20 pairs 2.1 ms in the
# memory's products (memory-bound), against an evaluation of about 2 ms.
# Measured on the sparse text-like set, k = 30, seeds 0 / 1 / 2, unlocked
# (distortion, fit s): memory 20 0.3969 / 0.3921 / 0.3870 in 12-15 s, memory
# 10 0.3951 / 0.3941 / 0.3935 in 9.0-9.6 s. The memory's rows in float32
# (their inner products with the new pair still float64) halve the bytes of
# the two reads of the 20 x 45,000 rows per iteration: the solves' time
# outside the evaluations went 1.90 -> 1.57 s (medians of eight fits), about
# 4 % of the fit (seeds 0 / 1 / 2, alternated, alone, on a machine 1.2-1.6x
# slower than the benchmark's), the distortions moving by path noise:
# 0.36806 / 0.36674 / 0.36662 -> 0.36685 / 0.36644 / 0.36621, the set with 15
# rows copying others 0.36536 -> 0.36617, Gaussian rows (seed 0) 300 x 1000
# k = 5 (the benchmark's set) 0.8337 -> 0.8350, k = 7 (another draw) 0.7032
# -> 0.7091, 400 x 2000 k = 5 0.8600 -> 0.8594. Not taken: the sparse row's
# 5 s needs a quarter off.
# Dense data of more dimensions than points take this path too when their pairs
# outnumber COMPLETE_PER_VARIABLE per variable (no benchmark row): Gaussian
# 300 x 1000 k = 3 / 5 / 7 and 400 x 2000 k = 5 went from 1.8-2.9 s to 0.9-1.4 s,
# 0.9660 / 0.8349 / 0.7040 / 0.8716 -> 0.9729 / 0.8440 / 0.7057 / 0.8629 (with
# the old 10 x 40 rounds: 0.9680 / 0.8442 / 0.7023 / 0.8565: path noise).
# Each round's solver starts with an empty memory: kept across a stage's
# rounds (its pairs carried onto the round's points), the sparse text-like set
# ended at 0.3628 / 0.3757 (seeds 0 / 1, against 0.3681 / 0.3667) on 66,000 /
# 69,000 active pairs instead of 57,000, in about 20 % more time.
EMBEDDED_MIN_RANK = 256
EMBEDDED_MEMORY = 10
# Rounds per stage there: MAX_ROUNDS * sqrt(beta / EMBEDDED_ROUNDS_BETA) within
# EMBEDDED_ROUNDS (4 / 5 / 10 / 20 for the default stages). The rounds being
# cheap, they go where the extremes still move, at high sharpness; a fixed 10
# per stage gave 0.4090 / 0.3987 / 0.4021 (seeds 0 / 1 / 2, L-BFGS-B), a fixed
# 20 0.3829 / 0.3837 / 0.3782 in twice the time (the sparse text-like set, 1,500
# x 4,000, k = 30). Longer earlier stages (62.5: 5 / 10 / 20 rounds) let its
# final stage converge: 0.3587 / 0.3595 / 0.3586, certified, against 0.3681 /
# 0.3667 / 0.3666, but in 13-35 % more time, as the final stage still spends
# 930-1,000 iterations, on up to 70,000 active pairs instead of 58,000 (alone,
# one BLAS thread). A per-point diagonal preconditioner of those solves (each
# point's summed pair curvature, floored at 0.01-1 times the mean) ended at
# 0.374-0.406, on seeds 0 / 1.
EMBEDDED_ROUNDS_BETA = 250.0
EMBEDDED_ROUNDS = (4, 2 * MAX_ROUNDS)
# Iterations of their shortest round: the active set catches up with the
# extremes twice as often for the same rounds (seeds 0 / 1 / 2: 40 iterations
# 0.3951 / 0.3941 / 0.3935 in 1,560 iterations, 30 0.3951 / 0.3945 / 0.3804
# in 1,170, 20 0.3984 / 0.3876 / 0.3870 in 780).
EMBEDDED_ROUND_ITER = 20

# A long active-set round (see PASS_COST) after which the exact all-pairs
# distortion is above (1 + UNDO_RISE) times the stage's best so far is undone:
# the stage goes back to its best map, the pairs that overtook the extremes
# join the active set, and later rounds of the stage are 2, 4, ... times
# shorter. 20,000 x 100 points, k = 20, with a perturbed path (float32 gradient
# products in stages 1-3, seed 1): stage 3 started at 0.355 on 17,000 active
# pairs, 250-iteration rounds took the all-pairs distortion to 0.556, 0.624,
# 0.611 and the fit ended uncertified at 0.459 (seeds 0 / 2: 0.2013 / 0.2012).
# Rises of under 1 % occur in the converging stages (seed 0, stage 3: 0.2059
# -> 0.2076) and are left alone. The default fits (seeds 0 / 1 / 2): 0.20076 /
# 0.20064 / 0.20017 -> 0.20076 (the same path) / 0.20054 / 0.20042, certified;
# 50,000 x 50 (seed 0): 0.484 uncertified (gradient 0.31) -> 0.271 certified.
# Small sets with long rounds forced (400 points, 24 active pairs, k = 4,
# sharpness 62.5, seeds 0-5): stages ended at 0.944 / 0.947 / 0.994 / 0.952 /
# 0.972 / 0.887 from 0.937 / 0.959 / 0.975 / 0.986 / 0.974 / 0.974, and at
# 0.864 / 0.821 / 0.939 / 0.802 / 0.972 / 0.887 with rounds undone (one BLAS
# thread; such paths change with the BLAS's round-off).
UNDO_RISE = 0.05

# Correction pairs of the stages' L-BFGS (10 took Gaussian 300 x 1000, k = 20
# from 840 to 1007 iterations). With today's stages the count hardly depends on
# it: k = 20, seeds 0 / 1 / 2, 547 / 658 / 602 iterations at 20, 621 / 672 /
# 560 at 10, 584 / 587 / 666 at 40. Nor does carrying the memory from one
# all-pairs stage into the next (its y scaled by the ratio of the
# sharpnesses): 507 / 631 / 590 (k = 10 / 40 seeds 0 / 1: 637 / 589 and 685 /
# 695, against 641 / 554 and 621 / 693), distortions within 0.1 %.
LBFGS_MEMORY = 20

# Iterations the certifying solver may add to the final stage's rounds, and its
# Lanczos budget (the smallest Hessian eigenvalue is exact below this many
# variables).
CERTIFY_ITER = 100
LANCZOS_ITER = 100


# Bytes allowed for the active pairs' operators and work arrays beside the
# certificate's Lanczos vectors, and for the rows of the Gram matrix the polish
# keeps (at most 2^24 numbers, see _polish.KEPT_ROWS_ELEMENTS). With it the
# estimate of fit_bytes is above the peak measured by benchmarks/bench_jl.py on
# the text-like sets, k = 30: 1,500 / 5,000 / 10,000 rows, 424 / 798 / 1,717
# MiB estimated (389 / 682 / 1,485 with the certificate's vectors counted in
# float32, as those sets take them) against 164 / 548 / 1,420 MiB measured
# above the data.
ACTIVE_SET_BYTES = 1 << 27


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
# budget; 100 more iterations on the fixed final active set then fit those
# pairs while others overtake the extremes (digits k = 10 from 4.1 tol, the
# sparse text-like set from 3.3 tol: the solver's point raised the all-pairs
# distortion both times and was discarded, after which the stage's end point
# needed a second Lanczos run: 6 of the sparse fit's 9 certificate seconds). Such
# a point is certified as it is, once. From 1.0-1.3 tol (breast_cancer, digits
# k = 20) one or two solver iterations reach tol and are kept.
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
    distortion rises: the sparse text-like set, seed 1, from 1.95 tol, 10 /
    25 / 50 / 100 iterations of the rounds' solver took the surrogate from
    0.8286 to 0.8272 / 0.8231 / 0.8053 / 0.7466, the gradient norm to 5.8 /
    9.1 / 25 / 16 tol and the distortion from 0.389 to 0.392 / 0.411 / 0.501
    / 0.663 (minimize_sosp in map coordinates: 100 iterations to 13 tol, 4.0
    s, discarded; the same at 3.3 tol in an earlier round).

    Returns the point, the solver iterations spent on it and its certificate.
    """
    mark = pairs.mark()
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
        pairs.charge("certify_s", mark)
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
        pairs.charge("certify_s", mark)
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
# Hessian's negative curvature there. 300 x 600 rows with five directions at
# relative singular values s (their bound 1.7e6-6.8e6 / 1.7e8-6.8e8 / 1.7e10-
# 6.8e10 for s = 1e-4 / 1e-5 / 1e-6, dense and sparse rows, 1.7e12-3.1e12 /
# 1.7e14-3.1e14 for s = 1e-7 / 1e-8, dense rows: sparse ones fell back to
# principal directions), k = 5, seeds 0 / 1, the triangular basis forced:
# smallest Ritz values in float32 against float64 against map coordinates,
# dense rows -0.0273 / -0.0241, -0.0253 / -0.0253, -0.0253 / -0.0253 (s =
# 1e-4); -38.9 / -2.40, -0.0236 / -0.0232, -0.0236 / -0.0232 (1e-5); 12.4 /
# -353, -0.0219 / -0.0306, -0.0219 / -0.0306 (1e-6); 12.6 / -366, -0.0182 /
# -0.0169, -0.0182 / -0.0169 (1e-7); 12.1 / -5.0e6, -0.0377 / -0.0286, -0.0361
# / -0.0293 (1e-8). Sparse rows (K's products in float64 either way) held
# float32 to s = 1e-5 (-0.0201 against -0.0208) and lost it at 1e-6 (-0.0369
# against -0.0273). The benchmark's text-like rows bound at most 36 (their
# spread); 1,200 text-like rows with Zipf-weighted columns, in the Cholesky
# basis, 2.2e6.
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
    returned in map coordinates. The sparse text-like set (k = 30, seed 0's
    end point): the same smallest Ritz value as in map coordinates to 1e-14
    relative; the fit's certificate 1.7-1.8 s -> 1.4-1.5 s (A/B under the
    timing lock, two runs each; the rest is K's products, 100 Hessian
    products on 35,000 pairs and the Lanczos basis).

    The gradient (and its norm's test) is float64's; with ``single``,
    ``H_Y``'s products and ``K``'s run in float32, as the rounds on embedded
    points evaluate the surrogate, and the Lanczos basis is stored in float32
    (see below). The products' round-off moved the smallest Ritz value by
    less than 1e-6, far below the ``curvature_tol`` it is tested against: the sparse
    text-like set, k = 30, seeds 0 / 1 / 2, the smallest Ritz value
    -0.00104925 / -0.00135734 / -0.01259939 in float64 against -0.00104897 /
    -0.00135768 / -0.01260032 (``curvature_tol`` 0.1), the certificate
    1.46-1.58 s -> 0.99-1.08 s (its Hessian products 0.69-0.75 -> 0.36-0.41
    s; alternating runs, alone, one BLAS thread; with float32 Hessian and
    float64 ``K`` products 1.23-1.30 s). For sparse input ``K``'s products
    are sparse products in float64, cheaper than ``K`` in float32: text-like
    sets, k = 30, the certificate 18.9 -> 8.5 s at 10,000 x 40,000, 5.7 ->
    3.7 s at 5,000 x 20,000 and 1.3-1.4 -> 1.2-1.3 s at 1,500 x 4,000 (the
    same fits otherwise).

    The basis and duals (``2 (LANCZOS_ITER + 1) n k`` numbers, stored when
    the fit's memory peaks, at 5,000 points and more) take half the memory in
    float32: text-like sets, k = 30, the fit's peak 662 -> 548 MiB above the
    data at 5,000 x 20,000; at 1,500 x 4,000, seeds 0 / 1 / 2, the smallest Ritz value
    -9.46586e-4 / -8.22079e-3 / -7.24721e-3 -> -9.46424e-4 / -8.22078e-3 /
    -7.24757e-3 and the Lanczos run 1.01-1.03 -> 0.81-0.96 s (the same fits).
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
# span's principal directions spread over more than WHITEN_SPREAD (breast_cancer
# 1e5, digits 4e5, the low-rank-plus-noise set 2e4; the Gaussian, paper and
# sparse text-like sets 6 to 36). Directions with less than WHITEN_FLOOR of the
# mean variance are scaled as if they had that much (at most 10x: a floor of
# 1e-3 or 1e-4 gave digits k = 10 0.654 / 0.644 and breast_cancer 0.422, 1e-2
# 0.643 and 0.415).
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
    (floored) equalizes that factor. Measured with the rounds' budgets
    unchanged (distortion, iterations): breast_cancer k = 8 0.4234 -> 0.4154
    (1524 -> 1393), digits k = 10 / 20 / 40 0.6533 / 0.2741 / 0.0519 -> 0.6431
    / 0.2743 / 0.0514 (1600 each: the rounds' budget), low-rank-plus-noise
    500 x 200 k = 10 / 20 / 40 0.0221 / 0.0109 / 0.0056 -> 0.0219 / 0.0079 /
    0.0044 (978 / 1220 / 2016 -> 364 / 951 / 323); derandomized digits k = 20
    0.2770 -> 0.2734, low-rank k = 10 / 20 0.0223 / 0.0113 -> 0.0220 / 0.0081.
    The active-set rounds use it only when they have the usual length
    (see :meth:`_ActivePairs.solve_stage`). For near-isotropic data (spread
    below WHITEN_SPREAD) whitening only perturbs the path (Gaussian 300 x 1000
    k = 10 / 20 / 40, whitened by pair scatter: 0.5479 / 0.3211 / 0.1816 ->
    0.5484 / 0.3212 / 0.1828), so it returns None there: plain coordinates.
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
