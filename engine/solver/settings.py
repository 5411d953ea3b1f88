"""``SolverSettings``: how the solver steps (frame rate, substeps, iterations, gravity, backend)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..checks import MAX_ACCELERATION, MAX_SPEED, check_vector
from ..errors import JakobsenError


@dataclass(frozen=True, kw_only=True)
class SolverSettings:
    """How the solver steps.

    frame_rate: frames per second of the animation; substeps: solver steps per frame;
    iterations: constraint iterations per substep, or "auto": as many as it takes (at most 32)
    for an iteration to move no particle by more than 1e-4 of the shortest stick
    (``solver.AUTO_TOLERANCE``);
    gravity: (3,) m/s^2; damping: 1/s, the fraction of velocity lost per second is
    1 - exp(-damping); air_velocity: (3,) m/s, the wind that drag acts relative to;
    wind_acceleration: (3,) m/s^2 added to every movable particle;
    sqrt_approximation: Jakobsen's first-order square root in the stick projection;
    velocity_iterations: rigid contact restitution passes per substep; contact_iterations: rigid
    contact projection passes per iteration (a pile more bodies deep gets one pass per body of
    its depth, up to twice this: ``rigid_step.STACK_PASSES``). Both are Gauss-Seidel between pairs of bodies, the
    contacts of one pair solved together, so one pass already bounces a lone box straight and
    holds it still on a slope; bodies that touch several others need more (the stack of ten
    boxes is tested with the four of each here). backend: "auto" (numba where it loads, else
    numpy), "numba" or "numpy": which kernels step it (``engine.backend``); the same numbers.
    energy_guard: stop a frame in which bodies that nothing drives gained energy (see
    ``solver.energy``) with a JakobsenError.
    global_solve: before the sweeps, solve the stretch sticks (and any equal stick soft enough)
    of the substep together (conjugate gradients, warm-started from the last substep's
    multipliers; ``solver.GLOBAL_REDUCTION``), then sweep every stick a colour at a time (no
    chains); off by default: it costs 5-20 times the sweeps, and the chains (``particles.chains``)
    now converge a cloth's stretch at one iteration, the stiff shear included, which it leaves out.
    sleeping: rigid bodies that have come to rest are put to sleep (Blender's and Bullet's
    Deactivation, Jolt's and Rapier's sleeping): a group of touching or connected bodies whose
    every point has moved slower than sleep_speed m/s, and stayed within a tenth of sleep_speed x
    sleep_time (half a millimetre; a hundredth of its size if smaller) of where it was, for
    sleep_time s is no longer stepped until something
    moving comes near it (a body, an animated collider, cloth). Bodies with motors, in a vehicle,
    jointed to an animated body, following their animation, and any body in a scene with force
    fields or deforming colliders never sleep. ``solver.rigid_step.Sleep``.
    """

    frame_rate: float = 24.0
    substeps: int = 10
    iterations: int | str = 1
    gravity: tuple = (0.0, 0.0, -9.81)
    damping: float = 0.0
    air_velocity: tuple = (0.0, 0.0, 0.0)
    wind_acceleration: tuple = (0.0, 0.0, 0.0)
    sqrt_approximation: bool = False
    velocity_iterations: int = 4
    contact_iterations: int = 4
    backend: str = "auto"
    energy_guard: bool = True
    global_solve: bool = False
    sleeping: bool = True
    sleep_speed: float = 0.01
    sleep_time: float = 0.5

    def validate(self) -> None:
        """Raise JakobsenError (its ``setting`` the field's name) for a setting out of range."""
        for name in ("substeps", "iterations", "velocity_iterations", "contact_iterations"):
            value = getattr(self, name)
            if name == "iterations" and isinstance(value, str) and value == "auto":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                also = ' or "auto"' if name == "iterations" else ""
                raise JakobsenError(f"solver settings: {name} must be a whole number >= 1{also}, got {value!r}",
                                    setting=name)
            if value > 10_000:
                raise JakobsenError(f"solver settings: {name} = {value} is absurd (at most 10000)", setting=name)
        if not (math.isfinite(self.frame_rate) and 0.0 < self.frame_rate <= 100_000.0):
            raise JakobsenError("solver settings: frame_rate must be a positive number of frames per second, got "
                                f"{self.frame_rate}", setting="frame_rate")
        if not (math.isfinite(self.damping) and 0.0 <= self.damping <= 1e6):
            raise JakobsenError(f"solver settings: damping must be >= 0 and at most 1e6 (1/s), got {self.damping}",
                                setting="damping")
        # Finite in float64 is not enough: 3e38 m/s^2 of gravity overflows to inf in the single
        # precision Blender keeps, and anything near it is no physics anyway.
        for name, limit, unit in (("gravity", MAX_ACCELERATION, "m/s^2"), ("air_velocity", MAX_SPEED, "m/s"),
                                  ("wind_acceleration", MAX_ACCELERATION, "m/s^2")):
            try:
                check_vector(getattr(self, name), name, "solver settings", limit=limit, unit=unit)
            except JakobsenError as error:
                raise JakobsenError(str(error), setting=name) from None
        if not isinstance(self.global_solve, (bool, np.bool_)):
            raise JakobsenError(f"solver settings: global_solve must be True or False, got {self.global_solve!r}",
                                setting="global_solve")
        if not isinstance(self.sleeping, (bool, np.bool_)):
            raise JakobsenError(f"solver settings: sleeping must be True or False, got {self.sleeping!r}",
                                setting="sleeping")
        if not (isinstance(self.sleep_speed, (int, float, np.floating, np.integer)) and not isinstance(
                self.sleep_speed, bool) and math.isfinite(self.sleep_speed) and 0.0 <= self.sleep_speed <= 10.0):
            raise JakobsenError("solver settings: sleep_speed must be a speed from 0 to 10 m/s (0: never sleep), "
                                f"got {self.sleep_speed!r}", setting="sleep_speed")
        if not (isinstance(self.sleep_time, (int, float, np.floating, np.integer)) and not isinstance(
                self.sleep_time, bool) and math.isfinite(self.sleep_time) and 0.0 < self.sleep_time <= 1e6):
            raise JakobsenError("solver settings: sleep_time must be a positive number of seconds, got "
                                f"{self.sleep_time!r}", setting="sleep_time")
        if not isinstance(self.energy_guard, (bool, np.bool_)):
            raise JakobsenError(f"solver settings: energy_guard must be True or False, got {self.energy_guard!r}",
                                setting="energy_guard")

    @property
    def substep(self) -> float:
        """Substep length h, s."""
        return 1.0 / (self.frame_rate * self.substeps)
