"""Real tabular data: the default structure-discovery estimators against baselines.

What a user writes is measured: ``make_pipeline(preprocess, StandardScaler(),
estimator)`` with categorical columns one-hot encoded
(``OneHotEncoder(handle_unknown="ignore")``) and numeric ones passed through
(``benchmarks/_real_data.py`` lists the data sets; every one ships inside a
package's wheel, so nothing is downloaded).

Regression sets, ``KFold(5, shuffle=True, random_state=0)``, mean R^2 and the
summed fit time of the five folds:

- ``ours``: ``StructureDiscoveryRegressor(random_state=0)`` (defaults, plus
  ``--params``);
- ``ridge``: ``RidgeCV(alphas=np.logspace(-3, 4, 15))`` (wider than its default
  three alphas, so that the linear baseline is at its best);
- ``mlp``: ``MLPRegressor(hidden_layer_sizes=(64,), max_iter=2000,
  random_state=0)`` (adam, early stopping off) on a standardized target
  (``TransformedTargetRegressor``: on raw targets like grams it does not fit);
- ``hgb``: ``HistGradientBoostingRegressor(random_state=0)``;
- as a reducer, on the same folds: ``KNeighborsRegressor(n_neighbors=15)`` and
  ``HistGradientBoostingRegressor(random_state=0)`` fitted on ``ours``'s
  ``transform(X)`` (columns ``knn@T``, ``hgb@T``; computed in the ``ours`` job)
  and KNN on all standardized features (``knn``); ``k`` is the mean
  ``n_components_`` over the folds.

``d/p``: raw columns / columns after one-hot encoding.

Classification sets, ``StratifiedKFold(5, shuffle=True, random_state=0)``,
accuracy: ``ours`` (``StructureDiscoveryClassifier(random_state=0)``),
``logreg`` (``LogisticRegressionCV(max_iter=5000)``), ``mlp``
(``MLPClassifier((64,), max_iter=2000, random_state=0)``), ``hgb``.

``w`` counts folds in which ``ours`` raised a ConvergenceWarning; a method that
raises prints ``ERR`` and its message below the table. Baseline results can be
kept in a JSON cache (``--cache FILE``), keyed by data set, method, folds and
library versions: a run fills it, and a later run with ``--methods ours`` and
the same cache refits only ``ours`` and still prints every baseline and the
summary lines. BLAS and OpenMP (HistGradientBoosting) run on one thread per fit
(``--threads``); with ``--n-jobs J`` the folds run in J processes, and the
times are per-process fit times. ``--params`` (JSON) goes to ``set_params`` of
both our estimators, ``--params-classifier`` overrides it for the classifier.

``--transform`` changes only what ``ours`` sees of the numeric columns (the
baselines, cached or not, always get ``standard``), before the one
``StandardScaler``; one-hot columns pass through in every case:

- ``standard`` (default): the numeric columns as they are;
- ``quantile``: ``QuantileTransformer(output_distribution="normal",
  n_quantiles=min(1000, n_train), random_state=0)``, a rank-Gaussian map of
  each column, fitted on the training fold;
- ``power``: ``PowerTransformer(method="yeo-johnson")``;
- ``rank``: a rank-Gaussian map that gives ties their midrank and keeps the
  extremes at ``Phi^-1(1/(2n))`` (``MidrankGaussianTransformer`` in
  ``_real_data.py``): ``quantile`` sends every row at a column's training
  minimum or maximum to about -5.2 or +5.2, so a point mass at the minimum
  (many zeros in a count) becomes an outlying cluster.

Under ``quantile``, ``power`` and ``rank``, binary numeric columns (at most two distinct
values in the data set, such as 0/1 codes) are left alone: they go to the
``StandardScaler`` only. This measures whether the structure-discovery
estimators, whose theory assumes Gaussian inputs, gain from Gaussianizing
skewed and heavy-tailed columns.

Examples::

    python benchmarks/bench_real_data.py --cache /tmp/baselines.json
    python benchmarks/bench_real_data.py --cache /tmp/baselines.json --methods ours
    python benchmarks/bench_real_data.py --datasets diabetes,cars_mpg --n-jobs 2
    python benchmarks/bench_real_data.py --kind regression --params '{"alpha": 0.01}'
    python benchmarks/bench_real_data.py --methods ours --transform quantile
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import (
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegressionCV, RidgeCV
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.neighbors import KNeighborsRegressor
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info, threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _real_data import LOADERS, TRANSFORMS, load, make_preprocessor  # noqa: E402
from _resources import machine_conditions  # noqa: E402

import skderand  # noqa: E402
from skderand import (  # noqa: E402
    StructureDiscoveryClassifier,
    StructureDiscoveryRegressor,
)

SEED = 0
N_NEIGHBORS = 15  # the reducer check: a plain nonparametric learner
MLP_MAX_ITER = 2000  # enough for adam to stop on its own tolerance on these sets
RIDGE_ALPHAS = np.logspace(-3, 4, 15)
# Bump when a baseline's definition changes, so that old cached results are not
# reused for it.
CACHE_VERSION = 2

REGRESSION_METHODS = ("ours", "ridge", "mlp", "hgb", "knn")
CLASSIFICATION_METHODS = ("ours", "logreg", "mlp", "hgb")
TRANSFORM_NOTES = {
    "standard": "StandardScaler only",
    "quantile": "QuantileTransformer(normal) on non-binary numeric columns, "
    "then StandardScaler",
    "power": "PowerTransformer(yeo-johnson) on non-binary numeric columns, "
    "then StandardScaler",
    "rank": "midrank Gaussian scores of non-binary numeric columns, "
    "then StandardScaler",
}
BASELINES = {
    "regression": ("ridge", "mlp", "hgb"),
    "classification": ("logreg", "mlp", "hgb"),
}


def _estimator(method, kind, params):
    """The final step of the pipeline for ``method`` on a ``kind`` task."""
    if kind == "regression":
        if method == "ours":
            return StructureDiscoveryRegressor(random_state=SEED).set_params(**params)
        if method == "ridge":
            return RidgeCV(alphas=RIDGE_ALPHAS)
        if method == "mlp":
            # Targets such as body mass in grams are far from unit scale; adam
            # with its default step does not fit them in 2000 epochs (R^2 of
            # -1.2 on penguins_mass), so the MLP sees a standardized target.
            # Ridge, boosting and KNN do not depend on the target's scale.
            return TransformedTargetRegressor(
                MLPRegressor(
                    hidden_layer_sizes=(64,), max_iter=MLP_MAX_ITER, random_state=SEED
                ),
                transformer=StandardScaler(),
            )
        if method == "hgb":
            return HistGradientBoostingRegressor(random_state=SEED)
        if method == "knn":
            return KNeighborsRegressor(n_neighbors=N_NEIGHBORS)
    else:
        if method == "ours":
            return StructureDiscoveryClassifier(random_state=SEED).set_params(**params)
        if method == "logreg":
            return LogisticRegressionCV(max_iter=5000)
        if method == "mlp":
            return MLPClassifier(
                hidden_layer_sizes=(64,), max_iter=MLP_MAX_ITER, random_state=SEED
            )
        if method == "hgb":
            return HistGradientBoostingClassifier(random_state=SEED)
    raise ValueError(f"unknown method {method!r} for {kind}")


def _score(kind, y_true, y_pred):
    if kind == "regression":
        return float(r2_score(y_true, y_pred))
    return float(accuracy_score(y_true, y_pred))


def _run_fold(dataset, method, params, train, test, threads, transform):
    """Fit ``method`` on one fold; its score, fit time and reducer extras.

    ``transform`` applies to ``ours`` only; the baselines get ``"standard"``.
    """
    kind = dataset.kind
    X_train, X_test = dataset.X.iloc[train], dataset.X.iloc[test]
    y_train, y_test = dataset.y[train], dataset.y[test]
    preprocessor = make_preprocessor(
        dataset,
        transform=transform if method == "ours" else "standard",
        n_train=len(train),
    )
    model = make_pipeline(preprocessor, _estimator(method, kind, params))
    out = {}
    with threadpool_limits(limits=threads):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            start = time.perf_counter()
            try:
                model.fit(X_train, y_train)
            except Exception as exc:  # report the failure, keep the table going
                return {"error": f"{type(exc).__name__}: {exc}"}
            out["time"] = time.perf_counter() - start
        out["warned"] = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        out["score"] = _score(kind, y_test, model.predict(X_test))
        if method == "ours":
            out["k"] = int(model[-1].n_components_)
            if kind == "regression":
                Z_train, Z_test = model.transform(X_train), model.transform(X_test)
                for name, reducer in (
                    ("knn@T", KNeighborsRegressor(n_neighbors=N_NEIGHBORS)),
                    ("hgb@T", HistGradientBoostingRegressor(random_state=SEED)),
                ):
                    fitted = clone(reducer).fit(Z_train, y_train)
                    out[name] = _score(kind, y_test, fitted.predict(Z_test))
    return out


def _folds(dataset, n_folds):
    if dataset.kind == "regression":
        splitter = KFold(n_folds, shuffle=True, random_state=SEED)
    else:
        splitter = StratifiedKFold(n_folds, shuffle=True, random_state=SEED)
    return list(splitter.split(dataset.X, dataset.y))


def _summarize(folds):
    """Mean of each per-fold number, summed fit time, errors joined."""
    errors = [f["error"] for f in folds if "error" in f]
    if errors:
        return {"error": errors[0], "n_failed": len(errors)}
    result = {
        "score": float(np.mean([f["score"] for f in folds])),
        "time": float(np.sum([f["time"] for f in folds])),
        "warned": int(sum(f["warned"] for f in folds)),
        "fold_scores": [f["score"] for f in folds],
    }
    for key in ("k", "knn@T", "hgb@T"):
        if key in folds[0]:
            result[key] = float(np.mean([f[key] for f in folds]))
    return result


def _cache_key(name, method, n_folds):
    return (
        f"v{CACHE_VERSION}|{name}|{method}|{n_folds}|"
        f"sklearn {sklearn.__version__}|seed {SEED}"
    )


def evaluate(
    dataset, methods, params, n_folds, n_jobs, threads, cache, transform="standard"
):
    """Per method: mean CV score, summed fit time and extras for ``dataset``.

    Baselines not in ``methods`` but in ``cache`` are included as cached;
    ``transform`` is the numeric preprocessing of ``ours`` only.
    """
    folds = _folds(dataset, n_folds)
    order = REGRESSION_METHODS
    if dataset.kind == "classification":
        order = CLASSIFICATION_METHODS
    results = {}
    for method in order:
        key = _cache_key(dataset.name, method, n_folds)
        if method != "ours" and key in cache:
            results[method] = {**cache[key], "cached": True}
            continue
        if method not in methods:
            continue
        per_fold = Parallel(n_jobs=n_jobs)(
            delayed(_run_fold)(dataset, method, params, train, test, threads, transform)
            for train, test in folds
        )
        results[method] = _summarize(per_fold)
        if method != "ours" and "error" not in results[method]:
            cache[key] = results[method]
    return results


def _cell(result, key="score", width=7, digits=3):
    if result is None:
        return " " * (width - 1) + "-"
    if "error" in result:
        return f"{'ERR':>{width}}"
    return f"{result[key]:>{width}.{digits}f}"


def _print_header(args, params, clf_params):
    pools = sorted(
        {f"{m['internal_api']} {m['num_threads']}" for m in threadpool_info()}
    )
    source = Path(skderand.__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=source,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "skderand"],
            capture_output=True,
            text=True,
            check=True,
            cwd=source,
        ).stdout.strip()
        if dirty:
            commit += " plus uncommitted changes in skderand/"
    except (OSError, subprocess.CalledProcessError):
        commit = "not a git checkout"
    print(f"# bench_real_data, {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"# skderand from {source} (commit {commit})")
    if args.label:
        print(f"# {args.label}")
    print(
        f"# {machine_conditions()}; {os.cpu_count()} cores; BLAS and OpenMP "
        f"threads per fit: {args.threads or 'library default'} "
        f"(process default: {', '.join(pools) or 'none'}); n_jobs {args.n_jobs}"
    )
    print(
        f"# {args.folds}-fold CV, seed {SEED}; ours = defaults with random_state=0"
        f"; numeric columns for ours: --transform {args.transform} "
        f"({TRANSFORM_NOTES[args.transform]}); baselines: standard"
        + (f"; regressor {json.dumps(params)}" if params else "")
        + (f"; classifier {json.dumps(clf_params)}" if clf_params else "")
    )
    print(
        f"# OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
        f"sklearn {sklearn.__version__}, numpy {np.__version__}"
    )
    print()


def _present(rows, order):
    """The methods, in table order, that have a result on some row."""
    return [m for m in order if any(m in row[3] for row in rows)]


def _regression_table(rows, n_folds):
    columns = _present(rows, REGRESSION_METHODS)
    extras = "ours" in columns
    header = f"{'data set':<17} {'n':>5} {'d/p':>6} " + " ".join(
        f"{m:>7}" for m in columns
    )
    if extras:
        header += f" {'knn@T':>7} {'hgb@T':>7} {'k':>5} {'w':>2}"
    header += " | " + " ".join(f"{'t_' + m:>7}" for m in columns)
    print(f"Regression: mean {n_folds}-fold CV R^2 | summed fit time (s)")
    print(header)
    print("-" * len(header))
    for name, n, d, results in rows:
        line = f"{name:<17} {n:>5} {d:>6} " + " ".join(
            _cell(results.get(m)) for m in columns
        )
        if extras:
            ours = results.get("ours", {"error": "not run"})
            if "error" in ours:
                line += f" {'ERR':>7} {'ERR':>7} {'-':>5} {'-':>2}"
            else:
                line += (
                    f" {ours['knn@T']:>7.3f} {ours['hgb@T']:>7.3f} "
                    f"{ours['k']:>5.1f} {ours['warned']:>2d}"
                )
        line += " | " + " ".join(
            _cell(results.get(m), "time", digits=2) for m in columns
        )
        print(line, flush=True)
    errors = [
        (name, m, r["error"])
        for name, _, _, results in rows
        for m, r in results.items()
        if "error" in r
    ]
    for name, method, message in errors:
        print(f"  ERR {name} {method}: {message}")


def _classification_table(rows, n_folds):
    columns = _present(rows, CLASSIFICATION_METHODS)
    header = f"{'data set':<17} {'n':>5} {'d/p':>6} {'cls':>3} " + " ".join(
        f"{m:>7}" for m in columns
    )
    if "ours" in columns:
        header += f" {'k':>5} {'w':>2}"
    header += " | " + " ".join(f"{'t_' + m:>7}" for m in columns)
    print(f"Classification: mean {n_folds}-fold CV accuracy | summed fit time (s)")
    print(header)
    print("-" * len(header))
    for name, n, d, results, n_classes in rows:
        line = f"{name:<17} {n:>5} {d:>6} {n_classes:>3} " + " ".join(
            _cell(results.get(m)) for m in columns
        )
        if "ours" in columns:
            ours = results.get("ours", {"error": "not run"})
            if "error" in ours:
                line += f" {'-':>5} {'-':>2}"
            else:
                line += f" {ours['k']:>5.1f} {ours['warned']:>2d}"
        line += " | " + " ".join(
            _cell(results.get(m), "time", digits=2) for m in columns
        )
        print(line, flush=True)
    for name, _, _, results, _ in rows:
        for method, result in results.items():
            if "error" in result:
                print(f"  ERR {name} {method}: {result['error']}")


def _ok(results, methods):
    return all(m in results and "error" not in results[m] for m in methods)


def _regression_summary(rows):
    """The issue's regression targets, on the sets where every number exists."""
    baselines = BASELINES["regression"]
    usable = [(name, r) for name, _, _, r in rows if _ok(r, ("ours",) + baselines)]
    if not usable:
        return
    print()
    gaps = [
        r["ours"]["score"] - max(r[b]["score"] for b in baselines) for _, r in usable
    ]
    mean_ours = np.mean([r["ours"]["score"] for _, r in usable])
    best_mean = {b: np.mean([r[b]["score"] for _, r in usable]) for b in baselines}
    print(
        f"mean R^2 over {len(usable)} sets: ours {mean_ours:.3f}; "
        + ", ".join(f"{b} {v:.3f}" for b, v in best_mean.items())
    )
    print(
        f"ours - best-of-three baseline per set: mean {np.mean(gaps):+.3f}, "
        f"worst {min(gaps):+.3f} (target: mean >= -0.02)"
    )
    below = [
        f"{name} ({r['ours']['score'] - r['ridge']['score']:+.3f})"
        for name, r in usable
        if r["ours"]["score"] < r["ridge"]["score"] - 0.05
    ]
    print(
        f"sets below RidgeCV - 0.05: {len(below)}"
        + (f": {', '.join(below)}" if below else "")
        + " (target: none)"
    )
    knn_rows = [r for _, r in usable if _ok(r, ("knn",))]
    if knn_rows:
        knn_t = np.mean([r["ours"]["knn@T"] for r in knn_rows])
        knn_all = np.mean([r["knn"]["score"] for r in knn_rows])
        print(
            f"KNN(15) on transform(X) {knn_t:.3f} vs on all features {knn_all:.3f}: "
            f"{knn_t - knn_all:+.3f} (target: >= 0)"
        )
    hgb_t = np.mean([r["ours"]["hgb@T"] for _, r in usable])
    hgb_all = np.mean([r["hgb"]["score"] for _, r in usable])
    print(
        f"HGB on transform(X) {hgb_t:.3f} vs on all features {hgb_all:.3f}: "
        f"{hgb_t - hgb_all:+.3f}"
    )
    ks = [r["ours"]["k"] for _, r in usable]
    print(
        f"mean n_components_ {np.mean(ks):.2f} (per set: "
        + ", ".join(f"{k:.1f}" for k in ks)
        + ")"
    )


def _classification_summary(rows):
    baselines = BASELINES["classification"]
    usable = [(name, r) for name, _, _, r, _ in rows if _ok(r, ("ours",) + baselines)]
    if not usable:
        return
    print()
    gaps = [
        r["ours"]["score"] - max(r[b]["score"] for b in baselines) for _, r in usable
    ]
    worst = int(np.argmin(gaps))
    mean_ours = np.mean([r["ours"]["score"] for _, r in usable])
    means = {b: np.mean([r[b]["score"] for _, r in usable]) for b in baselines}
    print(
        f"mean accuracy over {len(usable)} sets: ours {mean_ours:.4f}; "
        + ", ".join(f"{b} {v:.4f}" for b, v in means.items())
    )
    print(
        f"ours - best baseline per set: mean {np.mean(gaps):+.4f} (target >= -0.005), "
        f"worst {gaps[worst]:+.4f} on {usable[worst][0]} (target >= -0.02)"
    )


def _time_summary(all_results):
    usable = [r for r in all_results if _ok(r, ("ours", "hgb"))]
    if not usable:
        return
    ours = sum(r["ours"]["time"] for r in usable)
    hgb = sum(r["hgb"]["time"] for r in usable)
    cached = any(r["hgb"].get("cached") for r in usable)
    print(
        f"total CV fit time over {len(usable)} sets: ours {ours:.1f} s, "
        f"HistGradientBoosting {hgb:.1f} s"
        + (" (from the cache: timed in an earlier run)" if cached else "")
        + f", ratio {ours / hgb:.2f} (target <= 10)"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets", default=None, help="comma-separated names (default: all)"
    )
    parser.add_argument(
        "--methods",
        default=None,
        help="comma-separated subset of ours,ridge,logreg,mlp,hgb,knn (default: all)",
    )
    parser.add_argument(
        "--params",
        default="{}",
        help="JSON passed to set_params of ours, e.g. '{\"alpha\": 0.01}'",
    )
    parser.add_argument(
        "--params-classifier",
        default=None,
        help="JSON for the classifier's set_params (default: --params)",
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--n-jobs", type=int, default=1, help="processes over the folds (joblib)"
    )
    parser.add_argument(
        "--kind", choices=("regression", "classification", "all"), default="all"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="BLAS and OpenMP threads per fit (0: the libraries' defaults)",
    )
    parser.add_argument(
        "--cache", default=None, help="JSON file to keep baseline results in"
    )
    parser.add_argument(
        "--transform",
        choices=TRANSFORMS,
        default="standard",
        help="preprocessing of the numeric columns in front of ours only "
        "(binary columns excepted; default: standard, i.e. StandardScaler only)",
    )
    parser.add_argument(
        "--label",
        default=None,
        help="a note for the header, e.g. which commit an exported copy is",
    )
    args = parser.parse_args(argv)

    params = json.loads(args.params)
    clf_params = params
    if args.params_classifier is not None:
        clf_params = json.loads(args.params_classifier)
    if not isinstance(params, dict) or not isinstance(clf_params, dict):
        parser.error("--params and --params-classifier must be JSON objects")
    names = list(LOADERS) if args.datasets is None else args.datasets.split(",")
    unknown = [name for name in names if name not in LOADERS]
    if unknown:
        parser.error(f"unknown data sets {unknown}; known: {', '.join(LOADERS)}")
    all_methods = set(REGRESSION_METHODS) | set(CLASSIFICATION_METHODS)
    methods = all_methods if args.methods is None else set(args.methods.split(","))
    if methods - all_methods:
        parser.error(f"unknown methods {sorted(methods - all_methods)}")
    threads = args.threads or None

    cache = {}
    if args.cache and Path(args.cache).exists():
        cache = json.loads(Path(args.cache).read_text())

    _print_header(args, params, clf_params)
    regression_rows, classification_rows, all_results = [], [], []
    for name in names:
        dataset = load(name)
        if args.kind != "all" and dataset.kind != args.kind:
            continue
        chosen_params = params if dataset.kind == "regression" else clf_params
        results = evaluate(
            dataset,
            methods,
            chosen_params,
            args.folds,
            args.n_jobs,
            threads,
            cache,
            transform=args.transform,
        )
        n, d_raw = dataset.X.shape
        width = make_preprocessor(dataset).fit_transform(dataset.X).shape[1]
        d = f"{d_raw}/{width}"
        print(
            f"[{time.strftime('%H:%M:%S')}] {name}: "
            + ", ".join(f"{m} {_cell(r).strip()}" for m, r in results.items()),
            file=sys.stderr,
            flush=True,
        )
        all_results.append(results)
        if dataset.kind == "regression":
            regression_rows.append((name, n, d, results))
        else:
            n_classes = len(np.unique(dataset.y))
            classification_rows.append((name, n, d, results, n_classes))
        if args.cache:
            Path(args.cache).write_text(json.dumps(cache, indent=1))

    if regression_rows:
        _regression_table(regression_rows, args.folds)
        _regression_summary(regression_rows)
        print()
    if classification_rows:
        _classification_table(classification_rows, args.folds)
        _classification_summary(classification_rows)
        print()
    _time_summary(all_results)
    print(f"# at the end: {machine_conditions()}")


if __name__ == "__main__":
    main()
