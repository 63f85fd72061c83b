"""``python -m skderand``: the demonstration of every tool, in one place.

Each section prints what a user would check: the solver's certificate, a cut
against its certified bound, a QUBO's rounding, solution and bound, planted
subspaces recovered, learned embeddings against random projections.
``tests/test_demo.py`` checks what it prints.
"""

import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.random_projection import GaussianRandomProjection

from skderand.datasets import make_multi_index_regression, subspace_distance
from skderand.embedding import LearnedJLTransformer
from skderand.maxcut import DeterministicMaxCut, erdos_renyi_graph
from skderand.maxcut._command import report_cut
from skderand.maxcut._local_search import cut_value, one_flip
from skderand.neural import StructureDiscoveryRegressor
from skderand.optimize import matrix_factorization, minimize_sosp
from skderand.qubo import DeterministicQUBO


def demo_solver():
    """Escape the saddle at zero of a low-rank factorization with both methods."""
    print("== The SOSP solver (skderand.optimize.minimize_sosp) ==")
    print(
        "Low-rank factorization 0.5*||U V^T - M||^2 of a rank-3, 60 x 40 matrix,\n"
        "started exactly at the strict saddle U = V = 0 (gradient zero), where plain\n"
        "gradient descent or L-BFGS would stay forever."
    )
    fun, _, n_vars = matrix_factorization(60, 40, 3, random_state=0)
    header = (
        f"{'method':>7} {'objective':>11} {'grad norm':>10} {'min eig':>10} "
        f"{'escapes':>7} {'nfev':>6} {'time s':>7} certified"
    )
    print(header)
    for method in ("lbfgs", "pgd"):
        res = minimize_sosp(
            fun, np.zeros(n_vars), method=method, random_state=0, max_iter=50_000
        )
        print(
            f"{method:>7} {res.fun:>11.3e} {res.grad_norm:>10.2e} "
            f"{res.min_hessian_eig:>10.2e} {res.n_perturbations:>7d} {res.nfev:>6d} "
            f"{res.time:>7.2f} {res.success}"
        )
    print()


def demo_maxcut():
    """Derandomized Goemans-Williamson on a generated signed graph."""
    print("== MAXCUT (skderand.DeterministicMaxCut) ==")
    A = erdos_renyi_graph(500, 0.04, signed=True, random_state=0)
    n, m = A.shape[0], A.nnz // 2
    print(
        f"A random graph with {n} vertices and {m} edges of weight +-1 (the kind\n"
        "of Gset's hardest instances). Goemans-Williamson rounds the SDP vectors\n"
        "with a random hyperplane: a different cut per seed. The derandomized\n"
        "rounding optimizes the expected cut while a penalty drives the random\n"
        "part V to zero, leaving one deterministic cut."
    )
    start = time.perf_counter()
    mc = DeterministicMaxCut(affinity="precomputed").fit(A)
    elapsed = time.perf_counter() - start
    rng = np.random.default_rng(0)  # the 100 random hyperplanes of the comparison
    V = mc.sdp_vectors_
    signs = np.where(V @ rng.standard_normal((V.shape[1], 100)) >= 0, 1.0, -1.0)
    gw = np.array([cut_value(A, s) for s in signs.T])
    gw_flip = np.array([cut_value(A, one_flip(A, s)[0]) for s in signs.T])
    print(f"  SDP value             {mc.sdp_value_:12.1f}")
    print(f"  GW expected cut       {mc.expected_gw_cut_:12.1f}   (closed form)")
    print(
        f"  100 GW roundings      {gw.mean():12.1f}   mean, best {gw.max():.0f}; "
        f"with 1-flip best {gw_flip.max():.0f}"
    )
    print(
        f"  derandomized rounding {mc.rounded_cut_value_:12.1f}   (sign(mu), "
        "then conditional expectations)"
    )
    print(
        f"  rounding certificate  |V| = {mc.rounding_v_norm_:.1e}, gradient norm "
        f"{mc.grad_norm_:.1e}, min Hessian eig {mc.min_hessian_eig_:.1e}, "
        f"{mc.n_stages_} alpha stages"
    )
    print('  after the improvement phase (local_search="auto": replica exchange):')
    report_cut(mc, elapsed)
    print()


def demo_qubo():
    """A dense signed QUBO: the rounding's stages, the tabu search, the bound."""
    print("== QUBO (skderand.DeterministicQUBO) ==")
    rng = np.random.default_rng(0)
    n = 200
    upper = np.triu(rng.integers(-100, 101, (n, n)) * (rng.random((n, n)) < 0.3))
    Q = (upper + np.triu(upper, 1).T).astype(float)
    print(
        f"Maximize x^T Q x over x in {{0, 1}}^{n}, Q dense (30%) with integers in\n"
        "[-100, 100]. The relaxation's standard rounding, x_i = [sign(v_i.z) =\n"
        "sign(v_0.z)], is derandomized by the framework (skderand.derandomize),\n"
        "then improved by a one-flip tabu search; the bound comes from the dual."
    )
    start = time.perf_counter()
    qubo = DeterministicQUBO(sense="maximize").fit(Q)
    elapsed = time.perf_counter() - start
    gap = (qubo.bound_ - qubo.value_) / qubo.bound_
    print(f"  randomized rounding   {qubo.expected_value_:12.1f}   (expected value)")
    print(f"  derandomized rounding {qubo.rounded_value_:12.1f}")
    print(f"  after the tabu search {qubo.value_:12.1f}")
    print(f"  certified upper bound {qubo.bound_:12.1f}   (gap {gap:.4f})")
    print(f"  certificate           {qubo.certified_}, time {elapsed:.2f} s")
    print()


def demo_structure_discovery():
    """Recover planted subspaces of multi-index teachers, with the certificate."""
    print("== Structure discovery (skderand.StructureDiscoveryRegressor) ==")
    d, n = 12, 1500
    print(
        f"y = h(U x) + 0.1 noise, x ~ N(0, I_{d}), n = {n}; U has k random\n"
        "orthonormal rows. The decay alpha_ and the dimension n_components_ are\n"
        "chosen by 5-fold cross-validation (the defaults), the first-layer singular\n"
        "values show the gap, and the distance ||P_B - P_U||_2 to the true\n"
        "subspace is 0 for a perfect recovery, 1 for a useless one."
    )
    teachers = ["relu", "product", "relu_sum"]
    print(
        f"{'teacher':<21} {'k':>2} {'found':>5} {'alpha_':>7} {'distance':>8} "
        f"{'R^2':>6} "
        f"{'grad norm':>9} {'min eig':>9} {'time s':>6}  top singular values"
    )
    for seed, name in enumerate(teachers):
        X, y, U = make_multi_index_regression(n, d, link=name, random_state=seed)
        k = U.shape[0]
        est = StructureDiscoveryRegressor(hidden_layer_sizes=16, random_state=0)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y)
        elapsed = time.perf_counter() - start
        top = " ".join(f"{s:.3f}" for s in est.singular_values_[: k + 2])
        print(
            f"{name:<21} {k:>2} {est.n_components_:>5} {est.alpha_:>7.0e} "
            f"{subspace_distance(est.subspace_, U):>8.3f} "
            f"{est.score(X, y):>6.3f} {est.grad_norm_:>9.1e} "
            f"{est.min_hessian_eig_:>9.1e} {elapsed:>6.1f}  {top}"
        )
    print()


def _scale_free_distortion(X, Y):
    """``(r_max - r_min) / (r_max + r_min)`` over the pairs of distinct rows."""
    sq = np.einsum("ij,ij->i", X, X)
    d2 = sq[:, None] + sq[None, :] - 2 * X @ X.T
    sq_y = np.einsum("ij,ij->i", Y, Y)
    q = sq_y[:, None] + sq_y[None, :] - 2 * Y @ Y.T
    iu = np.triu_indices(X.shape[0], 1)
    keep = d2[iu] > 1e-10 * d2[iu].max()
    r = q[iu][keep] / d2[iu][keep]
    return (r.max() - r.min()) / (r.max() + r.min())


def demo_learned_jl():
    """Worst-case distortion of a learned embedding against random projections."""
    print("== Learned Johnson-Lindenstrauss embedding (LearnedJLTransformer) ==")
    X = load_digits().data[::10]  # 180 images of 8 x 8 digits
    X = X - X.mean(axis=0)
    k = 20
    print(
        f"{X.shape[0]} digit images in {X.shape[1]} dimensions, embedded in k = {k}.\n"
        "Worst-case distortion over all pairs: every pair's squared distance is\n"
        "kept within (1 +- eps) after calibrating the overall scale."
    )
    draws = [
        _scale_free_distortion(
            X, GaussianRandomProjection(k, random_state=s).fit_transform(X)
        )
        for s in range(20)
    ]
    print(
        f"  GaussianRandomProjection, 20 seeds: median eps {np.median(draws):.3f}, "
        f"best {np.min(draws):.3f}"
    )
    for algorithm in ("direct", "derandomized"):
        start = time.perf_counter()
        # The report states whether the certificate held; no need for the warning.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            jl = LearnedJLTransformer(k, algorithm=algorithm, random_state=0).fit(X)
        elapsed = time.perf_counter() - start
        print(
            f"  LearnedJLTransformer(algorithm={algorithm!r}): "
            f"eps {jl.distortion_:.3f} "
            f"(started from {jl.initial_distortion_:.3f}), scale_ {jl.scale_:.1e}, "
            f"{elapsed:.1f} s\n"
            f"    surrogate certificate: gradient norm {jl.grad_norm_:.1e} "
            f"(tol {jl.tol:g}), min Hessian eig {jl.min_hessian_eig_:.1e}, "
            f"certified {jl.certified_}"
        )
    print()


SECTIONS = [
    demo_solver,
    demo_maxcut,
    demo_qubo,
    demo_structure_discovery,
    demo_learned_jl,
]


def demo():
    """Run every section; returns the exit status."""
    start = time.perf_counter()
    print("skderand demonstration\n")
    for section in SECTIONS:
        section()
    print(f"Demonstration finished in {time.perf_counter() - start:.1f} s.")
    return 0
