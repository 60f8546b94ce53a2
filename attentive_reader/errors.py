"""The one exception type for mistakes a user can make (bad input, bad option, missing model).

The console entry point prints its message in one line and exits with status 2, without a
traceback. Messages say what was wrong, where (file, line, example id) and what to do.
"""


class UserError(Exception):
    """A problem with the user's input or options, reported without a traceback."""
