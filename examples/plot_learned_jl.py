"""
=========================================================
A learned Johnson-Lindenstrauss embedding of digit images
=========================================================

A random projection keeps every pairwise distance within ``1 +- eps`` only with
many dimensions; at ``k = 20`` a Gaussian draw distorts some pair of digit images
by nearly 100 %. :class:`~skderand.LearnedJLTransformer` learns the map for the
points at hand, starting from such a draw, and shrinks the worst case.

Below: the distribution of the squared-distance ratios
``||f(x_i) - f(x_j)||^2 / ||x_i - x_j||^2`` for the learned map and for random
projections, then the derandomized fit, where the solver optimizes a Gaussian
distribution ``M + scale * E`` of matrices and drives its scale to zero (the
derandomization lemma at work).
"""

# %%
# Distance ratios: learned against random
# ---------------------------------------
import matplotlib

matplotlib.use("Agg")  # runs without a display; sphinx-gallery captures figures
import matplotlib.pyplot as plt
import numpy as np
from scipy.spatial.distance import pdist
from sklearn.datasets import load_digits
from sklearn.random_projection import GaussianRandomProjection

from skderand import LearnedJLTransformer

X = load_digits().data[::4]  # 450 images in 64 dimensions
k = 20
d2 = pdist(X, "sqeuclidean")
keep = d2 > 0  # duplicate images carry no distortion


def ratios(Y):
    return pdist(Y, "sqeuclidean")[keep] / d2[keep]


def calibrated(r):
    # Scale so that the extreme ratios are 1 - eps and 1 + eps.
    return r * 2 / (r.max() + r.min())


learned = LearnedJLTransformer(k, random_state=0).fit(X)
r_learned = calibrated(ratios(learned.transform(X)))
r_random = [
    calibrated(ratios(GaussianRandomProjection(k, random_state=s).fit_transform(X)))
    for s in range(3)
]

fig, ax = plt.subplots(figsize=(7, 4))
bins = np.linspace(0, 2, 121)
for s, r in enumerate(r_random):
    ax.hist(r, bins=bins, histtype="step", density=True, label=f"Gaussian seed {s}")
ax.hist(r_learned, bins=bins, alpha=0.6, density=True, label="learned")
ax.set_xlabel("calibrated ratio of squared distances")
ax.set_ylabel("density over pairs")
ax.set_title(f"Digits, k = {k}: worst case {learned.distortion_:.2f} (learned)")
ax.legend()
print(f"learned eps* = {learned.distortion_:.3f}")
for s, r in enumerate(r_random):
    print(f"Gaussian seed {s}: eps* = {r.max() - 1:.3f}")

# %%
# The scale of the derandomized fit falls to zero
# -----------------------------------------------
# ``algorithm="derandomized"`` starts from the distribution ``M + scale * E`` with
# ``scale = 1 / sqrt(k)`` (as much noise as signal). ``verbose=1`` prints the
# scale after each sharpness stage; here we record it by refitting with more and
# more stages (a fit is deterministic for a given ``random_state``). The fit
# with one stage starts at the final sharpness, 1000, and stops uncertified at
# ``max_iter`` (its ``ConvergenceWarning`` shows below; it needs about 2,500
# iterations): the blunter stages before it are what make the later ones short.
scales, distortions = [np.sqrt(1 / k)], []
X_small = X[::3]  # 150 images: four short refits
for n_stages in range(1, 5):
    der = LearnedJLTransformer(
        k, algorithm="derandomized", n_stages=n_stages, random_state=0
    ).fit(X_small)
    scales.append(der.scale_)
    distortions.append(der.distortion_)

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogy(range(len(scales)), np.maximum(scales, 1e-16), "o-")
ax.set_xlabel("number of sharpness stages")
ax.set_ylabel("Gaussian scale (scale_)")
ax.set_title("The derandomization lemma: the scale is driven to 0")
print("scale after 0..4 stages:", ", ".join(f"{s:.1e}" for s in scales))
print("distortion after 1..4 stages:", ", ".join(f"{d:.3f}" for d in distortions))
plt.show()
