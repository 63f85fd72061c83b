"""The training data's span, and pairwise distance ratios without O(n^2) memory.

Private helpers of :class:`~skderand.embedding.LearnedJLTransformer`:

- :class:`_Span` holds the centred data in orthonormal coordinates of their
  span (principal directions, or a triangular basis), with the Gram matrix
  of sparse rows as sparse products.
- :class:`_PairScanner` measures the ratios ``||M(x_i - x_j)||^2 / ||x_i - x_j||^2``
  over *all* pairs, block of rows by block of rows, and returns the extreme ones.

The smooth surrogate of the worst distortion is in ``_objective.py``.
"""

import numpy as np
from scipy import linalg, sparse
from scipy.linalg import lapack
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from skderand._memory import check_fits_in_memory
from skderand.embedding._objective import (
    _GramObjective,  # noqa: F401 (tests import it from this module)
    _PairObjective,  # noqa: F401 (tests import it from this module)
    difference_matrix,
)

# Pairs whose squared distance is below this fraction of the largest squared norm of
# the centred data are coincident points: every linear map keeps them coincident,
# so they carry no distortion (and their ratio would be 0 / 0).
COINCIDENT_RTOL = 1e-10

# The squared distances of all pairs are stored in float64 up to STORE_BYTES_64
# bytes, in float32 up to STORE_BYTES_32, and recomputed at every scan beyond.
STORE_BYTES_64 = 1 << 28
STORE_BYTES_32 = 1 << 30

# Relative accuracy of the squared distances taken from a pass's Gram form (see
# _PairScanner.stored_sq_dists) in place of exact ones, or, in spans of
# thousands of dimensions, a few times the round-off bound of the direct sum
# itself (see gram_distance_rtol).
GRAM_RTOL = 1e-12

# Elements of one block of the pairwise scan (bounds its temporary memory).
BLOCK_ELEMENTS = 1 << 22


# Sparse input with more stored-as-dense elements than this is never densified
# whole: the span comes from the Gram matrix of its rows (see _Span) when that
# is smaller than the dense matrix. 2**22 float64 numbers are 32 MiB.
SPARSE_DENSIFY_ELEMENTS = 1 << 22


def gram_span(X):
    """Whether :class:`_Span` takes the span of ``X`` from the rows' Gram matrix.

    Large sparse input with fewer rows than columns: densified, it would hold
    more than ``SPARSE_DENSIFY_ELEMENTS`` numbers.
    """
    n, d = X.shape
    return sparse.issparse(X) and n * d > SPARSE_DENSIFY_ELEMENTS and n < d


def span_bytes(X):
    """Peak bytes of the span of ``X`` and of the blocked passes (estimated).

    The span: a dense centred copy with its SVD (about three ``n x d``
    arrays) and the coordinates (``n x rank``); or, for large sparse input
    (see :func:`gram_span`), the principal directions of the rows' Gram
    matrix (see :func:`eigh_span_bytes`, the coordinates among them)
    or, from ``CHOLESKY_MIN_SAMPLES`` rows on, one ``n x n`` array: the
    pivoted Cholesky factor overwrites the Gram matrix and its memory holds
    the coordinates (rows of lower rank fall back to the principal
    directions, which :class:`_Span` checks then, see
    :func:`eigh_span_bytes`). Then the stored pair distances (at most
    ``STORE_BYTES_32``; beyond, the float32 copy of the coordinates that
    passes recompute them from) and a few scan blocks.
    """
    n, d = X.shape
    rank = min(n, d)
    if not gram_span(X):
        span = 3 * n * d * 8 + n * rank * 8
    elif n >= CHOLESKY_MIN_SAMPLES:
        span = n * n * 8
    else:
        span = eigh_span_bytes(n)
    # As _PairScanner decides: float64 distances, float32 ones, or none.
    elements = stored_elements(n)
    stored = 8 * elements if 8 * elements <= STORE_BYTES_64 else 4 * elements
    stored = stored if stored <= STORE_BYTES_32 else n * (rank + 2) * 4
    return span + stored + 4 * BLOCK_ELEMENTS * 8


def eigh_span_bytes(n, arrays=5):
    """Peak bytes of the principal coordinates of ``n`` rows from their Gram matrix.

    At most ``arrays`` arrays of ``n x n`` float64 numbers: the matrix,
    LAPACK's copy of it, its workspace, the eigenvectors and the coordinates
    (see the design note, "Memory estimates").
    """
    return arrays * n * n * 8


# Large sparse input of at least this many rows takes the span's coordinates
# from a pivoted Cholesky factor of the rows' Gram matrix (LAPACK's dpstrf)
# instead of its eigendecomposition, many times faster. Below it the
# eigendecomposition is cheap and keeps the principal directions, which the
# whitened solves of the map need (see _whitening_scale in _active.py). Fits
# that never solve in the map's coordinates take the factor below it too (see
# _Span's ``max_spread``). See the design note, "Triangular bases of the span".
CHOLESKY_MIN_SAMPLES = 2000


class _Span:
    """The centred, rescaled training data in orthonormal coordinates of its span.

    Pairwise distances only see a linear map on the row space of the centred
    data, so the fit optimizes the map there: ``coords`` (n_samples, rank) are
    the data's coordinates in an orthonormal basis ``V`` (n_features, rank) of
    that space, ``restrict(A) = A @ V`` and ``extend(W) = W @ V.T``.

    Dense input (and small sparse input, densified): ``V`` from the SVD of the
    centred data. Large sparse input with fewer rows than columns: ``V`` is never
    formed. With ``K = Xc Xc^T = U diag(lam) U^T`` (from sparse products),
    ``V = Xc^T U diag(lam)^(-1/2)``, so the coordinates are ``U diag(lam)^(1/2)``
    and both maps go through sparse products with ``X``; memory is ``O(n^2 +
    nnz)``, not ``O(n * d)``. Directions with ``lam`` below ``max(n, d) * eps``
    of the largest carry squared distances below round-off and are dropped,
    unless one could hold a pair that is not coincident; those below
    ``REFINE_BELOW`` of the largest are taken again from products with the
    rows (:func:`_refine_small_directions`), and ``V = Xc^T dual``. From
    ``CHOLESKY_MIN_SAMPLES`` rows on, when the centred rows have the largest
    rank they can have (``n - 1``), the coordinates come from a pivoted
    Cholesky factor of ``K`` instead (``factor``, see
    :class:`_PivotedCholesky`): another orthonormal basis of the same span,
    not the principal directions, and the rows of ``coords`` are the points
    in the order ``order`` (the pivots'), and the factor takes the Gram
    matrix's memory. Otherwise ``factor`` and ``order`` are None (``coords``
    in the points' order). For sparse input ``gram`` is the coordinates' Gram matrix as
    sparse products with the rows (:class:`_SparseGram`; the dense one is
    not kept); for dense input None. ``mean`` is the rows' mean (float64).

    With ``max_spread`` (a fit that needs no principal directions: its
    solves all run on the embedded points, see
    ``_active.solves_on_embedded_points``) rows of rank ``n - 1`` take a
    triangular basis at any size, from a QR factorization of dense rows
    (:func:`_qr_span`) or the pivoted Cholesky factor of sparse ones, if the
    span's variances spread over at most ``max_spread`` (see
    :meth:`_TriangularCoords.spread`; beyond, the embedded solves would move
    the directions of little variance without the whitening's floor, and the
    fit solves in whitened principal coordinates instead). From
    ``CHOLESKY_MIN_SAMPLES`` rows on, whatever the spread: there the
    principal directions cost ``O(n^3)`` with a large constant, and the map's
    solves two ``n x n x k`` products per evaluation.

    Ratios of distances do not depend on the data's scale; the coordinates are
    divided by ``scale`` so that squared distances neither underflow nor overflow.
    """

    def __init__(self, X, max_spread=None):
        n, d = X.shape
        self.sparse = gram_span(X)
        self.factor = self.gram = self.order = None
        if not self.sparse:
            Xd = X.toarray() if sparse.issparse(X) else X
            # C order: the same BLAS paths (hence bit-identical fits) for every
            # layout.
            Xc = np.ascontiguousarray(Xd, dtype=np.float64)
            # Distances do not depend on the origin; centring keeps the
            # Gram-matrix form of the squared distances accurate.
            self.mean = Xc.mean(axis=0)
            Xc = Xc - self.mean
            scale = np.abs(Xc).max()
            if scale > 0:
                Xc /= scale
            if max_spread is not None:
                triangular = _qr_span(Xc)
                if triangular is not None and triangular[1].serves(max_spread):
                    self.basis, self.factor = triangular
                    self.coords = self.factor.coords
                    return
            _, sv, Vt = linalg.svd(Xc, full_matrices=False, check_finite=False)
            tol = sv.max(initial=0.0) * max(Xc.shape) * np.finfo(np.float64).eps
            rank = _centred_rank(sv, tol, n)
            self.basis = Vt[:rank].T
            self.coords = Xc @ self.basis
            return
        self.X = sparse.csr_array(X, dtype=np.float64)
        self.mean = np.asarray(self.X.mean(axis=0)).ravel()
        centred_gram = _SparseGram(self.X, self.mean)
        gram = centred_gram.dense()
        eps = max(n, d) * np.finfo(np.float64).eps
        large = n >= CHOLESKY_MIN_SAMPLES
        if large or max_spread is not None:
            tol = eps * max(gram.diagonal().max(), 0.0)
            # The factor overwrites the Gram matrix (see _PivotedCholesky).
            factor = _PivotedCholesky(gram, tol)
            del gram
            factor_rank = factor.rank
            if factor_rank == n - 1 and factor.serves(max_spread):
                self.factor, self.coords = factor, factor.coords
                self.order = factor.order
                self.gram = _SparseGram(self.X[self.order], self.mean, factor.scale)
                return
            # Fewer dimensions than the centred rows can span (duplicate
            # rows, say), or too wide a spread: the principal directions, as
            # below, from the Gram matrix formed again. From
            # CHOLESKY_MIN_SAMPLES rows on they need more memory than the
            # factor, which fit's up-front estimate counted.
            del factor
            if large:
                check_fits_in_memory(
                    eigh_span_bytes(n),
                    f"The principal directions of {n} sparse rows of rank "
                    f"{factor_rank} (below {n - 1}: duplicate rows, say)",
                    "Remove duplicate rows, or subsample the points.",
                )
            gram = centred_gram.dense()
        max_sq_norm = max(gram.diagonal().max(), 0.0)
        # Divide and conquer (LAPACK's syevd), not the default syevr: every
        # eigenvector is needed, and there it is faster.
        lam, U = linalg.eigh(gram, check_finite=False, driver="evd")
        del gram
        lam, U = lam[::-1], U[:, ::-1]
        # Directions below the Gram matrix's round-off (``eps`` of the largest
        # eigenvalue) are dropped, unless one could hold a pair that is not
        # coincident: each row keeps all but at most ``tol`` of its squared
        # norm, so a pair loses at most ``4 tol`` of its squared distance, at
        # most the coincidence threshold. (The round-off cut alone, on
        # squared singular values, can drop the one direction of a
        # near-duplicate pair: see the design note, "The span's rank".)
        tol = min(max(lam[0], 0.0) * eps, COINCIDENT_RTOL * max_sq_norm / 4.0)
        rank = _centred_rank(lam, tol, n)
        lam, U = np.maximum(lam[:rank], np.finfo(np.float64).tiny), U[:, :rank]
        # The basis V = Xc^T dual (orthonormal) and the coordinates Xc V.
        coords = U * np.sqrt(lam)
        small = lam < REFINE_BELOW * lam[0]
        if small.any():
            small_dual, small_coords = _refine_small_directions(
                self.X, self.mean, U[:, small], tol
            )
        # In place: the eigenvectors' memory holds the dual.
        U /= np.sqrt(lam)
        self.dual = U
        if small.any():
            self.dual = np.hstack([U[:, ~small], small_dual])
            coords = np.hstack([coords[:, ~small], small_coords])
        scale = np.abs(coords).max()
        if scale > 0:
            coords /= scale
        self.coords = coords
        self.gram = _SparseGram(self.X, self.mean, scale if scale > 0 else 1.0)

    def _centred_product(self, A):
        """``Xc @ A.T`` for a dense ``A`` of shape (k, n_features)."""
        return self.X @ A.T - (A @ self.mean)[None, :]

    def restrict(self, A):
        """``A @ V``: a map on the input space restricted to the span."""
        if not self.sparse:
            return A @ self.basis
        if self.factor is not None:
            # Xc = scale * C V^T (rows in the coordinates' order), and
            # Xc A^T = C (A V)^T * scale.
            points = self._centred_product(A)[self.order]
            return self.factor.map_of_points(points) / self.factor.scale
        return self._centred_product(A).T @ self.dual

    def extend(self, W):
        """``W @ V.T``: a map on the span as a map on the input space."""
        if not self.sparse:
            return W @ self.basis.T
        if self.factor is not None:
            # V^T = C^+ Xc / scale, and C^+ Xc = F^-1 (the first rank rows of
            # Xc in the coordinates' order, see _PivotedCholesky).
            B = self.factor.right_inverse_product(W) / self.factor.scale
            rows = self.X[self.order[: self.factor.rank]]
            return (rows.T @ B.T).T - np.outer(B.sum(axis=1), self.mean)
        B = W @ self.dual.T
        # B @ Xc = B @ X - (B 1) m^T, through the sparse X^T.
        return (self.X.T @ B.T).T - np.outer(B.sum(axis=1), self.mean)


# Gram eigenvalues below this fraction of the largest are taken again from
# products with the rows (see _refine_small_directions): ``eigh`` gives every
# eigenvalue to about ``eps`` of the largest, a relative error of 2e-8 at this
# fraction and of 100 % at the round-off cut. Not higher: wide sparse data can
# have hundreds of directions below 1e-6, whose products cost about as much as
# the span itself. See the design note, "The span's rank".
REFINE_BELOW = 1e-8


def _refine_small_directions(X, mean, U, tol):
    """The directions of small Gram eigenvalues, from products with the rows.

    ``U`` (n, m): eigenvectors of the centred rows' Gram matrix ``K = Xc
    Xc^T`` whose eigenvalues are small against the largest. ``eigh`` resolves
    them only to its round-off on the largest. Their span in the input space,
    ``Xc^T U``, formed by sparse products (round-off on the rows' own
    entries), gives them again (Rayleigh-Ritz): with ``Xc^T U = B0`` and
    ``B0^T B0 = Q diag(mu) Q^T``, the orthonormal directions are ``B = B0 Q
    mu^(-1/2)``. A mix of ``U`` with the span's dropped directions (below
    round-off) changes ``B0``'s squared norms only to second order.

    Returns ``dual`` (n, m') with ``B = Xc^T dual`` and the coordinates ``Xc
    B`` (n, m'), largest variance first, for the ``m'`` directions whose ``mu``
    stays above the span's cut ``tol``. ``B0`` is formed by blocks of columns
    of ``X`` (``BLOCK_ELEMENTS`` numbers at a time), never whole, and once:
    the same pass sums ``Xc B0`` block by block, and the coordinates are
    ``(Xc B0) Q mu^(-1/2)``.
    """
    n, d = X.shape
    m = U.shape[1]
    columns = sparse.csc_array(X)
    width = max(1, BLOCK_ELEMENTS // m)
    weights = U.sum(axis=0)
    M = np.zeros((m, m))
    coords = np.zeros((n, m))
    shift = np.zeros(m)
    for a in range(0, d, width):
        b = min(a + width, d)
        block = columns[:, a:b]
        B0 = block.T @ U - np.outer(mean[a:b], weights)
        M += B0.T @ B0
        coords += block @ B0
        shift += mean[a:b] @ B0
    mu, Q = linalg.eigh(M, check_finite=False)
    keep = mu > tol
    R = Q[:, keep][:, ::-1] / np.sqrt(mu[keep][::-1])
    return U @ R, (coords - shift) @ R


class _SparseGram:
    """The Gram matrix ``K = C C^T`` of a sparse span's coordinates ``C``.

    ``C`` holds the centred sparse rows ``rows`` (in the coordinates' order)
    in an orthonormal basis of their span, divided by ``scale``, so ``K =
    Xc Xc^T / scale^2`` (``Xc = rows - 1 m^T``); it is never formed whole,
    only its products and rows, through sparse products with the rows. (In
    principal coordinates the directions dropped as round-off are in it;
    they are below ``max(n, d) * eps`` of the largest.)
    """

    def __init__(self, rows, mean, scale=1.0):
        self.rows_ = rows
        # The transpose as CSR too: its products as fast as the rows' own.
        self.rows_t = sparse.csr_array(rows.T)
        self.mean = mean
        self.row_means = rows @ mean
        self.scale2 = scale**2

    def product(self, P, single=False):
        """``K P`` for ``P`` of shape (n, m), in float64 (``single`` ignored).

        ``Xc^T P = X^T P - m (1^T P)`` and ``Xc Z = X Z - 1 (m^T Z)``: two
        sparse products instead of an ``n x n x m`` dense one, cheaper than
        ``K`` in float32 for sparse rows (see the design note, "Performance
        notes").
        """
        Z = self.rows_t @ P - np.outer(self.mean, P.sum(axis=0))
        out = self.rows_ @ Z - (self.mean @ Z)[None, :]
        out /= self.scale2
        return out

    def sq_dists(self, rows, cols):
        """Squared distances of the pairs of coordinates ``(rows, cols)``.

        From the differences of the sparse rows themselves (a few hundred
        terms per pair, not one per dimension of the span: the coordinates of
        10,000 text-like rows have 9,999), exact to their round-off; the
        coordinates' own distances match them to about ``n`` unit round-offs
        (see :class:`_PivotedCholesky`).
        """
        out = np.empty(rows.size)
        # Chunks of about BLOCK_ELEMENTS stored entries per difference matrix.
        per_pair = 2 * max(1, self.rows_.nnz // max(1, self.rows_.shape[0]))
        step = max(1, BLOCK_ELEMENTS // per_pair)
        for start in range(0, rows.size, step):
            sl = slice(start, start + step)
            diff = self.rows_[rows[sl]] - self.rows_[cols[sl]]
            out[sl] = diff.multiply(diff).sum(axis=1)
        out /= self.scale2
        return out

    def rows(self, index):
        """``K[index]``, dense.

        ``Xc Xc^T = X X^T - (X m) 1^T - 1 (X m)^T + |m|^2``, the rows' sparse
        product less the centring terms.
        """
        out = (self.rows_[index] @ self.rows_t).toarray()
        out -= (
            self.row_means[index, None]
            + self.row_means[None, :]
            - self.mean @ self.mean
        )
        if self.scale2 != 1.0:
            out /= self.scale2
        return out

    def dense(self):
        """``K`` whole, formed by blocks of rows (see :meth:`rows`).

        The sparse product ``X X^T`` of all rows at once can hold more than
        the dense result (its indices); by blocks only a block's is alive.
        """
        n = self.rows_.shape[0]
        gram = np.empty((n, n))
        step = max(1, BLOCK_ELEMENTS // max(n, 1))
        for a in range(0, n, step):
            gram[a : a + step] = self.rows(np.arange(a, min(n, a + step)))
        return gram


class _HeldGram:
    """A Gram matrix ``K`` held whole, with :class:`_SparseGram`'s methods."""

    def __init__(self, K):
        self.K = K
        self._K32 = None

    def product(self, P, single=False):
        """``K P`` in float64; with ``single`` through a float32 copy of ``K``."""
        K = self.K
        if single:
            if self._K32 is None:
                self._K32 = K.astype(np.float32)
            K = self._K32
        return (K @ P.astype(K.dtype, copy=False)).astype(np.float64, copy=False)

    def rows(self, index):
        return self.K[index]


class _TriangularCoords:
    """Coordinates ``C`` (n x rank) of centred points whose first ``rank`` rows
    form an invertible lower triangular ``F`` (row ``i`` is 0 beyond its
    first ``i + 1`` entries, as the blocked passes use, see
    ``_PairScanner``'s ``lower_trapezoidal``).

    A centred ``n x k`` array ``Y`` in the span of ``C``'s columns is ``C A``
    for exactly one ``A = F^-1 Y[:rank]``: :meth:`map_of_points` costs one
    triangular solve. From a pivoted Cholesky factor of the points' Gram
    matrix (:class:`_PivotedCholesky`) or a QR factorization of the points
    (:func:`_qr_span`).
    """

    def __init__(self, coords, rank):
        self.coords = coords
        self.rank = rank
        self.F = coords[:rank]
        self.tail = coords[rank:]

    def serves(self, max_spread):
        """Whether the span takes this basis (see ``_Span``'s ``max_spread``).

        From ``CHOLESKY_MIN_SAMPLES`` points on whatever its spread; below,
        when :meth:`spread` is at most ``max_spread`` (never for None).
        """
        if self.coords.shape[0] >= CHOLESKY_MIN_SAMPLES:
            return True
        return max_spread is not None and self.spread() <= max_spread

    def spread(self, rtol=1e-3):
        """The ratio of the largest to the smallest eigenvalue of ``C^T C``.

        The spread of the span's variances (``col_sq`` of principal
        coordinates, see ``_active._whitening_scale``), here by Lanczos
        (ARPACK, from a start of a local generator) on ``C^T C`` and on its
        inverse (:meth:`cross_solve`), to ``rtol`` (the spread is compared with
        a limit of a thousand): two products of
        ``C`` or two triangular solves a step, ``O(n^2)`` numbers each,
        against the principal directions' ``O(n^3)``.
        """
        if self.rank < 2:
            return 1.0
        start = np.random.default_rng(0).standard_normal(self.rank)
        shape = (self.rank, self.rank)
        cross = LinearOperator(
            shape, matvec=lambda v: self.coords.T @ (self.coords @ v), dtype=float
        )
        inverse = LinearOperator(
            shape, matvec=lambda v: self.cross_solve(v.reshape(-1, 1)), dtype=float
        )
        try:
            largest = eigsh(cross, k=1, which="LA", v0=start, tol=rtol)[0]
            inverse_largest = eigsh(inverse, k=1, which="LA", v0=start, tol=rtol)[0]
        except ArpackNoConvergence:
            # Unknown: as wide as can be (the caller then keeps the principal
            # directions, which serve every fit).
            return np.inf
        return float(largest[0] * inverse_largest[0])

    def map_of_points(self, Y):
        """``A`` (k x rank) with ``C A^T`` the centred ``Y`` (n x k).

        ``Y`` minus its column means lies in the span of ``C``'s columns (up
        to round-off), and its first ``rank`` rows determine it.
        """
        Yc = Y[: self.rank] - Y.mean(axis=0)
        return linalg.solve_triangular(self.F, Yc, lower=True, check_finite=False).T

    def right_inverse_product(self, W):
        """``W F^-1`` for a map ``W`` (k x rank) on the coordinates."""
        return linalg.solve_triangular(
            self.F, W.T, lower=True, trans="T", check_finite=False
        ).T

    def cross_solve(self, B):
        """``(C^T C)^-1 B`` for ``B`` (rank x m).

        ``C^T C = F^T F + T^T T`` with ``T`` the ``n - rank`` rows of ``C``
        below ``F`` (one for centred points of rank ``n - 1``): the
        Sherman-Morrison-Woodbury formula around ``F^T F``, whose inverse is
        two triangular solves.
        """

        def inner_solve(R):
            H = linalg.solve_triangular(
                self.F, R, lower=True, trans="T", check_finite=False
            )
            return linalg.solve_triangular(self.F, H, lower=True, check_finite=False)

        A_B = inner_solve(B)
        if self.tail.shape[0] == 0:
            return A_B
        A_T = inner_solve(self.tail.T)
        capacitance = np.eye(self.tail.shape[0]) + self.tail @ A_T
        return A_B - A_T @ np.linalg.solve(capacitance, self.tail @ A_B)


class _PivotedCholesky(_TriangularCoords):
    """Coordinates of centred points from a pivoted Cholesky factor of their Gram.

    LAPACK's dpstrf factors ``P^T K P = L L^T`` with ``L`` lower trapezoidal
    of the numerical rank ``r`` of ``K`` (the diagonal pivoting stops where
    what is left of the diagonal is below ``tol``). ``C = L / scale`` holds
    the points in the pivots' order ``order`` (row ``i`` is point
    ``order[i]``), with ``C C^T = P^T K P / scale^2``: their coordinates in
    some orthonormal basis of their span (any two such are rotations of each
    other, so distances, the map's random start and every rotation-invariant
    quantity of the fit are those of the principal directions; the order of
    the points changes nothing either). Row ``i`` of ``C`` is 0 beyond its
    first ``i + 1`` entries. For centred points of rank ``r = n - 1`` (the
    columns of ``C`` are then centred too) the first ``r`` rows of ``C`` form
    an invertible lower triangular ``F`` (see :class:`_TriangularCoords`; a
    centred ``Y`` has its rows in the same order).

    Accuracy: the squared distances of these coordinates match those of the
    Gram matrix to the blocked factorization's round-off, about ``n`` unit
    round-offs (see the design note, "Triangular bases of the span").

    ``gram`` (C-ordered float64) is overwritten: its memory holds the
    coordinates.
    """

    def __init__(self, gram, tol):
        n = gram.shape[0]
        # In place: gram.T is Fortran-ordered and, gram being symmetric, the
        # same matrix. LAPACK's upper factor U (P^T K P = U^T U) read in C
        # order is L = U^T; the input's entries stay in the other triangle.
        U, piv, rank, info = lapack.dpstrf(gram.T, lower=0, tol=tol, overwrite_a=1)
        if info < 0:  # pragma: no cover - only for an invalid argument
            raise ValueError(f"LAPACK dpstrf failed with info={info}")
        self.order = piv - 1
        # Centred points have rank at most n - 1; a last pivot above tol is
        # round-off (its column of L has that one entry), and is left out.
        rank = min(int(rank), n - 1)
        # The rows of L[:, :rank] packed into a C-ordered n x rank array in
        # the same memory, zero beyond the trapezoid. Row i moves to offset
        # i * rank from i * n: no later row's entries are overwritten before
        # they are read (a copy and np.tril would take n^2 floats more).
        flat = U.T.reshape(-1)
        for i in range(n):
            m = min(i + 1, rank)
            if i:
                flat[i * rank : i * rank + m] = flat[i * n : i * n + m]
            flat[i * rank + m : (i + 1) * rank] = 0.0
        coords = flat[: n * rank].reshape(n, rank)
        # max |c| without np.abs's n x rank temporary (as large as the factor).
        self.scale = max(coords.max(), -coords.min()) if rank > 0 else 1.0
        coords /= self.scale
        super().__init__(coords, rank)


def _centred_rank(spectrum, tol, n_samples):
    """The span's dimensions: the singular values (or Gram eigenvalues) above
    ``tol``, at most ``n_samples - 1`` and at least one.

    Centred rows have rank at most ``n - 1``, but the centring's round-off can
    leave a direction above ``tol`` in their place: 300 rows of 600 features
    with a standard deviation of 0.04 around 5 had 300 singular values above
    it, the last (7e-13 of the largest, against ``tol``'s 1.3e-13) a rounding
    error. A fit on those coordinates divided by its squared norm (the
    embedded certificate's first dual vector, of norm 1e11) and crashed with
    NaN in the Lanczos recurrence. At least one direction, so that constant
    data still has a map.
    """
    return max(1, min(n_samples - 1, int(np.sum(spectrum > tol))))


def _qr_span(Xc):
    """An orthonormal basis of the span of dense centred rows ``Xc`` and their
    coordinates in it, lower trapezoidal, if the rows have rank ``n - 1``.

    Returns ``(basis, coords)`` (:class:`_TriangularCoords`) or None. The
    centred rows sum to 0, so the first ``n - 1`` span them all when their
    rank is ``n - 1``: with ``Xc[:-1]^T = Q R`` (Householder, backward stable
    as the SVD, and not squaring the condition number as the Gram matrix's
    factor would), their coordinates in the basis ``Q`` are ``R^T``, and the
    last row's are its products with ``Q``, several times faster than the
    SVD. A diagonal entry of ``R``
    below the SVD's round-off threshold gives None. Without pivoting the
    diagonal does not always reveal a lower rank (300 rows and a duplicate:
    a last entry of 9e-13 of the largest, against singular values of 3e-14
    and 1e-16 of it), but the spread of such a round-off direction, above
    1e20, does (see ``_Span``'s ``max_spread``).
    """
    n = Xc.shape[0]
    if n < 2 or Xc.shape[1] < n - 1:
        return None
    Q, R = linalg.qr(Xc[:-1].T, mode="economic", check_finite=False)
    diagonal = np.abs(np.diagonal(R))
    tol = diagonal.max(initial=0.0) * max(Xc.shape) * np.finfo(np.float64).eps
    if not diagonal.min() > tol:
        return None
    coords = np.empty((n, n - 1))
    coords[:-1] = R.T
    coords[-1] = Xc[-1] @ Q
    return Q, _TriangularCoords(coords, n - 1)


def _gamma(m):
    """Higham's ``gamma_m = m u / (1 - m u)``: the relative round-off bound of a
    sum of ``m`` products in float64."""
    u = 2.0**-53
    return m * u / (1.0 - m * u)


def gram_distance_rtol(rank, direct_factor=4.0):
    """Relative accuracy asked of Gram-form squared distances in ``rank`` dimensions.

    ``GRAM_RTOL``, or ``direct_factor`` times ``gamma_rank``, the bound of
    :func:`exact_sq_dists` itself, if larger. The Gram form's bound for
    near-orthogonal points is about twice the direct sum's, and that alone
    passes ``1e-12`` from about 4,500 dimensions on: every new pair was then
    gathered and measured directly, two rows of ``rank`` numbers each, most
    of a fit's time in thousands of dimensions. The factor keeps the stored
    distances within a few times the direct sum's own bound there, and
    changes nothing below about 2,300 dimensions (``4 gamma_rank`` below
    ``1e-12``).
    """
    return max(GRAM_RTOL, direct_factor * _gamma(rank))


def exact_sq_dists(X, rows, cols, chunk=1 << 18):
    """``||X[rows] - X[cols]||^2`` pair by pair, in chunks (no cancellation).

    Each chunk's difference matrix holds about ``chunk`` numbers.
    """
    out = np.empty(rows.size)
    step = max(1, chunk // max(X.shape[1], 1))
    if X.flags.f_contiguous and not X.flags.c_contiguous:
        # The rows of a Fortran-ordered X (the span of large sparse input: LAPACK's
        # eigenvectors) are the columns of the C-ordered X.T, gathered in place:
        # np.take along axis 0 would first copy all of X into C order, at each
        # call.
        XT = X.T
        for start in range(0, rows.size, step):
            sl = slice(start, start + step)
            diff = np.take(XT, rows[sl], axis=1)
            diff -= np.take(XT, cols[sl], axis=1)
            out[sl] = np.einsum("ij,ij->j", diff, diff)
        return out
    # Each chunk's differences by its pairs' difference operator: bit for bit
    # the gathered subtraction (see difference_matrix) at a third to half of
    # its cost (see the design note, "Performance notes").
    for start in range(0, rows.size, step):
        sl = slice(start, start + step)
        B = difference_matrix(rows[sl], cols[sl], X.shape[0])
        diff = B.astype(X.dtype, copy=False) @ X
        out[sl] = np.einsum("ij,ij->i", diff, diff)
    return out


class _PairScanner:
    """Ratios of all pairs of rows of the centred data ``X``, block by block.

    A block is ``rows_per_block`` rows against every later row, a dense
    ``(b - a, n - a)`` array whose entries ``j > i`` are the pairs (the rest,
    and coincident pairs, are NaN). Squared distances come from the Gram matrix
    of the centred data (a BLAS product per block); their reciprocals are
    stored, as dense blocks, while they fit (``STORE_BYTES_64`` in float64,
    ``STORE_BYTES_32`` in float32: a relative round-off of 6e-8, far inside
    ``SCAN_SLACK``), so that a pass is one product and a few in-place
    operations per block; beyond, they are recomputed at every pass (in
    float32, with a bound on their round-off, in a float32 pass).

    With ``lower_trapezoidal`` (the coordinates of a Cholesky factor, see
    ``_PivotedCholesky``: row ``i`` of ``X`` is 0 beyond its first ``i + 1``
    entries) the stored distances of rows ``a:b`` against the later ones
    need the first ``b`` columns only: a third of the products of all pairs.

    A pass runs in float32 only while its round-off bound, times the margin
    ``float32_margin``, is at most ``float32_share`` of the spread of the
    ratios (the candidates' margins, a large share of the spread, then shrink
    by at most 2 * 2 %), and while the distances it recomputes (beyond the
    stored ones) have a relative round-off bound of at most
    ``float32_distance_error``, so that coincident pairs stay apart from the
    others (see :meth:`_inv_sq_dists32`).
    """

    def __init__(
        self,
        X,
        lower_trapezoidal=False,
        *,
        float32_margin=2.0,
        float32_share=0.02,
        float32_distance_error=0.25,
    ):
        self.X = X
        self.float32_margin = float32_margin
        self.float32_share = float32_share
        self.float32_distance_error = float32_distance_error
        self.lower_trapezoidal = lower_trapezoidal
        n = X.shape[0]
        self.n = n
        self.sq_norms = np.einsum("ij,ij->i", X, X)
        self.threshold = COINCIDENT_RTOL * max(self.sq_norms.max(initial=0.0), 1e-300)
        self.blocks = row_blocks(n)
        self._tril = {}
        # 1 / the smallest squared distance of a non-coincident pair: known after
        # the first pass (at once, when the distances are stored). It bounds the
        # round-off of a float32 pass (see scan).
        self.max_inv = None
        # Bound on |scanned ratio - exact ratio| over all pairs in the last scan,
        # and the spread r_max - r_min it saw (None: no scan yet).
        self.error = 0.0
        self.spread = None
        # The largest |ratio| the last pass saw (scales a relative error bound).
        self.r_abs = 0.0
        # [x, |x|^2, 1] and [-2 x, 1, |x|^2] in float32, for the distances of a
        # float32 pass when they are not stored (see _inv_sq_dists32).
        self._gram32 = None
        # Consecutive points (i, i + 1) and their exact squared distances: the
        # first pass's stand-in for the spread of the ratios (see scan).
        self._chain = None
        self.stored = None
        elements = stored_elements(n)
        if 8 * elements <= STORE_BYTES_64:
            dtype = np.float64
        elif 4 * elements <= STORE_BYTES_32:
            dtype = np.float32
        else:
            return
        self.stored = [
            self._inv_sq_dists(a, b).astype(dtype, copy=False) for a, b in self.blocks
        ]
        self.max_inv = max(
            (float(np.fmax.reduce(inv, axis=None)) for inv in self.stored if inv.size),
            default=0.0,
        )
        if not np.isfinite(self.max_inv):
            # Every entry NaN: no pair to scan.
            self.max_inv = 0.0

    def stored_sq_dists(self, rows, cols):
        """Squared distances of pairs ``i < j`` from the stored float64 blocks.

        Returns ``(d2, ok)``: the Gram-form squared distances of the pass and
        where they are within ``gram_distance_rtol(rank)`` of the exact ones
        (relative: ``GRAM_RTOL`` below about 2,300 dimensions). The
        Gram form ``|x_i|^2 + |x_j|^2 - 2 x_i.x_j`` in ``d`` dimensions is off
        by at most ``gamma_(d+2) (|x_i| + |x_j|)^2`` (Higham: the dot product,
        the two norms and two additions; ``gamma_m = m u / (1 - m u)``), and
        the stored reciprocal and its inversion add two roundings. Pairs
        beyond the tolerance (near-coincident against their norms: the Gram
        form's cancellation), coincident pairs and data whose distances are
        not stored in float64 get ``ok`` False. For near-orthogonal points in
        1,500 dimensions the bound is about ``4e-13``, against ``gamma_d =
        1.7e-13`` of the direct sum :func:`exact_sq_dists` itself.
        """
        d2 = np.full(rows.size, np.nan)
        if self.stored is None or self.stored[0].dtype != np.float64:
            return d2, np.zeros(rows.size, dtype=bool)
        step = self.blocks[0][1] - self.blocks[0][0]
        block = rows // step
        for index in np.unique(block):
            sel = np.flatnonzero(block == index)
            a = self.blocks[index][0]
            flat = (rows[sel] - a) * (self.n - a) + (cols[sel] - a)
            d2[sel] = self.stored[index].ravel()[flat]
        np.divide(1.0, d2, out=d2)
        rank = self.X.shape[1]
        norms = np.sqrt(self.sq_norms)
        bound = _gamma(rank + 2) * (norms[rows] + norms[cols]) ** 2
        # The two roundings of the reciprocals, relative.
        bound += 2.5 * 2.0**-53 * d2
        ok = bound <= gram_distance_rtol(rank) * (d2 - bound)
        return d2, ok

    def _chain_spread(self, Y):
        """``r_max - r_min`` over the pairs of consecutive points under ``Y``."""
        if self._chain is None:
            first = np.arange(self.n - 1)
            d2 = exact_sq_dists(self.X, first, first + 1)
            keep = d2 > self.threshold
            self._chain = (first[keep], d2[keep])
        first, d2 = self._chain
        if first.size == 0:
            return 0.0
        diff = Y[first] - Y[first + 1]
        r = np.einsum("ij,ij->i", diff, diff) / d2
        return float(r.max() - r.min())

    def _inv_sq_dists32(self, a, b):
        """``1 / |x_i - x_j|^2`` of a block in float32 (see :meth:`scan`).

        Within a float32 pass only, where ``x_rel <=
        float32_distance_error``: every non-coincident pair's squared
        distance is at least ``1 / max_inv`` and its float32 value is off by
        at most ``x_rel / max_inv``, a coincident pair's is at most
        ``threshold + x_rel / max_inv`` (``threshold``: far below
        ``1 / max_inv`` there), so a cut at ``0.5 / max_inv`` tells them
        apart exactly. NaN where ``j <= i`` or coincident.
        """
        if self._gram32 is None:
            self._gram32 = _gram_factors(self.X, self.sq_norms, np.float32)
        left, right = self._gram32
        d2 = left[a:b] @ right[a:].T
        d2[:, : b - a][self._lower(b - a)] = np.nan
        np.copyto(d2, np.nan, where=d2 <= 0.5 / self.max_inv)
        return np.divide(1.0, d2, out=d2)

    def _lower(self, m):
        """Mask of the entries ``j <= i`` of a block's leading ``m x m`` square."""
        if m not in self._tril:
            self._tril[m] = np.tril(np.ones((m, m), dtype=bool))
        return self._tril[m]

    def _gram_block(self, a, b):
        """``|x_i|^2 + |x_j|^2 - 2 x_i.x_j`` for ``i`` in ``a:b``, ``j >= a``."""
        # Rows a:b of lower trapezoidal coordinates end at column b: the rest
        # of the dot products are exact zeros.
        width = b if self.lower_trapezoidal else self.X.shape[1]
        out = self.X[a:b, :width] @ self.X[a:, :width].T
        # Scaling by -2 is exact: the same numbers as a product with a kept
        # -2 X, without that copy of the coordinates (800 MB at 10,000 points).
        out *= -2.0
        out += self.sq_norms[a:b, None]
        out += self.sq_norms[None, a:]
        return out

    def _inv_sq_dists(self, a, b):
        """``1 / |x_i - x_j|^2`` of a block: NaN where ``j <= i`` or coincident."""
        d2 = self._gram_block(a, b)
        d2[:, : b - a][self._lower(b - a)] = np.nan
        np.copyto(d2, np.nan, where=d2 <= self.threshold)
        return np.divide(1.0, d2, out=d2)

    def scan(self, Y, n_extreme=0, band=np.inf, range_fraction=0.0, known=None):
        """Ratios of all pairs under ``Y = X M^T``.

        Returns ``(r_min, r_max, low, high)``: the extreme ratios over all
        non-coincident pairs, and the (at most ``n_extreme``) pairs with ratios
        below ``r_min * exp(band)`` and above ``r_max * exp(-band)``, each as an
        ``(rows, cols)`` pair of index arrays. The band is widened to
        ``range_fraction * log(r_max / r_min)`` if that is wider.

        One pass: each side keeps the ``n_extreme`` most extreme pairs seen so
        far, and a block contributes only its entries beyond the current
        ``n_extreme``-th (one comparison per pair and side, no sort of a block).

        Once the smallest pair distance is known, the embedded Gram form runs
        in float32 (half the time; distances that are not stored are then
        recomputed in float32 too): ``self.error`` is then a bound on how far
        every scanned ratio (``r_min``, ``r_max`` and the selection included)
        can lie from the exact one, for the caller to widen its margins by
        (0 for a float64 pass, whose round-off ``SCAN_SLACK`` covers).

        ``known = (low, high)``, if given, are bounds such that at least
        ``n_extreme`` pairs have ratios at most ``low`` and at least
        ``n_extreme`` at least ``high``, with the float64 pass's round-off
        included (for instance the last pass's candidates, re-measured at this
        map). Then the ``n_extreme`` most extreme pairs lie within them, and the
        pools start from them (widened by a float32 pass's error bound) instead
        of taking every entry of the first blocks: the same pools, without
        collecting and sorting out millions of entries per pass.
        """
        y_norms = np.einsum("ij,ij->i", Y, Y)
        k = Y.shape[1]
        unit = 2.0**-24
        q_error = np.inf
        if self.max_inv is not None:
            # Higham's bound for the float32 Gram form: rounding Y, its norms, a
            # k-term dot product and two additions move q = |y_i - y_j|^2 by at
            # most about (k + 8) u (|y_i|^2 + |y_j|^2 + 2 |y_i| |y_j|) <=
            # 4 (k + 8) u max|y|^2 (u = 2^-24), i.e. the ratio by that times
            # 1 / min d2; the stored reciprocal and the product add 3 u
            # relative. float32_margin doubles the whole.
            q_error = 4.0 * (k + 8) * unit * y_norms.max(initial=0.0) * self.max_inv
        # Distances not stored are recomputed per block, in float32 in a
        # float32 pass: the same bound for the Gram form of the data (d
        # dimensions) moves a squared distance by at most x_rel times itself
        # (relative to the smallest, 1 / max_inv), its reciprocal by
        # x_rel / (1 - x_rel). 0 for stored distances.
        x_rel = 0.0
        if self.stored is None:
            x_rel = np.inf
            # (max_inv is 0 when every pair is coincident: nothing to bound.)
            if self.max_inv:
                d = self.X.shape[1]
                x_rel = 4.0 * (d + 8) * unit * self.sq_norms.max() * self.max_inv
        # Float32 only while its error bound is a small share of the spread of
        # the ratios (at the last pass): near-duplicate points (a tiny smallest
        # distance) or a map whose ratios all but coincide keep float64.
        spread = self.spread
        if spread is None and np.isfinite(q_error):
            # The first pass, on stored distances: the spread over the pairs
            # of consecutive points (at most that of all pairs) decides, so
            # that it runs in float32 too (faster than float64).
            spread = self._chain_spread(Y)
        float32 = x_rel <= self.float32_distance_error and (
            q_error + x_rel * self.r_abs <= self.float32_share * (spread or 0.0)
        )
        dtype = np.float32 if float32 else np.float64
        # A float32 pass's scanned ratio r lies within error(r) of the exact
        # one: q's bound through the reciprocal (off by at most
        # x_rel / (1 - x_rel)), that relative error of r, and 3 u relative for
        # the stored (or computed) reciprocal and the product.
        if float32:
            shrink = 1.0 / (1.0 - x_rel)

            def error(r):
                return self.float32_margin * (
                    q_error * shrink + (x_rel * shrink + 3.0 * unit) * abs(r)
                )

        # A (k + 2)-term dot product per pair (see _gram_factors), within the
        # bound above.
        left, right = _gram_factors(Y, y_norms, dtype)
        m = max(n_extreme, 1)
        low, high = _MostExtreme(m, 1.0), _MostExtreme(m, -1.0)
        if known is not None and n_extreme:
            # A scanned ratio lies within this of the exact one (see the error
            # bound below); a float64 pass's round-off is in `known` already.
            lo, hi = known
            if float32:
                lo, hi = lo + error(lo), hi - error(hi)
            low.limit, high.limit = lo, -hi
        max_inv = 0.0
        for index, (a, b) in enumerate(self.blocks):
            # Negative round-off is clipped at 0 by the pools, on the entries
            # they take (see _MostExtreme.add), not over the whole block.
            r = left[a:b] @ right[a:].T
            if self.stored is not None:
                r *= self.stored[index]
            elif float32:
                r *= self._inv_sq_dists32(a, b)
            else:
                inv = self._inv_sq_dists(a, b)
                if inv.size:
                    max_inv = np.fmax(max_inv, np.fmax.reduce(inv, axis=None))
                r *= inv
            low.add(r, a, self.n - a)
            high.add(r, a, self.n - a)
        r_min, low = low.result()
        r_max, high = high.result()
        self.r_abs = max(abs(r_max), abs(r_min), 0.0) if np.isfinite(r_min) else 0.0
        if float32:
            self.error = error(self.r_abs)
        else:
            self.error = 0.0
            if self.stored is None:
                self.max_inv = float(max_inv) if np.isfinite(max_inv) else 0.0
        self.spread = float(r_max - r_min) if np.isfinite(r_min) else 0.0
        if not n_extreme or not np.isfinite(r_min):
            empty = (np.empty(0, dtype=np.intp),) * 2
            return float(r_min), float(r_max), empty, empty
        if range_fraction and r_min > 0:
            band = max(band, range_fraction * np.log(r_max / r_min))
        return (
            float(r_min),
            float(r_max),
            low.within(r_min * np.exp(band)),
            high.within(r_max * np.exp(-band)),
        )


def _gram_factors(Z, norms, dtype):
    """``[z, |z|^2, 1]`` and ``[-2 z, 1, |z|^2]``: their products are ``|z_i - z_j|^2``.

    In ``dtype``; ``norms`` are the rows' squared norms. A block's squared
    distances are then one product, with no passes over the block for the norms.
    """
    n, k = Z.shape
    left = np.empty((n, k + 2), dtype=dtype)
    right = np.empty((n, k + 2), dtype=dtype)
    left[:, :k] = Z
    left[:, k] = norms
    left[:, k + 1] = 1.0
    np.multiply(left[:, :k], -2.0, out=right[:, :k])
    right[:, k] = 1.0
    right[:, k + 1] = left[:, k]
    return left, right


class _MostExtreme:
    """The ``m`` smallest (``sign=1``) or largest (``sign=-1``) ratios seen so far.

    A block's entries enter only if they beat the current ``m``-th (NaN never
    does); the pool is cut back to ``m`` when it doubles, so after the first
    blocks almost nothing enters and the cost is one comparison per entry.
    ``limit`` may start below infinity when at least ``m`` keys are known to
    lie at or below it (see :meth:`_PairScanner.scan`'s ``known``).
    """

    def __init__(self, m, sign):
        self.m = m
        self.sign = sign
        self.limit = np.inf  # keys (sign * ratio) above it cannot enter
        self.parts = []
        self.size = 0

    def add(self, r, a, width):
        """Take the entries of a block ``r`` (rows from ``a``) beyond the limit.

        Negative entries (Gram-form round-off of a near-zero ratio) count as 0:
        the selection is that of ``max(r, 0)`` against the limit, without
        clipping the whole block.
        """
        if self.sign > 0:
            if self.limit < 0:
                return
            sel = np.flatnonzero(r <= self.limit)
        elif -self.limit > 0:
            sel = np.flatnonzero(r >= -self.limit)
        else:
            # Every ratio, clipped at 0, is at least the limit: all but NaN.
            sel = np.flatnonzero(~np.isnan(r))
        if sel.size == 0:
            return
        rows, cols = np.divmod(sel, width)
        key = np.maximum(r.ravel()[sel], 0.0)
        self.parts.append((rows + a, cols + a, np.multiply(key, self.sign, out=key)))
        self.size += sel.size
        if self.size >= 2 * self.m:
            self._cut()

    def _cut(self):
        rows, cols, key = (np.concatenate(p) for p in zip(*self.parts, strict=True))
        if key.size > self.m:
            keep = np.argpartition(key, self.m - 1)[: self.m]
            rows, cols, key = rows[keep], cols[keep], key[keep]
            self.limit = key.max()
        self.parts = [(rows, cols, key)]
        self.size = key.size

    def result(self):
        """The extreme ratio (inf / -inf if none) and the pool itself."""
        if not self.parts:
            return self.sign * np.inf, self
        self._cut()
        return self.sign * self.parts[0][2].min(), self

    def within(self, limit):
        """The pool's pairs with ratios on the extreme side of ``limit``."""
        if not self.parts:
            return (np.empty(0, dtype=np.intp),) * 2
        rows, cols, key = self.parts[0]
        inside = key <= self.sign * limit
        return rows[inside], cols[inside]


def row_blocks(n, min_blocks=16):
    """The ``(a, b)`` row ranges of a pass over ``n`` points.

    At most ``BLOCK_ELEMENTS`` entries per block, and at least
    ``min_blocks`` blocks: the first block seeds the pools of the most extreme
    pairs (every entry enters), the later ones are filtered against them.
    """
    rows_per_block = max(1, min(BLOCK_ELEMENTS // max(n, 1), -(-n // min_blocks)))
    return [(a, min(n, a + rows_per_block)) for a in range(0, n, rows_per_block)]


def stored_elements(n):
    """Entries of the dense blocks of a pass over ``n`` points."""
    return sum((b - a) * (n - a) for a, b in row_blocks(n))


def all_pairs(X):
    """Every non-coincident pair of rows of ``X`` with its exact squared distance."""
    n = X.shape[0]
    rows, cols = np.triu_indices(n, 1)
    sq_norms = np.einsum("ij,ij->i", X, X)
    threshold = COINCIDENT_RTOL * max(sq_norms.max(initial=0.0), 1e-300)
    d2 = exact_sq_dists(X, rows, cols)
    keep = d2 > threshold
    return rows[keep], cols[keep], d2[keep]
