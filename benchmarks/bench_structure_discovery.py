"""Subspace recovery: StructureDiscoveryRegressor against SIR, SAVE, an MLP and PCA.

Multi-index teachers ``y = h(U x) + 0.1 * noise`` with Gaussian ``x`` in ``d``
dimensions and a random orthonormal ``U`` of ``k`` rows. Each baseline is given the
true ``k``; ours runs with its defaults (``alpha`` and ``n_components`` chosen by
cross-validation) and is refitted with the true ``k`` only where "auto" missed it.
Each method is scored by the projection distance ``||P_B - P_U||_2`` (the sine of
the largest principal angle) between its subspace and ``span(U)``; fit times are
wall-clock seconds. The column ``auto`` says whether ``n_components="auto"``
found the true ``k`` on the same fit.

Baselines, all given ``k``:

- SIR (sliced inverse regression, Li 1991) and SAVE (sliced average variance
  estimation, Cook and Weisberg 1991), with 10 slices of ``y`` on whitened inputs,
  written here in a few lines each.
- ``MLPRegressor(hidden_layer_sizes=(64,))``: the top ``k`` right singular vectors
  of its first-layer weight.
- PCA of ``X`` (on isotropic inputs it cannot know ``U``: the chance level).

By default BLAS runs on one thread for every method, so that times compare like
with like on a shared machine (``--blas-threads`` changes that).

Run ``python benchmarks/bench_structure_discovery.py`` (all 15 rows),
``--sizes 50x2000`` for one size, ``--large`` to time one fit at n = 100,000,
d = 500, ``--scale`` for the scale table: the defaults against
``MLPRegressor(hidden_layer_sizes=(64,))`` and ``HistGradientBoostingRegressor``
fitted on the same rows (n = 50,000 and 200,000 at d = 100; ``--scale-sizes``
changes them, e.g. ``1000000x50``), with our fit's peak resident memory above
what the process held before it.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPRegressor
from threadpoolctl import threadpool_limits

from skderand import StructureDiscoveryRegressor
from skderand.datasets import (
    MULTI_INDEX_LINKS,
    make_multi_index_regression,
    subspace_distance,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _resources import (  # noqa: E402
    machine_conditions,
    peak_resident_mib,
    reset_peak_resident,
)

SIZES = [(20, 2000), (50, 2000), (100, 4000)]
SCALE_SIZES = [(100, 50_000), (100, 200_000)]
SCALE_LINKS = ("tanh+square", "relu")


def _whiten(X):
    mean = X.mean(axis=0)
    cov = np.cov(X, rowvar=False)
    eigval, eigvec = np.linalg.eigh(cov)
    inv_sqrt = eigvec @ np.diag(1.0 / np.sqrt(np.maximum(eigval, 1e-12))) @ eigvec.T
    return (X - mean) @ inv_sqrt, inv_sqrt


def _slices(y, n_slices):
    order = np.argsort(y, kind="stable")
    return np.array_split(order, n_slices)


def sir(X, y, k, n_slices=10):
    """Sliced inverse regression: top eigenvectors of the covariance of E[z | y]."""
    Z, inv_sqrt = _whiten(X)
    M = np.zeros((X.shape[1], X.shape[1]))
    for idx in _slices(y, n_slices):
        m = Z[idx].mean(axis=0)
        M += len(idx) / len(y) * np.outer(m, m)
    vecs = np.linalg.eigh(M)[1][:, ::-1][:, :k]
    return (inv_sqrt @ vecs).T


def save(X, y, k, n_slices=10):
    """SAVE: top eigenvectors of the mean of (I - Cov[z | y])^2 over slices."""
    Z, inv_sqrt = _whiten(X)
    d = X.shape[1]
    M = np.zeros((d, d))
    for idx in _slices(y, n_slices):
        A = np.eye(d) - np.cov(Z[idx], rowvar=False)
        M += len(idx) / len(y) * A @ A
    vecs = np.linalg.eigh(M)[1][:, ::-1][:, :k]
    return (inv_sqrt @ vecs).T


def mlp(X, y, k, seed):
    with warnings.catch_warnings():
        # Its default 200 epochs, as a user would run it.
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = MLPRegressor(hidden_layer_sizes=(64,), random_state=seed).fit(X, y)
    return np.linalg.svd(model.coefs_[0].T, full_matrices=False)[2][:k]


def pca(X, y, k):
    return PCA(n_components=k).fit(X).components_


def ours(X, y, k, seed, **params):
    """Defaults (alpha and n_components chosen by cross-validation); given ``k``
    only when "auto" missed it, so that the distance is always at ``k``."""
    est = StructureDiscoveryRegressor(random_state=seed, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        est.fit(X, y)
        ours.auto_ok = est.n_components_ == k
        if not ours.auto_ok:
            est.set_params(n_components=k).fit(X, y)
    ours.last = est
    ours.warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return est.subspace_


def table_teacher(name, d, n):
    """The table's data for teacher ``name`` at size ``d x n``, with its seed."""
    seed = 1000 * d + n + MULTI_INDEX_LINKS.index(name)
    return make_multi_index_regression(n, d, link=name, random_state=seed)


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def run(sizes, seed, params):
    methods = [
        ("ours", lambda X, y, k: ours(X, y, k, seed, **params)),
        ("SIR", sir),
        ("SAVE", save),
        ("MLP", lambda X, y, k: mlp(X, y, k, seed)),
        ("PCA", pca),
    ]
    header = (
        f"{'d':>4} {'n':>5} {'teacher':<23} "
        + " ".join(f"{name:>6} {'t(s)':>6}" for name, _ in methods)
        + f" {'auto':>5} {'cert':>5}"
    )
    print(header)
    print("-" * len(header))
    results = []
    for d, n in sizes:
        for name in MULTI_INDEX_LINKS:
            X, y, U = table_teacher(name, d, n)
            k = U.shape[0]
            row = {"d": d, "n": n, "teacher": name}
            cells = []
            for method, fn in methods:
                B, elapsed = _timed(fn, X, y, k)
                dist = subspace_distance(B, U)
                row[method] = (dist, elapsed)
                cells.append(f"{dist:>6.3f} {elapsed:>6.2f}")
            est = ours.last
            auto_ok = ours.auto_ok
            flags = f"{'yes' if auto_ok else 'NO':>5} "
            flags += f"{'yes' if est.certified_ else 'NO':>5}"
            row["auto"] = auto_ok
            row["certified"] = est.certified_
            print(
                f"{d:>4} {n:>5} {name:<23} " + " ".join(cells) + " " + flags,
                flush=True,
            )
            results.append(row)
    print()
    names = [name for name, _ in methods]
    means = {m: np.mean([r[m][0] for r in results]) for m in names}
    print("mean distance: " + ", ".join(f"{m} {means[m]:.3f}" for m in names))
    ratio = [r["ours"][1] / r["MLP"][1] for r in results]
    print(f"fit time ours / MLP: median {np.median(ratio):.2f}, max {max(ratio):.2f}")
    return results


def large(seed):
    """Time one fit at n = 100,000, d = 500 on the relu single-index teacher."""
    X, y, U = make_multi_index_regression(100_000, 500, link="relu", random_state=seed)
    k = U.shape[0]
    est = StructureDiscoveryRegressor(random_state=seed)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always", ConvergenceWarning)
        est.fit(X, y)
    elapsed = time.perf_counter() - start
    print(
        f"n=100000, d=500, relu(u1.x): fit {elapsed:.1f} s, {est.n_iter_} "
        f"iterations, distance {subspace_distance(est.subspace_[:k], U):.3f}, "
        f"n_components_ {est.n_components_}, gradient norm {est.grad_norm_:.1e}, "
        f"min Hessian eigenvalue {est.min_hessian_eig_:.1e}, "
        f"certified {est.certified_}"
    )


def scale(sizes, seed, links=SCALE_LINKS):
    """The scale table: the defaults against an MLP and gradient boosting."""
    header = (
        f"{'teacher':<12} {'d':>4} {'n':>8} {'ours s':>8} {'dist':>6} {'k':>3} "
        f"{'auto':>5} {'cert':>5} {'iters':>6} {'MiB':>7} {'MLP s':>7} "
        f"{'HGB s':>7} {'ours/MLP':>9}"
    )
    print(f"# scale table; {machine_conditions()}")
    print(
        "# ours: StructureDiscoveryRegressor(random_state=seed) defaults; iters: its "
        "n_iter_; MiB: its peak resident memory above the process's before the "
        "fit; MLP: MLPRegressor((64,)), HGB: HistGradientBoostingRegressor(), "
        "defaults"
    )
    print(header)
    for d, n in sizes:
        for link in links:
            X, y, U = make_multi_index_regression(n, d, link=link, random_state=seed)
            k = U.shape[0]
            before = reset_peak_resident()
            est = StructureDiscoveryRegressor(random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                _, ours_s = _timed(est.fit, X, y)
            memory = peak_resident_mib() - before if before is not None else np.nan
            dist = subspace_distance(est.subspace_[:k], U)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                _, mlp_s = _timed(
                    MLPRegressor(hidden_layer_sizes=(64,), random_state=seed).fit, X, y
                )
            _, hgb_s = _timed(
                HistGradientBoostingRegressor(random_state=seed).fit, X, y
            )
            auto = "yes" if est.n_components_ == k else "NO"
            print(
                f"{link:<12} {d:>4} {n:>8} {ours_s:>8.1f} {dist:>6.3f} "
                f"{est.n_components_:>3} {auto:>5} "
                f"{'yes' if est.certified_ else 'NO':>5} {est.n_iter_:>6} "
                f"{memory:>7.0f} {mlp_s:>7.1f} {hgb_s:>7.1f} {ours_s / mlp_s:>9.2f}",
                flush=True,
            )
    print(f"# end: {machine_conditions()}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        nargs="*",
        default=[f"{d}x{n}" for d, n in SIZES],
        help="dxn pairs, e.g. 50x2000",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--activation", default=None, help="activation of ours (default: its own)"
    )
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=None,
        help="BLAS threads for every method (0: the library's default); "
        "default 1 for the table, the library's default for --large",
    )
    parser.add_argument(
        "--large", action="store_true", help="time one fit at n=1e5, d=500 instead"
    )
    parser.add_argument(
        "--scale", action="store_true", help="the scale table instead (see above)"
    )
    parser.add_argument(
        "--scale-links",
        default=",".join(SCALE_LINKS),
        help="teachers of the scale table, comma-separated",
    )
    parser.add_argument(
        "--scale-sizes",
        nargs="*",
        default=[f"{d}x{n}" for d, n in SCALE_SIZES],
        help="dxn pairs of the scale table",
    )
    args = parser.parse_args(argv)
    limit = args.blas_threads
    if limit is None:
        limit = None if args.large else 1
    limit = limit or None
    with threadpool_limits(limits=limit, user_api="blas"):
        if args.scale:
            sizes = [tuple(int(v) for v in s.split("x")) for s in args.scale_sizes]
            scale(sizes, args.seed, args.scale_links.split(","))
        elif args.large:
            large(args.seed)
        else:
            sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes]
            params = {} if args.activation is None else {"activation": args.activation}
            run(sizes, args.seed, params)


if __name__ == "__main__":
    main()
