"""
=====================================================
Scaling out a grid search and restarts with dask
=====================================================

skderand parallelizes through joblib, as scikit-learn does: ``n_jobs`` of
:class:`~sklearn.model_selection.GridSearchCV` runs candidates and folds in
parallel, and ``n_jobs`` of :class:`~skderand.StructureDiscoveryRegressor` runs
its ``n_init`` restarts in parallel. Neither forces a backend, so a
``joblib.parallel_config(backend="dask")`` block sends the same work to a
`dask.distributed <https://distributed.dask.org>`_ cluster without changing a
line of the model code.

This example runs on a :class:`~distributed.LocalCluster` with two workers (one
thread each, in-process, so that it fits on a laptop with two cores) and checks
that the dask backend gives **the same best parameters and the same fitted
model** as the default backend. dask is needed only to run this example
(``pip install "dask[distributed]"``); skderand itself never imports it.
"""

# %%
# Data and model
# --------------
import time
import warnings

import joblib
import matplotlib.pyplot as plt
import numpy as np
from dask.distributed import Client, LocalCluster
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold
from threadpoolctl import threadpool_limits

from skderand import StructureDiscoveryRegressor

# A short max_iter keeps the example fast; fits that stop before their
# certificate would say so with a ConvergenceWarning, silenced here.
warnings.simplefilter("ignore", ConvergenceWarning)

rng = np.random.default_rng(0)
n_samples, n_features = 400, 10
X = rng.standard_normal((n_samples, n_features))
u = rng.standard_normal(n_features)
u /= np.linalg.norm(u)
y = (X @ u) ** 2 + 0.1 * rng.standard_normal(n_samples)

estimator = StructureDiscoveryRegressor(n_components=1, max_iter=300, random_state=0)
param_grid = {"alpha": [1e-3, 1e-2, 1e-1], "hidden_layer_sizes": [4, 16]}
cv = KFold(n_splits=3, shuffle=True, random_state=0)


# One BLAS thread per task: the parallelism comes from joblib, and threaded BLAS
# would both oversubscribe the cores and change the order of floating-point sums
# from one backend to the other (see "Same answers" below).
def grid_search():
    """The code that is scaled out: nothing in it mentions dask."""
    search = GridSearchCV(estimator, param_grid, cv=cv, n_jobs=-1)
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        search.fit(X, y)
    return search, time.perf_counter() - start


def restarts():
    """Four restarts of one model, in parallel, keeping the best objective."""
    model = StructureDiscoveryRegressor(
        n_components=1, n_init=4, n_jobs=-1, max_iter=300, random_state=0
    )
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        model.fit(X, y)
    return model, time.perf_counter() - start


# %%
# The default backend
# -------------------
# Without a configured backend, joblib runs the grid search's fits in local
# worker processes (loky) and the restarts in threads.
search_default, t_search_default = grid_search()
model_default, t_restarts_default = restarts()
print("default backend, best parameters:", search_default.best_params_)

# %%
# The dask backend on a local cluster
# -----------------------------------
# ``processes=False`` keeps the workers in this process (threads), which is the
# lightest setting on a small machine; ``dashboard_address=None`` skips the web
# dashboard. Inside ``joblib.parallel_config(backend="dask")`` every joblib call,
# scikit-learn's and skderand's, is submitted to the cluster's scheduler.
cluster = LocalCluster(
    n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
)
client = Client(cluster)
print(client)

with joblib.parallel_config(backend="dask"):
    search_dask, t_search_dask = grid_search()
    model_dask, t_restarts_dask = restarts()

print("dask backend,    best parameters:", search_dask.best_params_)
client.close()
cluster.close()

# %%
# Same answers
# ------------
# Every fit is seeded (``random_state=0``, integer seeds drawn up front for the
# restarts), so where a fit runs does not change what it computes: the best
# parameters and the model kept after the restarts are the same, and the
# cross-validated scores agree to many digits. (They are bit-for-bit identical
# when every task runs its linear algebra on one thread, as here; with threaded
# BLAS the order of floating-point sums can differ between machines, which moves
# scores in the fifth digit or so.)
same_params = search_dask.best_params_ == search_default.best_params_
scores_default = search_default.cv_results_["mean_test_score"]
scores_dask = search_dask.cv_results_["mean_test_score"]
print(f"same best parameters: {same_params}")
print(
    "largest difference in mean test score: "
    f"{np.max(np.abs(scores_dask - scores_default)):.2e}"
)
print(
    f"restarts: objective {model_default.loss_:.6f} (default) vs "
    f"{model_dask.loss_:.6f} (dask); subspace overlap "
    f"{abs(float(model_default.subspace_[0] @ model_dask.subspace_[0])):.6f}"
)
assert same_params
np.testing.assert_allclose(scores_dask, scores_default, rtol=1e-4)
np.testing.assert_allclose(model_dask.loss_, model_default.loss_, rtol=1e-4)

# %%
candidates = [
    f"alpha={p['alpha']:g}\nwidth={p['hidden_layer_sizes']}"
    for p in search_default.cv_results_["params"]
]
positions = np.arange(len(candidates))
fig, axes = plt.subplots(1, 2, figsize=(11, 4), width_ratios=[2.2, 1])
axes[0].bar(positions - 0.2, scores_default, width=0.4, label="default (loky)")
axes[0].bar(positions + 0.2, scores_dask, width=0.4, label="dask LocalCluster")
best = search_default.best_index_
axes[0].annotate(
    "best",
    (best, scores_default[best]),
    (best, scores_default[best] + 0.08),
    ha="center",
    arrowprops={"arrowstyle": "->"},
)
axes[0].set_xticks(positions, candidates, fontsize=8)
axes[0].set(ylabel="mean cross-validated $R^2$", ylim=(0, 1.1))
axes[0].set_title("GridSearchCV: the same scores on both backends")
axes[0].legend(loc="lower right")

labels = ["grid search\n(18 fits)", "4 restarts"]
axes[1].bar(
    np.arange(2) - 0.2,
    [t_search_default, t_restarts_default],
    width=0.4,
    label="default",
)
axes[1].bar(
    np.arange(2) + 0.2, [t_search_dask, t_restarts_dask], width=0.4, label="dask"
)
axes[1].set_xticks(np.arange(2), labels)
axes[1].set(ylabel="wall time (s)", title="Wall time on this machine")
axes[1].legend()
fig.tight_layout()
plt.show()

# %%
# On one small machine the wall times mostly measure start-up costs (loky
# starts its worker processes on first use, the in-process dask workers started
# with the cluster), not a speed-up: two cores are two cores. The point of the
# dask backend is that the **same code** runs on many machines.
#
# Running on a real cluster
# -------------------------
# Only the line that creates the client changes. Connect to a running scheduler
# (started with ``dask scheduler`` and ``dask worker tcp://scheduler:8786`` on
# each node, or by your platform):
#
# .. code-block:: python
#
#     from dask.distributed import Client
#
#     client = Client("tcp://scheduler-address:8786")
#
# or let a cluster manager start the workers, for example on a SLURM or PBS
# system with `dask-jobqueue <https://jobqueue.dask.org>`_ or on Kubernetes with
# `dask-kubernetes <https://kubernetes.dask.org>`_:
#
# .. code-block:: python
#
#     from dask_jobqueue import SLURMCluster
#
#     cluster = SLURMCluster(cores=8, memory="16GB", walltime="01:00:00")
#     cluster.scale(jobs=10)
#     client = Client(cluster)
#
# and then, unchanged:
#
# .. code-block:: python
#
#     with joblib.parallel_config(backend="dask"):
#         search.fit(X, y)
#
# The workers need skderand installed (the same version). For large ``X``,
# ``joblib.parallel_config(backend="dask", scatter=[X, y])`` sends the data to
# the workers once instead of with every task. Every fit is seeded, so the
# results do not depend on how many workers there are or where a task runs.
