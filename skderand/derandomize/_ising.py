"""Ising problems with fields, and QUBO, MAX-2-SAT, MAX-DICUT, MAXCUT in Ising form.

Every problem here is written as: maximize ``offset + h^T t + t^T J t`` over
spins ``t in {-1, 1}^n`` (``J`` square, read through its symmetric part; its
diagonal adds the constant ``trace(J)``). With one extra spin ``t_0`` and
``t_i = s_i s_0``, and ``s_i s_j = 1 - 2 [s_i != s_j]``, that is a constant plus
the weighted cut of ``n + 1`` vertices with weights ``w_0i = -2 h_i`` and
``w_ij = -4 J_ij`` (``i < j``, symmetric part), so the smoothed cut of
:class:`~skderand.derandomize.CutExpectation` serves them all. The extra spin
is also what makes the standard rounding of the semidefinite relaxation,
``t_i = sign(v_i . z) sign(v_0 . z)``, a rounding of the form ``V z + mu``.
"""

import numbers

import numpy as np
from scipy import sparse

from skderand.derandomize._cut import CutExpectation
from skderand.derandomize._protocol import RoundingExpectation

__all__ = [
    "IsingExpectation",
    "arcs_to_ising",
    "clauses_to_ising",
    "maxcut_to_ising",
    "qubo_to_ising",
]

_VARTYPES = ("SPIN", "BINARY")


def _square_matrix(M, name):
    """``M`` as float64 (dense or CSR, as given), square and finite."""
    if sparse.issparse(M):
        M = sparse.csr_matrix(M, dtype=np.float64)
        finite = np.all(np.isfinite(M.data))
    else:
        M = np.asarray(M, dtype=np.float64)
        finite = np.all(np.isfinite(M))
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square matrix; got shape {M.shape}.")
    if M.shape[0] == 0:
        raise ValueError(f"{name} is empty: the problem has no variable.")
    if not finite:
        raise ValueError(f"{name} contains NaN or infinite entries.")
    return M


def _check_fields(h, n):
    h = np.asarray(h, dtype=np.float64)
    if h.shape != (n,):
        raise ValueError(f"h must have shape ({n},) to match J; got {h.shape}.")
    if not np.all(np.isfinite(h)):
        raise ValueError("h contains NaN or infinite entries.")
    return h


def qubo_to_ising(Q):
    """``x^T Q x`` over ``x in {0, 1}^n`` as ``offset + h^T t + t^T J t``.

    With ``x = (1 + t) / 2``: ``h = (Q 1 + Q^T 1) / 4``, ``J = Q / 4`` and
    ``offset = 1^T Q 1 / 4``. An asymmetric ``Q`` counts as its symmetric part
    (``x^T Q x`` is the same), its diagonal as linear terms (``x_i**2 = x_i``).

    Parameters
    ----------
    Q : {array-like, sparse matrix} of shape (n, n)

    Returns
    -------
    h : ndarray of shape (n,)
    J : ndarray or scipy.sparse.csr_matrix of shape (n, n)
    offset : float

    Examples
    --------
    >>> import numpy as np
    >>> from skderand.derandomize import qubo_to_ising
    >>> Q = np.array([[1.0, -2.0], [0.0, 3.0]])
    >>> h, J, offset = qubo_to_ising(Q)
    >>> x = np.array([1.0, 1.0]); t = 2 * x - 1
    >>> float(x @ Q @ x), float(offset + h @ t + t @ J @ t)
    (2.0, 2.0)
    """
    Q = _square_matrix(Q, "Q")
    rows = np.asarray(Q.sum(axis=1)).ravel()
    cols = np.asarray(Q.sum(axis=0)).ravel()
    return (rows + cols) / 4.0, Q / 4.0, float(Q.sum()) / 4.0


def maxcut_to_ising(adjacency):
    """The cut ``sum_{i<j} w_ij [t_i != t_j]`` as ``offset + t^T J t``.

    ``J = -W / 4`` and ``offset = 1^T W 1 / 4`` for the symmetric adjacency
    ``W`` (diagonal ignored); no fields.

    Parameters
    ----------
    adjacency : {array-like, sparse matrix} of shape (n, n)

    Returns
    -------
    h : ndarray of shape (n,)
    J : ndarray or scipy.sparse.csr_matrix of shape (n, n)
    offset : float
    """
    W = _square_matrix(adjacency, "adjacency")
    W = W - (sparse.diags(W.diagonal()) if sparse.issparse(W) else np.diag(np.diag(W)))
    return np.zeros(W.shape[0]), -W / 4.0, float(W.sum()) / 4.0


def _accumulate(n, offset, h_terms, pair_terms):
    """``(h, J, offset)`` from ``(index, value)`` and ``(i, j, value)`` lists."""
    h = np.zeros(n)
    if h_terms[0]:
        np.add.at(h, np.concatenate(h_terms[0]), np.concatenate(h_terms[1]))
    if pair_terms[0]:
        i = np.concatenate(pair_terms[0])
        j = np.concatenate(pair_terms[1])
        value = np.concatenate(pair_terms[2])
        # Each pair term c t_i t_j as c/2 in J_ij and in J_ji (symmetric J).
        J = sparse.csr_matrix(
            (np.concatenate([value, value]) / 2.0, (np.r_[i, j], np.r_[j, i])),
            shape=(n, n),
        )
    else:
        J = sparse.csr_matrix((n, n))
    J.sum_duplicates()
    return h, J, float(offset)


def _check_weights(weights, count, name):
    if weights is None:
        return np.ones(count)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (count,):
        raise ValueError(
            f"weights must have one entry per {name} ({count}); got shape "
            f"{weights.shape}."
        )
    if not np.all(np.isfinite(weights)):
        raise ValueError("weights contain NaN or infinite entries.")
    return weights


def clauses_to_ising(clauses, weights=None, n_variables=None):
    """Weighted MAX-2-SAT as ``offset + h^T t + t^T J t`` (``t_v = 1``: true).

    The satisfied weight of a clause ``(l_i or l_j)`` with literal signs
    ``sigma`` is ``w (3 + sigma_i t_i + sigma_j t_j - sigma_i sigma_j t_i
    t_j) / 4``; of a unit clause ``(l_i)``, ``w (1 + sigma_i t_i) / 2``.

    Parameters
    ----------
    clauses : sequence of sequences of int
        DIMACS literals: variable ``v`` (1-based) is ``v``, its negation
        ``-v``. One or two literals per clause.
    weights : array-like of shape (n_clauses,), default=None
        Clause weights (signed allowed); ``None`` means all ones.
    n_variables : int, default=None
        Number of variables; ``None`` means the largest variable named.

    Returns
    -------
    h : ndarray of shape (n_variables,)
    J : scipy.sparse.csr_matrix of shape (n_variables, n_variables)
    offset : float

    Examples
    --------
    >>> import numpy as np
    >>> from skderand.derandomize import clauses_to_ising
    >>> h, J, offset = clauses_to_ising([(1, 2), (-1, 2), (-2,)])
    >>> t = np.array([1.0, -1.0])  # x1 true, x2 false: clauses 1 and 3 hold
    >>> float(offset + h @ t + t @ (J @ t))
    2.0
    """
    clauses = [tuple(clause) for clause in clauses]
    weights = _check_weights(weights, len(clauses), "clause")
    largest = 0
    for clause in clauses:
        if len(clause) not in (1, 2):
            raise ValueError(
                f"Clause {clause} has {len(clause)} literals; only clauses of one "
                "or two literals (MAX-2-SAT) are supported."
            )
        for literal in clause:
            if not isinstance(literal, numbers.Integral) or literal == 0:
                raise ValueError(
                    f"Clause {clause}: literals are non-zero integers (DIMACS)."
                )
            largest = max(largest, abs(int(literal)))
    n = largest if n_variables is None else int(n_variables)
    if largest > n:
        raise ValueError(f"A clause names variable {largest}, beyond n_variables={n}.")
    if n == 0:
        raise ValueError("The problem is empty: no clause names a variable.")
    offset = 0.0
    h_terms, pair_terms = ([], []), ([], [], [])
    for clause, w in zip(clauses, weights, strict=True):
        index = [abs(int(lit)) - 1 for lit in clause]
        sign = [1.0 if lit > 0 else -1.0 for lit in clause]
        if len(clause) == 2 and index[0] == index[1]:
            if sign[0] != sign[1]:
                offset += w  # (x or not x): always satisfied
                continue
            index, sign = index[:1], sign[:1]
        if len(index) == 1:
            offset += w / 2.0
            h_terms[0].append(np.array(index))
            h_terms[1].append(np.array([w * sign[0] / 2.0]))
            continue
        offset += 3.0 * w / 4.0
        h_terms[0].append(np.array(index))
        h_terms[1].append(np.array([w * sign[0] / 4.0, w * sign[1] / 4.0]))
        pair_terms[0].append(np.array(index[:1]))
        pair_terms[1].append(np.array(index[1:]))
        pair_terms[2].append(np.array([-w * sign[0] * sign[1] / 4.0]))
    return _accumulate(n, offset, h_terms, pair_terms)


def arcs_to_ising(arcs, weights=None, n_vertices=None):
    """Weighted MAX-DICUT as ``offset + h^T t + t^T J t`` (``t_v = 1``: source side).

    An arc ``i -> j`` counts when ``i`` is on the source side and ``j`` is
    not: ``w (1 + t_i - t_j - t_i t_j) / 4``.

    Parameters
    ----------
    arcs : array-like of shape (n_arcs, 2)
        Pairs ``(i, j)`` of 0-based vertex indices, ``i != j``.
    weights : array-like of shape (n_arcs,), default=None
        Arc weights; ``None`` means all ones.
    n_vertices : int, default=None
        Number of vertices; ``None`` means the largest index plus one.

    Returns
    -------
    h : ndarray of shape (n_vertices,)
    J : scipy.sparse.csr_matrix of shape (n_vertices, n_vertices)
    offset : float
    """
    arcs = np.asarray(arcs)
    if arcs.size == 0:
        raise ValueError("The problem is empty: no arc.")
    if (
        arcs.ndim != 2
        or arcs.shape[1] != 2
        or not np.issubdtype(arcs.dtype, np.integer)
    ):
        raise ValueError(
            f"arcs must be integer pairs of shape (n_arcs, 2); got shape {arcs.shape} "
            f"and dtype {arcs.dtype}."
        )
    weights = _check_weights(weights, arcs.shape[0], "arc")
    n = int(arcs.max()) + 1 if n_vertices is None else int(n_vertices)
    if arcs.min() < 0 or arcs.max() >= n:
        raise ValueError(f"An arc names a vertex outside [0, {n}).")
    if np.any(arcs[:, 0] == arcs[:, 1]):
        raise ValueError("An arc joins a vertex to itself.")
    i, j = arcs[:, 0].astype(np.int64), arcs[:, 1].astype(np.int64)
    return _accumulate(
        n,
        weights.sum() / 4.0,
        ([i, j], [weights / 4.0, -weights / 4.0]),
        ([i], [j], [-weights / 4.0]),
    )


class IsingExpectation(RoundingExpectation):
    """Smoothed expected value of ``offset + h^T t + t^T J t`` under sign rounding.

    The spins are ``t_i = sign(y_i) sign(y_0)``, ``y = V z + mu + tau g`` with
    one extra coordinate ``0`` (the homogenizing spin, see the module
    docstring), so ``V`` has ``n + 1`` rows: row 0 is the reference vector of
    the semidefinite relaxation. Maximized; for a minimization negate ``h``,
    ``J`` and ``offset``.

    Parameters
    ----------
    h : array-like of shape (n,)
        Fields.
    J : {array-like, sparse matrix} of shape (n, n)
        Couplings, read as ``t^T J t`` (its symmetric part counts; its diagonal
        adds ``trace(J)``).
    offset : float, default=0.0
        Constant term.
    tau : float, default=0.1
        Standard deviation of the smoothing noise.
    vartype : {"SPIN", "BINARY"}, default="SPIN"
        How solutions are read and given: spins ``t`` in {-1, 1}, or
        ``x = (1 + t) / 2`` in {0, 1}.

    Attributes
    ----------
    n_coordinates : int
        ``n + 1``.
    cut : CutExpectation
        The smoothed cut of the ``n + 1`` vertices.
    constant : float
        ``value = constant + cut`` for every solution.

    See Also
    --------
    qubo_to_ising, clauses_to_ising, arcs_to_ising, maxcut_to_ising :
        Problems in Ising form; also the class methods ``from_qubo``,
        ``from_clauses``, ``from_arcs`` and ``from_maxcut``.

    Notes
    -----
    ``E[t_i] = 2 Phi(a_i) - 1`` and ``E[t_i t_j] = 1 - 2 P_sep(a_i, a_j,
    rho_ij)`` in the notation of :class:`CutExpectation`; the finishing step
    is the cut's conditional expectations on the ``n + 1`` vertices, so the
    finished solution's value is at least ``F(0, mu)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skderand.derandomize import IsingExpectation
    >>> ising = IsingExpectation.from_qubo(np.array([[-1.0, 2.0], [2.0, -1.0]]))
    >>> ising.solution_value(np.array([1.0, 0.0]))  # x^T Q x at x = (1, 0)
    -1.0
    >>> V = np.eye(3)  # independent fair spins: E[x_i] = 1/2, E[x_i x_j] = 1/4
    >>> round(ising.value(V, np.zeros(3)), 6)
    0.0
    """

    exact_finish = True

    def __init__(self, h, J, offset=0.0, *, tau=0.1, vartype="SPIN"):
        if vartype not in _VARTYPES:
            raise ValueError(f"vartype must be one of {_VARTYPES}; got {vartype!r}.")
        J = _square_matrix(J, "J")
        n = J.shape[0]
        h = _check_fields(h, n)
        offset = float(offset)
        if not np.isfinite(offset):
            raise ValueError("offset must be finite.")
        self.h, self.J, self.offset, self.vartype = h, J, offset, vartype
        symmetric = sparse.coo_matrix((J + J.T) / 2.0)
        upper = symmetric.row < symmetric.col
        i, j = symmetric.row[upper], symmetric.col[upper]
        pair = symmetric.data[upper]
        fields = np.flatnonzero(h)
        rows = np.concatenate([np.zeros(fields.size, np.int64), i + 1])
        cols = np.concatenate([fields + 1, j + 1])
        weights = np.concatenate([-2.0 * h[fields], -4.0 * pair])
        keep = weights != 0.0
        self.cut = CutExpectation.from_edges(
            n + 1, rows[keep], cols[keep], weights[keep], tau
        )
        self.constant = (
            offset
            + float(h.sum())
            + 2.0 * float(pair.sum())
            + float(J.diagonal().sum())
        )
        self.n_coordinates = n + 1
        self.tau = self.cut.tau
        self.mu_scale = self.cut.mu_scale

    @classmethod
    def from_qubo(cls, Q, *, tau=0.1):
        """Maximize ``x^T Q x`` over ``x in {0, 1}^n`` (see :func:`qubo_to_ising`)."""
        return cls(*qubo_to_ising(Q), tau=tau, vartype="BINARY")

    @classmethod
    def from_maxcut(cls, adjacency, *, tau=0.1):
        """The cut of a symmetric adjacency matrix (see :func:`maxcut_to_ising`)."""
        return cls(*maxcut_to_ising(adjacency), tau=tau, vartype="SPIN")

    @classmethod
    def from_clauses(cls, clauses, weights=None, n_variables=None, *, tau=0.1):
        """Weighted MAX-2-SAT; solutions are truth values in {0, 1}."""
        h, J, offset = clauses_to_ising(clauses, weights, n_variables)
        return cls(h, J, offset, tau=tau, vartype="BINARY")

    @classmethod
    def from_arcs(cls, arcs, weights=None, n_vertices=None, *, tau=0.1):
        """Weighted MAX-DICUT; solutions are 1 on the source side, 0 elsewhere."""
        h, J, offset = arcs_to_ising(arcs, weights, n_vertices)
        return cls(h, J, offset, tau=tau, vartype="BINARY")

    def value(self, V, mu):
        """The smoothed expected value ``F(V, mu)``."""
        return self.constant + self.cut.value(V, mu)

    def value_and_grad(self, V, mu):
        """``F(V, mu)`` and its gradient ``(dF/dV, dF/dmu)``."""
        value, grad_V, grad_mu = self.cut.value_and_grad(V, mu)
        return self.constant + value, grad_V, grad_mu

    def hessp(self, V, mu, dV, dmu):
        """The Hessian of ``F`` at ``(V, mu)`` applied to ``(dV, dmu)``."""
        return self.cut.hessp(V, mu, dV, dmu)

    def _read(self, sides):
        spins = sides[1:] * sides[0]
        return spins if self.vartype == "SPIN" else (1.0 + spins) / 2.0

    def solution(self, mu):
        """``t_i = sign(mu_i) sign(mu_0)`` (as ``x = (1 + t) / 2`` if binary)."""
        return self._read(self.cut.solution(mu))

    def finish(self, mu):
        """The cut's conditional expectations, read out as :meth:`solution`."""
        return self._read(self.cut.finish(mu))

    def spins(self, solution):
        """The spins ``t`` of a solution given in :attr:`vartype`."""
        solution = np.asarray(solution, dtype=np.float64)
        return solution if self.vartype == "SPIN" else 2.0 * solution - 1.0

    def solution_value(self, solution):
        """``offset + h^T t + t^T J t`` exactly, for a solution in :attr:`vartype`."""
        t = self.spins(solution)
        return float(self.offset + self.h @ t + t @ (self.J @ t))
