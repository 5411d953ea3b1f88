"""Ranges the engine accepts: what is finite in single precision (Blender stores floats as
float32, so a value the engine takes must survive the trip) and what is physically absurd."""

from __future__ import annotations

import math

import numpy as np

from .errors import JakobsenError

# The largest finite single-precision float; 3.5e38 is finite in float64 and infinite in Blender.
FLOAT32_MAX = float(np.finfo(np.float32).max)
# Absurd beyond these: positions (10,000 km from the origin), speeds (30 times a rifle bullet's),
# spins, and accelerations (1000 g) of the scene's settings.
MAX_COORDINATE = 1e7
MAX_SPEED = 1e5
MAX_ANGULAR_SPEED = 1e5
MAX_ACCELERATION = 1e4


def check_vector(value, what: str, where: str, *, limit: float = FLOAT32_MAX, unit: str = "") -> np.ndarray:
    """A finite (3,) vector no longer than ``limit``; raises JakobsenError naming ``what``."""
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise JakobsenError(f"{where}: {what} must be 3 finite numbers, got {value!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise JakobsenError(f"{where}: {what} must be 3 finite numbers, got {value!r}")
    size = float(np.linalg.norm(v))
    if not size <= min(limit, FLOAT32_MAX):
        raise JakobsenError(f"{where}: {what} {v.tolist()} is absurd (more than {min(limit, FLOAT32_MAX):g} "
                            f"{unit}".rstrip() + ")")
    return v


def check_range(values, what: str, where: str, *, limit: float = FLOAT32_MAX, unit: str = "") -> None:
    """Raise JakobsenError if any finite value of ``values`` is beyond +-limit (inf is left to the
    caller: for some settings it means rigid or unbreakable); names the first, with its index."""
    a = np.asarray(values, dtype=np.float64)
    flat = a.reshape(len(a), -1) if a.ndim > 1 else a.reshape(-1, 1)
    bad = np.flatnonzero(np.any(np.isfinite(flat) & (np.abs(flat) > min(limit, FLOAT32_MAX)), axis=1))
    if len(bad):
        k = int(bad[0])
        shown = a[k].tolist() if a.ndim > 1 else float(a.reshape(-1)[k])
        index = f" {k}" if a.ndim > 1 or a.size > 1 else ""
        raise JakobsenError(f"{where}: {what}{index} is absurd, {shown} (at most {min(limit, FLOAT32_MAX):g} "
                            f"{unit}".rstrip() + " in size)")


def check_scalar(value, what: str, where: str, *, limit: float = FLOAT32_MAX, unit: str = "",
                 infinite: bool = False) -> float:
    """A number within +-limit (or infinite, if allowed)."""
    v = float(value)
    if math.isnan(v) or (math.isinf(v) and not infinite) or (math.isfinite(v) and abs(v) > min(limit, FLOAT32_MAX)):
        raise JakobsenError(f"{where}: {what} is {'not a number' if math.isnan(v) else 'absurd'}, {v:g} "
                            f"(at most {min(limit, FLOAT32_MAX):g} {unit}".rstrip() + ")")
    return v
