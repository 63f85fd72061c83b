"""The one place where skderand turns ``random_state`` into generators and seeds.

Every estimator draws its seeds with :func:`draw_seeds` (one per restart, stage
or worker) and, where it needs a generator of its own, builds it with
:func:`seeded_generator`: the same ``random_state`` then means the same seeds in
every estimator, whatever kind of object the user passed.
"""

import numbers

import numpy as np
from sklearn.utils import check_random_state as _sklearn_check_random_state

__all__ = ["check_random_state", "draw_seeds", "seeded_generator"]

# Seeds below 2**31 - 1 fit in an int32, which every numpy and scipy API accepts.
SEED_BOUND = 2**31 - 1


def check_random_state(random_state):
    """A generator for ``random_state`` that never draws from numpy's global one.

    As :func:`sklearn.utils.check_random_state`, except that ``None`` gives a
    ``RandomState`` freshly seeded from the operating system's entropy instead of
    numpy's global singleton: results still differ from call to call, but fitting
    never advances the global generator, so it cannot change what other code
    draws from ``np.random`` afterwards. ``Generator`` instances pass as is (the
    solver accepts them; the estimators' parameter validation does not).

    Parameters
    ----------
    random_state : int, RandomState or Generator instance, or None
        The seed or generator.

    Returns
    -------
    numpy.random.RandomState or numpy.random.Generator
        The generator to draw from.

    Examples
    --------
    >>> import numpy as np
    >>> from skderand._random import check_random_state
    >>> before = np.random.get_state()[1].copy()
    >>> _ = check_random_state(None).standard_normal(3)
    >>> bool(np.array_equal(before, np.random.get_state()[1]))
    True
    """
    if random_state is None:
        return np.random.RandomState()
    if isinstance(random_state, np.random.Generator):
        return random_state
    return _sklearn_check_random_state(random_state)


def draw_seeds(random_state, size=None):
    """Integer seeds in ``[0, 2**31 - 1)`` drawn from ``random_state``.

    Parameters
    ----------
    random_state : int, RandomState or Generator instance, or None
        The seed or generator (see :func:`check_random_state`).
    size : int, default=None
        How many seeds; ``None`` gives one Python int.

    Returns
    -------
    int or ndarray of shape (size,)
        The seeds.

    Examples
    --------
    >>> from skderand._random import draw_seeds
    >>> draw_seeds(0) == draw_seeds(0)
    True
    >>> draw_seeds(0, size=3).shape
    (3,)
    """
    rng = check_random_state(random_state)
    if isinstance(rng, np.random.Generator):
        seeds = rng.integers(SEED_BOUND, size=size)
    else:
        seeds = rng.randint(SEED_BOUND, size=size)
    return int(seeds) if size is None else np.asarray(seeds, dtype=np.int64)


def seeded_generator(random_state):
    """A ``numpy.random.Generator`` for ``random_state``.

    An integer seeds the generator directly (``numpy.random.default_rng(seed)``,
    numpy's own convention, so that ``random_state=0`` gives the stream numpy
    users know); a ``Generator`` is returned as is; a ``RandomState`` or
    ``None`` gives a generator seeded by one seed drawn with :func:`draw_seeds`.

    Examples
    --------
    >>> import numpy as np
    >>> from skderand._random import seeded_generator
    >>> float(seeded_generator(0).random()) == float(np.random.default_rng(0).random())
    True
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(
        random_state, bool
    ):
        return np.random.default_rng(int(random_state))
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(draw_seeds(random_state))
