"""Compare the SOSP solver's methods on saddle-rich problems of growing size.

Every problem is started exactly on a strict saddle (zero gradient, negative
curvature), where gradient descent and L-BFGS alone would never move. For each
method the table gives iterations, function (gradient) evaluations, Hessian-vector
products, wall time and the final certificate.

Run::

    python benchmarks/bench_solver.py            # the default grid
    python benchmarks/bench_solver.py --quick    # the two smallest problems
"""

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from skderand.optimize import double_well, matrix_factorization, minimize_sosp


def factorization_problem(m, n, rank):
    """The factorization of a unit-scale rank-``rank`` matrix, started at zero."""
    fun, _, n_vars = matrix_factorization(m, n, rank, unit_scale=True)
    return fun, np.zeros(n_vars)


def tanh_network(n_samples, n_features, width, decay=1e-3, seed=0):
    """Mean squared error of ``a . tanh(W x + b)`` against a planted teacher.

    With weight decay ``decay * (||W||^2 + ||a||^2)``, as the structure-discovery
    estimator trains it (without it the flat directions make tol unreachable in
    reasonable time).

    At ``W = 0, b = 0, a = 0`` every gradient vanishes while the Hessian couples
    ``a`` and ``W`` with negative curvature: a strict saddle, as at the usual
    small-initialization start of a network.
    """
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_samples, n_features))
    u = rng.standard_normal(n_features) / np.sqrt(n_features)
    y = np.tanh(2 * x @ u) + 0.5 * (x @ u) ** 2 - 0.5
    n_w = width * n_features

    def fun(theta):
        w = theta[:n_w].reshape(width, n_features)
        b = theta[n_w : n_w + width]
        a = theta[n_w + width :]
        hidden = np.tanh(x @ w.T + b)
        residual = hidden @ a - y
        value = 0.5 * np.mean(residual**2) + decay * (w.ravel() @ w.ravel() + a @ a)
        d_hidden = np.outer(residual, a) * (1 - hidden**2) / n_samples
        grad = np.concatenate(
            [
                (d_hidden.T @ x + 2 * decay * w).ravel(),
                d_hidden.sum(0),
                hidden.T @ residual / n_samples + 2 * decay * a,
            ]
        )
        return value, grad

    return fun, np.zeros(n_w + 2 * width)


def double_well_problem(n):
    """The separable double well started at the origin, where the Hessian is -I."""
    return double_well, np.zeros(n)


PROBLEMS = [
    ("factorization 40x30 r=3", lambda: factorization_problem(40, 30, 3)),
    ("tanh net n=500 d=10 h=16", lambda: tanh_network(500, 10, 16)),
    ("factorization 200x150 r=5", lambda: factorization_problem(200, 150, 5)),
    ("tanh net n=2000 d=20 h=32", lambda: tanh_network(2000, 20, 32)),
    ("factorization 1000x800 r=10", lambda: factorization_problem(1000, 800, 10)),
    ("double well n=100000", lambda: double_well_problem(100_000)),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two smallest problems")
    parser.add_argument("--max-iter", type=int, default=20_000)
    parser.add_argument("--tol", type=float, default=1e-6)
    args = parser.parse_args()
    problems = PROBLEMS[:2] if args.quick else PROBLEMS
    header = (
        f"| {'problem':<28} | {'vars':>7} | {'method':<6} | {'iter':>6} | "
        f"{'nfev':>6} | {'nhev':>5} | {'time s':>7} | {'grad norm':>9} | "
        f"{'min eig':>9} | {'escapes':>7} | certified |"
    )
    print(f"tol={args.tol:g}, curvature_tol=sqrt(tol), BLAS threads limited to 1\n")
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for name, make in problems:
        fun, x0 = make()
        for method in ("lbfgs", "pgd"):
            start = time.perf_counter()
            with threadpool_limits(1):
                res = minimize_sosp(
                    fun,
                    x0,
                    method=method,
                    tol=args.tol,
                    max_iter=args.max_iter,
                    random_state=0,
                )
            elapsed = time.perf_counter() - start
            print(
                f"| {name:<28} | {x0.size:>7} | {method:<6} | {res.n_iter:>6} | "
                f"{res.nfev:>6} | {res.nhev:>5} | {elapsed:>7.2f} | "
                f"{res.grad_norm:>9.2e} | {res.min_hessian_eig:>9.2e} | "
                f"{res.n_perturbations:>7} | {str(res.success):<9} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
