"""skderand: derandomized structure discovery as scikit-learn estimators.

At a second-order stationary point of ``E_x[g(Wx + b)] + lambda * ||W||^2`` with
Gaussian ``x`` and a trainable bias ``b``, the weight ``W`` is driven to zero: the
optimizer removes the randomness by itself. skderand builds estimators on that
lemma and ships the certified solver they share (:mod:`skderand.optimize`) and
the derandomization framework itself (:mod:`skderand.derandomize`).
"""

from skderand import datasets, derandomize, optimize
from skderand.embedding import LearnedJLTransformer
from skderand.maxcut import DeterministicMaxCut
from skderand.neural import StructureDiscoveryClassifier, StructureDiscoveryRegressor
from skderand.qubo import DeterministicQUBO

__version__ = "0.1.0.dev0"

__all__ = [
    "DeterministicMaxCut",
    "DeterministicQUBO",
    "LearnedJLTransformer",
    "StructureDiscoveryClassifier",
    "StructureDiscoveryRegressor",
    "__version__",
    "datasets",
    "derandomize",
    "optimize",
]
