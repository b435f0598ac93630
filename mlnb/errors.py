"""The one exception type that reaches a user as a one-line message.

Anything raised as :class:`MlnbError` is bad input (a file, a config key, an
argument), and the CLI prints its message on one line and exits with code 2.
It subclasses ``ValueError`` so that the Python API behaves like
scikit-learn's (which raises ``ValueError`` for bad input).
"""


class MlnbError(ValueError):
    """Bad input, explained in one line that names the file, line or key."""


class MlnbWarning(UserWarning):
    """Input that mlnb accepts but that the user should know about (e.g. a label found only in the
    test part), in one line; the CLI prints it as ``warning: ...`` on stderr."""
