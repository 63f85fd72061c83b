"""
======================================================================
Structure discovery as a supervised reducer in a scikit-learn pipeline
======================================================================

:class:`~skderand.StructureDiscoveryRegressor` is a transformer as well as a
regressor: :meth:`~skderand.StructureDiscoveryRegressor.transform` returns the
coordinates of ``X`` in the subspace the target depends on. Placed first in a
:class:`~sklearn.pipeline.Pipeline`, it reduces many features to the few that
matter, so that a model that suffers in high dimension, such as nearest
neighbours, works again. Its hyper-parameters are ordinary parameters for
:class:`~sklearn.model_selection.GridSearchCV`.
"""

# %%
# Data: 12 features, a target that depends on two directions
# ----------------------------------------------------------
# ``y = tanh(u1.x) + (u2.x)**2 / 2 + noise``: a multi-index model with
# ``k = 2``, made by :func:`skderand.datasets.make_multi_index_regression`. The
# second link is even, which sliced inverse regression cannot see.
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skderand import StructureDiscoveryRegressor
from skderand.datasets import make_multi_index_regression, subspace_distance

# A short max_iter keeps the example fast; a fit that stops before its
# certificate says so with a ConvergenceWarning, silenced here.
warnings.simplefilter("ignore", ConvergenceWarning)

X, y, U = make_multi_index_regression(800, 12, link="tanh+square", random_state=0)

cv = KFold(n_splits=3, shuffle=True, random_state=0)

# %%
# Nearest neighbours with and without the reducer
# -----------------------------------------------
# On 12 features, 800 points are too few for nearest neighbours: every point is
# far from every other. On the two discovered coordinates they are plenty.
sdr = StructureDiscoveryRegressor(
    hidden_layer_sizes=16, n_components=2, max_iter=500, random_state=0
)
models = {
    "kNN on 12 raw features": make_pipeline(
        StandardScaler(), KNeighborsRegressor(n_neighbors=10)
    ),
    "structure discovery -> kNN": make_pipeline(
        sdr, KNeighborsRegressor(n_neighbors=10)
    ),
    "structure discovery alone": sdr,
}
scores = {}
for name, model in models.items():
    scores[name] = cross_val_score(model, X, y, cv=cv)
    print(f"{name:28} R^2 = {scores[name].mean():.3f} +- {scores[name].std():.3f}")

# %%
# The reducer also tells us *what* the target depends on: the discovered
# subspace is the planted one. ``subspace_`` has orthonormal rows; the
# distance :func:`~skderand.datasets.subspace_distance` (the sine of the largest
# principal angle) to ``span(U)`` is near zero.
sdr.fit(X, y)
print(f"singular values of the first layer: {np.round(sdr.singular_values_[:5], 3)}")
print(f"distance to span(U): {subspace_distance(sdr.subspace_, U):.3f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
names = list(scores)
axes[0].barh(
    names,
    [scores[name].mean() for name in names],
    xerr=[scores[name].std() for name in names],
    color=["tab:gray", "tab:blue", "tab:cyan"],
)
axes[0].set(xlabel="cross-validated $R^2$", xlim=(0, 1), title="Same data, 3 models")
axes[0].invert_yaxis()

Z = sdr.transform(X)
sc = axes[1].scatter(Z[:, 0], Z[:, 1], c=y, s=8, cmap="viridis")
fig.colorbar(sc, ax=axes[1], label="y")
axes[1].set(
    xlabel="discovered coordinate 1",
    ylabel="discovered coordinate 2",
    title="y over the 2 discovered coordinates",
)
fig.tight_layout()

# %%
# Tuning the reducer with GridSearchCV
# ------------------------------------
# The weight decay ``alpha`` trades the finite-sample leakage into irrelevant
# directions (too small) against under-fitting (too large); the width of the
# first layer bounds what the network can fit. Both are searched like any
# scikit-learn hyper-parameter, here through the pipeline's step name.
pipe = make_pipeline(
    StructureDiscoveryRegressor(n_components=2, max_iter=500, random_state=0),
    KNeighborsRegressor(n_neighbors=10),
)
param_grid = {
    "structurediscoveryregressor__alpha": [1e-3, 1e-2, 1e-1],
    "structurediscoveryregressor__hidden_layer_sizes": [4, 16],
}
search = GridSearchCV(pipe, param_grid, cv=cv).fit(X, y)
print("best parameters:", search.best_params_)
print(f"best cross-validated R^2: {search.best_score_:.3f}")

# %%
alphas = param_grid["structurediscoveryregressor__alpha"]
widths = param_grid["structurediscoveryregressor__hidden_layer_sizes"]
mean_scores = np.array(search.cv_results_["mean_test_score"]).reshape(
    len(alphas), len(widths)
)
fig, ax = plt.subplots(figsize=(5, 3.6))
im = ax.imshow(mean_scores, cmap="viridis", aspect="auto")
for i in range(len(alphas)):
    for j in range(len(widths)):
        bright = mean_scores[i, j] > mean_scores.min() + 0.6 * np.ptp(mean_scores)
        ax.text(
            j,
            i,
            f"{mean_scores[i, j]:.3f}",
            ha="center",
            va="center",
            color="k" if bright else "w",
        )
ax.set_xticks(range(len(widths)), [str(w) for w in widths])
ax.set_yticks(range(len(alphas)), [f"{a:g}" for a in alphas])
ax.set(
    xlabel="first-layer width",
    ylabel="alpha (weight decay)",
    title="GridSearchCV: mean $R^2$ of reducer + kNN",
)
fig.colorbar(im, ax=ax)
fig.tight_layout()
plt.show()
