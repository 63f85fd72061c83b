"""Resource measurements shared by the benchmark scripts."""

import os
import resource
import time

import numpy as np


def peak_resident_mib():
    """Peak resident memory of this process image, in MiB.

    ``VmHWM`` from ``/proc/self/status``: the high-water mark of this process's
    own memory map. ``getrusage``'s ``ru_maxrss`` is not used: Linux keeps it
    across ``exec``, so a child started by a large parent reports the parent's
    peak (4 GiB in an earlier run of ``bench_maxcut.py``; ``bench_jl.py``'s
    50,000-point row, spawned after the 20,000-point one, 1,041 MiB and
    "0 MiB above the data").
    """
    peak = _status_mib("VmHWM")
    if peak is not None:
        return peak
    # Elsewhere: ru_maxrss (KiB on Linux, bytes on macOS), an upper bound.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_mib(field):
    """A memory field of ``/proc/self/status`` in MiB, or None elsewhere."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_peak_resident():
    """Restart the peak of :func:`peak_resident_mib` at the current resident memory.

    Linux (4.0 on) resets ``VmHWM`` when 5 is written to
    ``/proc/self/clear_refs``: a fit's peak can then be told apart from that
    of making its data (a sparse random matrix's temporaries: 3.2 GiB for
    10,000 x 40,000). Returns the resident memory (``VmRSS``) in MiB after the
    reset, or None where that is not possible (the peak then stays the
    process's).
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _status_mib("VmRSS")


def machine_conditions():
    """The load, the BLAS thread settings and this machine's speed right now.

    One line for a table's header and end. The speed is three timings, each
    the best of three: an 800 x 800 matrix product (BLAS), ``exp`` of two
    million numbers into a reused array (vector units) and the first touch of
    64 MiB of fresh memory (page faults: numpy's large temporaries pay them).
    On a shared virtual machine these swing between runs of the same code,
    and fit times with them (in one morning: the product 13-34 ms, the mean
    of five ``exp`` calls, the first into fresh memory, 3-54 ms): compare
    times measured at similar speeds, or ratios measured in the same run.
    """
    rng = np.random.default_rng(0)
    a = rng.standard_normal((800, 800))
    x = rng.standard_normal(2_000_000)
    out = np.empty_like(x)

    def best_ms(f):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            f()
            times.append(time.perf_counter() - start)
        return 1e3 * min(times)

    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    threads = ", ".join(
        f"{name}={os.environ.get(name)}"
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    )
    product = best_ms(lambda: a @ a)
    exp = best_ms(lambda: np.exp(x, out=out))
    # 64 MiB is above glibc's largest mmap threshold: fresh pages every time.
    touch = best_ms(lambda: np.ones(1 << 23))
    return (
        f"load average {load}; BLAS threads {threads}; speed: 800^3 product "
        f"{product:.1f} ms, exp(2e6) {exp:.1f} ms, first touch of 64 MiB "
        f"{touch:.1f} ms"
    )
