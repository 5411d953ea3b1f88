"""The one exception type the engine raises for bad input or a failed step."""


class JakobsenError(ValueError):
    """Invalid input to the engine, or a step that would have produced non-finite state.

    The message always names what is wrong and where (which object, which index), so the
    add-on can show it to the user as it is.
    """
