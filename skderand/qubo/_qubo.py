"""DeterministicQUBO: derandomized rounding of the QUBO relaxation, certified bound."""

from numbers import Integral

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator

from skderand._memory import check_fits_in_memory, csr_bytes, maxcut_fit_bytes
from skderand._random import draw_seeds, seeded_generator
from skderand._sklearn_compat import Interval, StrOptions, _fit_context, validate_data
from skderand._threads import one_blas_thread
from skderand.derandomize import IsingExpectation, qubo_to_ising
from skderand.maxcut import DeterministicMaxCut
from skderand.maxcut._maxcut import _sdp_rank
from skderand.optimize._certificate import record_certificate
from skderand.qubo._tabu import (
    chain_state_bytes,
    coupling_matrix,
    ising_value,
    tabu_search,
)

__all__ = ["DeterministicQUBO"]

# Parameters of the relaxation and the rounding, passed on to the cut of n + 1
# vertices with the same meaning (only some defaults differ).
_CUT_PARAMETERS = (
    "tau",
    "alpha",
    "alpha_growth",
    "max_stages",
    "max_iter",
    "tol",
    "curvature_tol",
    "rounding_rank",
)
# The tabu search keeps the couplings dense (a move adds one contiguous row,
# in BLAS) up to this many bytes, about 5,800 variables; sparse rows beyond.
_DENSE_COUPLINGS_BYTES = 2**28


def fit_memory_bytes(n_variables, n_entries):
    """Bytes a fit needs for ``n_entries`` stored entries of ``Q`` (or ``J``).

    The Ising form's copies of the matrix and the cut of ``n + 1`` vertices
    (about four sparse matrices), the cut's own fit, and the tabu search's
    couplings (dense up to ``_DENSE_COUPLINGS_BYTES``, three copies while they
    are symmetrized) and its chains.
    """
    n, entries = n_variables, 2 * (n_entries + n_variables)
    dense = 8 * n * n
    couplings = dense if dense <= _DENSE_COUPLINGS_BYTES else csr_bytes(n, entries)
    return (
        4 * csr_bytes(n + 1, entries)
        + maxcut_fit_bytes(n + 1, entries, _sdp_rank(n + 1))
        + 3 * couplings
        + chain_state_bytes(n)
    )


def _check_fit_memory(n_variables, n_entries):
    check_fits_in_memory(
        fit_memory_bytes(n_variables, n_entries),
        f"DeterministicQUBO on {n_variables:,} variables and {n_entries:,} entries",
    )


def _is_bqm(X):
    """A ``dimod.BinaryQuadraticModel`` (duck-typed: dimod is never imported)."""
    return hasattr(X, "to_numpy_vectors") and hasattr(X, "vartype")


def _bqm_to_ising(bqm):
    """``(h, J, offset, vartype, variables)`` of a dimod model, as an energy."""
    variables = list(bqm.variables)
    linear, (rows, cols, quadratic), offset = bqm.to_numpy_vectors(variables)
    n = len(variables)
    # Each interaction once, as dimod counts it.
    M = sparse.csr_matrix((quadratic, (rows, cols)), shape=(n, n))
    spin = getattr(bqm.vartype, "name", str(bqm.vartype)) == "SPIN"
    vartype = "SPIN" if spin else "BINARY"
    if spin:
        return np.asarray(linear, float), M, float(offset), vartype, variables
    h, J, ising_offset = qubo_to_ising(M + sparse.diags(np.asarray(linear, float)))
    return h, J, ising_offset + float(offset), vartype, variables


class DeterministicQUBO(BaseEstimator):
    """Quadratic binary optimization by derandomized rounding, with a certified bound.

    Minimizes (or maximizes) ``x^T Q x`` over ``x in {0, 1}^n``, or an Ising
    energy ``offset + h^T t + t^T J t`` over ``t in {-1, 1}^n``,
    deterministically, and reports a rigorous bound on the optimum.

    The problem is written as a weighted cut of ``n + 1`` vertices (one extra
    spin homogenizes the fields, see
    :class:`~skderand.derandomize.IsingExpectation`), and
    :class:`~skderand.DeterministicMaxCut` solves its semidefinite relaxation,
    derandomizes the rounding of it (:func:`~skderand.derandomize.derandomize`,
    with its exact finishing step) and bounds the optimum from the relaxation's
    dual. A one-flip tabu search with restarts then improves the rounded
    solution; it never returns a worse one.

    Parameters
    ----------
    sense : {"minimize", "maximize"}, default="minimize"
        ``"minimize"`` as in dimod (an energy); ``"maximize"`` as in the
        OR-Library's ``bqp`` instances.
    tau : float, default=0.05
        Standard deviation of the rounding's smoothing noise. Smaller than
        :class:`~skderand.DeterministicMaxCut`'s default, as is
        ``alpha_growth``: on QUBOs the rounding ends at better solutions when
        it follows the sign payoff more closely and raises the penalty more
        gently (the developers' notes on the framework give the measurement).
    alpha : float, default=0.1
        Penalty weight on ``||V||_F**2`` in the first stage of the rounding,
        relative to the mean absolute weight of the cut.
    alpha_growth : float, default=1.5
        Factor by which ``alpha`` grows from one stage to the next.
    max_stages : int, default=20
        Largest number of ``alpha`` stages.
    max_iter : int, default=30
        Largest number of L-BFGS iterations per stage and of the certified solve.
    tol : float, default=1e-3
        Gradient-norm tolerance of the rounding's certificate (units of the
        mean absolute weight of the cut).
    curvature_tol : float, default=None
        Smallest Hessian eigenvalue allowed is ``-curvature_tol``; ``None``
        means ``sqrt(tol)``.
    rounding_rank : int, default=3
        Columns of ``V`` in the rounding (``None``: the full SDP rank).
    local_search : {"tabu"} or None, default="tabu"
        Improvement of the rounded solution: a one-flip tabu search with
        restarts (see Notes), or ``None`` for the rounded solution as is.
    n_restarts : int, default=20
        Tabu phases after the first (which starts from the rounded solution),
        each from a uniformly random point.
    random_state : int, RandomState instance or None, default=0
        Seeds the SDP start, the rounding's perturbation and certificate, and
        the tabu search. A fixed default, so that the same problem gives the
        same solution on every call.
    verbose : int, default=0
        Progress of the relaxation and the rounding (as
        :class:`~skderand.DeterministicMaxCut`) and of the tabu search.

    Attributes
    ----------
    solution_ : ndarray of shape (n_variables,)
        The solution: ``x`` in {0, 1} for a QUBO matrix or a binary model,
        spins in {-1, 1} for :meth:`fit_ising` or a spin model.
    value_ : float
        The objective at ``solution_``, computed exactly on the problem given.
    rounded_value_ : float
        The objective of the derandomized rounding's solution, before the tabu
        search.
    bound_ : float
        Certified bound on the optimum from the dual of the semidefinite
        relaxation: at most the minimum (``sense="minimize"``) or at least the
        maximum.
    expected_value_ : float
        Exact expected objective of the randomized rounding of the relaxation
        that the rounding derandomizes (``x_i = [sign(v_i . z) = sign(v_0 .
        z)]``, ``z`` Gaussian).
    sdp_value_ : float
        The objective's value of the low-rank relaxation's solution.
    grad_norm_, min_hessian_eig_, curvature_tol_, certified_ : float, bool
        The rounding's certificate (see :class:`~skderand.DeterministicMaxCut`).
    n_iter_ : int
        L-BFGS iterations of the rounding.
    v_norm_, v_norm_bound_ : float
        ``||V||_F`` at the end of the rounding and the lemma's bound on it.
    vartype_ : {"BINARY", "SPIN"}
        How ``solution_`` is given.
    variables_ : list
        The variables in the order of ``solution_`` (a dimod model's labels,
        or ``0 .. n - 1``).
    cut_estimator_ : DeterministicMaxCut
        The fitted cut of the ``n + 1`` vertices (relaxation, rounding history,
        timings).
    n_features_in_ : int
        Number of variables.

    See Also
    --------
    skderand.DeterministicMaxCut : The same pipeline on a graph.
    skderand.derandomize.derandomize : The derandomization framework.

    Notes
    -----
    A QUBO is an Ising problem by ``x = (1 + t) / 2``, and an Ising problem
    with fields is a cut of ``n + 1`` vertices with weights ``w_0i = -2 h_i``
    and ``w_ij = -4 J_ij`` plus a constant. An asymmetric ``Q`` is read
    through its symmetric part (``x^T Q x`` is unchanged), its diagonal as the
    linear terms.

    The tabu search (Glover's one-flip tabu, restarted as in Palubeckis's
    multistart variant) keeps the field ``h + 2 K t`` so that every flip's
    gain is known at once: each move takes the best flip not made in the last
    ``n / 100 + U(1, 10)`` moves (or a tabu one that beats the best found), and
    a phase ends after ``5 n`` moves (at least 1,000) without improving its
    best.

    References
    ----------
    .. [1] N. Tsikouras, C. Pantis, I. Mitliagkas, C. Tzamos. "A
       Derandomization Framework for Structure Discovery: Applications in
       Neural Networks and Beyond." ICLR 2026, arXiv:2510.19382.
    .. [2] F. Glover, G. Kochenberger, B. Alidaee. "Adaptive memory tabu
       search for binary quadratic programs." Management Science 44 (1998).
    .. [3] G. Palubeckis. "Multistart tabu search strategies for the
       unconstrained binary quadratic optimization problem." Annals of
       Operations Research 131 (2004).

    Examples
    --------
    >>> import numpy as np
    >>> from skderand import DeterministicQUBO
    >>> Q = np.array([[-1.0, 2.0, 0.0], [0.0, -1.0, 2.0], [0.0, 0.0, -1.0]])
    >>> qubo = DeterministicQUBO().fit(Q)
    >>> qubo.solution_, qubo.value_  # x = (1, 0, 1): -2
    (array([1., 0., 1.]), -2.0)
    >>> bool(qubo.bound_ <= qubo.value_)
    True
    """

    _parameter_constraints: dict = {
        "sense": [StrOptions({"minimize", "maximize"})],
        # The relaxation's and rounding's parameters are the cut's, passed on.
        **{
            name: DeterministicMaxCut._parameter_constraints[name]
            for name in _CUT_PARAMETERS
        },
        "local_search": [StrOptions({"tabu"}), None],
        "n_restarts": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        sense="minimize",
        *,
        tau=0.05,
        alpha=0.1,
        alpha_growth=1.5,
        max_stages=20,
        max_iter=30,
        tol=1e-3,
        curvature_tol=None,
        rounding_rank=3,
        local_search="tabu",
        n_restarts=20,
        random_state=0,
        verbose=0,
    ):
        self.sense = sense
        self.tau = tau
        self.alpha = alpha
        self.alpha_growth = alpha_growth
        self.max_stages = max_stages
        self.max_iter = max_iter
        self.tol = tol
        self.curvature_tol = curvature_tol
        self.rounding_rank = rounding_rank
        self.local_search = local_search
        self.n_restarts = n_restarts
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Solve ``x^T Q x`` over ``x in {0, 1}^n`` (or a dimod model).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_variables, n_variables) \
                or dimod.BinaryQuadraticModel
            The QUBO matrix ``Q`` (not modified), or a dimod model of either
            vartype, whose energy is the objective.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        if _is_bqm(X):
            h, J, offset, vartype, variables = _bqm_to_ising(X)
            self.n_features_in_ = len(variables)
            return self._fit(h, J, offset, vartype, variables)
        Q = validate_data(
            self,
            X,
            accept_sparse=["csr", "csc", "coo"],
            dtype=np.float64,
            ensure_min_samples=1,
        )
        if Q.shape[0] != Q.shape[1]:
            raise ValueError(
                f"X must be a square QUBO matrix (n_variables, n_variables); got "
                f"shape {Q.shape}."
            )
        h, J, offset = qubo_to_ising(Q)
        return self._fit(h, J, offset, "BINARY", list(range(Q.shape[0])))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_ising(self, h, J, offset=0.0):
        """Solve ``offset + h^T t + t^T J t`` over ``t in {-1, 1}^n``.

        Parameters
        ----------
        h : array-like of shape (n_variables,)
            Fields.
        J : {array-like, sparse matrix} of shape (n_variables, n_variables)
            Couplings, read as ``t^T J t`` (its symmetric part counts, its
            diagonal adds ``trace(J)``). Not modified.
        offset : float, default=0.0

        Returns
        -------
        self : object
            The fitted estimator.
        """
        J = validate_data(
            self,
            J,
            accept_sparse=["csr", "csc", "coo"],
            dtype=np.float64,
            ensure_min_samples=1,
        )
        return self._fit(h, J, offset, "SPIN", list(range(J.shape[0])))

    def _fit(self, h, J, offset, vartype, variables):
        sign = 1.0 if self.sense == "maximize" else -1.0
        n_entries = J.nnz if sparse.issparse(J) else np.count_nonzero(J)
        _check_fit_memory(J.shape[0], n_entries)
        # Maximized internally: a minimization negates the problem.
        ising = IsingExpectation(
            sign * np.asarray(h, float), sign * J, sign * offset, tau=self.tau
        )
        n = ising.h.size
        rng = seeded_generator(self.random_state)
        cut = DeterministicMaxCut(
            affinity="precomputed",
            local_search=None,
            random_state=draw_seeds(rng),
            verbose=self.verbose,
            **{name: getattr(self, name) for name in _CUT_PARAMETERS},
        )
        # The homogenized cut is symmetric with a zero diagonal by construction;
        # its certificate is reported below, in this estimator's terms.
        cut.n_features_in_ = n + 1
        self.cut_estimator_ = cut._fit_adjacency(ising.cut.adjacency, warn=False)
        cut = self.cut_estimator_
        sides = 1.0 - 2.0 * cut.labels_  # vertex 0 is on side 0: s_0 = +1
        spins = sides[1:] * sides[0]
        # Exactly, from the spins: the cut's own value is on rescaled weights.
        self.rounded_value_ = sign * ising.solution_value(spins)
        if self.local_search == "tabu" and n > 1:
            spins = self._improve(ising, spins, rng)
        self.vartype_ = vartype
        self.variables_ = variables
        self.solution_ = spins if vartype == "SPIN" else (1.0 + spins) / 2.0
        self.value_ = sign * ising.solution_value(spins)
        self.bound_ = sign * (ising.constant + cut.upper_bound_)
        self.expected_value_ = sign * (ising.constant + cut.expected_gw_cut_)
        self.sdp_value_ = sign * (ising.constant + cut.sdp_value_)
        record_certificate(
            self,
            grad_norm=cut.grad_norm_,
            min_hessian_eig=cut.min_hessian_eig_,
            tol=self.tol,
            curvature_tol=cut.curvature_tol_,
            n_iter=cut.n_iter_,
            advice=(
                f"|V| = {cut.rounding_v_norm_:.2e} at the end of the rounding. "
                "Increase max_iter or max_stages, or loosen tol / curvature_tol."
            ),
            # Past _fit, fit (or fit_ising) and sklearn's _fit_context: the
            # caller's line.
            stacklevel=4,
        )
        self.v_norm_ = cut.rounding_v_norm_
        self.v_norm_bound_ = cut.rounding_v_norm_bound_
        return self

    def _improve(self, ising, spins, rng):
        """The tabu search from the rounded spins (never worse than them)."""
        n = spins.size
        J = ising.J
        if 8 * n * n <= _DENSE_COUPLINGS_BYTES:
            J = J.toarray() if sparse.issparse(J) else J
        else:
            J = sparse.csr_matrix(J)
        K = coupling_matrix(J)
        constant = ising.offset + float(ising.J.diagonal().sum())
        with one_blas_thread():
            best, value = tabu_search(
                ising.h, K, constant, spins, n_restarts=self.n_restarts, rng=rng
            )
        if self.verbose:
            start = ising_value(ising.h, K, constant, spins)
            print(
                f"[DeterministicQUBO] tabu: {self.n_restarts + 1} phases; value "
                f"{start:.6g} -> {max(start, value):.6g} (maximized form)",
                flush=True,
            )
        return best

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = True
        return tags
