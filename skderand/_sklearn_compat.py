"""The one place where skderand imports scikit-learn's private developer API.

``_fit_context`` and the parameter-validation helpers are private upstream; keeping
their imports here means an upstream rename touches a single file.
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

__all__ = ["Interval", "StrOptions", "_fit_context", "validate_data"]
