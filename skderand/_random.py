"""The one place where skderand turns ``random_state`` into a generator."""

import numpy as np
from sklearn.utils import check_random_state as _sklearn_check_random_state

__all__ = ["check_random_state"]


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
