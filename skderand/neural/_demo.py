"""The structure-discovery section of ``python -m skderand``."""

import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from skderand.datasets import make_multi_index_regression, subspace_distance
from skderand.neural._structure_discovery import StructureDiscoveryRegressor


def demo_structure_discovery():
    """Recover planted subspaces of multi-index teachers, with the certificate."""
    print("== Structure discovery (skderand.StructureDiscoveryRegressor) ==")
    d, n = 12, 1500
    print(
        f"y = h(U x) + 0.1 noise, x ~ N(0, I_{d}), n = {n}; U has k random\n"
        "orthonormal rows. The decay alpha_ and the dimension n_components_ are\n"
        "chosen by 5-fold cross-validation (the defaults), the first-layer singular\n"
        "values show the gap, and the distance ||P_B - P_U||_2 to the true\n"
        "subspace is 0 for a perfect recovery, 1 for a useless one."
    )
    teachers = ["relu", "product", "relu_sum"]
    print(
        f"{'teacher':<21} {'k':>2} {'found':>5} {'alpha_':>7} {'distance':>8} "
        f"{'R^2':>6} "
        f"{'grad norm':>9} {'min eig':>9} {'time s':>6}  top singular values"
    )
    for seed, name in enumerate(teachers):
        X, y, U = make_multi_index_regression(n, d, link=name, random_state=seed)
        k = U.shape[0]
        est = StructureDiscoveryRegressor(hidden_layer_sizes=16, random_state=0)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y)
        elapsed = time.perf_counter() - start
        top = " ".join(f"{s:.3f}" for s in est.singular_values_[: k + 2])
        print(
            f"{name:<21} {k:>2} {est.n_components_:>5} {est.alpha_:>7.0e} "
            f"{subspace_distance(est.subspace_, U):>8.3f} "
            f"{est.score(X, y):>6.3f} {est.grad_norm_:>9.1e} "
            f"{est.min_hessian_eig_:>9.1e} {elapsed:>6.1f}  {top}"
        )
    print()
