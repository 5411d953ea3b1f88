"""Force fields: wind with turbulence, drag, attractors and repellers, acting on particles and
rigid bodies; and Follow Position / Follow Rotation for bodies (soft pulls to an animated pose).

Shapes: n particles, B bodies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import JakobsenError


@dataclass(frozen=True)
class Forces:
    """The model's force fields, validated (a tuple of dicts from ``check_force``)."""

    fields: tuple = ()

    @property
    def count(self) -> int:
        return len(self.fields)


def empty_forces() -> Forces:
    return Forces(())


def check_force(kind: str, name: str, **settings) -> dict:
    """Validate one force field's settings; raises JakobsenError naming the field."""
    raise JakobsenError(f"force '{name}': force fields are not available yet")


def finalize_forces(specs: list[dict]) -> Forces:
    return Forces(tuple(specs))


def particle_air_and_acceleration(forces: Forces, t: float, x: np.ndarray):
    """(air velocity (n, 3) m/s or None, extra acceleration (n, 3) m/s^2 or None) for particles
    at x (n, 3) at time t; None where the fields add nothing."""
    return None, None


def apply_to_bodies(forces: Forces, bodies, t: float, h: float, x, q, v, w, inv_mass, inv_inertia) -> None:
    """Change the velocities v, w (B+1, 3) of the dynamic bodies in place by one substep h of the
    force fields (and Follow Position/Rotation) at time t."""
    return None
