"""The active-set machinery of LearnedJLTransformer on spans of n - 1 dimensions.

The rounds there optimize the embedded points of the active pairs (their
gradient is the map's before its product with the coordinates), and new pairs'
squared distances come from the blocked pass's stored Gram form where its
round-off bound is within GRAM_RTOL. Also the stages' solves: long rounds that
make things worse are undone, the final stage stops at the certificate's
gradient test on every solver path and goes on until then or max_iter, and a
fit in long rounds (thousands of points, float32 products) against random
projections and PCA.
"""

import tracemalloc

import numpy as np
import pytest
from scipy import linalg, sparse
from scipy.spatial.distance import pdist
from sklearn.decomposition import PCA
from sklearn.random_projection import GaussianRandomProjection

from benchmarks.bench_jl import (
    blocked_distortion,
    blocked_distortions,
    clustered_low_rank,
)
from skderand import LearnedJLTransformer
from skderand.embedding import _active, _pairs, _polish, _stages
from skderand.embedding._active import _ActivePairs
from skderand.embedding._pairs import (
    GRAM_RTOL,
    _HeldGram,
    _PairObjective,
    _PairScanner,
    _PivotedCholesky,
    _Span,
    _SparseGram,
    all_pairs,
    difference_matrix,
    exact_sq_dists,
    gram_distance_rtol,
)
from skderand.embedding._polish import prox_linear_steps
from skderand.embedding._stages import lbfgs, solve_stage, stage_objective
from skderand.optimize import sosp_certificate
from skderand.optimize._certificate import _lanczos_smallest, _orthogonalized


def _coords(n, d, seed=0):
    rng = np.random.default_rng(seed)
    return _Span(rng.standard_normal((n, d))).coords


def _some_pairs(n, m, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(n, size=m), rng.integers(n, size=m)
    keep = a != b
    key = np.unique(np.minimum(a, b)[keep] * n + np.maximum(a, b)[keep])
    return np.divmod(key, n)


@pytest.mark.parametrize("beta", [7.0, 500.0])
def test_embedded_evaluation_is_the_map_evaluation(beta):
    # Value and gradient in the embedded points Y = X M^T: the same value as
    # the map's evaluation, and the map's gradient is grad_Y^T X.
    X = _coords(30, 40)
    rows, cols = _some_pairs(30, 120)
    d2 = exact_sq_dists(X, rows, cols)
    obj = _PairObjective(X, rows, cols, d2, 4, derandomized=False, penalty=0.0)
    obj.beta = beta
    z = np.random.default_rng(1).standard_normal(4 * X.shape[1])
    value, grad_M = obj(z)
    Y = X[obj.used] @ z.reshape(4, -1).T
    value_Y, grad_Y = obj.embedded(Y)
    assert value_Y == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(
        (grad_Y.T @ X[obj.used]).ravel(),
        grad_M,
        rtol=1e-12,
        atol=1e-12 * abs(grad_M).max(),
    )


def test_embedded_gradient_matches_finite_differences():
    X = _coords(12, 20)
    rows, cols, d2 = all_pairs(X)
    obj = _PairObjective(X, rows, cols, d2, 3, derandomized=False, penalty=0.0)
    obj.beta = 7.0
    Y = np.random.default_rng(2).standard_normal((obj.used.size, 3))
    _, grad = obj.embedded(Y)
    h = 1e-6
    numeric = np.array(
        [
            (obj.embedded(Y + h * E)[0] - obj.embedded(Y - h * E)[0]) / (2 * h)
            for E in np.eye(Y.size).reshape(-1, *Y.shape)
        ]
    )
    np.testing.assert_allclose(grad.ravel(), numeric, rtol=1e-5, atol=1e-7)


def test_stored_gram_distances_are_within_their_tolerance():
    # Accepted pairs lie within GRAM_RTOL of the exact (direct-sum) distances;
    # a near-duplicate pair (the Gram form's cancellation) is refused.
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 300))
    X[7] = X[3] + 1e-5 * rng.standard_normal(300)
    X -= X.mean(0)
    scanner = _PairScanner(X)
    rows, cols = _some_pairs(200, 3000, seed=4)
    rows, cols = np.append(rows, 3), np.append(cols, 7)
    d2, ok = scanner.stored_sq_dists(rows, cols)
    exact = exact_sq_dists(X, rows, cols)
    assert ok[:-1].all() and not ok[-1]
    assert np.all(np.abs(d2[ok] - exact[ok]) <= GRAM_RTOL * exact[ok])


def test_exact_distances_of_fortran_ordered_coordinates_copy_nothing_whole():
    # The span of large sparse input comes in Fortran order (LAPACK's
    # eigenvectors). Its rows are gathered in place, not after a copy of all
    # the coordinates into C order at every call (np.take's way): the same
    # distances, to the direct sum's round-off, in a small share of X's memory.
    rng = np.random.default_rng(7)
    X = np.asfortranarray(rng.standard_normal((1500, 2000)))
    rows = rng.integers(1500, size=300)
    cols = (rows + 1 + rng.integers(1499, size=300)) % 1500
    expected = exact_sq_dists(np.ascontiguousarray(X), rows, cols)
    tracemalloc.start()
    try:
        d2 = exact_sq_dists(X, rows, cols)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    gamma_d = 2000 * 2.0**-53 / (1 - 2000 * 2.0**-53)
    np.testing.assert_allclose(d2, expected, rtol=2 * gamma_d)
    direct = np.sum((X[rows] - X[cols]) ** 2, axis=1)
    np.testing.assert_allclose(d2, direct, rtol=2 * gamma_d)
    assert peak < X.nbytes / 4


def test_stored_gram_distances_in_thousands_of_dimensions():
    # From about 4,500 dimensions on the Gram form's worst-case bound passes
    # GRAM_RTOL for every pair; its tolerance is then a few times the direct
    # sum's own bound gamma_d, so that new pairs are not all gathered and
    # measured directly (two rows of d numbers each). Accepted pairs lie within
    # it; a near-duplicate pair is still refused.
    d = 6000
    rtol = gram_distance_rtol(d)
    assert gram_distance_rtol(1500) == GRAM_RTOL
    gamma_d = d * 2.0**-53 / (1 - d * 2.0**-53)
    assert GRAM_RTOL < rtol == pytest.approx(4.0 * gamma_d)  # the default factor
    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, d))
    X[9] = X[4] + 1e-5 * rng.standard_normal(d)
    X -= X.mean(0)
    scanner = _PairScanner(X)
    rows, cols = np.triu_indices(60, 1)
    d2, ok = scanner.stored_sq_dists(rows, cols)
    exact = exact_sq_dists(X, rows, cols)
    near_duplicate = (rows == 4) & (cols == 9)
    assert ok[~near_duplicate].all() and not ok[near_duplicate].any()
    assert np.all(np.abs(d2[ok] - exact[ok]) <= rtol * exact[ok])


def test_embedded_round_moves_only_the_active_points():
    # A round on the embedded points: the map recovered from them reproduces
    # them (X M^T = Y), lowers the surrogate, and leaves the points outside
    # the active pairs where they were.
    X = _coords(60, 80)
    pairs = _ActivePairs(X, working_set=100)
    assert pairs.embedded == (X.shape[1] >= _active.EMBEDDED_MIN_RANK)
    rows, cols = _some_pairs(40, 150, seed=5)
    pairs.set_active(rows, cols)
    obj = stage_objective(pairs, 5, 50.0, derandomized=False, penalty=0.0)
    z = np.random.default_rng(6).standard_normal(5 * X.shape[1])
    z_new, n_iter = _stages._lbfgs_on_points(pairs, obj, z, 1e-9, 20)
    assert n_iter > 0
    Y_old = X @ z.reshape(5, -1).T
    Y_new = X @ z_new.reshape(5, -1).T
    unused = np.setdiff1d(np.arange(60), obj.used)
    assert unused.size >= 20
    np.testing.assert_allclose(Y_new[unused], Y_old[unused], atol=1e-10)
    assert obj(z_new)[0] < obj(z)[0]
    value_Y, _ = obj.embedded(Y_new[obj.used])
    assert value_Y == pytest.approx(obj(z_new)[0], rel=1e-10)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fit_on_the_embedded_path_is_measured_exactly(monkeypatch):
    # 150 points in 400 dimensions (span 149), active-set rounds on the
    # embedded points, Gram-form distances: distortion_ is the all-pairs value.
    monkeypatch.setattr(_active, "EMBEDDED_MIN_RANK", 1)
    monkeypatch.setattr(_active, "GRAM_DISTANCE_MIN_RANK", 1)
    monkeypatch.setattr(_active, "COMPLETE_PER_VARIABLE", 1)
    X = np.random.default_rng(7).standard_normal((150, 400))
    jl = LearnedJLTransformer(6, working_set=1000, random_state=0).fit(X)
    q = pdist(jl.transform(X), "sqeuclidean")
    r = q / pdist(X, "sqeuclidean")
    assert jl.distortion_ == pytest.approx(
        (r.max() - r.min()) / (r.max() + r.min()), rel=1e-9
    )
    assert jl.distortion_ < 0.8 * jl.initial_distortion_


def test_benchmark_distortions_of_sparse_input_are_exact():
    # The benchmark's blocked measurement (several embeddings at once, sparse
    # input through sparse products, blocks smaller than the data) against
    # the distortion from every pair's differences.
    X = sparse.random(150, 400, density=0.05, format="csr", random_state=0)
    rng = np.random.default_rng(1)
    Ys = [X @ rng.standard_normal((400, k)) for k in (3, 10)]
    measured = blocked_distortions(X, Ys, block=64)
    for Y, value in zip(Ys, measured, strict=True):
        r = pdist(Y, "sqeuclidean") / pdist(X.toarray(), "sqeuclidean")
        exact = (r.max() - r.min()) / (r.max() + r.min())
        assert value == pytest.approx(exact, rel=1e-12)
        assert blocked_distortion(X.toarray(), Y) == pytest.approx(exact, rel=1e-12)


def test_difference_matrix_is_the_subtraction_bit_for_bit():
    # B @ Y sums 1 * y_i and -1 * y_j from 0: each term exact, so the product
    # is the subtraction itself, for pairs in either order.
    rng = np.random.default_rng(8)
    Y = rng.standard_normal((40, 7))
    for ri, ci in [_some_pairs(40, 200, seed=9), _some_pairs(40, 200, seed=9)[::-1]]:
        B = difference_matrix(ri, ci, 40)
        assert np.array_equal(B @ Y, Y[ri] - Y[ci])


def _cholesky_coords(n, d, seed=0):
    # The coordinates of a pivoted Cholesky factor of the centred Gram matrix
    # (as _Span gives large sparse input), with that factor and K.
    rng = np.random.default_rng(seed)
    Xc = rng.standard_normal((n, d))
    Xc -= Xc.mean(axis=0)
    gram = Xc @ Xc.T
    # (The factor overwrites the matrix it factors.)
    factor = _PivotedCholesky(gram.copy(), 1e-12 * gram.diagonal().max())
    # K in the coordinates' order (the pivots') and scale.
    gram = gram[np.ix_(factor.order, factor.order)] / factor.scale**2
    return factor.coords, {"gram": _HeldGram(gram), "factor": factor}


def _sparse_span(monkeypatch, n, d, basis, seed=0):
    # The span of sparse rows as large sparse input gets it (patched down to
    # this size): principal or Cholesky coordinates, with the Gram matrix's
    # products through sparse products with the rows.
    monkeypatch.setattr(_pairs, "SPARSE_DENSIFY_ELEMENTS", 0)
    if basis.endswith("cholesky"):
        monkeypatch.setattr(_pairs, "CHOLESKY_MIN_SAMPLES", 2)
    X = sparse.random(n, d, density=0.3, format="csr", random_state=seed)
    X.data = np.random.default_rng(seed).exponential(size=X.nnz)
    span = _Span(X)
    assert span.sparse and (span.factor is None) == (basis == "sparse principal")
    return span.coords, {"gram": span.gram, "factor": span.factor}


def _spread_rows(n, d, small, n_small=3, seed=0):
    # n x d rows of rank n whose last n_small singular values are `small`
    # (the others 1): a span whose variances spread over 1 / small^2.
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((n, n)))
    V, _ = np.linalg.qr(rng.standard_normal((d, n)))
    sv = np.ones(n)
    sv[-n_small:] = small
    return (U * sv) @ V.T


def _embedded_pairs(
    monkeypatch, n=30, d=40, k=3, beta=20.0, basis="principal", small=1.0, seed=0
):
    # Active pairs on every point of a span of n - 1 dimensions, not all pairs.
    # The "qr" basis: the triangular span of _spread_rows (as from
    # CHOLESKY_MIN_SAMPLES rows on, patched down), whatever its spread.
    monkeypatch.setattr(_active, "EMBEDDED_MIN_RANK", 1)
    monkeypatch.setattr(_active, "COMPLETE_PER_VARIABLE", 1)
    if basis == "principal":
        X, extra = _coords(n, d), {}
    elif basis == "qr":
        monkeypatch.setattr(_pairs, "CHOLESKY_MIN_SAMPLES", 2)
        span = _Span(_spread_rows(n, d, small, seed=seed), max_spread=1e3)
        assert span.factor is not None
        X, extra = span.coords, {"factor": span.factor}
    elif basis == "cholesky":
        X, extra = _cholesky_coords(n, d)
    else:
        X, extra = _sparse_span(monkeypatch, n, d, basis)
    pairs = _ActivePairs(X, working_set=8, **extra)
    pairs.reset(k)
    rows, cols = _some_pairs(n, 4 * n, seed=10)
    pairs.set_active(rows, cols)
    assert pairs.embedded and not pairs.complete
    obj = stage_objective(pairs, k, beta, derandomized=False, penalty=0.0)
    assert obj.used.size == n
    z = np.random.default_rng(11).standard_normal(k * X.shape[1])
    return pairs, obj, z


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(
    "small, precision", [(1e-2, "float32"), (1e-5, "float64"), (1e-8, "map")]
)
def test_certificates_of_widely_spread_spans_keep_their_precision(
    monkeypatch, small, precision, seed
):
    # A triangular span (as from CHOLESKY_MIN_SAMPLES rows on, patched down)
    # has any spread. Lanczos in the inner product of K^+ loses directions
    # below its products' precision: measured here, float32 read 8.8 against
    # -37.2 (seed 0) and crashed with NaN (seed 1) at small = 1e-5, float64
    # -37.27 against -37.19 at 1e-8. The certificate takes float32 up to a
    # spread bound of 1e6, float64 up to 1e12, map coordinates beyond, and
    # reads the Hessian's smallest eigenvalue (100 Lanczos steps, more than
    # the 87 variables) to 1e-6 of its norm.
    pairs, obj, z = _embedded_pairs(monkeypatch, basis="qr", small=small, seed=seed)
    k = obj.k
    bound = pairs.points.col_sq.max() / pairs.points.col_sq.min()
    assert bound <= 1.0 / small**2
    calls = []
    original = _stages._embedded_certificate

    def recorded(*args, single, **kwargs):
        calls.append("float32" if single else "float64")
        return original(*args, single=single, **kwargs)

    monkeypatch.setattr(_stages, "_embedded_certificate", recorded)
    z_out, n_iter, cert = _stages.certify_stage(
        pairs,
        obj,
        z,
        k,
        tol=1e-2,
        curvature_tol=0.1,
        max_iter=50,
        rng=np.random.RandomState(3),
        verbose=0,
    )
    assert calls == ([] if precision == "map" else [precision])
    # Certified where it stands, as every fit on embedded points.
    assert n_iter == 0 and np.array_equal(z_out, z)
    H = np.column_stack([obj.hessp(z, e) for e in np.eye(z.size)])
    eigenvalues = np.linalg.eigvalsh(0.5 * (H + H.T))
    scale = abs(eigenvalues).max()
    assert cert.min_hessian_eig == pytest.approx(eigenvalues[0], abs=1e-6 * scale)
    assert cert.grad_norm == pytest.approx(np.linalg.norm(obj(z)[1]), rel=1e-12)


def test_embedded_hessp_is_the_map_hessp(monkeypatch):
    pairs, obj, z = _embedded_pairs(monkeypatch)
    X, k = pairs.X, obj.k
    v = np.random.default_rng(12).standard_normal(z.size)
    Y, V = X @ z.reshape(k, -1).T, X @ v.reshape(k, -1).T
    expected = obj.hessp(z, v)
    np.testing.assert_allclose(
        (obj.embedded_hessp(Y, V).T @ X).ravel(),
        expected,
        rtol=1e-12,
        atol=1e-12 * abs(expected).max(),
    )


@pytest.mark.parametrize(
    "basis", ["principal", "cholesky", "sparse principal", "sparse cholesky"]
)
@pytest.mark.parametrize("single", [False, True])
@pytest.mark.parametrize("n_lanczos", [5, 100])
def test_embedded_certificate_is_the_map_certificate(
    monkeypatch, n_lanczos, single, basis
):
    # Lanczos on K H_Y in the K^+ inner product from A v0 is Lanczos on the
    # map's Hessian from v0: the same Ritz value after 5 steps, and with 100
    # steps (more than the 87 variables) the exact smallest eigenvalue of the
    # Hessian assembled from map-coordinate products; the same gradient norm.
    # With single, the products of H_Y and K run in float32: the Ritz values
    # then agree to float32's round-off relative to the Hessian's norm (1e-7
    # measured here; 1e-5 allowed), the gradient (float64) as before. In the
    # coordinates of a Cholesky factor (not principal: X^T X is not
    # diagonal) the dual start and the Ritz vector go through its solves.
    # The spans of sparse rows multiply by K through sparse products with the
    # rows, in float64 even with single.
    pairs, obj, z = _embedded_pairs(monkeypatch, basis=basis)
    assert (pairs.points.factor is None) == basis.endswith("principal")
    monkeypatch.setattr(_stages, "LANCZOS_ITER", n_lanczos)
    cert = _stages._embedded_certificate(
        pairs,
        obj,
        z,
        obj.k,
        tol=1e-2,
        curvature_tol=0.1,
        rng=np.random.RandomState(3),
        single=single,
    )
    ref = sosp_certificate(
        obj,
        z,
        hessp=obj.hessp,
        max_lanczos_iter=n_lanczos,
        tol=1e-2,
        curvature_tol=0.1,
        random_state=np.random.RandomState(3),
    )
    assert cert.grad_norm == pytest.approx(ref.grad_norm, rel=1e-12)
    assert cert.lanczos_iter == ref.lanczos_iter
    H = np.column_stack([obj.hessp(z, e) for e in np.eye(z.size)])
    eigenvalues = np.linalg.eigvalsh(0.5 * (H + H.T))
    rel = 1e-5 if single else 1e-9
    scale = abs(eigenvalues).max()
    assert cert.min_hessian_eig == pytest.approx(ref.min_hessian_eig, abs=rel * scale)
    # The Ritz vector, in map coordinates, has that Rayleigh quotient.
    v = cert.min_hessian_eigvec
    assert np.linalg.norm(v) == pytest.approx(1.0, rel=rel)
    assert v @ obj.hessp(z, v) == pytest.approx(cert.min_hessian_eig, abs=rel * scale)
    if n_lanczos >= z.size:
        assert cert.min_hessian_eig == pytest.approx(eigenvalues[0], abs=rel * scale)


def test_cholesky_coordinates_are_an_orthonormal_basis_of_the_span():
    # C C^T = K (to round-off), centred columns, and the three solves:
    # map_of_points inverts the embedding (whatever the points' translation),
    # cross_solve is (C^T C)^-1, right_inverse_product is W F^-1; Lanczos's
    # largest eigenvalue of C^T C is that of K.
    n, d = 60, 90
    C, extra = _cholesky_coords(n, d, seed=4)
    factor, K = extra["factor"], extra["gram"].K
    assert C.shape == (n, n - 1) and factor.rank == n - 1
    assert C.flags.c_contiguous
    np.testing.assert_allclose(C @ C.T, K, atol=1e-12 * abs(K).max())
    np.testing.assert_allclose(C.sum(axis=0), 0.0, atol=1e-12 * abs(C).max() * n)
    # Lower trapezoidal (the passes rely on it), its first rows the factor F.
    np.testing.assert_array_equal(np.triu(C, 1), 0.0)
    np.testing.assert_array_equal(C[: n - 1], factor.F)
    assert sorted(factor.order) == list(range(n))
    rng = np.random.default_rng(5)
    M = rng.standard_normal((4, n - 1))
    pairs = _ActivePairs(C, working_set=8, **extra)
    recovered = pairs.points.map_of_points(C @ M.T + rng.standard_normal(4))
    np.testing.assert_allclose(recovered, M, atol=1e-9 * abs(M).max())
    B = rng.standard_normal((n - 1, 3))
    np.testing.assert_allclose(C.T @ C @ pairs.points.cross_solve(B), B, atol=1e-10)
    np.testing.assert_allclose(
        factor.right_inverse_product(M) @ factor.F, M, atol=1e-10 * abs(M).max()
    )
    assert pairs.points.largest_cross_eigenvalue() == pytest.approx(
        np.linalg.eigvalsh(K)[-1], rel=1e-8
    )
    # No whitening in a basis that is not the principal directions.
    assert pairs.scale is None


@pytest.mark.parametrize("basis", ["sparse principal", "sparse cholesky"])
def test_sparse_span_multiplies_by_the_gram_matrix_of_its_coordinates(
    monkeypatch, basis
):
    # K P = C (C^T P) for the coordinates C, and K's rows, through sparse
    # products with the rows (centred, in the coordinates' order and scale),
    # for any P; the pairs' squared distances; and the largest eigenvalue of K
    # from them. The dense K is not formed.
    C, extra = _sparse_span(monkeypatch, 80, 120, basis, seed=2)
    P = np.random.default_rng(3).standard_normal((80, 5)) + 1.0
    expected = C @ (C.T @ P)
    gram = extra["gram"]
    assert isinstance(gram, _SparseGram)
    for single in (False, True):
        np.testing.assert_allclose(
            gram.product(P, single=single), expected, atol=1e-12 * abs(expected).max()
        )
    K = C @ C.T
    index = np.array([5, 0, 79, 5])
    np.testing.assert_allclose(gram.rows(index), K[index], atol=1e-12 * abs(K).max())
    # Squared distances from the sparse rows' differences: the coordinates'.
    a, b = _some_pairs(80, 300, seed=4)
    d2 = gram.sq_dists(a, b)
    np.testing.assert_allclose(d2, exact_sq_dists(C, a, b), rtol=1e-11)
    # ... in chunks of a pair or two: the same numbers.
    monkeypatch.setattr(_pairs, "BLOCK_ELEMENTS", 100)
    np.testing.assert_array_equal(gram.sq_dists(a, b), d2)
    pairs = _ActivePairs(C, working_set=8, **extra)
    assert pairs.points.gram() is gram
    assert pairs.points.largest_cross_eigenvalue() == pytest.approx(
        np.linalg.eigvalsh(K)[-1], rel=1e-8
    )


@pytest.mark.parametrize(
    "basis", ["principal", "cholesky", "sparse principal", "sparse cholesky"]
)
def test_embedded_polish_takes_the_map_polish_steps(monkeypatch, basis):
    # The prox-linear steps on the embedded points (Gram matrix K = X X^T)
    # are the map's steps: the same number, the same map at the end.
    pairs, obj, z = _embedded_pairs(monkeypatch, basis=basis)
    W = z.reshape(obj.k, -1)
    args = (pairs.X, pairs.rows, pairs.cols, pairs.d2, W)
    W_map, n_map, _ = prox_linear_steps(*args, max_steps=8)
    W_emb, n_emb, _ = prox_linear_steps(
        *args, max_steps=8, embedded=(pairs.points.gram(), pairs.points.map_of_points)
    )
    assert n_emb == n_map == 8
    assert not np.allclose(W_map, W, rtol=1e-3)
    np.testing.assert_allclose(W_emb, W_map, rtol=1e-9, atol=1e-9 * abs(W_map).max())
    # K's rows kept for a few points only (the kept rows cleared, step after
    # step): the same steps.
    monkeypatch.setattr(_polish, "KEPT_ROWS_ELEMENTS", 3 * pairs.n)
    W_few, n_few, _ = prox_linear_steps(
        *args, max_steps=8, embedded=(pairs.points.gram(), pairs.points.map_of_points)
    )
    assert n_few == 8
    np.testing.assert_array_equal(W_few, W_emb)


def test_lanczos_second_pass_runs_where_the_first_cancels():
    # G = diag(g): a vector with a large component along an old basis vector
    # (which the three-term step does not remove) loses most of its norm in
    # the first pass; the second pass (DGKS) leaves it G-orthogonal to the
    # basis to round-off, with its norm.
    rng = np.random.default_rng(13)
    g = rng.uniform(0.5, 2.0, 50)
    Q = np.linalg.qr(rng.standard_normal((50, 4)) / np.sqrt(g)[:, None])[0]
    # G-orthonormal basis (rows), from the Euclidean one of G^(1/2) Q.
    basis = (Q / np.sqrt(g)[:, None]).T
    duals = basis * g
    alphas, betas = np.zeros(4), np.zeros(4)
    r = rng.standard_normal(50)
    dual = 1e4 * duals[0] + 1e-2 * r * g
    products = []

    def primal(p):
        products.append(1)
        return p / g

    w, d, beta = _orthogonalized(dual, 3, alphas, betas, basis, duals, primal)
    assert len(products) == 2
    assert np.abs(basis @ d).max() <= 1e-14 * beta
    # The part of 1e-2 r that is G-orthogonal to the basis, and its G-norm.
    rest = 1e-2 * (r - basis.T @ (duals @ r))
    np.testing.assert_allclose(w, rest, rtol=1e-9, atol=1e-9 * abs(rest).max())
    assert beta == pytest.approx(np.sqrt(rest @ (rest * g)), rel=1e-9)


@pytest.mark.parametrize("inner", ["euclidean", "G"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lanczos_basis_in_float32_finds_the_smallest_eigenvalue(seed, inner):
    # A symmetric operator with a known spectrum (a gap below the rest, and
    # eigenvalues spread over three decades above): Lanczos with its basis
    # stored and multiplied in float32 converges to the smallest eigenvalue
    # as the float64 basis does, within float32's round-off of the
    # operator's norm, and its Ritz vector has that Rayleigh quotient. With
    # a positive definite G (the embedded certificate's K^+), T = G^-1 S is
    # self-adjoint in the G inner product and has S's generalized spectrum.
    rng = np.random.default_rng(seed)
    n = 400
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    lam = np.concatenate([[-0.5], np.geomspace(0.01, 10.0, n - 1)])
    S = (Q * lam) @ Q.T
    if inner == "euclidean":
        G = np.eye(n)
    else:
        B = rng.standard_normal((n, n)) / np.sqrt(n)
        G = B @ B.T + 0.5 * np.eye(n)
    # Lanczos on T = G^-1 S (matvec returns the dual G T q = S q).
    exact = linalg.eigh(S, G, eigvals_only=True)[0]
    q0 = rng.standard_normal(n)
    results = {}
    for dtype in (np.float64, np.float32):
        kwargs = {"max_iter": 150, "rtol": 1e-10}
        if inner == "G":
            kwargs.update(start=(q0, G @ q0), primal=lambda p: np.linalg.solve(G, p))
        results[dtype] = _lanczos_smallest(
            lambda q: S @ q, n, np.random.RandomState(0), dtype=dtype, **kwargs
        )
    scale = abs(lam).max()
    eig64, eig32 = results[np.float64][0], results[np.float32][0]
    assert eig64 == pytest.approx(exact, abs=1e-10 * scale)
    assert eig32 == pytest.approx(exact, abs=1e-6 * scale)
    v = results[np.float32][1]
    assert v @ (G @ v) == pytest.approx(1.0, rel=1e-6)
    assert v @ (S @ v) == pytest.approx(eig32, abs=1e-6 * scale)


def test_lanczos_basis_in_float32_is_never_copied_to_float64():
    # The float32 basis is the memory the certificate on embedded points
    # saves: its products (the reorthogonalization, the Ritz vector) must not
    # copy it to float64, which would take twice what it saves. 40 steps on
    # vectors of 200,000: the basis and duals 2 x 41 x 200,000 float32
    # numbers (66 MB); a float64 copy of either would add 66 MB.
    n, m = 200_000, 40
    diagonal = np.linspace(-1.0, 1.0, n)
    weights = np.linspace(1.0, 2.0, n)
    q0 = np.random.default_rng(0).standard_normal(n)
    tracemalloc.start()
    try:
        _lanczos_smallest(
            lambda q: weights * diagonal * q,
            n,
            np.random.RandomState(0),
            max_iter=m,
            rtol=1e-12,
            start=(q0, weights * q0),
            primal=lambda p: p / weights,
            dtype=np.float32,
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    basis_bytes = 2 * (m + 1) * n * 4
    assert basis_bytes < peak < 1.25 * basis_bytes


def _low_rank_stage(seed, k, working_set, n=400, d=20):
    """Points near a 4-dimensional subspace, their pairs and a start near PCA's."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4)) @ rng.standard_normal((4, d))
    C = _Span(X + 0.3 * rng.standard_normal((n, d))).coords
    pairs = _ActivePairs(C, working_set)
    pairs.reset(k)
    z0 = np.eye(k, C.shape[1]) + 0.3 * rng.standard_normal((k, C.shape[1]))
    return pairs, z0.ravel()


def _solve_stage(pairs, z0, k, *, max_iter, beta=250.0, derandomized=False, **kw):
    """``solve_stage`` from ``z0`` with the tests' penalty, tol and rng."""
    return solve_stage(
        pairs,
        z0,
        k,
        beta,
        derandomized=derandomized,
        penalty=0.1,
        max_iter=max_iter,
        tol=1e-2,
        rng=np.random.RandomState(0),
        **kw,
    )


def _all_pairs_distortion(pairs, z, k):
    return _active._scale_free(*pairs.extremes(z.reshape(k, -1)))


def test_long_round_that_raises_the_distortion_is_undone(monkeypatch):
    # Long rounds forced on a small set (PASS_COST), and a solver whose first
    # round returns a far worse map: the stage must go back to its start, take
    # the pairs at that worse map's extremes into the active set, and not end
    # above (1 + undo_rise) = 1.05 times its start.
    monkeypatch.setattr(_stages, "PASS_COST", 50.0)
    k = 8
    pairs, z0 = _low_rank_stage(0, k, 24)
    bad = z0.copy().reshape(k, -1)
    bad[:, -1] += 40.0  # a low-variance direction blown up: far worse ratios
    bad = bad.ravel()
    calls = []

    def solver(_pairs, objective, z, tol, max_iter, **_):
        calls.append(z.copy())
        if len(calls) == 1:
            return bad.copy(), max_iter, False
        return z, 1, True

    monkeypatch.setattr(_stages, "lbfgs", solver)
    start = _all_pairs_distortion(pairs, z0, k)
    assert _all_pairs_distortion(pairs, bad, k) > (1 + 0.05) * start
    _, _, low, high = pairs.band(bad.reshape(k, -1), 6, 0.0)
    z, _ = _solve_stage(pairs, z0, k, max_iter=400)
    # The second round started again from the start point, not the worse map.
    assert np.array_equal(calls[1], z0)
    assert _all_pairs_distortion(pairs, z, k) <= (1 + 0.05) * start
    active = set(zip(pairs.rows.tolist(), pairs.cols.tolist(), strict=True))
    assert set(zip(*low, strict=True)) | set(zip(*high, strict=True)) <= active


@pytest.mark.parametrize("converges_in_round", [None, 15])
@pytest.mark.parametrize("final", [False, True])
def test_only_the_final_stage_runs_on_to_max_iter(
    final, converges_in_round, monkeypatch
):
    # An earlier stage stops after MAX_ROUNDS rounds; the final stage goes on
    # round after round until its solver converges (and a pass finds no pair
    # overtaking the extremes) or max_iter is spent: max_iter is the budget a
    # ConvergenceWarning asks to raise. Its rounds' budgets add up to at most
    # max_iter.
    monkeypatch.setattr(_stages, "PASS_COST", 0.0)  # rounds of ROUND_ITER
    k, max_iter = 4, 1000
    pairs, z0 = _low_rank_stage(2, k, 24)
    budgets = []

    def solver(_pairs, objective, z, tol, max_iter, **_):
        # Spends its whole budget without moving, until the given round.
        budgets.append(max_iter)
        converged = (
            converges_in_round is not None and len(budgets) >= converges_in_round
        )
        return z, (1 if converged else max_iter), converged

    monkeypatch.setattr(_stages, "lbfgs", solver)
    _, total = _solve_stage(pairs, z0, k, max_iter=max_iter, final=final)
    if not final:
        assert len(budgets) == _stages.MAX_ROUNDS
        assert total == sum(budgets) < max_iter
    elif converges_in_round is None:
        assert len(budgets) > _stages.MAX_ROUNDS
        assert total == sum(budgets) == max_iter
    else:
        # The map does not move, so the pass after the converged round finds
        # no pair overtaking: the stage ends there, within its budget.
        assert len(budgets) == converges_in_round
        assert total == sum(budgets[:-1]) + 1 < max_iter


@pytest.mark.parametrize("final", [False, True])
def test_stage_whose_solver_converges_at_once_ends_after_one_round(final, monkeypatch):
    # A solver that converges where it starts spends no iteration (as at an
    # isometry); the pass after its round finds no pair overtaking, and the
    # stage ends there, not after max_iter rounds.
    k = 4
    pairs, z0 = _low_rank_stage(2, k, 24)
    budgets = []

    def solver(_pairs, objective, z, tol, max_iter, **_):
        budgets.append(max_iter)
        return z, 0, True

    monkeypatch.setattr(_stages, "lbfgs", solver)
    n_scans = pairs.stats["n_scans"]
    _, total = _solve_stage(pairs, z0, k, max_iter=1000, final=final)
    assert len(budgets) == 1
    assert total == 0
    # The stage's passes: the one before the rounds, one per round and the one
    # that ends the stage (each at most two, see _ActivePairs.band).
    assert pairs.stats["n_scans"] - n_scans <= 6


def test_isometry_on_an_active_set_fit_ends_in_a_few_passes():
    # n_components at the rank of data too large for all pairs: the map is an
    # isometry from the start, and the fit ends after a few passes (it took
    # 1,008 passes and 23 s, one per round of the final stage).
    X = clustered_low_rank(1500, 12, seed=3)
    jl = LearnedJLTransformer(12, random_state=0).fit(X)
    assert jl._fit_stats["max_active"] < 1500 * 1499 // 2  # an active set
    assert jl.distortion_ <= 1e-9
    assert blocked_distortion(X, jl.transform(X)) <= 1e-9
    assert jl._fit_stats["n_scans"] <= 20


@pytest.mark.parametrize("long_rounds", [False, True])
@pytest.mark.parametrize("beta", [15.625, 250.0])
def test_float32_products_only_in_long_low_sharpness_rounds(
    beta, long_rounds, monkeypatch
):
    # The products with X go to float32 only where they dominate: the long
    # rounds (forced here through PASS_COST) at low sharpness; short rounds
    # keep them in float64 (X M^T in float32 moved breast_cancer off its
    # path), and sharp rounds keep everything in float64.
    monkeypatch.setattr(_stages, "PASS_COST", 50.0 if long_rounds else 0.0)
    k = 4
    pairs, z0 = _low_rank_stage(1, k, 24)
    seen = []

    def solver(_pairs, objective, z, tol, max_iter, **_):
        seen.append((objective._single is not None, objective._X32 is not None))
        return z, 1, True

    monkeypatch.setattr(_stages, "lbfgs", solver)
    _solve_stage(pairs, z0, k, max_iter=400, beta=beta)
    low = beta < 100.0  # _StageRounds' float32_below
    assert seen and all(single == low for single, _ in seen)
    assert all(products == (low and long_rounds) for _, products in seen)


@pytest.mark.parametrize("long_rounds", [False, True])
@pytest.mark.parametrize("derandomized", [False, True])
@pytest.mark.parametrize("beta", [15.625, 1000.0])
def test_rounds_on_embedded_points_evaluate_in_float32_at_every_sharpness(
    beta, derandomized, long_rounds, monkeypatch
):
    # On a span of n - 1 dimensions the rounds optimize the embedded points
    # and the pair terms are the whole evaluation: float32 at every sharpness
    # (see _StageRounds' float32_below), and no float32 copy of X even in long
    # rounds (no product with X there; the copy would be n x (n - 1)). The
    # derandomized surrogate stays in float64.
    monkeypatch.setattr(_active, "EMBEDDED_MIN_RANK", 1)
    monkeypatch.setattr(_stages, "PASS_COST", 50.0 if long_rounds else 0.0)
    rng = np.random.default_rng(3)
    k = 2
    pairs = _ActivePairs(_Span(rng.standard_normal((200, 300))).coords, 400)
    pairs.reset(k)
    assert pairs.embedded and not pairs.complete
    rank = pairs.X.shape[1]
    seen = []

    def solver(_pairs, objective, z, tol, max_iter, **_):
        seen.append((objective._single is not None, objective._X32 is not None))
        return z, 1, True

    monkeypatch.setattr(_stages, "lbfgs", solver)
    z0 = rng.standard_normal(k * rank + derandomized) / np.sqrt(rank)
    _solve_stage(pairs, z0, k, max_iter=100, beta=beta, derandomized=derandomized)
    assert seen and all(single != derandomized for single, _ in seen)
    assert not any(products for _, products in seen)


@pytest.mark.parametrize("path", ["whitened map", "lean all pairs", "embedded"])
def test_final_stage_solve_stops_at_the_certificates_gradient_test(path, monkeypatch):
    # With stop_at_tol a solve ends at the first iterate where the 2-norm of
    # the gradient in the map's coordinates is at most tol (the certificate's
    # test), not only where every entry is at most tol / sqrt(n_variables).
    rng = np.random.default_rng(11)
    k, tol = 3, 1e-2
    if path == "whitened map":
        # Variances over four decades: the solver runs in whitened coordinates.
        X = rng.standard_normal((100, 6)) * np.logspace(0, -2, 6)
    elif path == "lean all pairs":
        X = rng.standard_normal((160, 12))
    else:
        monkeypatch.setattr(_active, "EMBEDDED_MIN_RANK", 1)
        X = rng.standard_normal((60, 80))
    pairs = _ActivePairs(_Span(X).coords, working_set=20_000)
    rank = pairs.X.shape[1]
    pairs.reset(k)
    embedded = path == "embedded"
    if embedded:
        # An active set of 600 pairs (all 1,770 would make the set complete).
        pairs.complete = False
        pairs.set_active(*_some_pairs(60, 600, seed=12))
        assert pairs.embedded
    else:
        assert pairs.complete
    objective = stage_objective(pairs, k, 50.0, derandomized=False, penalty=0.0)
    assert getattr(objective, "lean", False) == (path == "lean all pairs")
    assert (pairs.scale is not None) == (path == "whitened map")
    z = rng.standard_normal(k * rank) / np.sqrt(k)

    def grad_norm(z):
        return np.linalg.norm(objective(z)[1])

    assert grad_norm(z) > tol
    z_plain, n_plain, _ = lbfgs(pairs, objective, z, tol, 2000, embedded=embedded)
    z_stop, n_stop, converged = lbfgs(
        pairs, objective, z, tol, 2000, embedded=embedded, stop_at_tol=True
    )
    assert converged and grad_norm(z_stop) <= tol
    # The inf-norm test alone runs on past it.
    assert n_stop < n_plain and grad_norm(z_plain) <= tol
    if not embedded:
        # One iteration fewer: the test did not hold yet (on the embedded
        # points the test is a bound on this norm, so it may hold later).
        z_before, n_before, converged = lbfgs(
            pairs, objective, z, tol, n_stop - 1, stop_at_tol=True
        )
        assert n_before == n_stop - 1 and not converged
        assert grad_norm(z_before) > tol


@pytest.mark.slow
def test_fit_in_long_rounds_beats_random_projections_and_pca(monkeypatch):
    # 6,000 points of the benchmark's clustered low-rank-plus-noise family
    # (the large rows' data, at a size CI affords): the fit runs long
    # active-set rounds with float32 products with the data in its first
    # stages, and still reports the exact all-pairs distortion, below half the
    # median of Gaussian projections and below PCA (measured 0.134 against
    # 0.901 and 0.399).
    takes = []
    single = _PairObjective.single

    def watched(self, products=False):
        takes.append(products)
        return single(self, products)

    monkeypatch.setattr(_PairObjective, "single", watched)
    X = clustered_low_rank(6000, 50)
    k = 20
    jl = LearnedJLTransformer(k, random_state=0).fit(X)
    assert any(takes)
    exact = blocked_distortion(X, jl.transform(X))
    assert jl.distortion_ == pytest.approx(exact, rel=1e-9)
    gaussian = np.median(
        [
            blocked_distortion(
                X, GaussianRandomProjection(k, random_state=seed).fit_transform(X)
            )
            for seed in range(3)
        ]
    )
    pca = blocked_distortion(X, PCA(k, svd_solver="full").fit_transform(X))
    assert exact <= 0.5 * gaussian
    assert exact < pca
