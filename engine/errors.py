"""The one exception type the engine raises for bad input or a failed step."""

from __future__ import annotations


class JakobsenError(ValueError):
    """Invalid input to the engine, or a step that would have produced non-finite state.

    The message always names what is wrong and where (which object, which index), so the
    add-on can show it to the user as it is. ``setting``: the name of the SolverSettings field
    that was refused, if one was (so a caller can name it as its own user interface does).
    """

    def __init__(self, message: str, *, setting: str | None = None):
        super().__init__(message)
        self.setting = setting
