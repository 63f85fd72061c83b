"""The smooth surrogate of the worst pairwise distortion, and its derivatives.

Private helpers of :class:`~skderand.embedding.LearnedJLTransformer`:
:class:`_PairObjective` is the surrogate (a soft-max over pairs of log distance
ratios, with a centring term) on a list of pairs, for the direct map ``M`` or
the Gaussian distribution ``M + sigma E``, with its gradient and exact
Hessian-vector products, in the map or in the embedded points;
:class:`_GramObjective` is the same over all pairs through the Gram matrix of
the embedded points. :func:`difference_matrix` is the pairs' difference
operator both use.
"""

import numpy as np
from scipy import sparse


def _compact_pairs(n, rows, cols):
    """The points that occur in the pairs, and the pairs in their numbering.

    Returns ``(used, ri, ci)``: the sorted indices of the points of ``0..n-1``
    in some pair, and ``rows``, ``cols`` as positions in ``used`` (what
    ``np.unique(..., return_inverse=True)`` gives, by a mask over the ``n``
    points instead of a sort of the ``2 * n_pairs`` indices).
    """
    mark = np.zeros(n, dtype=bool)
    mark[rows] = True
    mark[cols] = True
    used = np.flatnonzero(mark)
    position = np.empty(n, dtype=np.intp)
    position[used] = np.arange(used.size)
    return used, position[rows], position[cols]


def difference_matrix(ri, ci, n_points):
    """The pairs' difference operator: ``B @ Y`` is ``Y[ri] - Y[ci]``, exactly.

    A CSR array of shape ``(n_pairs, n_points)``; row ``p`` is +1 at ``ri[p]``
    and -1 at ``ci[p]``. The product sums ``1 * y_i`` and ``(-1) * y_j`` from
    0, each term exact, so it equals the subtraction bit for bit, at a third
    of the cost of two gathers.
    """
    m = ri.size
    if m and np.all(ri < ci):
        # Built in CSR form directly, the arrays the COO route below gives for
        # pairs i < j (a row's entries in column order), without its sort and
        # checks (a new objective every active-set round).
        # int64 indices, as the COO route gives for index arrays of intp.
        index_dtype = np.int64
        indices = np.empty(2 * m, dtype=index_dtype)
        indices[0::2] = ri
        indices[1::2] = ci
        data = np.empty(2 * m)
        data[0::2] = 1.0
        data[1::2] = -1.0
        indptr = np.arange(0, 2 * m + 1, 2, dtype=index_dtype)
        B = sparse.csr_array((data, indices, indptr), shape=(m, n_points), copy=False)
        B.has_sorted_indices = True
        return B
    data = np.concatenate([np.ones(m), -np.ones(m)])
    idx = np.concatenate([np.arange(m), np.arange(m)])
    return sparse.csr_array(
        (data, (idx, np.concatenate([ri, ci]))), shape=(m, n_points)
    )


def _weighted_transpose_product(BT, weighted, w, diff):
    """``B^T (w * diff)`` for the transposed difference operator ``BT``.

    The weights go into ``weighted`` (a copy of ``BT``, overwritten) instead
    of forming the ``(n_pairs, k)`` array ``w * diff``: each term ``(+-w_p) *
    diff_p`` equals ``(+-1) * (w_p * diff_p)`` exactly (a sign change is exact
    and rounding is symmetric) and the sums run in the same order, so the
    product is bit-identical, and faster.
    """
    np.take(w, BT.indices, out=weighted.data, mode="clip")
    np.multiply(weighted.data, BT.data, out=weighted.data)
    return weighted @ diff


class _WorkArrays:
    """Work arrays kept between evaluations, by name and dtype.

    ``work(name, shape, dtype)`` returns the array kept under that name and
    dtype if it has that shape, else a new one kept in its place (see
    :func:`_direct_surrogate`): a fresh array per operation can cost more in
    page faults than in arithmetic.
    """

    def __init__(self, dtype=np.float64, arrays=None):
        self.dtype = dtype
        self.arrays = {} if arrays is None else arrays

    def __call__(self, name, shape, dtype=None):
        dtype = self.dtype if dtype is None else dtype
        array = self.arrays.get((name, dtype))
        if array is None or array.shape != shape:
            array = self.arrays[name, dtype] = np.empty(shape, dtype=dtype)
        return array


class _PairList:
    """A list of pairs of points: their difference operator and distances.

    ``B`` (see :func:`difference_matrix`) gives the pairs' differences of any
    embedded points, and ``B^T`` with pair weights the Laplacian products of
    the surrogate's derivatives. Both, and the pairs' squared distances
    ``d2``, are made in float32 on first use (see :meth:`float32`).
    """

    def __init__(self, ri, ci, n_points, d2):
        self.B = difference_matrix(ri, ci, n_points)
        self.BT = self.B.T.tocsr()
        # B^T with its entries (+-1) times the pair weights, refilled by each
        # Laplacian product (see laplacian).
        self._BT_weighted = self.BT.copy()
        self.d2 = d2
        self._ops32 = None

    def float32(self):
        """``B``, ``B^T`` and the pairs' squared distances in float32 (made once)."""
        if self._ops32 is None:
            self._ops32 = (
                self.B.astype(np.float32),
                self.BT.astype(np.float32),
                self.d2.astype(np.float32),
            )
            self._BT32_weighted = self._ops32[1].copy()
        return self._ops32

    def sq_dists(self, Y):
        """``|y_i - y_j|^2`` of the pairs, and what :meth:`laplacian` reuses."""
        # The sparse product, not two gathers and a subtraction into kept work
        # arrays (the same numbers, three passes over (n_pairs, k) arrays
        # instead of one; see the design note, "Performance notes").
        # A float32 Y (the Hessian products of embedded_hessp) takes B in float32.
        B = self.float32()[0] if Y.dtype == np.float32 else self.B
        diff = B @ Y
        return np.einsum("ij,ij->i", diff, diff), diff

    def dots(self, Y, V, diff):
        """``(y_i - y_j) . (v_i - v_j)`` of the pairs, and ``B V`` (reused).

        The second is what :meth:`laplacian` takes as its ``diff`` for ``V``.
        """
        if diff.dtype == np.float32:
            # The float32 Hessian products of embedded_hessp.
            dV = self._ops32[0] @ V.astype(np.float32, copy=False)
        else:
            dV = self.B @ V
        return np.einsum("ij,ij->i", diff, dV), dV

    def laplacian(self, w, Y, diff=None):
        """``L_w Y``: row ``i`` is the sum of ``w_p (y_i - y_j)`` over its pairs.

        ``diff`` holds ``B Y`` if known (``Y`` is then not read); in float32,
        the product runs in float32.
        """
        if diff is None:
            diff = self.B @ Y
        if diff.dtype == np.float32:
            return _weighted_transpose_product(
                self._ops32[1], self._BT32_weighted, w, diff
            )
        return _weighted_transpose_product(self.BT, self._BT_weighted, w, diff)

    # d r_p / d M = 2 (M d_p) d_p^T / ||d_p||^2: the gradient is (L_c Y)^T X
    # for the pair weights c = 2 d f / d r / ||d||^2.
    gradient = laplacian


class _GramPairs:
    """Every pair of points, through the Gram matrix of their embedded points.

    For small ``n`` this is faster than a pair list: ``O(n^2 k)`` per product
    in BLAS and ``n^2 / 2`` elementwise operations. With ``lean`` the
    Laplacian and dot products go through the symmetric weight matrix (one
    product each, see :meth:`sym_laplacian`), as the lean evaluation of
    :class:`_GramObjective` does.
    """

    def __init__(self, X, threshold, lean=True):
        n = X.shape[0]
        sq = np.einsum("ij,ij->i", X, X)
        d2 = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
        # Each pair once: the strict upper triangle.
        self.valid = np.flatnonzero(np.triu(d2 > threshold, 1))
        self.rows, self.cols = np.divmod(self.valid, n)
        # The same pairs' entries of a transposed n x n matrix.
        self.valid_t = self.cols * n + self.rows
        self.n = n
        self.d2 = d2.ravel()[self.valid]
        self.lean = lean
        # Pair weights go into the strict upper triangle of this buffer; the
        # other entries stay 0.
        self._weights = np.zeros((n, n))
        # Both triangles of the weights of the lean products (see sym_laplacian).
        self._sym_weights = np.zeros((n, n))
        self._work = _WorkArrays()

    def sq_dists(self, Y):
        # Fresh arrays here and in gradient, not work arrays: kept n x n
        # buffers make the allocator return the derandomized evaluation's
        # many (n_pairs,) temporaries to the system, which then fault in
        # again (see the design note, "Rejected alternatives").
        sq = np.einsum("ij,ij->i", Y, Y)
        gram = (Y @ Y.T).ravel()
        return sq[self.rows] + sq[self.cols] - 2.0 * gram[self.valid], None

    def dots(self, Y, V, diff):
        if self.lean:
            # (y_i - y_j).(v_i - v_j) = T_ij + T_ji for T = [Y, own, 1]
            # [-V, 1/2, own/2]^T (own_i = y_i.v_i): one product, two gathers.
            k = Y.shape[1]
            left = np.empty((self.n, k + 2))
            right = np.empty((self.n, k + 2))
            left[:, :k] = Y
            np.einsum("ij,ij->i", Y, V, out=left[:, k])
            left[:, k + 1] = 1.0
            np.negative(V, out=right[:, :k])
            right[:, k] = 0.5
            np.multiply(left[:, k], 0.5, out=right[:, k + 1])
            T = (left @ right.T).ravel()
            return T[self.valid] + T[self.valid_t], None
        cross = (Y @ V.T).ravel()
        own = np.einsum("ij,ij->i", Y, V)
        dots = own[self.rows] + own[self.cols] - cross[self.valid] - cross[self.valid_t]
        return dots, None

    def laplacian(self, w, Y, diff=None):
        if self.lean:
            return self.sym_laplacian(w, Y)
        W = self._weights
        W.ravel()[self.valid] = w
        # A column of ones gives the degrees (row and column sums of the upper
        # triangle) within the same two products.
        Y1 = np.empty((self.n, Y.shape[1] + 1))
        Y1[:, :-1] = Y
        Y1[:, -1] = 1.0
        out = W @ Y1
        out += W.T @ Y1
        return out[:, -1:] * Y - out[:, :-1]

    def gradient(self, c, Y, diff=None):
        # The symmetric weight matrix itself (and not the two triangles of
        # laplacian): the stages' trajectories, hence their local optima, are
        # bit-identical to those of the full-matrix form used so far.
        W = self._weights
        # Halving and doubling are exact in floating point.
        W.ravel()[self.valid] = 0.5 * c
        C = W + W.T
        # d/dY of sum_{i<j} C_ij ||y_i - y_j||^2 = 2 (diag(C 1) - C) Y, C symmetric.
        return 2.0 * (C.sum(axis=1)[:, None] * Y - C @ Y)

    def sym_laplacian(self, w, Y):
        """``L_w Y`` through the symmetric weight matrix (one product)."""
        W = self._sym_weights
        flat = W.ravel()
        flat[self.valid] = w
        flat[self.valid_t] = w
        Y1 = self._work("Y1", (self.n, Y.shape[1] + 1))
        Y1[:, :-1] = Y
        Y1[:, -1] = 1.0
        out = W @ Y1
        return out[:, -1:] * Y - out[:, :-1]


class _PairObjective:
    """Smooth surrogate of the worst distortion of a list of pairs.

    For log-ratios ``l_p = log(||M d_p||^2 / ||d_p||^2)`` and sharpness ``beta``,
    the direct surrogate is the soft-max minus the soft-min of ``l``, i.e.
    ``LSE(beta l) / beta + LSE(-beta l) / beta``, which tends to
    ``log(r_max / r_min)`` as ``beta`` grows (within ``2 log(n_pairs) / beta``).
    It is invariant to the scale of ``M``; the term ``mean(l)^2 / 2`` pins that
    scale (ratios centred at 1) without changing the distortion.

    For the distribution ``A = M + sigma E`` (``E`` standard Gaussian) each pair's
    ratio has closed-form mean ``mu_p = r_p + k sigma^2`` and variance
    ``4 sigma^2 r_p + 2 k sigma^4``. Moment-matching a log-normal
    (``v_p = log(1 + var_p / mu_p^2)``, ``m_p = log mu_p - v_p / 2``), the
    risk-sensitive expectation ``log E sum_p exp(beta l_p) / beta`` is
    ``LSE(beta (m_p + beta v_p / 2)) / beta``; likewise for ``-l``. The lemma's
    penalty ``alpha * k * sigma^2`` is added. At ``sigma = 0`` this is the
    direct surrogate exactly.

    Every derivative with respect to ``M`` is a sum over pairs of ``w_p (M d_p)
    d_p^T``, i.e. ``(L_w Y)^T X`` with ``Y = X M^T`` and ``L_w`` the graph
    Laplacian of the pair weights ``w``: the pairs (``self.pairs``, a
    :class:`_PairList` here, :class:`_GramPairs` for :class:`_GramObjective`)
    form the embedded squared distances and apply ``L_w``. For the direct
    map, :meth:`hessp` is the exact Hessian-vector product (see its docstring).
    """

    def __init__(self, X, rows, cols, d2, n_components, *, derandomized, penalty):
        # Restrict the data to the rows that occur in a pair: the cost of an
        # evaluation is then O(n_used * d * k + n_pairs * k).
        used, ri, ci = _compact_pairs(X.shape[0], rows, cols)
        self._init(
            X,
            used,
            _PairList(ri, ci, used.size, d2),
            n_components,
            derandomized,
            penalty,
        )

    def _init(self, X, used, pairs, n_components, derandomized, penalty):
        # The rows of X in the pairs (see embedded), gathered on first use
        # (see the property X).
        self.used = used
        self._X_all, self._X = X, None
        self.pairs = pairs
        self.d2 = pairs.d2
        self.k = n_components
        self.d = X.shape[1]
        self.derandomized = derandomized
        self.penalty = penalty
        self.beta = 1.0
        # The pair quantities at the point of the last Hessian-vector products
        # (Lanczos asks for many at one point). Evaluations do not keep them:
        # holding their large arrays made the stages' allocations slower.
        self._hess_at = None
        # Work arrays reused by every evaluation, in float64 and in float32.
        self._work = _WorkArrays()
        self._work32 = _WorkArrays(np.float32, self._work.arrays)
        # The pair operators and distances in float32, and X (see single).
        self._single = None
        self._X32 = None

    @property
    def X(self):
        """The coordinates of the points in the pairs (rows ``used`` of the data).

        Gathered on first use: rounds on embedded points (see
        :meth:`embedded`) never use them, and the copies ``X[used]`` are
        costly in spans of many dimensions. When every point is used this is
        X itself, not a copy.
        """
        if self._X is None:
            X, used = self._X_all, self.used
            self._X = X if used.size == X.shape[0] else X[used]
        return self._X

    def single(self, products=False):
        """Evaluate the direct surrogate's pair terms in float32 from now on.

        The pairs' differences, squared distances, log-ratios, soft-max weights
        and Laplacian product run in float32 (half the memory traffic, twice the
        SIMD width of ``log`` and ``exp``); ``X M^T`` and the gradient's product
        with ``X`` stay in float64 unless ``products``. The log-ratios are then
        off by about ``1e-7``, the value and gradient by about ``1e-7 beta``
        relative: for the active-set rounds of low sharpness only (see
        ``skderand.embedding._stages._StageRounds``). Certificates,
        Hessian-vector products (unless asked for in float32, see
        :meth:`embedded_hessp`) and the derandomized surrogate stay float64.

        With ``products`` the two ``n x d x k`` products with ``X`` run in
        float32 too, on a float32 copy of ``X``: for the long rounds of tens of
        thousands of points, where they are most of an evaluation. In the
        short rounds ``X M^T`` stays float64 (see :meth:`_at_points_single`).
        """
        if products:
            self._X32 = self.X.astype(np.float32)
        self._single = self.pairs.float32()

    def split(self, z):
        kd = self.k * self.d
        M = z[:kd].reshape(self.k, self.d)
        sigma = z[kd] if self.derandomized else 0.0
        return M, sigma

    def ratios(self, M):
        return self.pairs.sq_dists(self.X @ M.T)[0] / self.d2

    def __call__(self, z):
        M, sigma = self.split(z)
        # X itself, or its float32 copy (see single); the solver always gets a
        # float64 gradient (the casts are no-ops in float64).
        X = self.X if self._X32 is None else self._X32
        value, grad_Y, d_sigma = self._at_points(
            X @ M.T.astype(X.dtype, copy=False), sigma
        )
        grad_M = (grad_Y.T @ X).astype(np.float64, copy=False)
        if not self.derandomized:
            return value, grad_M.ravel()
        return value, np.append(grad_M.ravel(), d_sigma)

    def _at_points(self, Y, sigma=0.0):
        """Value, ``d f / d Y`` and ``d f / d sigma`` at the embedded points ``Y``.

        ``Y`` holds the pairs' points (rows of ``self.X M^T``); the gradient in
        ``M`` is ``(d f / d Y)^T self.X``.
        """
        if self._single is not None and sigma == 0.0:
            return self._at_points_single(Y)
        q, diff = self.pairs.sq_dists(Y)
        r = _floored_ratios(q, self.d2)
        if sigma == 0.0:
            value, d_r, _, _ = _direct_surrogate(r, self.beta, work=self._work)
            d_sigma = 0.0
        else:
            value, d_r, d_sigma = _surrogate(r, sigma, self.k, self.beta, self.penalty)
        # 2 d_r / d2, in place: d_r is a work array or a fresh one.
        c = np.multiply(d_r, 2.0, out=d_r)
        grad_Y = self.pairs.gradient(np.divide(c, self.d2, out=c), Y, diff)
        return value, grad_Y, d_sigma

    def _at_points_single(self, Y):
        """:meth:`_at_points` of the direct map in float32 (see :meth:`single`)."""
        # X M^T stays float64 (rounded here): in float32 it cancels in the
        # low-variance directions and moves fits to worse basins (see the
        # design note, "Rejected alternatives").
        B, _, d2 = self._single
        diff = B @ Y.astype(np.float32, copy=False)
        # In place: the einsum's result is this evaluation's own array.
        r = _floored_ratios(np.einsum("ij,ij->i", diff, diff), d2, in_place=True)
        value, d_r, _, _ = _direct_surrogate(r, self.beta, work=self._work32)
        c = np.multiply(d_r, 2.0, out=d_r)
        np.divide(c, d2, out=c)
        return float(value), self.pairs.laplacian(c, None, diff), 0.0

    def embedded(self, Y):
        """Value and gradient of the direct surrogate in the embedded points.

        ``Y`` holds the embedded points of the pairs (rows of ``self.X M^T``);
        the gradient is ``d f / d Y``, so that :meth:`__call__`'s gradient in
        ``M`` is its transpose times ``self.X``: the same operations without
        that product and ``X M^T`` (the ``n x rank x k`` products that dominate
        an evaluation when the data's rank is about ``n``).
        """
        if self.derandomized:
            raise NotImplementedError("embedded is for the direct map only.")
        value, grad_Y, _ = self._at_points(Y)
        return value, grad_Y

    def hessp(self, z, v):
        """Exact Hessian-vector product of the surrogate at ``z``.

        For the derandomized surrogate see :meth:`_derandomized_hessp`; for the
        direct one:

        With ``g = d f / d l`` and ``H_l`` the Hessian in the log-ratios (of the
        two log-sum-exps, ``beta (diag(pi) - pi pi^T)`` each, and of the centring
        term, ``1 1^T / m^2``), and for a direction ``V`` the pair quantities
        ``s_p = (M d_p) . (V d_p)``, ``dl_p = 2 s_p / q_p``:
        ``H[V] = sum_p (alpha_p M d_p + gamma_p V d_p) d_p^T`` with
        ``alpha_p = 2 (H_l dl)_p / q_p - 4 g_p s_p / q_p^2`` and
        ``gamma_p = 2 g_p / q_p``. One product costs about one evaluation, half
        the two gradients of a central difference, and has no truncation error.
        """
        if self.derandomized:
            return self._derandomized_hessp(z, v)
        if self._hess_at is None or not np.array_equal(self._hess_at[0], z):
            self._hess_at = (z.copy(), *self._hess_setup(self.X @ self.split(z)[0].T))
        V = self.X @ v.reshape(self.k, self.d).T
        return (self._hess_points(V).T @ self.X).ravel()

    def _derandomized_hessp(self, z, v):
        """Exact Hessian-vector product of the derandomized surrogate at ``z``.

        The surrogate is ``F(a, b, sigma)`` of the pairs' log-normal parameters
        ``a_p = m_p`` and ``b_p = v_p`` (see the class docstring), each a function
        of the pair's ratio ``r_p`` and of ``sigma``
        (:func:`_lognormal_partials`). For a direction ``(V, tau)``, with
        ``dr_p = 2 (M d_p) . (V d_p) / |d_p|^2``, ``da = a_r dr + a_sigma tau``
        and ``db`` alike, the soft-max weights move by ``h = pi (du - pi . du)``
        per side (``du = beta (+-da + beta db / 2)``), so the derivatives
        ``g_a = pi_u - pi_l + mean(a) / m`` and ``g_b = beta (pi_u + pi_l) / 2``
        move by ``h_u - h_l + sum(da) / m^2`` and ``beta (h_u + h_l) / 2``. The
        ratio's derivative ``G_p = g_a a_r + g_b b_r`` then moves by those
        through ``a_r, b_r`` and by the second partials times ``(dr, tau)``,
        and the map's part of the product is ``sum_p (2 dG_p M d_p + 2 G_p V
        d_p) d_p^T / |d_p|^2``; the last entry is the same sum for ``sigma``
        plus the penalty's ``2 alpha k tau``. No step, hence no truncation
        error: central differences of gradients, with their step of ``eps^(1/3)
        |z|``, can be off by any amount at a map where a pair's ratio nearly
        vanishes (fits of ``k = 1`` on 30 points of rank 3 read 68,091, 5.4 or
        0.97 as the step shrank by 100 twice; this product, 0.68).
        """
        at = self._hess_at
        if at is None or not np.array_equal(at[0], z):
            M, sigma = self.split(z)
            Y = self.X @ M.T
            q, diff = self.pairs.sq_dists(Y)
            r = _floored_ratios(q, self.d2)
            a, b, a_partials, b_partials = _lognormal_partials(r, sigma, self.k)
            _, _, pi_u, pi_l, g_a = _lognormal_soft_extremes(a, b, self.beta)
            g_b = 0.5 * self.beta * (pi_u + pi_l)
            # The ratios' derivative (the gradient's pair weights before 2 / d2).
            G = g_a * a_partials[0] + g_b * b_partials[0]
            at = (z.copy(), Y, diff, a_partials, b_partials, pi_u, pi_l, g_a, g_b, G)
            self._hess_at = at
        _, Y, diff, a_partials, b_partials, pi_u, pi_l, g_a, g_b, G = at
        a_r, a_s, a_rr, a_rs, a_ss = a_partials
        b_r, b_s, b_rr, b_rs, b_ss = b_partials
        V, tau = self.split(v)
        Vy = self.X @ V.T
        s, dV = self.pairs.dots(Y, Vy, diff)
        dr = 2.0 * s / self.d2
        da = a_r * dr + a_s * tau
        db = b_r * dr + b_s * tau
        beta, m = self.beta, da.size
        du = beta * (da + 0.5 * beta * db)
        dl = beta * (-da + 0.5 * beta * db)
        h_u = pi_u * (du - pi_u @ du)
        h_l = pi_l * (dl - pi_l @ dl)
        dg_a = h_u - h_l + da.sum() / m**2
        dg_b = 0.5 * beta * (h_u + h_l)
        dG = (
            dg_a * a_r
            + dg_b * b_r
            + g_a * (a_rr * dr + a_rs * tau)
            + g_b * (b_rr * dr + b_rs * tau)
        )
        grad_Y = self.pairs.laplacian(
            2.0 * dG / self.d2, Y, diff
        ) + self.pairs.laplacian(2.0 * G / self.d2, Vy, dV)
        hv = (grad_Y.T @ self.X).ravel()
        d_sigma = np.sum(
            dg_a * a_s
            + dg_b * b_s
            + g_a * (a_rs * dr + a_ss * tau)
            + g_b * (b_rs * dr + b_ss * tau)
        )
        d_sigma += 2.0 * self.penalty * self.k * tau
        return np.append(hv, d_sigma)

    def embedded_hessp(self, Y, V, single=False):
        """The Hessian-vector product of :meth:`hessp` in the embedded points.

        ``Y`` and ``V`` hold the pairs' points (rows of ``self.X M^T`` and
        ``self.X v^T``); the product is the ``(n_used, k)`` array ``H_Y[V]``
        whose transpose times ``self.X`` is :meth:`hessp`'s, without the two
        ``n_used x d x k`` products (see :meth:`embedded`). With ``single``
        the pairs' terms run in float32, as :meth:`_at_points_single`
        evaluates, and so does the product: for the Lanczos products of the
        certificate on embedded points (see
        ``skderand.embedding._stages._embedded_certificate``), at half the
        memory traffic of float64.
        """
        if self.derandomized:
            raise NotImplementedError("hessp is exact for the direct map only.")
        at = self._hess_at
        if (
            at is None
            or not np.array_equal(at[0], Y)
            or (at[2].dtype == np.float32) != single
        ):
            Y = Y.copy()
            self._hess_at = (Y, *self._hess_setup(Y, single))
        return self._hess_points(V)

    def _hess_setup(self, Y, single=False):
        """The pair quantities at ``Y`` that every Hessian-vector product reuses.

        With ``single`` in float32 (see :meth:`embedded_hessp`): the pairs'
        products then follow in float32 (:meth:`_PairList.dots`,
        :meth:`_PairList.laplacian`).
        """
        q, diff = self.pairs.sq_dists(Y.astype(np.float32) if single else Y)
        work = _fresh32 if single else _fresh
        d2 = self.pairs.float32()[2] if single else self.d2
        _, _, d_l, soft = _direct_surrogate(
            _floored_ratios(q, d2), self.beta, work=work
        )
        return Y, q, diff, d_l, soft

    def _hess_points(self, V):
        """``H_Y[V]`` at the point of the last :meth:`_hess_setup`."""
        _, Y, q, diff, g, soft = self._hess_at
        s, dV = self.pairs.dots(Y, V, diff)
        q = np.maximum(q, _ratio_floor(q.dtype))
        dl = 2.0 * s / q
        a = np.full(q.size, dl.sum() / q.size**2, dtype=q.dtype)
        for pi in soft:
            t = pi * dl
            a += self.beta * (t - pi * t.sum())
        # 2 a / q - 4 g s / q^2, without q^2 (which float32 can overflow).
        alpha = 2.0 * (a - g * dl) / q
        gamma = 2.0 * g / q
        return self.pairs.laplacian(alpha, Y, diff) + self.pairs.laplacian(gamma, V, dV)


class _GramObjective(_PairObjective):
    """The same surrogate over all pairs, through the Gram matrix ``Y Y^T``.

    For small ``n`` this is faster than a pair list (see :class:`_GramPairs`).
    With ``lean`` the direct surrogate is evaluated by :meth:`_direct`;
    otherwise by the pair-vector arithmetic of :meth:`_PairObjective.__call__`,
    whose round-off the fits of fewer pairs follow.
    """

    def __init__(self, X, threshold, n_components, *, derandomized, penalty, lean=True):
        pairs = _GramPairs(X, threshold, lean=lean)
        used = np.arange(X.shape[0])
        self._init(X, used, pairs, n_components, derandomized, penalty)
        # The log-ratio is log q - log d2.
        self._neg_log_d2 = -np.log(self.d2)

    @property
    def lean(self):
        """Whether the direct surrogate is evaluated by :meth:`_direct`."""
        return self.pairs.lean

    def __call__(self, z):
        if self.derandomized or not self.lean:
            return super().__call__(z)
        return self._direct(z)

    def _direct(self, z):
        """Value and gradient of the direct surrogate in few passes.

        The same surrogate as :meth:`_PairObjective.__call__`, arranged for
        elementwise work on the pairs' vector only (each pass over 45,000
        pairs costs about as much as a 300 x 300 x 20 product): the squared
        distances come out of one product ``[Y, |y|^2, 1] [-2 Y, 1, |y|^2]^T``
        (no sums of gathered norms), the log-ratios as ``log q - log d2``, the
        soft-max weights from one shift, scale and exponential per side, and
        the gradient's pair weights as ``d f / d l_p / q_p`` (the factor
        ``d l / d q = 1 / q``, with 2 from ``d q / d y`` applied once to the
        product, not per pair).
        """
        k, n = self.k, self.pairs.n
        M = z.reshape(k, self.d)
        Y = self.X @ M.T
        left = self._work("left", (n, k + 2))
        right = self._work("right", (n, k + 2))
        left[:, :k] = Y
        np.einsum("ij,ij->i", Y, Y, out=left[:, k])
        left[:, k + 1] = 1.0
        np.multiply(Y, -2.0, out=right[:, :k])
        right[:, k] = 1.0
        right[:, k + 1] = left[:, k]
        # Into a kept n x n array: a fresh one each evaluation faulted its
        # pages in again.
        gram = np.matmul(left, right.T, out=self._work("gram", (n, n)))
        # mode="clip" skips the bounds checks (the indices are in range).
        q = np.take(
            gram,
            self.pairs.valid,
            out=self._work("q", self.pairs.valid.shape),
            mode="clip",
        )
        # Round-off can make a Gram-form q slightly negative; a collapsed pair
        # gets a tiny floor so that the log stays finite (a pass only then).
        if q.min() < 1e-300:
            np.maximum(q, 1e-300, out=q)
        log = np.log(q, out=self._work("log", q.shape))
        log += self._neg_log_d2
        centre = log.mean()
        beta = self.beta
        value = 0.5 * centre**2
        weights = self._work("weights", q.shape)
        work = self._work("work", q.shape)
        # The evaluated map's log-ratio range, kept for the dimension search
        # (it reads the all-pairs distortion, tanh of half the range, off it).
        self.log_range = (log.min(), log.max())
        filled = False
        for sign in (1.0, -1.0):
            top = self.log_range[1] if sign > 0 else self.log_range[0]
            # beta * (sign * l - max(sign * l)) <= 0.
            np.subtract(log, top, out=work)
            work *= sign * beta
            total, near = _exp_cut(work)
            value += (sign * beta * top + np.log(total)) / beta
            # d/dl of LSE(sign beta l) / beta = sign * softmax.
            if near is None:
                work *= sign / total
                if filled:
                    weights += work
                else:
                    # centre / size + work, as the fill and sum it replaces.
                    np.add(work, centre / q.size, out=weights)
            else:
                if not filled:
                    weights.fill(centre / q.size)
                weights[near] += work[near] * (sign / total)
            filled = True
        weights /= q
        grad_Y = self.pairs.sym_laplacian(weights, Y)
        grad_Y *= 2.0
        return value, (grad_Y.T @ self.X).ravel()


# Terms more than SOFTMAX_CUTOFF below the largest of a log-sum-exp weigh less
# than exp(-50) = 2e-22 of it each: even a billion of them change the sum by
# less than float64 round-off, so they are left out of the exponential (which,
# at high sharpness, spends its time on underflowing arguments).
SOFTMAX_CUTOFF = 50.0


def _exp_cut(t):
    """``exp`` of ``t <= 0`` in place, ignoring terms below ``-SOFTMAX_CUTOFF``.

    When more than half the terms count, ``t`` is clipped at the cutoff and
    exponentiated whole (a clipped term keeps ``exp(-SOFTMAX_CUTOFF)``, below
    the round-off of the sum). Otherwise only the terms above the cutoff are
    exponentiated in place and the other entries of ``t`` are left as they
    were. Returns the sum and the indices of the counted terms, or ``None``
    when ``t`` holds every exponential.
    """
    if t.min() > -SOFTMAX_CUTOFF:
        # Every term counts (low sharpness): one reduction instead of the
        # comparison, count and clip below.
        np.exp(t, out=t)
        return float(t.sum()), None
    above = t > -SOFTMAX_CUTOFF
    # Counted without forming the index array the common case does not use.
    if np.count_nonzero(above) > t.size // 2:
        np.maximum(t, -SOFTMAX_CUTOFF, out=t)
        np.exp(t, out=t)
        # exp(-50) = 2e-22 per term left in: below round-off of the sum.
        return float(t.sum()), None
    near = np.flatnonzero(above)
    values = np.exp(t[near])
    t[near] = values
    return float(values.sum()), near


def _fresh(name, shape, dtype=np.float64):
    """A new array each call: the work supplier when nothing is kept."""
    return np.empty(shape, dtype=dtype)


def _floored_ratios(q, d2, in_place=False):
    """The pairs' ratios ``q / d2`` from their embedded squared distances ``q``.

    Round-off can make a Gram-form ``q`` slightly negative; a collapsed pair
    (``r = 0``) gets a tiny floor so that the log stays finite (see
    :func:`_ratio_floor`). ``d2`` is in ``q``'s precision. With ``in_place``
    ``q`` itself is overwritten.
    """
    r = np.maximum(q, 0.0, out=q if in_place else None)
    r /= d2
    return np.maximum(r, _ratio_floor(q.dtype), out=r)


def _ratio_floor(dtype):
    """The floor of collapsed pairs' ratios: 1e-300, or float32's smallest
    normal number in float32 (1e-300 rounds to 0 there)."""
    return 1e-300 if dtype == np.float64 else np.finfo(dtype).tiny


def _fresh32(name, shape, dtype=np.float32):
    """:func:`_fresh` for float32 work."""
    return np.empty(shape, dtype=dtype)


def _direct_surrogate(r, beta, work=_fresh):
    """The direct surrogate from the ratios (``r`` already floored).

    Returns the value, its derivatives in the ratios and in their logs, and the
    two soft-max weight vectors (which :meth:`_PairObjective.hessp` reuses).

    ``work(name, shape)`` supplies the arrays the results are written to. The
    objectives pass one that keeps them between evaluations (a fresh array
    per operation can cost more in page faults than in arithmetic); the
    operations, hence the results, are the same. Results in kept arrays are
    overwritten by the next call.
    """
    mlog = np.log(r, out=work("log", r.shape))
    centre = mlog.mean()
    upper = np.multiply(mlog, beta, out=work("upper", r.shape))
    lower = np.multiply(mlog, -beta, out=work("lower", r.shape))
    lse, pi_u, pi_l = _soft_extremes(upper, lower, work)
    value = lse / beta + 0.5 * centre**2
    # pi_u - pi_l + centre / size, then / r.
    d_l = np.subtract(pi_u, pi_l, out=work("d_l", r.shape))
    d_l += centre / mlog.size
    return value, np.divide(d_l, r, out=work("d_r", r.shape)), d_l, (pi_u, pi_l)


def _soft_extremes(upper, lower, work=_fresh):
    """``LSE(upper) + LSE(lower)`` and both soft-max weight vectors, one exp each.

    ``upper`` and ``lower`` are overwritten by their weight vectors (every
    caller passes arrays it does not need afterwards); ``work`` supplies the
    mask of the terms that count (see :func:`_direct_surrogate`).
    """
    out = []
    for t in (upper, lower):
        top = t.max()
        shifted = np.subtract(t, top, out=t)
        near = np.greater(shifted, -SOFTMAX_CUTOFF, out=work("near", (t.size,), bool))
        n_near = np.count_nonzero(near)
        if n_near == t.size:
            # Low sharpness: every term counts.
            e = np.exp(shifted, out=shifted)
        elif n_near > t.size // 2:
            e = np.maximum(shifted, -SOFTMAX_CUTOFF, out=shifted)
            np.exp(e, out=e)
            np.multiply(e, near, out=e)
        else:
            near = np.flatnonzero(near)
            values = np.exp(shifted[near])
            e = shifted
            e.fill(0.0)
            e[near] = values
        total = e.sum()
        out.append((top + np.log(total), np.divide(e, total, out=e)))
    (lse_u, pi_u), (lse_l, pi_l) = out
    return lse_u + lse_l, pi_u, pi_l


def _surrogate(r, sigma, k, beta, penalty):
    """The surrogate from the pairs' ratios: value, d/d ratio, d/d sigma."""
    # A collapsed pair (r = 0) gets a tiny floor so that the log stays finite.
    r = np.maximum(r, 1e-300)
    if sigma == 0.0:
        # The direct map (and sigma exactly 0): the log-normal terms vanish.
        value, d_r, _, _ = _direct_surrogate(r, beta)
        return value, d_r, 0.0
    s2 = sigma * sigma
    mu, var, rho, v, mlog = _lognormal_moments(r, sigma, k)
    lse, centre, pi_u, pi_l, dm = _lognormal_soft_extremes(mlog, v, beta)
    value = lse / beta + 0.5 * centre**2 + penalty * k * s2
    dv = 0.5 * beta * (pi_u + pi_l) - 0.5 * dm
    dv_drho = dv / (1.0 + rho)
    mu3 = mu * mu * mu
    d_r = dm / mu + dv_drho * (4.0 * s2 / (mu * mu) - 2.0 * var / mu3)
    d_sigma = np.sum(
        dm / mu * 2.0 * k * sigma
        + dv_drho
        * (
            (8.0 * sigma * r + 8.0 * k * s2 * sigma) / (mu * mu)
            - 4.0 * k * sigma * var / mu3
        )
    )
    d_sigma += 2.0 * penalty * k * sigma
    return value, d_r, d_sigma


def _lognormal_moments(r, sigma, k):
    """The log-normal moment match of the pairs' ratios ``r`` (floored) under
    ``A = M + sigma E``: ``mu = r + k sigma^2``, ``var = 4 sigma^2 r + 2 k
    sigma^4``, ``rho = var / mu^2``, ``v = log(1 + rho)`` and ``m = log mu - v
    / 2`` (see :class:`_PairObjective`)."""
    s2 = sigma * sigma
    mu = r + k * s2
    var = 4.0 * s2 * r + 2.0 * k * s2 * s2
    rho = var / (mu * mu)
    v = np.log1p(rho)
    mlog = np.log(mu) - 0.5 * v
    return mu, var, rho, v, mlog


def _lognormal_soft_extremes(mlog, v, beta):
    """The derandomized surrogate's two log-sum-exps from ``m`` and ``v``.

    Returns ``LSE(upper) + LSE(lower)`` for ``upper = beta (m + beta v / 2)``
    and ``lower = beta (-m + beta v / 2)``, the centre ``mean(m)``, both
    soft-max weight vectors and the derivative in ``m`` (the soft-max terms'
    and the centring term's) ``pi_u - pi_l + mean(m) / size``.
    """
    upper = beta * (mlog + 0.5 * beta * v)
    lower = beta * (-mlog + 0.5 * beta * v)
    centre = mlog.mean()
    lse, pi_u, pi_l = _soft_extremes(upper, lower)
    return lse, centre, pi_u, pi_l, pi_u - pi_l + centre / mlog.size


def _lognormal_partials(r, sigma, k):
    """The pairs' log-normal parameters and their partial derivatives.

    For ``mu = r + k sigma^2``, ``var = 4 sigma^2 r + 2 k sigma^4`` and ``rho =
    var / mu^2`` (see :func:`_surrogate`): ``a = log mu - b / 2`` and ``b =
    log(1 + rho)``. Returns ``a``, ``b``, ``(a_r, a_s, a_rr, a_rs, a_ss)`` and
    ``(b_r, b_s, b_rr, b_rs, b_ss)``, subscripts ``r`` and ``s`` for the
    partial derivatives in the ratio and in ``sigma`` (what
    :meth:`_PairObjective._derandomized_hessp` needs). ``r`` is floored as
    the surrogate's.
    """
    r = np.maximum(r, 1e-300)
    s2 = sigma * sigma
    mu, var, rho, b, a = _lognormal_moments(r, sigma, k)
    # Partials of mu (mu_r = 1, mu_rr = mu_rs = 0) and of var (var_rr = 0).
    mu_s, mu_ss = 2.0 * k * sigma, 2.0 * k
    var_r = 4.0 * s2
    var_s = 8.0 * sigma * r + 8.0 * k * s2 * sigma
    var_rs, var_ss = 8.0 * sigma, 8.0 * r + 24.0 * k * s2
    mu2 = mu * mu
    mu3 = mu2 * mu
    mu4 = mu3 * mu
    # The quotient rule twice for rho = var mu^-2.
    rho_r = var_r / mu2 - 2.0 * var / mu3
    rho_s = var_s / mu2 - 2.0 * var * mu_s / mu3
    rho_rr = -4.0 * var_r / mu3 + 6.0 * var / mu4
    rho_rs = var_rs / mu2 - 2.0 * (var_r * mu_s + var_s) / mu3 + 6.0 * var * mu_s / mu4
    rho_ss = (
        var_ss / mu2
        - (4.0 * var_s * mu_s + 2.0 * var * mu_ss) / mu3
        + 6.0 * var * mu_s * mu_s / mu4
    )
    w = 1.0 / (1.0 + rho)
    b_r, b_s = rho_r * w, rho_s * w
    b_rr = rho_rr * w - b_r * b_r
    b_rs = rho_rs * w - b_r * b_s
    b_ss = rho_ss * w - b_s * b_s
    a_r = 1.0 / mu - 0.5 * b_r
    a_s = mu_s / mu - 0.5 * b_s
    a_rr = -1.0 / mu2 - 0.5 * b_rr
    a_rs = -mu_s / mu2 - 0.5 * b_rs
    a_ss = mu_ss / mu - mu_s * mu_s / mu2 - 0.5 * b_ss
    return a, b, (a_r, a_s, a_rr, a_rs, a_ss), (b_r, b_s, b_rr, b_rs, b_ss)
