"""Worst-case distortion of LearnedJLTransformer against random projections and PCA.

One table: for each data set and target dimension k, the scale-free worst-case
distortion ``(r_max - r_min) / (r_max + r_min)`` over all pairs (theory.md section
5) and the fit time of

- LearnedJLTransformer, ``algorithm="direct"`` (the default) and ``"derandomized"``,
- GaussianRandomProjection: median and best of 20 seeds,
- SparseRandomProjection: median of 20 seeds,
- PCA,

then the held-out distortion (fit on 80 % of the points, measured on the pairs of
the other 20 %), and for the Gaussian set the smallest k reaching eps* <= 0.2 for
each method. Then a sparse text-like matrix (never densified by the fit) and,
with ``--large``, clustered low-rank-plus-noise sets of n = 20,000 and 50,000
points: fit time, peak memory of the fit (in a fresh process) and the exact
all-pairs distortion (blocked passes) against Gaussian projections and PCA.
Run: ``python benchmarks/bench_jl.py`` (``--quick`` for a subset, ``--large``
for the large rows only, ``--only digits`` for some data sets of the main table,
``--extras`` for the breast_cancer, linnerud and ``"auto"`` rows, ``--starts`` for
digits ``k = 10`` with several starts (``n_init``, ``n_jobs``), ``--sparse``, and
``--sparse-copies`` for it with 15 rows copies of others,
``--sparse-large [NxD ...]`` for text-like sets of 5,000 x 20,000 or the sizes
given, 100 non-zeros per row; ``--sparse-auto`` for ``n_components="auto"``
on text-like 1,500 x 40,000 rows), so that each timed run stays short.
"""

import argparse
import multiprocessing
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import sparse
from scipy.spatial.distance import pdist
from sklearn.datasets import load_breast_cancer, load_digits, load_linnerud
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.random_projection import (
    GaussianRandomProjection,
    SparseRandomProjection,
    johnson_lindenstrauss_min_dim,
)

from skderand import LearnedJLTransformer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _resources import (  # noqa: E402
    machine_conditions,
    peak_resident_mib,
    reset_peak_resident,
)

N_SEEDS = 20
N_COMPONENTS = (10, 20, 40)


def distortion(X, Y):
    """Scale-free worst-case distortion over the pairs of distinct rows."""
    d2 = pdist(np.asarray(X, dtype=np.float64), "sqeuclidean")
    q = pdist(np.asarray(Y, dtype=np.float64), "sqeuclidean")
    keep = d2 > 1e-10 * d2.max()
    r = q[keep] / d2[keep]
    return (r.max() - r.min()) / (r.max() + r.min())


def datasets():
    rng = np.random.default_rng(0)
    gaussian = rng.standard_normal((300, 1000))
    digits = load_digits().data
    # The paper's setting: 100 unit vectors with Uniform[0, 1) entries, d = 500.
    paper = rng.uniform(size=(100, 500))
    paper /= np.linalg.norm(paper, axis=1, keepdims=True)
    low_rank = rng.standard_normal((500, 10)) @ rng.standard_normal((10, 200))
    low_rank += 0.3 * rng.standard_normal(low_rank.shape)
    return {
        "gaussian 300x1000": gaussian,
        "digits 1797x64": digits,
        "paper 100x500": paper,
        "lowrank+noise 500x200": low_rank,
    }


def exact_pca(k):
    """PCA by a full SVD: exact and deterministic (the randomized solver that
    PCA picks for these sizes draws from numpy's global generator)."""
    return PCA(k, svd_solver="full")


def timed_fit(estimator, X):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator.fit(X)
    return estimator, time.perf_counter() - start


def random_projection_stats(cls, X, k, X_test=None):
    values, held_out, times = [], [], []
    for seed in range(N_SEEDS):
        rp, t = timed_fit(cls(k, random_state=seed), X)
        times.append(t)
        values.append(distortion(X, rp.transform(X)))
        if X_test is not None:
            held_out.append(distortion(X_test, rp.transform(X_test)))
    return np.array(values), np.array(held_out), np.median(times)


def split(est, seconds):
    """What a fit of ``seconds`` did, and whether it is certified.

    Solver iterations (and their mean time), blocked passes over all pairs,
    the largest active set. ``timed_fit`` silences the
    ``ConvergenceWarning``: an uncertified fit says so here, with the test it
    failed.
    """
    st = est._fit_stats
    return (
        f"{est.n_iter_} iterations ({1e3 * seconds / max(est.n_iter_, 1):.1f} ms "
        f"of the fit each), {st['n_scans']} passes, "
        f"active set <= {st['max_active']} pairs, {certificate(est)}"
    )


def certificate(est):
    """``certified``, or which of the certificate's two tests failed."""
    if est.certified_:
        return "certified"
    failed = []
    if not est.grad_norm_ <= est.tol:
        failed.append(f"gradient norm {est.grad_norm_:.1e} > tol {est.tol:g}")
    if not est.min_hessian_eig_ >= -est.curvature_tol_:
        failed.append(
            f"smallest Hessian eigenvalue {est.min_hessian_eig_:.1e} < "
            f"-{est.curvature_tol_:.1e}"
        )
    return f"uncertified ({', '.join(failed)})"


def main(quick=False, only=None, extras=True):
    print(f"# {machine_conditions()}")
    header = (
        f"{'data set':<22} {'k':>3} | {'learned':>7} {'time s':>6} {'derand':>7} "
        f"{'time s':>6} {'scale':>8} | {'GRP med':>7} {'GRP best':>8} "
        f"{'SRP med':>7} {'PCA':>6} | {'ratio':>5} | held-out: {'learned':>7} "
        f"{'GRP med':>7} {'PCA':>6}"
    )
    print(header)
    print("-" * len(header))
    for name, X in datasets().items():
        if quick and name.startswith("digits"):
            continue
        if only is not None and not any(name.startswith(o) for o in only):
            continue
        rng = np.random.default_rng(1)
        order = rng.permutation(X.shape[0])
        n_train = int(0.8 * X.shape[0])
        X_train, X_test = X[order[:n_train]], X[order[n_train:]]
        for k in N_COMPONENTS:
            if k >= X.shape[1]:
                continue
            jl, t_jl = timed_fit(LearnedJLTransformer(k, random_state=0), X)
            d_jl = distortion(X, jl.transform(X))
            der, t_der = timed_fit(
                LearnedJLTransformer(k, algorithm="derandomized", random_state=0), X
            )
            d_der = distortion(X, der.transform(X))
            grp, _, _ = random_projection_stats(GaussianRandomProjection, X, k)
            srp, _, _ = random_projection_stats(SparseRandomProjection, X, k)
            d_pca = distortion(X, exact_pca(k).fit_transform(X))
            # Held out: fit on 80 %, measure on the pairs of the other 20 %.
            jl_tr, _ = timed_fit(LearnedJLTransformer(k, random_state=0), X_train)
            _, grp_ho, _ = random_projection_stats(
                GaussianRandomProjection, X_train, k, X_test
            )
            pca_ho = distortion(X_test, exact_pca(k).fit(X_train).transform(X_test))
            print(
                f"{name:<22} {k:>3} | {d_jl:>7.3f} {t_jl:>6.1f} {d_der:>7.3f} "
                f"{t_der:>6.1f} {der.scale_:>8.1e} | {np.median(grp):>7.3f} "
                f"{grp.min():>8.3f} {np.median(srp):>7.3f} {d_pca:>6.3f} | "
                f"{d_jl / np.median(grp):>5.2f} |           "
                f"{distortion(X_test, jl_tr.transform(X_test)):>7.3f} "
                f"{np.median(grp_ho):>7.3f} {pca_ho:>6.3f}",
                flush=True,
            )
            print(f"{'':<26}   learned: {split(jl, t_jl)}", flush=True)
    print(
        "\nlearned/derand: LearnedJLTransformer, algorithm='direct' (default) / "
        "'derandomized' (scale: its final scale_).\nratio: learned / GRP median. "
        "GRP/SRP: Gaussian/Sparse RandomProjection over 20 seeds."
    )
    if extras:
        breast_cancer()
        linnerud()
        smallest_k_gaussian()
        sparse_text()
    print(f"# at the end: {machine_conditions()}")


def standardized(X):
    """Features centred and scaled to unit variance (the small extras' sets)."""
    return (X - X.mean(axis=0)) / X.std(axis=0)


def baselines(X, k):
    """The median and best of the Gaussian projections and PCA, as printed."""
    grp, _, _ = random_projection_stats(GaussianRandomProjection, X, k)
    d_pca = distortion(X, exact_pca(k).fit_transform(X))
    return f"GRP median {np.median(grp):.3f}, best {grp.min():.3f}; PCA {d_pca:.3f}"


def breast_cancer(k=8):
    X = standardized(load_breast_cancer().data)
    jl, t = timed_fit(LearnedJLTransformer(k, random_state=0), X)
    print(
        f"\nbreast_cancer standardized 569x30, k={k}: learned "
        f"{distortion(X, jl.transform(X)):.3f} in {t:.1f} s ({split(jl, t)}); "
        f"{baselines(X, k)}"
    )


def starts(k=10, n_inits=(1, 4, 8)):
    """Digits, where the fit's basin decides the last percent (see n_init in the
    user guide): the kept distortion of ``n_init`` starts, and their time in
    one job and in two (threads; the map is the same)."""
    X = load_digits().data
    print(f"\ndigits 1797x64, k={k}, random_state=0, starts kept by lowest distortion:")
    for n_init in n_inits:
        times = {}
        for n_jobs in (1, 2) if n_init > 1 else (1,):
            jl, times[n_jobs] = timed_fit(
                LearnedJLTransformer(k, n_init=n_init, n_jobs=n_jobs, random_state=0),
                X,
            )
        in_two = f", {times[2]:.1f} s with n_jobs=2" if 2 in times else ""
        print(
            f"  n_init={n_init}: {distortion(X, jl.transform(X)):.4f} in "
            f"{times[1]:.1f} s{in_two}",
            flush=True,
        )


def linnerud(k=2, n_seeds=5, eps=0.7):
    """A small set where fits from random maps ended above PCA's map (then fit
    again from it, see LearnedJLTransformer's Notes): seeds 0 to n_seeds - 1.
    Also the dimension search at ``eps``, which tries PCA's map for a failing
    candidate too, against the smallest dimension of PCA's map reaching it."""
    X = standardized(load_linnerud().data)
    fits = [
        timed_fit(LearnedJLTransformer(k, random_state=s), X) for s in range(n_seeds)
    ]
    learned = " / ".join(f"{distortion(X, jl.transform(X)):.3f}" for jl, _ in fits)
    print(
        f"\nlinnerud standardized 20x3, k={k}: learned (seeds 0-{n_seeds - 1}) "
        f"{learned}, at most {max(t for _, t in fits):.2f} s each; "
        f"{baselines(X, k)}"
    )
    searches = [
        LearnedJLTransformer(eps=eps, random_state=s).fit(X) for s in range(n_seeds)
    ]
    print(
        f"  n_components='auto', eps={eps}: k = "
        + " / ".join(f"{jl.n_components_} ({jl.distortion_:.3f})" for jl in searches)
        + f"; PCA: k = {pca_dimension(X, eps)}"
    )


def smallest_dimension(score, target, k_max):
    """Smallest ``k`` in ``1..k_max`` with ``score(k) <= target``, by bisection.

    ``score`` is taken to fall with ``k`` and ``k_max`` to reach the target.
    """
    lo, hi = 0, k_max
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if score(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def pca_dimension(X, target):
    """Smallest dimension whose PCA map reaches distortion ``target`` on ``X``."""
    return smallest_dimension(
        lambda k: distortion(X, exact_pca(k).fit_transform(X)), target, min(X.shape)
    )


def smallest_k_gaussian(target=0.2):
    X = datasets()["gaussian 300x1000"]
    print(f"\nGaussian 300x1000: smallest k reaching eps* <= {target}")
    start = time.perf_counter()
    jl, _ = timed_fit(LearnedJLTransformer(eps=target, random_state=0), X)
    print(
        f"  LearnedJLTransformer(n_components='auto'): k = {jl.n_components_} "
        f"(eps* {jl.distortion_:.5f}, search took {time.perf_counter() - start:.1f} s)"
    )

    def grp_median(k):
        return np.median(random_projection_stats(GaussianRandomProjection, X, k)[0])

    def srp_median(k):
        return np.median(random_projection_stats(SparseRandomProjection, X, k)[0])

    grp_k = smallest_dimension(grp_median, target, X.shape[1])
    srp_k = smallest_dimension(srp_median, target, X.shape[1])
    print(f"  GaussianRandomProjection (median of 20): k = {grp_k}")
    print(f"  SparseRandomProjection (median of 20): k = {srp_k}")
    print(f"  PCA: k = {pca_dimension(X, target)}")


def text_like(n=1500, d=4000, density=0.01, seed=0, copies=0):
    """Sparse float32 counts-like matrix: 1 % non-zeros, exponential weights.

    With ``copies``, that many of the ``n`` rows are copies of others (as
    repeated documents are), in random places.
    """
    rng = np.random.default_rng(seed)
    X = sparse.random(
        n - copies,
        d,
        density=density,
        format="csr",
        dtype=np.float32,
        random_state=seed,
    )
    X.data = rng.exponential(size=X.nnz).astype(np.float32)
    if copies:
        X = sparse.vstack([X, X[rng.choice(n - copies, copies, replace=False)]])
        X = X.tocsr()[rng.permutation(n)]
    return X


def sparse_text(
    n=1500, d=4000, density=0.01, k=30, n_seeds=N_SEEDS, pca=True, copies=0
):
    """A text-like set (its span has rank n): fit time, split, exact distortions.

    The 1,500 x 4,000 row by default; ``pca=False`` for sets where a dense
    SVD would outlast the fit (5,000 x 20,000 and more); ``copies`` rows of
    the ``n`` copies of others.
    """
    # The fit in a fresh process, for its peak memory (as the large rows).
    make_data = ("text_like", (n, d, density, 0, copies))
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        t, peak_fit, peak_total, jl = pool.apply(_fit_in_fresh_process, (make_data, k))
    X = text_like(n, d, density, 0, copies)
    # The measurement (not the fit) goes block by block of pairs, through
    # sparse products.
    embeddings = [jl.transform(X)] + [
        GaussianRandomProjection(k, random_state=s).fit_transform(X)
        for s in range(n_seeds)
    ]
    if pca:
        embeddings.append(exact_pca(k).fit_transform(X.toarray()))
    measured = blocked_distortions(X, embeddings)
    grp = measured[1 : 1 + n_seeds]
    d_pca = f"; PCA {measured[-1]:.3f}" if pca else ""
    with_copies = f", {copies} of the rows copies of others" if copies else ""
    print(
        f"\nsparse text-like {n}x{d} ({100 * density:g} % non-zeros, float32"
        f"{with_copies}), "
        f"k={k}: learned {measured[0]:.3f} in {t:.1f} s, peak memory of the "
        f"fit {peak_fit:.0f} MiB above the data (process {peak_total:.0f} "
        f"MiB) ({split(jl, t)}); GRP median of {n_seeds} "
        f"{np.median(grp):.3f}{d_pca}"
    )


def sparse_text_auto(n=1_500, d=40_000, eps=0.5, n_seeds=5):
    """``n_components="auto"`` on text-like rows of a wide vocabulary.

    The search's dimension and exact distortion, its time and peak memory (in
    a fresh process), against the smallest dimension whose Gaussian
    projections reach ``eps`` (median of ``n_seeds``, by bisection) and the
    Johnson-Lindenstrauss bound of scikit-learn.
    """
    density = 100 / d
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        t, peak_fit, peak_total, jl = pool.apply(
            _fit_in_fresh_process, (("text_like", (n, d, density)), "auto", eps)
        )
    X = text_like(n=n, d=d, density=density)
    learned = blocked_distortions(X, [jl.transform(X)])[0]

    def grp_median(k):
        embeddings = [
            GaussianRandomProjection(k, random_state=s).fit_transform(X)
            for s in range(n_seeds)
        ]
        return np.median(blocked_distortions(X, embeddings))

    grp_k = smallest_dimension(grp_median, eps, n)
    print(
        f"\nsparse text-like {n}x{d} ({100 * density:g} % non-zeros, float32), "
        f"n_components='auto', eps={eps}: learned k = {jl.n_components_} "
        f"({learned:.3f}) in {t:.1f} s, peak memory of the fit {peak_fit:.0f} "
        f"MiB above the data (process {peak_total:.0f} MiB); GRP (median of "
        f"{n_seeds}) k = {grp_k}; johnson_lindenstrauss_min_dim "
        f"{johnson_lindenstrauss_min_dim(n, eps=eps)}"
    )


def clustered_low_rank(n, d, seed=0, n_clusters=20, rank=10, noise=0.3):
    """Points in 20 clusters on a 10-dimensional subspace, plus isotropic noise."""
    rng = np.random.default_rng(seed)
    centres = 3.0 * rng.standard_normal((n_clusters, rank))
    labels = rng.integers(n_clusters, size=n)
    latent = centres[labels] + rng.standard_normal((n, rank))
    X = latent @ rng.standard_normal((rank, d)) / np.sqrt(rank)
    return X + noise * rng.standard_normal((n, d))


def blocked_distortion(X, Y, block=1024):
    """Exact scale-free distortion over all pairs, block of rows by block."""
    return blocked_distortions(X, [Y], block)[0]


def blocked_distortions(X, Ys, block=1024):
    """Exact scale-free distortions of several embeddings ``Ys`` of ``X``.

    Squared distances pair by pair would need n^2 / 2 numbers; here each block's
    come from the Gram form ``|x_i|^2 + |x_j|^2 - 2 x_i.x_j`` in float64 (one
    BLAS product, or a sparse one for sparse ``X``, which is never densified),
    once for all embeddings.
    """
    if sparse.issparse(X):
        X = sparse.csr_array(X, dtype=np.float64)
        sq_x = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    else:
        X = np.asarray(X, dtype=np.float64)
        sq_x = np.einsum("ij,ij->i", X, X)
    Ys = [np.asarray(Y, dtype=np.float64) for Y in Ys]
    sq_ys = [np.einsum("ij,ij->i", Y, Y) for Y in Ys]
    r_min, r_max = np.full(len(Ys), np.inf), np.full(len(Ys), -np.inf)
    threshold = 1e-10 * sq_x.max()
    n = X.shape[0]
    for a in range(0, n, block):
        b = min(a + block, n)
        cross = X[a:b] @ X[a:].T
        cross = cross.toarray() if sparse.issparse(cross) else cross
        d2 = sq_x[a:b, None] + sq_x[None, a:] - 2.0 * cross
        upper = np.triu(np.ones((b - a, n - a), dtype=bool), 1)
        valid = upper & (d2 > threshold)
        d2 = d2[valid]
        for i, (Y, sq_y) in enumerate(zip(Ys, sq_ys, strict=True)):
            q = sq_y[a:b, None] + sq_y[None, a:] - 2.0 * (Y[a:b] @ Y[a:].T)
            r = np.maximum(q[valid], 0.0) / d2
            if r.size:
                r_min[i], r_max[i] = min(r_min[i], r.min()), max(r_max[i], r.max())
    return (r_max - r_min) / (r_max + r_min)


def _fit_in_fresh_process(make_data, k, eps=0.1):
    """Fit in this (spawned) process: time, peak RSS above the data and in
    all, and the fitted transformer (its map, pass counts and certificate).

    ``make_data`` is ``(function name, arguments)`` (a spawned process
    re-imports this module). The peak restarts after the data are made
    (see ``reset_peak_resident``), so that their temporaries do not count.
    ``eps`` is the dimension search's target when ``k`` is ``"auto"``.
    """
    name, args = make_data
    X = globals()[name](*args)
    base = reset_peak_resident()
    if base is None:
        base = peak_resident_mib()
    jl, t = timed_fit(LearnedJLTransformer(k, eps=eps, random_state=0), X)
    peak = peak_resident_mib()
    return t, peak - base, peak, jl


def large(rows=((20_000, 100), (50_000, 50)), k=20, n_seeds=5):
    ctx = multiprocessing.get_context("spawn")
    for n, d in rows:
        # Minutes per row: the machine's speed before each.
        print(f"# large row {n}x{d}: {machine_conditions()}", flush=True)
        with ctx.Pool(1) as pool:
            t, peak_fit, peak_total, jl = pool.apply(
                _fit_in_fresh_process, (("clustered_low_rank", (n, d)), k)
            )
        X = clustered_low_rank(n, d)
        st = jl._fit_stats
        d_jl = blocked_distortion(X, jl.transform(X))
        grp = [
            blocked_distortion(
                X, GaussianRandomProjection(k, random_state=s).fit_transform(X)
            )
            for s in range(n_seeds)
        ]
        d_pca = blocked_distortion(X, exact_pca(k).fit_transform(X))
        print(
            f"clustered low-rank+noise {n}x{d}, k={k}: learned {d_jl:.3f} in "
            f"{t:.0f} s, peak memory of the fit {peak_fit:.0f} MiB above the data "
            f"(process {peak_total:.0f} MiB); GRP median of {n_seeds} "
            f"{np.median(grp):.3f}, PCA {d_pca:.3f}; ratio to GRP "
            f"{d_jl / np.median(grp):.2f}\n    learned: {st['n_scans']} passes, "
            f"active set <= {st['max_active']} pairs, {certificate(jl)}",
            flush=True,
        )
    print(f"# at the end: {machine_conditions()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip digits")
    parser.add_argument(
        "--large",
        nargs="*",
        metavar="NxD",
        help="the large rows only (default 20000x100 50000x50)",
    )
    parser.add_argument("--sparse", action="store_true", help="the sparse row only")
    parser.add_argument(
        "--sparse-copies",
        action="store_true",
        help="the sparse row with 15 of its 1500 rows copies of others only",
    )
    parser.add_argument(
        "--sparse-large",
        nargs="*",
        metavar="NxD",
        help="the large sparse text-like rows only, 100 non-zeros per row "
        "(default 5000x20000; also 10000x40000)",
    )
    parser.add_argument(
        "--sparse-auto",
        action="store_true",
        help="n_components='auto' (eps=0.5) on text-like 1500x40000 rows only",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="main-table data sets whose names start with these (no extra rows)",
    )
    parser.add_argument(
        "--starts",
        action="store_true",
        help="digits k=10 with n_init 1 / 4 / 8 starts (n_jobs 1 and 2) only",
    )
    parser.add_argument(
        "--extras",
        action="store_true",
        help="breast_cancer, linnerud and the n_components='auto' search only",
    )
    args = parser.parse_args()
    if args.large is not None:
        sizes = args.large or ["20000x100", "50000x50"]
        large(rows=[tuple(int(v) for v in size.split("x")) for size in sizes])
    elif args.sparse_large is not None:
        print(f"# {machine_conditions()}")
        for size in args.sparse_large or ["5000x20000"]:
            n, d = (int(v) for v in size.split("x"))
            sparse_text(n=n, d=d, density=100 / d, n_seeds=5, pca=False)
        print(f"# at the end: {machine_conditions()}")
    elif args.sparse_auto:
        print(f"# {machine_conditions()}")
        sparse_text_auto()
        print(f"# at the end: {machine_conditions()}")
    elif args.sparse or args.sparse_copies:
        print(f"# {machine_conditions()}")
        sparse_text(copies=15 if args.sparse_copies else 0)
        print(f"# at the end: {machine_conditions()}")
    elif args.extras:
        print(f"# {machine_conditions()}")
        breast_cancer()
        linnerud()
        smallest_k_gaussian()
        print(f"# at the end: {machine_conditions()}")
    elif args.starts:
        print(f"# {machine_conditions()}")
        starts()
        print(f"# at the end: {machine_conditions()}")
    elif args.only:
        main(only=args.only, extras=False)
    else:
        main(quick=args.quick)
