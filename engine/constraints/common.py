"""What connectors, springs and motors share: checking the two bodies they join, and reading
settings that may change every frame (a number, or a function of time)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import JakobsenError


def check_ends(where: str, a, b, body_count: int) -> None:
    """Object A and Object B (body indices, None for the world): at least one, existing, not the same."""
    if a is None and b is None:
        raise JakobsenError(f"{where}: it has neither Object A nor Object B")
    for side, body in (("Object A", a), ("Object B", b)):
        if body is not None and not (0 <= body < body_count):
            raise JakobsenError(f"{where}: {side} is not a rigid body of this model")
    if a is not None and a == b:
        raise JakobsenError(f"{where}: Object A and Object B are the same body")


def values_at(values: tuple, t: float, where: tuple, what: str) -> np.ndarray:
    """Each setting of ``values`` (numbers or callables of t) at time t, (k,); a non-finite one
    raises, naming ``where[k]``."""
    out = np.zeros(len(values))
    for k, value in enumerate(values):
        v = float(value(t)) if callable(value) else value
        if not math.isfinite(v):
            raise JakobsenError(f"{where[k]}: {what} at t = {t:g} s is not finite")
        out[k] = v
    return out
