"""
==================================================================
MAX-2-SAT and MAX-DICUT: derandomized rounding against the optimum
==================================================================

Goemans and Williamson's relaxation of MAX-2-SAT rounds truth values by the
signs of ``v_i . z`` relative to ``v_0 . z``, with a guaranteed expected
0.878 of the optimum. :func:`skderand.derandomize.clauses_to_ising` writes the
satisfied weight as an Ising problem with fields, and
:class:`skderand.DeterministicQUBO` derandomizes that rounding, improves it and
bounds the optimum. On instances small enough to enumerate, we compare every
stage with the exact optimum, and do the same for MAX-DICUT
(:func:`~skderand.derandomize.arcs_to_ising`).
"""

# %%
# Random instances and their exact optima
# ---------------------------------------
import itertools

import matplotlib.pyplot as plt
import numpy as np

from skderand import DeterministicQUBO
from skderand.derandomize import arcs_to_ising, clauses_to_ising

rng = np.random.default_rng(0)
n = 18


def best_by_enumeration(h, J, offset):
    """max of offset + h.t + t^T J t over all 2**n spin vectors, in chunks."""
    J = J.toarray()
    best = -np.inf
    for head in itertools.product((-1.0, 1.0), repeat=n - 12):
        tail = np.array(list(itertools.product((-1.0, 1.0), repeat=12)))
        T = np.hstack([np.tile(head, (len(tail), 1)), tail])
        values = offset + T @ h + np.einsum("ki,ij,kj->k", T, J, T)
        best = max(best, values.max())
    return best


rows = []
for _ in range(4):
    clauses = [
        tuple(int(v) * int(rng.choice([-1, 1])) for v in rng.choice(n, 2, False) + 1)
        for _ in range(90)
    ]
    rows.append(("MAX-2-SAT", clauses_to_ising(clauses)))
    arcs = np.array([rng.choice(n, 2, replace=False) for _ in range(80)])
    rows.append(("MAX-DICUT", arcs_to_ising(arcs, n_vertices=n)))

# %%
# Each stage as a fraction of the optimum
# ---------------------------------------
stages = {"expected (randomized)": [], "derandomized": [], "final": [], "bound": []}
labels = []
for k, (kind, (h, J, offset)) in enumerate(rows):
    optimum = best_by_enumeration(h, J, offset)
    fitted = DeterministicQUBO(sense="maximize").fit_ising(h, J, offset)
    for key, value in zip(
        stages,
        (fitted.expected_value_, fitted.rounded_value_, fitted.value_, fitted.bound_),
        strict=True,
    ):
        stages[key].append(value / optimum)
    labels.append(f"{kind} {k // 2 + 1}")
    print(
        f"{labels[-1]:12s} optimum {optimum:6.1f}  derandomized "
        f"{fitted.rounded_value_:6.1f}  final {fitted.value_:6.1f}  "
        f"bound {fitted.bound_:6.1f}"
    )

fig, ax = plt.subplots(figsize=(10, 3.8))
width = 0.2
for j, (key, ratios) in enumerate(stages.items()):
    ax.bar(np.arange(len(labels)) + (j - 1.5) * width, ratios, width, label=key)
ax.axhline(1.0, color="k", lw=1)
ax.set_xticks(np.arange(len(labels)), labels, rotation=30, fontsize=8)
ax.set(ylim=(0.8, 1.15), ylabel="value / optimum")
ax.legend(fontsize=8, ncol=4, loc="upper left")
fig.tight_layout()
plt.show()
