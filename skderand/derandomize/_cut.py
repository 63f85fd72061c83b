"""The smoothed expected cut of ``sign(V z + mu + tau g)`` in closed form.

:class:`CutExpectation` is the expectation of the rounding of a weighted cut
(MAXCUT, and through one extra vertex QUBO, Ising, MAX-2-SAT and MAX-DICUT);
the functions below are its kernel, the separation probability of two signs of
a bivariate normal.

Vertex ``i`` is put on side ``sign(y_i)`` with ``y_i = v_i . z + mu_i + tau g_i``,
``z ~ N(0, I_r)`` shared by all vertices and ``g ~ N(0, I_n)`` independent noise
that makes the expectation smooth. ``(y_i, y_j)`` is bivariate normal, so with
``s_i = sqrt(tau**2 + |v_i|**2)``, ``h = mu_i / s_i``, ``k = mu_j / s_j`` and
``rho = v_i . v_j / (s_i s_j)``::

    P[i, j separated] = Phi(h) + Phi(k) - 2 Phi_2(h, k; rho)
                      = 2 (T(h, a_h) + T(k, a_k)) + 2 beta

by Owen's representation of ``Phi_2`` (``T`` is Owen's T function,
``a_h = (k - rho h) / (h sqrt(1 - rho**2))``, ``beta = 1/2`` when ``h`` and ``k``
have opposite signs). The derivatives are the textbook ones,
``dP/dh = phi(h) (1 - 2 Phi((k - rho h) / sqrt(1 - rho**2)))`` and
``dP/drho = -2 phi_2(h, k; rho)``; they hold at ``h = 0`` too, where Owen's form
divides by zero, so only the value needs a guard there. ``tau > 0`` keeps
``|rho| <= |v_i| |v_j| / (s_i s_j) < 1`` and the formulas well conditioned.

Near the end of the rounding ``V`` is driven to zero and so is every ``rho``;
there Owen's T (most of the cost of an evaluation) is replaced by Mehler's
expansion ``Phi_2(h, k; rho) = Phi(h) Phi(k) + phi(h) phi(k) sum_n
rho**(n+1) / (n+1)! He_n(h) He_n(k)`` (``He_n`` the probabilists' Hermite
polynomials), truncated after ``n = 3``. By Cramer's inequality
``|He_n(x)| <= 1.0865 sqrt(n!) exp(x**2 / 4)``, each omitted term is at most
``0.19 |rho|**(n+1) / (n+1)``, so for ``|rho| <= 1e-3`` the truncation changes
the separation probability by less than ``4e-16``.
"""

import numpy as np
from scipy import sparse
from scipy.special import ndtr, owens_t

from skderand.derandomize._protocol import RoundingExpectation

_SQRT_2PI = np.sqrt(2.0 * np.pi)
# Correlations up to this magnitude use Mehler's series (module docstring: the
# truncation error is below 4e-16 there), larger ones Owen's T.
_SERIES_MAX_RHO = 1e-3
# Owen's form divides by h and k: below this magnitude they are moved to +-_TINY,
# which changes the probability by O(_TINY) (the function is continuous there).
_TINY = 1e-12


def _away_from_zero(x):
    # One pass each: |x| floored at _TINY, the sign of x kept.
    return np.copysign(np.maximum(np.abs(x), _TINY), x)


def separation_probability(h, k, rho):
    """``P[sign(X) != sign(Y)]`` for a bivariate normal with means ``h, k``.

    Unit variances and correlation ``rho`` (``|rho| < 1``); vectorized.
    """
    h, k, rho = np.broadcast_arrays(
        np.asarray(h, dtype=np.float64),
        np.asarray(k, dtype=np.float64),
        np.asarray(rho, dtype=np.float64),
    )
    small = np.abs(rho) <= _SERIES_MAX_RHO
    if small.all():
        return _separation_series(h, k, rho)[()]
    if not small.any():
        return _separation_owen(h, k, rho)[()]
    out = np.empty(h.shape)
    out[small] = _separation_series(h[small], k[small], rho[small])
    large = ~small
    out[large] = _separation_owen(h[large], k[large], rho[large])
    return out[()]


def _separation_series(h, k, rho, tails=None):
    """Mehler's expansion of the separation probability (small ``|rho|``).

    ``tails``, if given, is ``(Phi(h), Phi(-h), Phi(k), Phi(-k))`` computed by
    the caller (per vertex, then gathered per edge: the same values for a
    fraction of the cost).
    """
    if tails is None:
        tails = ndtr(h), ndtr(-h), ndtr(k), ndtr(-k)
    cdf_h, cdf_minus_h, cdf_k, cdf_minus_k = tails
    # Phi(h) + Phi(k) - 2 Phi(h) Phi(k), written without cancellation.
    product_part = cdf_h * cdf_minus_k + cdf_minus_h * cdf_k
    phi_phi = np.exp(-0.5 * (h * h + k * k)) / (2.0 * np.pi)
    hk = h * k
    he2 = (h * h - 1.0) * (k * k - 1.0)
    he3 = hk * (h * h - 3.0) * (k * k - 3.0)
    series = rho * (1.0 + rho * (hk / 2.0 + rho * (he2 / 6.0 + rho * he3 / 24.0)))
    return product_part - 2.0 * phi_phi * series


def _separation_owen(h, k, rho):
    """The separation probability by Owen's T function (any ``|rho| < 1``)."""
    h = _away_from_zero(h)
    k = _away_from_zero(k)
    root = np.sqrt(1.0 - rho * rho)
    t = owens_t(h, (k - rho * h) / (h * root)) + owens_t(k, (h - rho * k) / (k * root))
    return 2.0 * t + (h * k < 0)


def _normal_density(x):
    return np.exp(-0.5 * x * x) / _SQRT_2PI


def separation_gradient(h, k, rho, densities=None):
    """Partial derivatives of :func:`separation_probability` in ``h, k, rho``.

    ``densities``, if given, is ``(phi(h), phi(k))`` computed by the caller
    (per vertex, then gathered per edge: the same values for fewer
    exponentials).
    """
    root = np.sqrt(1.0 - rho * rho)
    if densities is None:
        densities = _normal_density(h), _normal_density(k)
    phi_h, phi_k = densities
    d_h = phi_h * (1.0 - 2.0 * ndtr((k - rho * h) / root))
    d_k = phi_k * (1.0 - 2.0 * ndtr((h - rho * k) / root))
    quad = (h * h - 2.0 * rho * h * k + k * k) / (root * root)
    d_rho = -np.exp(-0.5 * quad) / (np.pi * root)
    return d_h, d_k, d_rho


def separation_hessian(h, k, rho, d_h, d_k, d_rho):
    """Second partial derivatives of :func:`separation_probability`.

    ``d_h, d_k, d_rho`` are :func:`separation_gradient` at the same point
    (reused: each second derivative is a rational function of them and of the
    bivariate normal density ``phi_2 = -d_rho / 2``). Returns
    ``(P_hh, P_hk, P_kk, P_hrho, P_krho, P_rhorho)``.

    With ``R**2 = 1 - rho**2`` and ``Q = h**2 - 2 rho h k + k**2``:
    ``P_hh = -h P_h + 2 rho phi_2`` (the derivative of ``phi(h)`` and of
    ``Phi((k - rho h) / R)``, whose density times ``phi(h) / R`` is ``phi_2``),
    ``P_hk = P_rho = -2 phi_2``, ``P_hrho = d P_rho / d h = 2 phi_2 (h - rho k) / R**2``
    and ``P_rhorho = -2 phi_2 (rho + h k - rho Q / R**2) / R**2`` from
    ``log phi_2 = -log(2 pi R) - Q / (2 R**2)``.
    """
    phi2 = -0.5 * d_rho
    one_minus = 1.0 - rho * rho
    two_phi2_over = 2.0 * phi2 / one_minus
    quad = (h * h - 2.0 * rho * h * k + k * k) / one_minus
    p_hh = 2.0 * rho * phi2 - h * d_h
    p_kk = 2.0 * rho * phi2 - k * d_k
    p_hk = d_rho
    p_hr = two_phi2_over * (h - rho * k)
    p_kr = two_phi2_over * (k - rho * h)
    p_rr = -two_phi2_over * (rho + h * k - rho * quad)
    return p_hh, p_hk, p_kk, p_hr, p_kr, p_rr


def symmetric_zero_diagonal(A, subject, symbol):
    """``A`` as a new CSR matrix with a zero diagonal, checked square and symmetric.

    The caller's matrix is never modified. The errors name ``subject`` (what
    the user passed) and write the asymmetry as ``|symbol - symbol.T|``.
    """
    if A.shape[0] != A.shape[1]:
        raise ValueError(
            f"{subject} must be a square adjacency matrix; got shape {A.shape}."
        )
    A = sparse.csr_matrix(A, dtype=np.float64, copy=True)
    A.setdiag(0.0)
    A.eliminate_zeros()
    asymmetry = abs(A - A.T).max() if A.nnz else 0.0
    scale = abs(A).max() if A.nnz else 0.0
    if asymmetry > 1e-10 * max(scale, 1e-300):
        raise ValueError(
            f"{subject} must be symmetric (an undirected graph); the largest "
            f"|{symbol} - {symbol}.T| entry is {asymmetry:.3g}."
        )
    return A


class CutExpectation(RoundingExpectation):
    """Smoothed expected weight of the cut ``sign(V z + mu + tau g)``.

    Vertex ``i`` is put on the side ``sign(y_i)`` of ``y_i = v_i . z + mu_i +
    tau g_i``, with ``z`` standard Gaussian and shared, ``g`` independent
    standard Gaussian noise that makes the expectation smooth in ``mu``. The
    expected weight of the edges between the two sides is computed exactly
    (see Notes), with its gradient and exact Hessian-vector products, in
    ``O(n_edges * rank)`` per evaluation.

    Parameters
    ----------
    adjacency : {array-like, sparse matrix} of shape (n_vertices, n_vertices)
        Symmetric weighted adjacency matrix; signed weights allowed, the
        diagonal ignored.
    tau : float, default=0.1
        Standard deviation of the smoothing noise.

    Attributes
    ----------
    n_coordinates : int
        Number of vertices.
    adjacency : scipy.sparse.csr_matrix
        The adjacency matrix (zero diagonal).
    rows, cols, weights : ndarray of shape (n_edges,)
        Each edge once, ``rows < cols``.

    See Also
    --------
    IsingExpectation : Ising, QUBO, MAX-2-SAT and MAX-DICUT as a cut.
    skderand.DeterministicMaxCut : The estimator built on this expectation.

    Notes
    -----
    With ``s_i = sqrt(tau**2 + |v_i|**2)``, ``a_i = mu_i / s_i`` and
    ``rho_ij = v_i . v_j / (s_i s_j)``, ``P[i, j separated] = Phi(a_i) +
    Phi(a_j) - 2 Phi_2(a_i, a_j; rho_ij)``, with ``Phi_2`` the bivariate
    normal distribution function (computed through Owen's T function, or
    Mehler's series where ``|rho|`` is tiny).

    The finishing step (:meth:`finish`) is exact: at ``V = 0`` the sides are
    independent with ``P[s_i = 1] = Phi(mu_i / tau)``, and the expected cut is
    multilinear in these probabilities, so setting them one at a time to the
    better of 0 and 1 never lowers it.

    Examples
    --------
    >>> import numpy as np
    >>> from skderand.derandomize import CutExpectation
    >>> triangle = np.ones((3, 3)) - np.eye(3)
    >>> cut = CutExpectation(triangle, tau=0.1)
    >>> V = np.eye(3)  # independent signs: each edge is cut half the time
    >>> round(cut.value(V, np.zeros(3)), 6)
    1.5
    >>> cut.solution_value(np.array([1.0, 1.0, -1.0]))
    2.0
    """

    exact_finish = True

    def __init__(self, adjacency, tau=0.1):
        A = sparse.csr_matrix(adjacency, dtype=np.float64)
        if not np.all(np.isfinite(A.data)):
            raise ValueError("adjacency contains NaN or infinite entries.")
        A = symmetric_zero_diagonal(A, "adjacency", "A")
        upper = sparse.triu(A, k=1).tocoo()
        self._setup(
            A.shape[0],
            upper.row.astype(np.int64),
            upper.col.astype(np.int64),
            upper.data,
            tau,
        )

    @classmethod
    def from_edges(cls, n_vertices, rows, cols, weights, tau=0.1):
        """The cut of a graph given as an edge list, each edge once.

        Parameters
        ----------
        n_vertices : int
        rows, cols, weights : array-like of shape (n_edges,)
            The edges ``(rows[e], cols[e])`` and their weights, each edge
            once and no self-loop.
        tau : float, default=0.1
            Standard deviation of the smoothing noise.

        Returns
        -------
        CutExpectation
        """
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float64)
        if not rows.shape == cols.shape == weights.shape or rows.ndim != 1:
            raise ValueError("rows, cols and weights must be 1-D of one length.")
        if rows.size and (
            min(rows.min(), cols.min()) < 0 or max(rows.max(), cols.max()) >= n_vertices
        ):
            raise ValueError(f"An edge names a vertex outside [0, {n_vertices}).")
        if np.any(rows == cols):
            raise ValueError("An edge joins a vertex to itself.")
        keys = np.minimum(rows, cols) * int(n_vertices) + np.maximum(rows, cols)
        if np.unique(keys).size != keys.size:
            raise ValueError("An edge is listed twice; give each edge once.")
        if not np.all(np.isfinite(weights)):
            raise ValueError("weights contain NaN or infinite entries.")
        self = cls.__new__(cls)
        self._setup(int(n_vertices), rows, cols, weights, tau)
        return self

    def _setup(self, n, rows, cols, weights, tau):
        self.n_coordinates = n
        self.rows = rows
        self.cols = cols
        self.weights = weights
        self.tau = float(tau)
        self.mu_scale = self.tau
        m = rows.size
        # A symmetric CSR pattern whose data are refilled from per-edge values, so
        # the sum over neighbours sum_j c_ij v_j is one sparse product per call.
        pattern = sparse.csr_matrix(
            (
                np.concatenate([np.arange(m), np.arange(m)]) + 1.0,
                (np.concatenate([rows, cols]), np.concatenate([cols, rows])),
            ),
            shape=(n, n),
        )
        self._edge_of_entry = pattern.data.astype(np.int64) - 1
        self._pattern = pattern
        self.adjacency = sparse.csr_matrix(
            (weights[self._edge_of_entry], pattern.indices, pattern.indptr),
            shape=(n, n),
        )
        # The Hessian's quantities at the last point asked (see _curvature).
        self._curvature_cache = None

    def _edge_dots(self, V, U=None):
        """``v_i . u_j`` for every edge ``(i, j)`` (``U = V`` by default)."""
        # Column by column, so that each gather reads a contiguous vector: a
        # gather of whole rows of a narrow V costs several times more.
        columns = np.ascontiguousarray(V.T)
        other = columns if U is None else np.ascontiguousarray(U.T)
        dots = np.zeros(self.rows.size)
        for column, other_column in zip(columns, other, strict=True):
            dots += column[self.rows] * other_column[self.cols]
        return dots

    def _separation(self, a, rho):
        """:func:`separation_probability` of every edge, ``h = a_i``, ``k = a_j``.

        The normal tails of the series are computed once per vertex and
        gathered per edge (a vertex has many edges, and ``ndtr`` is the cost);
        the values are those of :func:`separation_probability`, bit for bit.
        """
        i, j = self.rows, self.cols
        small = np.abs(rho) <= _SERIES_MAX_RHO
        if small.all():
            si, sj = i, j
        else:
            si, sj = i[small], j[small]
        out = np.empty(rho.shape)
        if si.size:
            cdf, cdf_minus = ndtr(a), ndtr(-a)
            tails = cdf[si], cdf_minus[si], cdf[sj], cdf_minus[sj]
            series = _separation_series(a[si], a[sj], rho[small], tails)
            if si is i:
                return series
            out[small] = series
        large = ~small
        out[large] = _separation_owen(a[i[large]], a[j[large]], rho[large])
        return out

    def value(self, V, mu):
        """The smoothed expected cut ``F(V, mu)``."""
        s = np.sqrt(self.tau**2 + np.einsum("ij,ij->i", V, V))
        a = mu / s
        i, j = self.rows, self.cols
        rho = self._edge_dots(V) / (s[i] * s[j])
        return float(self.weights @ self._separation(a, rho))

    def _first_order(self, V, mu):
        """The rounding's Gaussian at ``(V, mu)`` and the gradient's parts.

        Per vertex ``s2 = tau**2 + |v_i|**2``, ``s``, ``a = mu / s``, the
        derivatives ``g_a`` of the weighted separation in ``a`` and ``diag``;
        per edge ``inv_ss = 1 / (s_i s_j)``, the correlation ``rho``, the
        separation's partial derivatives ``d_h, d_k, d_rho`` and ``g_rho = w
        d_rho``. Shared by the value and gradient (:meth:`value_and_grad`) and
        the Hessian's quantities (:meth:`_curvature`).
        """
        n = self.n_coordinates
        i, j, w = self.rows, self.cols, self.weights
        s2 = self.tau**2 + np.einsum("ij,ij->i", V, V)
        s = np.sqrt(s2)
        a = mu / s
        inv_ss = 1.0 / (s[i] * s[j])
        rho = self._edge_dots(V) * inv_ss
        phi = _normal_density(a)
        d_h, d_k, d_rho = separation_gradient(a[i], a[j], rho, (phi[i], phi[j]))
        g_a = np.bincount(i, w * d_h, minlength=n) + np.bincount(
            j, w * d_k, minlength=n
        )
        g_rho = w * d_rho
        # d rho_ij / d v_i = v_j / (s_i s_j) - rho_ij v_i / s_i**2 and
        # d a_i / d v_i = -a_i v_i / s_i**2, d a_i / d mu_i = 1 / s_i.
        diag = (
            np.bincount(i, g_rho * rho, minlength=n)
            + np.bincount(j, g_rho * rho, minlength=n)
            + g_a * a
        ) / s2
        return dict(
            s2=s2,
            s=s,
            a=a,
            inv_ss=inv_ss,
            rho=rho,
            diag=diag,
            g_a=g_a,
            g_rho=g_rho,
            d_h=d_h,
            d_k=d_k,
            d_rho=d_rho,
        )

    def value_and_grad(self, V, mu):
        """``F(V, mu)`` and its gradient ``(dF/dV, dF/dmu)``."""
        p = self._first_order(V, mu)
        value = self.weights @ self._separation(p["a"], p["rho"])
        # The private pattern's values are overwritten in place: no copy of its
        # index arrays per call.
        coupling = self._pattern
        coupling.data = (p["g_rho"] * p["inv_ss"])[self._edge_of_entry]
        grad_V = coupling @ V - p["diag"][:, None] * V
        grad_mu = p["g_a"] / p["s"]
        return value, grad_V, grad_mu

    def _curvature(self, V, mu):
        """Per-edge and per-vertex quantities of the Hessian at ``(V, mu)``, cached.

        The certificate's Lanczos iteration multiplies the Hessian at one
        point by 20-30 vectors: the normal tails and densities are computed
        once for all of them, so that each product is sparse products and
        gathers only.
        """
        cached = self._curvature_cache
        if (
            cached is not None
            and np.array_equal(cached["V"], V)
            and np.array_equal(cached["mu"], mu)
        ):
            return cached
        p = self._first_order(V, mu)
        a, rho = p["a"], p["rho"]
        i, j, w = self.rows, self.cols, self.weights
        second = separation_hessian(a[i], a[j], rho, p["d_h"], p["d_k"], p["d_rho"])
        c = p["g_rho"] * p["inv_ss"]
        pattern = self._pattern
        coupling = sparse.csr_matrix(
            (c[self._edge_of_entry], pattern.indices, pattern.indptr),
            shape=pattern.shape,
        )
        # A second matrix on the same pattern, refilled per product with the
        # change of the couplings.
        d_coupling = sparse.csr_matrix(
            (np.zeros(pattern.nnz), pattern.indices, pattern.indptr),
            shape=pattern.shape,
        )
        cached = dict(
            p,
            V=np.array(V, copy=True),
            mu=np.array(mu, copy=True),
            second=tuple(w * q for q in second),
            c=c,
            coupling=coupling,
            d_coupling=d_coupling,
        )
        self._curvature_cache = cached
        return cached

    def hessp(self, V, mu, dV, dmu):
        """The Hessian of ``F`` at ``(V, mu)`` applied to ``(dV, dmu)``.

        The exact directional derivative of :meth:`value_and_grad`'s gradient:
        with ``ds_i = v_i . dv_i / s_i``, ``da_i = (dmu_i - a_i ds_i) / s_i``
        and ``drho_ij = (dv_i . v_j + v_i . dv_j) / (s_i s_j) - rho_ij (ds_i /
        s_i + ds_j / s_j)``, the per-edge derivatives change by the second
        derivatives of :func:`separation_hessian` times ``(da_i, da_j,
        drho_ij)``, and every factor of the gradient's chain rule by its own
        derivative. One product costs a few sparse products and gathers; the
        normal tails are evaluated once per point.

        Returns
        -------
        hV : ndarray of shape (n_coordinates, rank)
        hmu : ndarray of shape (n_coordinates,)
        """
        n = self.n_coordinates
        i, j = self.rows, self.cols
        p = self._curvature(V, mu)
        V, s, s2, a, rho = p["V"], p["s"], p["s2"], p["a"], p["rho"]
        g_a, g_rho, c, diag = p["g_a"], p["g_rho"], p["c"], p["diag"]
        w_hh, w_hk, w_kk, w_hr, w_kr, w_rr = p["second"]
        ds = np.einsum("ij,ij->i", V, dV) / s
        ds_rel = ds / s
        da = (dmu - a * ds) / s
        mixed = self._edge_dots(V, dV) + self._edge_dots(dV, V)
        d_rho = mixed * p["inv_ss"] - rho * (ds_rel[i] + ds_rel[j])
        da_i, da_j = da[i], da[j]
        # Changes of w * (P_h, P_k, P_rho) per edge.
        dg_h = w_hh * da_i + w_hk * da_j + w_hr * d_rho
        dg_k = w_hk * da_i + w_kk * da_j + w_kr * d_rho
        dg_rho = w_hr * da_i + w_kr * da_j + w_rr * d_rho
        dg_a = np.bincount(i, dg_h, minlength=n) + np.bincount(j, dg_k, minlength=n)
        dc = dg_rho * p["inv_ss"] - c * (ds_rel[i] + ds_rel[j])
        edge_term = dg_rho * rho + g_rho * d_rho
        d_diag = (
            np.bincount(i, edge_term, minlength=n)
            + np.bincount(j, edge_term, minlength=n)
            + dg_a * a
            + g_a * da
        ) / s2 - 2.0 * diag * ds_rel
        d_coupling = p["d_coupling"]
        d_coupling.data = dc[self._edge_of_entry]
        hv_V = (
            d_coupling @ V
            + p["coupling"] @ dV
            - d_diag[:, None] * V
            - diag[:, None] * dV
        )
        hv_mu = dg_a / s - g_a * ds / s2
        return hv_V, hv_mu

    def solution(self, mu):
        """The sides ``sign(mu)`` in {-1, +1} (``+1`` where ``mu_i = 0``)."""
        return np.where(np.asarray(mu) >= 0, 1.0, -1.0)

    def finish(self, mu):
        """Sides fixed one vertex at a time by conditional expectations.

        At ``V = 0`` the expected side of vertex ``i`` is ``m_i = 2 Phi(mu_i /
        tau) - 1`` and the expected cut is ``sum_{i<j} w_ij (1 - m_i m_j) / 2``,
        linear in each ``m_i`` with slope ``-(W m)_i / 2``. Vertices are fixed
        from the most to the least certain (largest ``|mu_i|`` first) to the
        side whose slope does not lower the expectation (``sign(mu_i)`` on a
        tie), and the neighbours' fields are updated. The returned sides' cut
        is at least ``F(0, mu)``; ``O(n_edges)`` in all.
        """
        mu = np.asarray(mu, dtype=np.float64)
        spins = 2.0 * ndtr(mu / self.tau) - 1.0
        A = self.adjacency
        field = A @ spins
        indptr, indices, data = A.indptr, A.indices, A.data
        for i in np.argsort(-np.abs(mu), kind="stable"):
            if field[i] < 0.0:
                side = 1.0
            elif field[i] > 0.0:
                side = -1.0
            else:
                side = 1.0 if mu[i] >= 0 else -1.0
            change = side - spins[i]
            if change != 0.0:
                spins[i] = side
                lo, hi = indptr[i], indptr[i + 1]
                field[indices[lo:hi]] += change * data[lo:hi]
        return spins

    def solution_value(self, solution):
        """The weight of the edges between the sides of ``solution`` (in {-1, 1})."""
        s = np.asarray(solution, dtype=np.float64)
        return float(self.weights @ (s[self.rows] != s[self.cols]))
