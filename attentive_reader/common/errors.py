"""The one exception type for mistakes a user can make (bad input, bad option, missing model).

The console entry point prints its message in one line and exits with status 2, without a
traceback. Messages say what was wrong, where (file, line, example id) and what to do.
"""


class UserError(Exception):
    """A problem with the user's input or options, reported without a traceback.

    Args:
        message: what was wrong, where, and what to do.
        code: a stable short name for the kind of problem, for programs (the ``error``
            field of ``attentive-reader serve``'s JSON API, e.g. ``no_blank``).
    """

    def __init__(self, message: str = "", *, code: str = "bad_input") -> None:
        super().__init__(message)
        self.code = code  # pickled with the instance's __dict__ (a worker process's error)


class EmptySplitWarning(UserWarning):
    """A dataset's validation or test split has no examples (``preprocess`` says why; ``fit``
    trains without validation)."""
