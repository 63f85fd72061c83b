"""
=======================================================
Escaping a saddle point, with a certificate to prove it
=======================================================

Every estimator in skderand is trained by one solver,
:func:`skderand.optimize.minimize_sosp`, which returns an approximate
*second-order* stationary point (SOSP): the gradient is small **and** the Hessian
has no direction of significant negative curvature. The derandomization lemma
behind skderand is a statement about such points, so reaching one, and proving
it, matters: a first-order method can stop on a saddle, where the lemma says
nothing.

This example shows the solver on two problems with strict saddles and the
certificate, :func:`skderand.optimize.sosp_certificate`, that tells a saddle from
a minimum for a point found by any optimizer.
"""

# %%
# A saddle in two dimensions
# --------------------------
# :math:`f(x, y) = (x^2 - 1)^2 / 4 + y^2 / 2` has minima at :math:`(\pm 1, 0)`
# and a strict saddle at the origin, with Hessian :math:`\mathrm{diag}(-1, 1)`.
# Started on the line :math:`x = 0`, the gradient never has an :math:`x`
# component, so gradient-based methods slide straight into the saddle.
import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import minimize

from skderand.optimize import matrix_factorization, minimize_sosp, sosp_certificate


def saddle_2d(z):
    x, y = z
    value = (x**2 - 1) ** 2 / 4 + y**2 / 2
    return value, np.array([x**3 - x, y])


x0 = np.array([0.0, 1.5])

# Plain L-BFGS (scipy): converges to the saddle.
path_lbfgs = [x0]
plain = minimize(
    saddle_2d, x0, jac=True, method="L-BFGS-B", callback=lambda z: path_lbfgs.append(z)
)
path_lbfgs = np.array(path_lbfgs)

# minimize_sosp, both methods: the callback records the iterates.
paths, results = {}, {}
for method in ("lbfgs", "pgd"):
    trace = [x0]
    results[method] = minimize_sosp(
        saddle_2d,
        x0,
        method=method,
        tol=1e-8,
        random_state=0,
        callback=lambda r, trace=trace: trace.append(r.x.copy()),
    )
    # The callback sees the iterates of each inner run; add the returned point,
    # which a final negative-curvature step can move.
    paths[method] = np.array([*trace, results[method].x])

print(f"scipy L-BFGS stops at      {np.round(plain.x, 6)}")
for method, res in results.items():
    print(
        f"minimize_sosp({method!r:7}) -> {np.round(res.x, 6)}, certified "
        f"{res.success}, {res.n_perturbations} escape step(s), {res.nfev} evaluations"
    )

# %%
# The certificate tells the two end points apart. At the saddle the gradient is
# zero but the smallest Hessian eigenvalue is -1; at the returned point it is +1.
for name, point in [("scipy L-BFGS", plain.x), ("minimize_sosp", results["lbfgs"].x)]:
    cert = sosp_certificate(saddle_2d, point, tol=1e-6)
    print(
        f"{name:14} grad norm {cert.grad_norm:.1e}, smallest Hessian eigenvalue "
        f"{cert.min_hessian_eig:+.3f}, SOSP: {cert.success}"
    )

# %%
grid = np.linspace(-1.6, 1.6, 241)
X, Y = np.meshgrid(grid, grid)
Z = (X**2 - 1) ** 2 / 4 + Y**2 / 2

fig, ax = plt.subplots(figsize=(6.4, 5))
ax.contour(X, Y, Z, levels=np.linspace(0, 1.4, 15), cmap="Greys", linewidths=0.8)
ax.plot(
    *path_lbfgs.T,
    "o-",
    color="tab:red",
    lw=7,
    ms=9,
    alpha=0.35,
    label="scipy L-BFGS: stops at the saddle",
)
ax.plot(
    *paths["lbfgs"].T,
    "s--",
    color="tab:blue",
    lw=2.5,
    ms=5,
    label='minimize_sosp "lbfgs" (default)',
)
ax.plot(*paths["pgd"].T, ".-", color="tab:green", lw=1.2, label='minimize_sosp "pgd"')
ax.plot(0, 0, "kx", ms=12, mew=2)
ax.annotate("saddle", (0, 0), (0.15, -0.35), arrowprops={"arrowstyle": "->"})
ax.set(xlabel="x", ylabel="y", title="Started on the saddle's stable manifold")
ax.set_aspect("equal")
ax.legend(loc="lower center", fontsize=8)
fig.tight_layout()

# %%
# A saddle with a large null space: matrix factorization started at zero
# ----------------------------------------------------------------------
# Fit :math:`M \approx U V^\top` (rank 3) by minimizing
# :math:`\|UV^\top - M\|_F^2 / 2`. At :math:`U = V = 0` the gradient vanishes
# and the Hessian is indefinite with a large null space: the smallest eigenvalue
# is :math:`-\sigma_1(M)`, but a Lanczos run from a structured start vector can
# miss it. The solver's Lanczos uses a seeded random start and full
# re-orthogonalization, finds the negative curvature and escapes.
# :func:`skderand.optimize.matrix_factorization` builds this problem.
factorization, M, n_variables = matrix_factorization(60, 40, 3, random_state=0)
theta0 = np.zeros(n_variables)
cert0 = sosp_certificate(factorization, theta0)
print(
    f"At zero: grad norm {cert0.grad_norm:.1e}, smallest Hessian eigenvalue "
    f"{cert0.min_hessian_eig:.2f} (exact: {-np.linalg.norm(M, 2):.2f})"
)

histories = {}
for method in ("lbfgs", "pgd"):
    values = [factorization(theta0)[0]]
    res = minimize_sosp(
        factorization,
        theta0,
        method=method,
        tol=1e-6,
        max_iter=20_000,
        random_state=0,
        callback=lambda r, values=values: values.append(r.fun),
    )
    histories[method] = (np.array(values), res)
    print(
        f"{method:6} objective {res.fun:.2e}, grad norm {res.grad_norm:.1e}, "
        f"smallest Hessian eigenvalue {res.min_hessian_eig:+.2e}, "
        f"{res.n_iter} iterations, {res.nfev} evaluations, "
        f"{res.time:.2f} s, certified {res.success}"
    )

# %%
# Both methods leave the saddle at once and converge to a global minimum
# (objective ~ 0). The quasi-Newton method, the default, needs far fewer
# iterations; perturbed gradient descent is the method the theory is written
# for. ``benchmarks/bench_solver.py`` compares them on larger problems.
fig, ax = plt.subplots(figsize=(6.4, 4))
for method, color in (("lbfgs", "tab:blue"), ("pgd", "tab:green")):
    values, res = histories[method]
    ax.semilogy(
        np.arange(values.size),
        np.maximum(values, 1e-16),
        color=color,
        label=f'"{method}": {res.n_iter} iterations, certified {res.success}',
    )
ax.set(
    xlabel="iteration",
    ylabel=r"objective $\|UV^\top - M\|_F^2 / 2$",
    title="Matrix factorization started at the saddle U = V = 0",
)
ax.set_xscale("symlog", linthresh=10)
ax.legend()
fig.tight_layout()
plt.show()
