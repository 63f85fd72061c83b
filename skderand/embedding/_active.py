"""The training pairs of LearnedJLTransformer and their active set.

Private helpers of :class:`~skderand.embedding.LearnedJLTransformer`:

- :class:`_ActivePairs` keeps the pairs whose distance ratio is near the current
  extremes (the *active set*). The smooth surrogate is optimized over them only
  (see ``_stages.py``); between rounds a blocked pass over *all* pairs
  (:class:`_PairScanner`) finds the true extremes, and the pairs that overtake
  the active set's extremes are added.
- :class:`_SpanPoints` holds the training points in the span's coordinates:
  their images under a map, their Gram matrix, the map of given embedded points.
- The fit's memory estimates (:func:`fit_bytes`, :func:`map_bytes`).

Per-iteration cost then grows with the active set, not with the ``n^2 / 2`` pairs.
"""

import copy

import numpy as np
from scipy.sparse.linalg import LinearOperator, eigsh

from skderand.embedding._objective import difference_matrix
from skderand.embedding._pairs import (
    _HeldGram,
    _PairScanner,
    _SparseGram,
    all_pairs,
    exact_sq_dists,
)

# Every pair is active below this many pairs per variable (see reset).
COMPLETE_PER_VARIABLE = 20
# Relative slack of the candidate pairs' limits (see _ActivePairs.band): it
# covers the round-off of a pass's Gram-form (and float32) ratios.
SCAN_SLACK = 1e-5


class _SpanPoints:
    """The training points in the coordinates of their span.

    Parameters
    ----------
    X : ndarray of shape (n_samples, rank)
        Centred training data in the span's coordinates (dense).
    gram : _SparseGram or _HeldGram, default=None
        ``K = X X^T`` by its products and rows, if the caller has it (see
        ``_Span.gram``: sparse products with the data); else ``K`` is formed
        when first needed (see :meth:`gram`).
    factor : _PivotedCholesky, default=None
        Where ``X`` came from (see ``_Span.factor``); None: ``X`` holds the
        principal coordinates of the span (``X^T X`` is diagonal).
    """

    def __init__(self, X, *, gram=None, factor=None):
        self.X = X
        self.factor = factor
        self.col_sq = np.einsum("ij,ij->j", X, X)
        self._gram = gram
        self._largest_cross = None
        self._embedded = None

    def for_another_start(self):
        """A copy sharing the data and ``K``, with its own cache of the last map."""
        other = copy.copy(self)
        other._embedded = None
        return other

    def embed(self, M):
        """``X M^T``, kept for the last map asked (band and ratios ask twice)."""
        cached = self._embedded
        if cached is not None and np.array_equal(cached[0], M):
            return cached[1]
        Y = self.X @ M.T
        self.remember(M, Y)
        return Y

    def remember(self, M, Y):
        """Keep ``Y`` as the embedded points of ``M`` (see :meth:`embed`)."""
        self._embedded = (M.copy(), Y)

    def pair_ratios(self, M, rows, cols, d2):
        """The ratios of the pairs ``(rows, cols)`` under ``M``, exactly."""
        # The differences by the pairs' difference operator: bit for bit those
        # of two gathers and a subtraction (see difference_matrix), in one
        # pass over the (n_pairs, k) result instead of three (see the design
        # note, "Performance notes").
        diff = difference_matrix(rows, cols, self.X.shape[0]) @ self.embed(M)
        return np.einsum("ij,ij->i", diff, diff) / d2

    def sq_dists(self, rows, cols):
        """Exact squared distances: of the sparse rows when the span has them.

        Their differences have a few hundred terms (see
        ``_SparseGram.sq_dists``), the coordinates' one per dimension.
        """
        if isinstance(self._gram, _SparseGram):
            return self._gram.sq_dists(rows, cols)
        return exact_sq_dists(self.X, rows, cols)

    def gram(self):
        """``K = X X^T`` by its products and rows (``_HeldGram`` or the caller's).

        ``K P = X (X^T P)`` for an ``n x k`` array in one ``n x n x k``
        product instead of two ``n x rank x k`` ones (see
        ``_stages._embedded_certificate``), and ``X d_p`` for a pair is the
        difference of two of its rows (see ``_polish._EmbeddedSteps``).
        Formed from ``X`` when the caller has no cheaper way; sparse input
        has (see ``_Span.gram``).
        """
        if self._gram is None:
            self._gram = _HeldGram(self.X @ self.X.T)
        return self._gram

    def map_of_points(self, Y):
        """The map ``M`` whose embedded points ``X M^T`` are the centred ``Y``.

        For data of rank ``n - 1`` (the solves on embedded points, see
        ``_stages._lbfgs_on_points``). In principal coordinates (``X^T X =
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
        ``K``'s products (ARPACK, from a start of a local generator: no global
        random state), to 1e-8 relative: it scales a stopping test of the
        solves only (the certificate measures the gradient itself).
        """
        if self._largest_cross is None:
            if self.factor is None:
                self._largest_cross = self.col_sq.max()
            else:
                n = self.X.shape[0]
                start = np.random.default_rng(0).standard_normal(n)
                K = LinearOperator(
                    (n, n),
                    matvec=lambda v: self.gram().product(v.reshape(-1, 1)),
                    dtype=np.float64,
                )
                top = eigsh(K, k=1, which="LA", v0=start, tol=1e-8)[0]
                self._largest_cross = float(top[0])
        return self._largest_cross


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
    gram, factor : see :class:`_SpanPoints`
        Passed to the points (``points``), which hold ``X`` with its Gram
        matrix and basis.
    """

    def __init__(self, X, working_set, verbose=0, *, gram=None, factor=None):
        self.X = X
        self.points = _SpanPoints(X, gram=gram, factor=factor)
        self.verbose = verbose
        n = X.shape[0]
        self.n = n
        self.working_set = working_set
        # A Cholesky factor's coordinates are lower trapezoidal.
        self.scanner = _PairScanner(X, lower_trapezoidal=factor is not None)
        self.n_pairs = n * (n - 1) // 2
        self.all = None
        self._key = None
        self._ratios = None
        # The whitening scales the principal directions; a Cholesky basis has
        # none (its solves on the embedded points are whitened all the same,
        # see _stages._lbfgs_on_points).
        self.scale = _whitening_scale(X) if factor is None else None
        # Data whose span has as many dimensions as centred points can have
        # (n - 1): the active-set rounds optimize the embedded points (see
        # _stages._lbfgs_on_points), unless the span's principal directions spread
        # over more than WHITEN_SPREAD (``scale``; a triangular basis was
        # taken only below it, see _pairs._Span). The embedded solves take
        # the whitened path without its floor, which moves the directions of
        # least variance too far on widely spread spans. See the design note,
        # "Solves on the embedded points".
        self.embedded = (
            n > 2
            and X.shape[1] >= max(n - 1, EMBEDDED_MIN_RANK)
            and self.points.col_sq.min() > 0
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
        other.points = self.points.for_another_start()
        other._key = other._ratios = None
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
        Y = self.points.embed(M)
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
                r = self.points.pair_ratios(M, rows, cols, d2)
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

    def _new_candidates(
        self, M, n_side, band, r_old=None, *, most=10_000, share=400, fraction=0.4
    ):
        """A blocked pass: the candidate pairs around the extremes at ``M``.

        The candidates are the pairs within ``fraction`` of the log-range of
        the ratios from an extreme, at most ``most`` per side and one in
        ``share`` of all pairs (never fewer than a round adds): their exact
        distances and ratios, and the pass's pools, cost about as much as half
        a pass where passes are cheap (see the design note, "Candidate
        pairs"). Between passes, the exact extremes come from them while the
        map has moved too little for any other pair to overtake them (see
        :meth:`band`).

        ``r_old`` holds the current candidates' exact ratios at ``M``, if
        known: the pass's pools then start from their ``n_cand``-th smallest
        and largest (see :meth:`_PairScanner.scan`'s ``known``). Returns the
        new candidates' exact ratios at ``M`` (in their stored order), which
        :meth:`band` would otherwise measure again at once.
        """
        n_cand = max(min(most, self.n_pairs // share), 2 * n_side)
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
            M, n_cand, band, range_fraction=fraction, known=known
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
        r = self.points.pair_ratios(
            M, rows, cols, np.maximum(d2, self.scanner.threshold)
        )
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
            return self.points.sq_dists(rows, cols)
        d2, ok = self.scanner.stored_sq_dists(rows, cols)
        if not ok.all():
            bad = ~ok
            d2[bad] = self.points.sq_dists(rows[bad], cols[bad])
        return d2

    def _active_key(self):
        """``rows * n + cols`` of the active set (sorted, see :meth:`set_active`)."""
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
        r = self.points.pair_ratios(M, self.rows, self.cols, self.d2)
        self._ratios = (self.rows, M.copy(), r)
        return r

    def set_active(self, rows, cols):
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

    def add(self, low, high):
        """Add the pairs ``low`` and ``high`` (as :meth:`band` returns them)."""
        self.set_active(
            np.concatenate([self.rows, low[0], high[0]]),
            np.concatenate([self.cols, low[1], high[1]]),
        )


# Spans of at least this many dimensions take new pairs' squared distances from
# the blocked pass's stored Gram form where it is accurate (see _measure).
GRAM_DISTANCE_MIN_RANK = 256

# Active-set rounds on the embedded points (see _stages._lbfgs_on_points) only
# for spans of at least this many dimensions, where the map's two n x rank x k
# products dominate an evaluation. See the design note, "Solves on the embedded
# points".
EMBEDDED_MIN_RANK = 256


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
    embedded points (see ``_stages._lbfgs_on_points``).

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


# The stages' L-BFGS runs in whitened coordinates when the variances of the
# span's principal directions spread over more than WHITEN_SPREAD. See the
# design note, "Whitening".
WHITEN_SPREAD = 1e3


def _whitening_scale(X, floor=1e-2):
    """Scales of the columns of the map for the stages' L-BFGS, or None.

    ``X`` holds the data in orthonormal coordinates of their span, the principal
    directions (``X^T X`` is diagonal, see ``_Span``). A pair's ratio moves with the
    map's column ``j`` in proportion to the variance ``e_j`` of direction ``j``, so the
    surrogate's curvature in that column is about ``e_j`` times its curvature in the
    map's image: with variances over several decades (data near a low-dimensional
    subspace) L-BFGS, started from the identity's scaling, spends its iterations
    learning them. Optimizing ``N = M / scale`` with ``scale_j = (e_j /
    mean(e))^(-1/2)`` equalizes that factor; directions with less than ``floor`` of the
    mean variance are scaled as if they had that much (at most 10x). The active-set
    rounds use it only when they have the usual length (see
    :meth:`_StageRounds._solve`). For near-isotropic data (spread below WHITEN_SPREAD)
    whitening only perturbs the path, so it returns None there: plain coordinates. See
    the design note, "Whitening".
    """
    e = np.einsum("ij,ij->j", X, X)
    if e.size == 0 or not e.min() > 0 or e.max() <= WHITEN_SPREAD * e.min():
        return None
    e = np.maximum(e / e.mean(), floor)
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
