"""SOSP certificates: gradient norm and smallest Hessian eigenvalue.

The smallest eigenvalue of the Hessian comes from a Lanczos iteration on
Hessian-vector products, so no Hessian is ever formed. Lanczos here keeps every
basis vector and re-orthogonalizes against all of them: Hessians of neural networks
and low-rank factorizations have large null spaces and clustered spectra, where the
three-term recurrence of plain Lanczos (and ARPACK started from a fixed vector)
loses orthogonality and reports a spurious eigenvalue near zero.
"""

import numbers
import warnings

import numpy as np
from scipy.linalg import eigh_tridiagonal
from scipy.optimize import OptimizeResult
from sklearn.exceptions import ConvergenceWarning

from skderand._random import check_random_state

__all__ = ["sosp_certificate"]


class _Objective:
    """Wrap ``fun(x) -> (value, gradient)``: validate its output and count calls.

    The last evaluation is cached, because both scipy's L-BFGS and the certificate
    ask again for the gradient at the point they just evaluated.
    """

    def __init__(self, fun, n_features, hessp=None):
        if not callable(fun):
            raise TypeError(f"fun must be callable, got {type(fun).__name__}.")
        if hessp is not None and not callable(hessp):
            raise TypeError(f"hessp must be callable or None, got {type(hessp)}.")
        self.fun = fun
        self.user_hessp = hessp
        self.n = n_features
        self.nfev = 0
        self.nhev = 0
        self._last_x = None
        self._last = None

    def __call__(self, x):
        if self._last_x is not None and np.array_equal(x, self._last_x):
            return self._last
        out = self.fun(x)
        self.nfev += 1
        try:
            value, grad = out
        except (TypeError, ValueError):
            raise ValueError(
                "fun must return a pair (value, gradient); got an object of type "
                f"{type(out).__name__}."
            ) from None
        value = float(np.asarray(value).reshape(()))
        grad = np.asarray(grad, dtype=np.float64)
        if grad.shape != (self.n,):
            raise ValueError(
                f"fun returned a gradient of shape {grad.shape}; expected ({self.n},) "
                "to match x."
            )
        if not np.isfinite(value):
            raise ValueError(f"fun returned a non-finite objective value ({value}).")
        if not np.all(np.isfinite(grad)):
            raise ValueError("fun returned a gradient with NaN or infinite entries.")
        self._last_x = np.array(x, copy=True)
        self._last = (value, grad)
        return value, grad

    def hessp(self, x, v):
        """Hessian-vector product: the user's, or a central difference of gradients."""
        self.nhev += 1
        if self.user_hessp is not None:
            hv = np.asarray(self.user_hessp(x, v), dtype=np.float64)
            if hv.shape != (self.n,):
                raise ValueError(
                    f"hessp returned shape {hv.shape}; expected ({self.n},)."
                )
            if not np.all(np.isfinite(hv)):
                raise ValueError("hessp returned NaN or infinite entries.")
            return hv
        v_norm = np.linalg.norm(v)
        if v_norm == 0:
            return np.zeros(self.n)
        # Step balancing truncation (h^2) against round-off (eps / h) error.
        h = np.finfo(np.float64).eps ** (1 / 3) * max(1.0, np.linalg.norm(x)) / v_norm
        _, g_plus = self.fun_uncached(x + h * v)
        _, g_minus = self.fun_uncached(x - h * v)
        return (g_plus - g_minus) / (2 * h)

    def fun_uncached(self, x):
        # Finite-difference probes must not evict the cached iterate.
        saved = self._last_x, self._last
        self._last_x = None
        out = self(x)
        self._last_x, self._last = saved
        return out


def _lanczos_smallest(
    matvec, n, rng, *, max_iter, rtol, start=None, primal=None, dtype=np.float64
):
    """Smallest eigenpair of a symmetric operator: Lanczos, full reorthogonalization.

    Returns ``(eigenvalue, eigenvector, n_iter, residual)``. The Ritz value is an
    upper bound on the true smallest eigenvalue; it is exact when the Krylov space
    becomes invariant, which happens after at most ``n`` steps.

    With ``primal``, the operator ``T`` is self-adjoint in the inner product
    ``<a, b> = a . (G b)`` of a positive definite ``G`` on the vectors it acts
    on, and the iteration is the same in that inner product: ``matvec(q)``
    returns the dual ``G T q`` of the product, ``primal(p)`` maps a dual vector
    back to ``G^-1 p``, and ``start = (q, G q)`` is the first vector (of any
    length; ``n`` is then the dimension of the space). Every basis vector is
    kept with its dual, so the inner products are Euclidean products of the
    two, and the reorthogonalization is that of :func:`_orthogonalized`. The
    eigenvector is returned with unit ``G``-norm.

    ``dtype`` is the precision the basis (and the duals) are stored and
    multiplied in; the new vector, the coefficients and the tridiagonal
    matrix stay float64. float32 halves the basis, the memory peak of a
    certificate on long vectors (see
    ``skderand.embedding._stages._embedded_certificate``); its products keep
    the basis orthonormal to about float32's round-off, which bounds how far
    the Ritz values move.
    """
    m_max = min(n, max_iter)
    if start is None:
        q = rng.standard_normal(n)
        start = (q, q)
    size = start[0].size
    basis = np.empty((m_max + 1, size), dtype=dtype)
    duals = basis if primal is None else np.empty((m_max + 1, size), dtype=dtype)
    alphas = np.empty(m_max)
    betas = np.empty(m_max)
    if primal is None:
        norm = np.linalg.norm(start[0])
    else:
        norm = np.sqrt(start[0] @ start[1])
    basis[0] = start[0] / norm
    if primal is not None:
        duals[0] = start[1] / norm
    theta, ritz, residual, m = 0.0, None, np.inf, 0
    scale = 0.0
    for j in range(m_max):
        w = matvec(basis[j])
        alphas[j] = basis[j] @ w
        if primal is None:
            # Two passes of classical Gram-Schmidt keep the basis orthogonal to
            # machine precision even when eigenvalues cluster.
            for _ in range(2):
                w -= duals[: j + 1].T @ _coefficients(basis[: j + 1], w)
            betas[j] = np.linalg.norm(w)
        else:
            w, dual, betas[j] = _orthogonalized(
                w, j, alphas, betas, basis, duals, primal
            )
        m = j + 1
        scale = max(scale, abs(alphas[j]), betas[j])
        if m == 1:
            thetas, vecs = np.array([alphas[0]]), np.ones((1, 1))
        else:
            thetas, vecs = eigh_tridiagonal(alphas[:m], betas[: m - 1])
        theta, ritz = thetas[0], vecs[:, 0]
        residual = betas[j] * abs(ritz[-1])
        invariant = betas[j] <= 1e-12 * max(scale, 1e-300)
        # At least a few steps so that one lucky early Ritz value cannot stop us.
        if invariant or (m >= min(n, 10) and residual <= rtol * max(scale, 1e-12)):
            break
        basis[j + 1] = w / betas[j]
        if primal is not None:
            duals[j + 1] = dual / betas[j]
    vector = _combination(ritz, basis[:m])
    if primal is None:
        vector /= np.linalg.norm(vector)
    else:
        vector /= np.sqrt(max(vector @ _combination(ritz, duals[:m]), 1e-300))
    return float(theta), vector, m, float(residual)


def _coefficients(basis, v):
    """``basis @ v`` in the basis' precision.

    A float64 ``v`` times a float32 basis would make numpy copy the whole
    basis to float64 first: the memory a float32 basis is there to save.
    """
    return basis @ v.astype(basis.dtype, copy=False)


def _combination(coefficients, basis):
    """``coefficients @ basis`` in the basis' precision, returned in float64."""
    return (coefficients.astype(basis.dtype) @ basis).astype(np.float64, copy=False)


def _orthogonalized(dual, j, alphas, betas, basis, duals, primal):
    """The next Lanczos vector's primal, dual and norm (see ``primal`` above).

    The three-term recurrence's two components are subtracted first and one
    pass of classical Gram-Schmidt over the whole basis follows; a second
    pass runs only when the first removed more than half the vector's squared
    norm (the criterion of Daniel, Gragg, Kaufman and Stewart), each pass
    costing a ``primal`` product besides the two over the basis. Two passes
    every step, as without ``primal``, read both bases twice, and one pass was
    measured to keep the basis as orthonormal, with the same Ritz values
    (doc/developers/maxcut_design.rst, "Shared solver pieces").
    """
    dual -= alphas[j] * duals[j]
    if j:
        dual -= betas[j - 1] * duals[j - 1]
    for _ in range(2):
        c = _coefficients(basis[: j + 1], dual)
        dual -= duals[: j + 1].T @ c
        w = primal(dual)
        beta2 = max(w @ dual, 0.0)
        if beta2 >= c @ c:
            break
    return w, dual, np.sqrt(beta2)


def _certify(objective, x, *, tol, curvature_tol, rng, max_lanczos_iter, lanczos_rtol):
    value, grad = objective(x)
    eig, vec, n_lanczos, residual = _lanczos_smallest(
        lambda v: objective.hessp(x, v),
        x.size,
        rng,
        max_iter=max_lanczos_iter,
        rtol=lanczos_rtol,
    )
    return certificate_result(
        x,
        value,
        grad,
        (eig, vec, n_lanczos, residual),
        tol=tol,
        curvature_tol=curvature_tol,
    )


def certificate_result(x, value, grad, lanczos, *, tol, curvature_tol):
    """The certificate at ``x`` as an ``OptimizeResult``.

    ``lanczos`` is what :func:`_lanczos_smallest` returns for the Hessian at
    ``x``: ``(eigenvalue, eigenvector, n_iter, residual)``.
    """
    eig, vec, n_lanczos, residual = lanczos
    grad_norm = float(np.linalg.norm(grad))
    return OptimizeResult(
        x=x,
        fun=value,
        jac=grad,
        grad_norm=grad_norm,
        min_hessian_eig=eig,
        min_hessian_eigvec=vec,
        lanczos_iter=n_lanczos,
        lanczos_residual=residual,
        tol=tol,
        curvature_tol=curvature_tol,
        success=bool(grad_norm <= tol and eig >= -curvature_tol),
    )


def _check_tolerances(tol, curvature_tol):
    if not isinstance(tol, numbers.Real) or not tol > 0:
        raise ValueError(f"tol must be a positive number, got {tol!r}.")
    if curvature_tol is None:
        curvature_tol = np.sqrt(tol)
    if not isinstance(curvature_tol, numbers.Real) or not curvature_tol >= 0:
        raise ValueError(
            "curvature_tol must be a non-negative number or None, got "
            f"{curvature_tol!r}."
        )
    return float(tol), float(curvature_tol)


def _check_x(x, name="x"):
    try:
        x = np.array(x, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a vector of real numbers: {exc}") from None
    if x.ndim != 1:
        raise ValueError(f"{name} must be a flat (1-d) vector, got shape {x.shape}.")
    if x.size == 0:
        raise ValueError(f"{name} is empty: at least one variable is needed.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return x


def sosp_certificate(
    fun,
    x,
    *,
    hessp=None,
    tol=1e-6,
    curvature_tol=None,
    max_lanczos_iter=100,
    lanczos_rtol=1e-6,
    random_state=0,
):
    """Certify whether ``x`` is an approximate second-order stationary point.

    Works for a point found by any optimizer: it evaluates the gradient norm and the
    smallest eigenvalue of the Hessian, the latter by Lanczos iteration on
    Hessian-vector products (exact ones from ``hessp``, or central differences of
    gradients), so no Hessian is ever formed.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)`` for a flat float vector ``x``.
    x : array-like of shape (n_variables,)
        The point to certify. It is not modified.
    hessp : callable, default=None
        ``hessp(x, v)`` returning the Hessian at ``x`` times ``v``. Without it,
        ``(grad(x + h v) - grad(x - h v)) / 2h`` is used.
    tol : float, default=1e-6
        Gradient-norm tolerance of the certificate.
    curvature_tol : float, default=None
        The certificate requires ``min_hessian_eig >= -curvature_tol``. ``None``
        means ``sqrt(tol)``, the scaling of Jin et al. (2017).
    max_lanczos_iter : int, default=100
        Largest Krylov dimension. When ``n_variables <= max_lanczos_iter`` the
        eigenvalue is exact up to round-off.
    lanczos_rtol : float, default=1e-6
        Lanczos stops once the Ritz residual is below ``lanczos_rtol`` times the
        largest Hessian scale seen.
    random_state : int, RandomState or Generator instance, or None, default=0
        Seeds the Lanczos start vector. A random start is essential: a structured
        one (such as all ones) can be orthogonal to the negative-curvature direction.
        ``None`` seeds from the operating system (never from numpy's global
        generator).

    Returns
    -------
    res : scipy.optimize.OptimizeResult
        With ``fun``, ``jac``, ``grad_norm``, ``min_hessian_eig`` (the smallest Ritz
        value, an upper bound on the smallest eigenvalue, exact when Lanczos
        exhausts the space), ``min_hessian_eigvec``, ``lanczos_iter``,
        ``lanczos_residual``, ``nfev``, ``nhev`` and ``success`` (both tolerances
        hold).

    See Also
    --------
    minimize_sosp : Find a certified approximate second-order stationary point.

    Examples
    --------
    A saddle of ``x0**2 - x1**2`` at the origin: zero gradient, curvature -2.

    >>> import numpy as np
    >>> from skderand.optimize import sosp_certificate
    >>> def saddle(x):
    ...     return x[0] ** 2 - x[1] ** 2, np.array([2 * x[0], -2 * x[1]])
    >>> cert = sosp_certificate(saddle, [0.0, 0.0])
    >>> round(cert.grad_norm, 6), round(cert.min_hessian_eig, 4), cert.success
    (0.0, -2.0, False)
    """
    x = _check_x(x)
    tol, curvature_tol = _check_tolerances(tol, curvature_tol)
    objective = _Objective(fun, x.size, hessp)
    res = _certify(
        objective,
        x,
        tol=tol,
        curvature_tol=curvature_tol,
        rng=check_random_state(random_state),
        max_lanczos_iter=max_lanczos_iter,
        lanczos_rtol=lanczos_rtol,
    )
    res.nfev = objective.nfev
    res.nhev = objective.nhev
    return res


def certificate_message(grad_norm, tol, min_hessian_eig, curvature_tol):
    """The one sentence every skderand warning uses for a certificate that fails."""
    return (
        f"gradient norm {grad_norm:.2e} (tol={tol:g}), smallest Hessian eigenvalue "
        f"{min_hessian_eig:.2e} (curvature_tol={curvature_tol:g})"
    )


def record_certificate(
    estimator,
    *,
    grad_norm,
    min_hessian_eig,
    tol,
    curvature_tol,
    n_iter,
    advice,
    stacklevel=2,
    warn=True,
):
    """Store an estimator's fitted certificate and warn once if it does not hold.

    Every skderand estimator exposes the same five attributes after ``fit``:
    ``grad_norm_``, ``min_hessian_eig_``, ``curvature_tol_`` (the tolerance
    actually used), ``n_iter_`` and ``certified_``, with ``certified_`` true
    exactly when ``grad_norm_ <= tol`` and ``min_hessian_eig_ >= -curvature_tol_``.
    The estimators silence the solver (``minimize_sosp(warn=False)``) and call this
    once, on the point they return, so that a user sees one warning in the
    estimator's own terms.

    Parameters
    ----------
    estimator : estimator instance
        Receives the attributes.
    grad_norm, min_hessian_eig : float
        The certificate of the returned point, in the units of the estimator's
        ``tol`` and ``curvature_tol``.
    tol, curvature_tol : float
        The tolerances the certificate is checked against.
    n_iter : int
        Solver iterations that produced the point.
    advice : str
        What the user can change, in the estimator's parameter names.
    stacklevel : int, default=2
        Of the warning, counted from the caller of this function.
    warn : bool, default=True
        ``False`` stores the attributes only: for an estimator fitted inside
        another, which warns in its own terms.
    """
    estimator.grad_norm_ = float(grad_norm)
    estimator.min_hessian_eig_ = float(min_hessian_eig)
    estimator.curvature_tol_ = float(curvature_tol)
    estimator.n_iter_ = int(n_iter)
    estimator.certified_ = bool(
        estimator.grad_norm_ <= tol and estimator.min_hessian_eig_ >= -curvature_tol
    )
    if warn and not estimator.certified_:
        warnings.warn(
            f"{type(estimator).__name__} did not reach a certified second-order "
            "stationary point: "
            f"{certificate_message(grad_norm, tol, min_hessian_eig, curvature_tol)}"
            f" after {int(n_iter)} iterations. {advice}",
            ConvergenceWarning,
            stacklevel=stacklevel + 1,
        )


def record_trivial_certificate(estimator, *, curvature_tol):
    """The certificate of a problem with nothing to optimize.

    An edgeless graph or data with no pair of distinct points leaves the
    estimator's objective constant in every variable it has: every point is an
    exact SOSP. All estimators report that case the same way: zero gradient norm,
    zero smallest eigenvalue, no iteration, certified.
    """
    estimator.grad_norm_ = 0.0
    estimator.min_hessian_eig_ = 0.0
    estimator.curvature_tol_ = float(curvature_tol)
    estimator.n_iter_ = 0
    estimator.certified_ = True
