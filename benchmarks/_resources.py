"""Resource measurements shared by the benchmark scripts."""

import resource


def peak_resident_mib():
    """Peak resident memory of this process image, in MiB.

    ``VmHWM`` from ``/proc/self/status``: the high-water mark of this process's
    own memory map. ``getrusage``'s ``ru_maxrss`` is not used: Linux keeps it
    across ``exec``, so a child started by a large parent reports the parent's
    peak (4 GiB in an earlier run of ``bench_maxcut.py``; ``bench_jl.py``'s
    50,000-point row, spawned after the 20,000-point one, 1,041 MiB and
    "0 MiB above the data").
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    # Elsewhere: ru_maxrss (KiB on Linux, bytes on macOS), an upper bound.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
