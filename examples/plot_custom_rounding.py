"""
=====================================================
Derandomize your own rounding: a budgeted selection
=====================================================

:func:`skderand.derandomize.derandomize` removes the randomness from any
randomized algorithm of the form ``y = V z + mu`` with Gaussian ``z``, given its
expected payoff ``F(V, mu) = E_z[g(V z + mu)]``. Here the algorithm is a
randomized selection: item ``i`` is taken when its noisy score ``y_i`` is
positive, and the payoff rewards the items' values but penalizes going over a
weight budget. There is no closed form for the expectation, so
:class:`~skderand.derandomize.SampleAverageExpectation` averages a smooth
version of the payoff (each item taken with probability ``sigmoid(y_i / s)``)
over fixed quasi-random Gaussian points.

Raising the penalty ``alpha ||V||^2`` drives ``V`` to zero (the lemma of
Tsikouras et al., ICLR 2026): the random scores become the deterministic
offsets ``mu``, and the selection is ``mu > 0``.
"""

# %%
# The problem: 40 items, values, weights and a budget
# ---------------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import expit

from skderand.derandomize import SampleAverageExpectation, derandomize

rng = np.random.default_rng(0)
n, rank, s, penalty = 40, 6, 0.3, 2.0
values = rng.uniform(1, 10, n)
weights = rng.uniform(1, 10, n)
budget = 0.3 * weights.sum()


def exact_value(x):
    """The payoff of a 0/1 selection: its value, less the squared overweight."""
    over = max(0.0, weights @ x - budget)
    return float(values @ x - penalty * over**2)


def payoff(Y):
    """Smoothed payoff of each row of scores: items taken with probability p."""
    p = expit(Y / s)
    over = p @ weights - budget
    soft_over = np.logaddexp(0.0, over)  # a smooth max(0, overweight)
    return p @ values - penalty * soft_over**2


def gradient(Y):
    p = expit(Y / s)
    over = p @ weights - budget
    soft_over = np.logaddexp(0.0, over)
    d_over = -2.0 * penalty * soft_over * expit(over)
    return (values + d_over[:, None] * weights) * p * (1 - p) / s


# %%
# The randomized algorithm and its derandomization
# ------------------------------------------------
# Random correlated scores: ``V0`` mixes ``rank`` Gaussian factors.
V0 = rng.standard_normal((n, rank)) / np.sqrt(rank)
expectation = SampleAverageExpectation(
    payoff,
    gradient,
    n_coordinates=n,
    rank=rank,
    n_samples=2048,
    solution=lambda mu: (mu > 0).astype(float),
    solution_value=exact_value,
    mu_scale=s,
)
res = derandomize(expectation, V0, alpha=0.5, max_iter=200, random_state=0)
print(f"certified: {res.certified} (gradient norm {res.grad_norm:.1e})")
print(f"|V| = {res.v_norm:.1e}, at most {res.v_norm_bound:.1e} by the lemma")
print(f"expected payoff of the random selection  {res.start_expectation:8.2f}")
print(f"penalty paid along the path              {res.penalty_paid:8.2f}")
print(f"derandomized selection: {int(res.solution.sum())} items, value {res.value:.2f}")

# %%
# Against 2,000 draws of the randomized selection
# -----------------------------------------------
draws = rng.standard_normal((2000, rank)) @ V0.T
random_values = np.array([exact_value((y > 0).astype(float)) for y in draws])
print(f"random selections: mean {random_values.mean():.2f}")
print(f"best of 2,000 random selections: {random_values.max():.2f}")

fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
path = res.path
axes[0].semilogy(path["v_norm"], "o-")
axes[0].set(xlabel="stage", ylabel="||V||", title="The random part vanishes")
axes[1].hist(random_values, bins=40, color="0.7", label="random selections")
axes[1].axvline(res.value, color="C3", lw=2, label="derandomized")
axes[1].set(xlabel="exact payoff", title="One deterministic selection")
axes[1].legend()
fig.tight_layout()
plt.show()
