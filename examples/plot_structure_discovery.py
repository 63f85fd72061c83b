"""
==========================================================
First-layer rows collapsing onto the discovered subspace
==========================================================

A single-index teacher in two dimensions, ``y = tanh(3 u . x)``, learned by a
:class:`~skderand.StructureDiscoveryRegressor` with a ``tanh`` network. The
derandomization lemma says that at a second-order stationary point the part of
the first-layer weight ``W`` perpendicular to ``u`` vanishes (the biases absorb
what the random perpendicular coordinate cannot explain). We watch it happen:
every row of ``W`` is a point in the plane, and during training the rows line up
along ``span(u)``; the second singular value of ``W`` goes to zero, leaving the
gap ``n_components="auto"`` reads.

The trajectory is obtained by refitting with the same seed and a growing
``max_iter``: L-BFGS is deterministic, so each fit is a snapshot of one run.
"""

# %%
# Data and snapshots
# ------------------
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skderand import StructureDiscoveryRegressor

rng = np.random.default_rng(0)
n = 2000
u = np.array([np.cos(0.6), np.sin(0.6)])
X = rng.standard_normal((n, 2))
y = np.tanh(3 * X @ u) + 0.05 * rng.standard_normal(n)

snapshots = [1, 3, 10, 30, 100, 300, 2000]
fits = []
for max_iter in snapshots:
    est = StructureDiscoveryRegressor(
        hidden_layer_sizes=8,
        activation="tanh",
        whiten=False,  # the inputs are already isotropic: keep W as it is
        max_iter=max_iter,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fits.append(est.fit(X, y))

final = fits[-1]
print(f"certified: {final.certified_}, gradient norm {final.grad_norm_:.1e}")
print(f"singular values of W: {np.round(final.singular_values_, 4)}")
print(f"n_components_ = {final.n_components_}")
print(f"|subspace_ . u| = {abs(final.subspace_[0] @ u):.4f}")

# %%
# Rows of W and its singular values during training
# -------------------------------------------------
fig, (ax_rows, ax_sv) = plt.subplots(1, 2, figsize=(10, 4.5))
colors = plt.cm.viridis(np.linspace(0, 1, len(snapshots)))
for est, it, color in zip(fits, snapshots, colors, strict=True):
    rows = est.coefs_[0].T  # one point per hidden unit
    ax_rows.scatter(rows[:, 0], rows[:, 1], color=color, s=18, label=f"iter {it}")
extent = 1.1 * np.abs(final.coefs_[0]).max()
ax_rows.plot([-extent * u[0], extent * u[0]], [-extent * u[1], extent * u[1]], "k--")
ax_rows.set_aspect("equal")
ax_rows.set_title("rows of W (dashed: span(u))")
ax_rows.set(xlabel="weight on x[0]", ylabel="weight on x[1]")
ax_rows.legend(fontsize=7, loc="lower right")

sv = np.array([est.singular_values_ for est in fits])
ax_sv.semilogy(snapshots, sv[:, 0], "o-", label="$s_1$")
ax_sv.semilogy(snapshots, np.maximum(sv[:, 1], 1e-12), "o-", label="$s_2$")
ax_sv.set_xscale("log")
ax_sv.set_xlabel("L-BFGS iterations (max_iter)")
ax_sv.set_title("singular values of W: the gap opens")
ax_sv.legend()
fig.tight_layout()
plt.show()
