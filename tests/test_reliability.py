"""Reliability across every public estimator: bad input, determinism, pickling, state.

Each bad input either works correctly (and then the result is checked against the
mathematics: scale invariance, agreement with the numpy path) or raises a
``ValueError``/``TypeError`` whose message names the problem. Nothing the user
passed is ever modified.
"""

import multiprocessing
import pickle
import threading
import warnings

import numpy as np
import pytest
from joblib import Parallel, delayed, parallel_config
from scipy import sparse
from sklearn.base import ClassifierMixin, ClusterMixin, RegressorMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_info, threadpool_limits

from skderand import LearnedJLTransformer
from skderand._threads import one_blas_thread
from tests.test_common import _public_estimators, _small_problem

ESTIMATOR_CLASSES = _public_estimators()


def _kind(cls):
    if cls().__sklearn_tags__().input_tags.pairwise:
        return "solver"  # X is a square problem matrix (DeterministicQUBO)
    if issubclass(cls, ClassifierMixin):
        return "classifier"
    if issubclass(cls, RegressorMixin):
        return "regressor"
    if issubclass(cls, ClusterMixin):
        return "cluster"
    return "transformer"


def _data(cls, n_samples=40, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n_features))
    kind = _kind(cls)
    if kind == "solver":
        return rng.standard_normal((12, 12)), None
    if kind == "regressor":
        y = np.tanh(X[:, 0]) + 0.1 * rng.standard_normal(n_samples)
    elif kind == "classifier":
        y = (X[:, 0] + 0.3 * rng.standard_normal(n_samples) > 0).astype(int)
    else:
        y = None
    return X, y


def _make(cls, **params):
    est = cls()
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    return est.set_params(**params)


def _output(est, X):
    """What a fitted estimator gives back for X, as an array to compare."""
    kind = _kind(type(est))
    if kind in ("regressor", "classifier"):
        return np.asarray(est.predict(X), dtype=float)
    if kind == "cluster":
        return np.asarray(est.labels_, dtype=float)
    if kind == "solver":
        return np.asarray(est.solution_, dtype=float)
    return np.asarray(est.transform(X))


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is tested elsewhere
        return est.fit(X, y)


def _same_partition(a, b):
    return np.array_equal(a, b) or np.array_equal(a, 1 - b)


params = pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=lambda c: c.__name__)


@params
@pytest.mark.parametrize(
    "make_bad, message",
    [
        (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X), "NaN"),
        (lambda X: np.where(np.arange(X.size).reshape(X.shape) == 3, np.inf, X), "inf"),
        (lambda X: X[:0], "0 sample"),
        (lambda X: X[:, :0], "0 feature"),
        (lambda X: X[:, :, None], "dim 3"),
        (lambda X: X.astype(complex), "omplex"),
        (lambda X: np.where(X > 0, "high", "low").astype(object), "string|float"),
    ],
    ids=["nan", "inf", "empty", "no-features", "3d", "complex", "strings"],
)
def test_bad_input_raises_clear_error(cls, make_bad, message):
    X, y = _data(cls)
    X_bad = make_bad(X)
    if y is not None and X_bad.shape[0] != y.shape[0]:
        y = y[: X_bad.shape[0]]
    with pytest.raises((ValueError, TypeError), match=message):
        _fit(_make(cls), X_bad, y)


@params
def test_wrong_number_of_features_after_fit(cls):
    X, y = _data(cls)
    est = _fit(_make(cls), X, y)
    method = {"regressor": "predict", "classifier": "predict"}.get(_kind(cls))
    method = method or ("transform" if hasattr(est, "transform") else None)
    if method is None:
        pytest.skip(f"{cls.__name__} has no method that takes new X after fit")
    with pytest.raises(ValueError, match="features"):
        getattr(est, method)(X[:, :-1])


@params
def test_one_sample_is_refused_or_trivial(cls):
    X, y = _data(cls)
    if _kind(cls) == "solver":
        X = X[:1, :1]  # one variable: a square problem stays square
    try:
        est = _fit(_make(cls), X[:1], None if y is None else y[:1])
    except ValueError as exc:
        assert "sample" in str(exc) or "class" in str(exc)
        return
    assert np.all(np.isfinite(_output(est, X[:1])))


@params
def test_one_feature_and_constant_features(cls):
    X, y = _data(cls)
    cases = (X[:, :1], np.column_stack([X, np.ones(len(X)), np.ones(len(X))]))
    if _kind(cls) == "solver":
        # One variable; two more whose couplings are all one.
        cases = (X[:1, :1], np.pad(X, ((0, 2), (0, 2)), constant_values=1.0))
    for X_case in cases:
        est = _fit(_make(cls), X_case, y)
        out = _output(est, X_case)
        assert out.shape[0] == X_case.shape[0]
        assert np.all(np.isfinite(out))


@params
def test_constant_target(cls):
    kind = _kind(cls)
    if kind not in ("regressor", "classifier"):
        pytest.skip("no target")
    X, _ = _data(cls)
    if kind == "regressor":
        est = _fit(_make(cls), X, np.full(len(X), 3.5))
        np.testing.assert_allclose(est.predict(X), 3.5, atol=1e-2)
    else:
        with pytest.raises(ValueError, match="class"):
            _fit(_make(cls), X, np.ones(len(X), dtype=int))


@params
def test_lists_and_pandas_give_the_numpy_result(cls):
    pd = pytest.importorskip("pandas")
    X, y = _data(cls)
    reference = _output(_fit(_make(cls), X, y), X)
    as_list = _output(
        _fit(_make(cls), X.tolist(), None if y is None else y.tolist()), X
    )
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    as_frame = _output(
        _fit(_make(cls), frame, None if y is None else pd.Series(y)), frame
    )
    np.testing.assert_allclose(as_list, reference, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(as_frame, reference, rtol=1e-10, atol=1e-12)


@params
@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_extreme_scales(cls, scale):
    X, y = _data(cls)
    # Scaling X changes the problem only at round-off; a non-convex fit amplifies
    # round-off up to its stopping tolerance, so compare fits solved tightly.
    tight = {"tol": 1e-8} if "tol" in cls().get_params() else {}
    try:
        est = _fit(_make(cls, **tight), X * scale, y)
    except ValueError as exc:
        # Refusing is allowed, with a message that names the scale problem.
        assert "scale" in str(exc) or "overflow" in str(exc) or "range" in str(exc)
        return
    reference = _output(_fit(_make(cls, **tight), X, y), X)
    out = _output(est, X * scale)
    assert np.all(np.isfinite(out))
    kind = _kind(cls)
    if kind == "cluster":
        assert _same_partition(out, reference)
    elif kind == "transformer":
        # The learned map is linear: on scaled data it must embed the scaled
        # points with the same distortion.
        assert est.distortion_ == pytest.approx(
            _fit(_make(cls, **tight), X, y).distortion_, rel=1e-4
        )
    else:
        np.testing.assert_allclose(out, reference, rtol=1e-5, atol=1e-7)


@params
def test_sparse_input_where_unsupported_is_refused(cls):
    X, y = _data(cls)
    est = _make(cls)
    if est.__sklearn_tags__().input_tags.sparse:
        fitted = _fit(_make(cls), sparse.csr_matrix(X), y)
        np.testing.assert_allclose(
            _output(fitted, X),
            _output(_fit(_make(cls), X, y), X),
            rtol=1e-8,
            atol=1e-10,
        )
    else:
        with pytest.raises(TypeError, match="[Ss]parse"):
            _fit(est, sparse.csr_matrix(X), y)


@params
def test_input_is_never_modified(cls):
    X, y = _data(cls)
    X_copy = X.copy()
    y_copy = None if y is None else y.copy()
    est = _fit(_make(cls), X, y)
    _output(est, X)
    np.testing.assert_array_equal(X, X_copy)
    if y is not None:
        np.testing.assert_array_equal(y, y_copy)


@params
def test_pickle_round_trip_gives_identical_output(cls):
    X, y = _data(cls)
    est = _fit(_make(cls), X, y)
    loaded = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(_output(loaded, X), _output(est, X))


@params
def test_same_seed_is_bit_identical_across_n_jobs_and_backends(cls):
    X, y = _data(cls)
    has_jobs = "n_jobs" in cls().get_params()
    # With n_jobs, two restarts give the workers something to share; the
    # reference is the serial fit, outside any parallel_config, fitted once.
    serial = {"n_init": 2, "n_jobs": 1} if has_jobs else {}
    reference = _output(_fit(_make(cls, **serial), X, y), X)
    for backend in ("loky", "threading"):
        for n_jobs in (1, 2) if has_jobs else (None,):
            extra = {"n_jobs": n_jobs, "n_init": 2} if has_jobs else {}
            with parallel_config(backend=backend):
                out = _output(_fit(_make(cls, **extra), X, y), X)
            np.testing.assert_array_equal(out, reference)


def _blas_threads():
    return [(p["internal_api"], p["num_threads"]) for p in threadpool_info()]


@params
@pytest.mark.parametrize("random_state", [0, None])
def test_fit_leaves_global_state_alone(cls, random_state):
    # Neither with a seed nor with random_state=None does fitting draw from (and
    # so advance) numpy's global generator: None seeds from the operating system.
    # Nor does it leave BLAS thread limits changed.
    X, y = _data(cls)
    np.random.seed(123)  # noqa: NPY002 (the legacy global state is the point)
    state = np.random.get_state()  # noqa: NPY002
    blas_before = _blas_threads()
    _fit(_make(cls, random_state=random_state), X, y)
    after = np.random.get_state()  # noqa: NPY002
    assert state[0] == after[0] and np.array_equal(state[1], after[1])
    assert state[2:] == after[2:]
    blas_after = _blas_threads()
    assert blas_before == blas_after


def _set_blas_threads(n):
    # From a thread that then ends: threadpoolctl lets only the thread that last
    # set an OpenBLAS limit change it while that thread lives, and the test must
    # not hold that right itself, or the fits' own limits would be ignored.
    setter = threading.Thread(
        target=threadpool_limits, kwargs={"limits": n, "user_api": "blas"}
    )
    setter.start()
    setter.join()


@pytest.fixture
def two_blas_threads():
    """BLAS at two threads (what fits must restore), put back afterwards."""
    before = max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
    _set_blas_threads(2)
    yield _blas_threads()
    _set_blas_threads(before)


def test_overlapping_holders_restore_the_limit_from_before_both(two_blas_threads):
    # The order that loses the original limit with one threadpool_limits per
    # fit: A enters, B enters, A leaves, B leaves.
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    inside = {}

    def first():
        with one_blas_thread():
            a_in.set()
            b_in.wait()
            inside["a"] = _blas_threads()
        a_out.set()

    def second():
        a_in.wait()
        with one_blas_thread():
            b_in.set()
            a_out.wait()
            inside["b"] = _blas_threads()

    threads = [threading.Thread(target=f) for f in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert inside["a"] == inside["b"]
    assert all(n == 1 for api, n in inside["b"] if api != "openmp")
    assert _blas_threads() == two_blas_threads


def _fit_small(cls):
    """The cheap fit of :func:`_small_problem`, its warnings silenced."""
    est, data = _small_problem(cls)
    X, y = (*data, None)[:2]
    return _fit(est, X, y)


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork here"
)
def test_a_process_forked_after_a_fit_can_fit():
    # The BLAS limit must not depend on a thread of the parent: a forked child
    # has none of them, and a fit waiting on one would hang.
    _fit_small(LearnedJLTransformer)
    child = multiprocessing.get_context("fork").Process(
        target=_fit_small, args=(LearnedJLTransformer,)
    )
    child.start()
    child.join(timeout=120)
    if child.exitcode is None:
        child.kill()
    assert child.exitcode == 0


@params
def test_fits_side_by_side_in_threads_leave_blas_threads_alone(cls, two_blas_threads):
    # Fits running at the same time in threads (GridSearchCV or joblib with a
    # threading backend) each hold BLAS at one thread; that setting is the
    # process's, so whichever fit ends last must restore the limit from before
    # any of them started.
    make, data = _small_problem(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is tested elsewhere
        fitted = Parallel(n_jobs=3, backend="threading")(
            delayed(clone(make).set_params(random_state=seed).fit)(*data)
            for seed in range(6)
        )
    assert _blas_threads() == two_blas_threads
    # Each fit is the one it would have been alone.
    X, y = (*data, None)[:2]
    alone = _fit(clone(make).set_params(random_state=4), X, y)
    np.testing.assert_array_equal(_output(fitted[4], X), _output(alone, X))


@params
def test_clone_is_unfitted_and_equal_params(cls):
    X, y = _data(cls)
    est = _fit(_make(cls), X, y)
    check_is_fitted(est)
    fitted_attributes = [
        k for k in vars(est) if k.endswith("_") and not k.startswith("_")
    ]
    assert fitted_attributes
    copy = clone(est)
    with pytest.raises(NotFittedError):
        check_is_fitted(copy)
    assert not any(hasattr(copy, k) for k in fitted_attributes)
    assert copy.get_params() == est.get_params()
    # The fitted original is untouched by cloning.
    check_is_fitted(est)
