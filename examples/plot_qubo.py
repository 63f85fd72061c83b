"""
=================================================================
QUBO: one deterministic solution, a certified bound, and SA
=================================================================

:class:`skderand.DeterministicQUBO` solves ``max x^T Q x`` over ``x in {0, 1}^n``
by writing it as a cut of ``n + 1`` vertices: the semidefinite relaxation
gives each variable a vector ``v_i`` and one more vector ``v_0``, and its
standard rounding takes ``x_i = [sign(v_i . z) = sign(v_0 . z)]`` for a Gaussian
``z``. The estimator derandomizes that rounding (no ``z`` is ever drawn),
improves the result with a one-flip tabu search, and bounds the optimum from
the relaxation's dual.

This example compares, on a dense random QUBO with integer coefficients, the
random roundings of the relaxation, the derandomized rounding, the final
solution, a plain simulated annealing given the same time, and the bound.
"""

# %%
# A dense QUBO with integer coefficients
# --------------------------------------
import time

import matplotlib.pyplot as plt
import numpy as np

from skderand import DeterministicQUBO

rng = np.random.default_rng(0)
n = 300
upper = np.triu(rng.integers(-100, 101, (n, n)) * (rng.random((n, n)) < 0.5), 0)
Q = (upper + np.triu(upper, 1).T).astype(float)

start = time.perf_counter()
qubo = DeterministicQUBO(sense="maximize").fit(Q)
elapsed = time.perf_counter() - start
print(f"fit in {elapsed:.2f} s, certified rounding: {qubo.certified_}")
print(f"expected value of the random rounding  {qubo.expected_value_:10.0f}")
print(f"derandomized rounding                  {qubo.rounded_value_:10.0f}")
print(f"after the tabu search                  {qubo.value_:10.0f}")
print(f"certified upper bound                  {qubo.bound_:10.0f}")

# %%
# 200 random roundings of the same relaxation
# -------------------------------------------
V = qubo.cut_estimator_.sdp_vectors_
signs = np.sign(V @ rng.standard_normal((V.shape[1], 200)))
X = (signs[1:] == signs[:1]).astype(float)  # x_i = [sign(v_i.z) = sign(v_0.z)]
random_values = np.einsum("ik,ij,jk->k", X, Q, X)
print(
    f"random roundings: mean {random_values.mean():.0f}, best {random_values.max():.0f}"
)


# %%
# Simulated annealing for the same time
# -------------------------------------
# Single flips with the Metropolis rule, the temperature lowered geometrically;
# the field ``Q2 x + diag(Q)`` gives each flip's gain.
def simulated_annealing(Q, seconds, rng):
    d, Q2 = np.diag(Q).copy(), 2 * (Q - np.diag(np.diag(Q)))
    x = (rng.random(len(Q)) < 0.5).astype(float)
    field = d + Q2 @ x
    value = best = x @ Q @ x
    scale = np.abs(Q2).sum(axis=1).mean()
    deadline, moves = time.perf_counter() + seconds, 0
    while time.perf_counter() < deadline:
        temperature = scale * 0.1 * 0.001 ** min(1.0, moves / 200_000)
        for i in rng.integers(len(Q), size=1000):
            gain = (1 - 2 * x[i]) * field[i]
            if gain >= 0 or rng.random() < np.exp(gain / temperature):
                field += (1 - 2 * x[i]) * Q2[i]
                x[i] = 1 - x[i]
                value += gain
                best = max(best, value)
        moves += 1000
    return best


annealed = simulated_annealing(Q, elapsed, rng)
print(f"simulated annealing, {elapsed:.2f} s            {annealed:10.0f}")

# %%
# Where each one lands
# --------------------
fig, ax = plt.subplots(figsize=(9, 3.8))
ax.hist(random_values, bins=30, color="0.7", label="random roundings")
for value, label, color in [
    (qubo.expected_value_, "expected (randomized)", "0.3"),
    (qubo.rounded_value_, "derandomized rounding", "C0"),
    (annealed, "simulated annealing", "C2"),
    (qubo.value_, "DeterministicQUBO", "C3"),
    (qubo.bound_, "certified bound", "k"),
]:
    ax.axvline(value, color=color, lw=2, label=label)
ax.set(xlabel="x^T Q x", title=f"Dense QUBO, n = {n}")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
plt.show()
