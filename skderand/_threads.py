"""One BLAS thread for the solvers' loops, safe when fits run side by side in threads.

The solvers run many small matrix products in a loop, where multi-threaded BLAS
is 50-100x slower than one thread (starting the threads costs more than the
product), so fits limit BLAS to one thread while they run. That limit is a
setting of the BLAS library, shared by the whole process. Fits that run at the
same time in threads (cross-validation folds, restarts, a ``GridSearchCV`` with
a threading backend) therefore share one limit: the first to enter sets it and
the last to leave restores what was there before. With a separate
``threadpool_limits`` per fit, a fit entering second records the first one's
limit as the original and restores it after the first has left, leaving the
process at one BLAS thread for good.

Setting and restoring both happen on one helper thread: threadpoolctl lets only
the thread that set an OpenBLAS limit change it again until that thread has left
its ``with`` block, so the fit that restores (the last to leave) is not
necessarily one that could.

Entering while the limit is held costs a counter increment instead of a scan of
the loaded libraries (about 7 ms each), which matters for the many short fits of
a cross-validated decay path.
"""

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

_lock = threading.Lock()
_n_holders = 0
_limiter = None
_setter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skderand-blas")


def _enter():
    limiter = threadpool_limits(limits=1, user_api="blas")
    limiter.__enter__()
    return limiter


@contextmanager
def one_blas_thread(enabled=True):
    """Run the body with one BLAS thread while any fit needs it.

    Parameters
    ----------
    enabled : bool, default=True
        ``False`` runs the body unchanged: large products gain from threads.
        (If another fit holds the limit meanwhile, the body still runs under it:
        the setting is the process's.)
    """
    if not enabled:
        yield
        return
    global _n_holders, _limiter
    with _lock:
        if _n_holders == 0:
            _limiter = _setter.submit(_enter).result()
        _n_holders += 1
    try:
        yield
    finally:
        with _lock:
            _n_holders -= 1
            if _n_holders == 0:
                _setter.submit(_limiter.__exit__, None, None, None).result()
                _limiter = None
