"""One BLAS thread for the solvers' loops, safe when fits run side by side in threads.

The solvers run many small matrix products in a loop, where multi-threaded BLAS
is far slower than one thread (starting the threads costs more than the
product), so fits limit BLAS to one thread while they run. That limit is a
setting of the BLAS library, shared by the whole process. Fits that run at the
same time in threads (cross-validation folds, restarts, a ``GridSearchCV`` with
a threading backend) therefore share one limit: the first to enter sets it and
the last to leave restores what was there before. With a separate
``threadpool_limits`` per fit, a fit entering second records the first one's
limit as the original and restores it after the first has left, leaving the
process at one BLAS thread for good.

Setting and restoring each happen on a new thread that ends right after:
threadpoolctl lets only the thread that set an OpenBLAS limit change it again
while that thread lives (or until it leaves its ``with`` block), so the fit that
restores (the last to leave) is not necessarily one that could, and a fit's own
thread must not keep that right after the fit. (A long-lived helper thread would
do, but it does not survive ``fork``: a forked child waiting on it would hang.)

Entering while the limit is held costs a counter increment instead of a scan of
the loaded libraries, which matters for the many short fits of a
cross-validated decay path (measurements: doc/developers/maxcut_design.rst,
"One BLAS thread").
"""

import os
import threading
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

_lock = threading.Lock()
_n_holders = 0
_limiter = None


def _reset_after_fork():
    # A child forked while a fit held the limit has none of the parent's
    # threads: it starts with no holder (and an unlocked lock).
    global _lock, _n_holders, _limiter
    _lock, _n_holders, _limiter = threading.Lock(), 0, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _on_own_thread(function):
    """``function()`` on a new thread that ends with it; its result or its error."""
    outcome = {}

    def run():
        try:
            outcome["result"] = function()
        except BaseException as error:  # re-raised on the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=run, name="skderand-blas-limit")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


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
            _limiter = _on_own_thread(
                lambda: threadpool_limits(limits=1, user_api="blas")
            )
        _n_holders += 1
    try:
        yield
    finally:
        with _lock:
            # Never below 0: a body entered before a fork and left in the child
            # was not counted there.
            _n_holders = max(_n_holders - 1, 0)
            if _n_holders == 0 and _limiter is not None:
                _on_own_thread(_limiter.restore_original_limits)
                _limiter = None
