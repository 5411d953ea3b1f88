"""Force fields: wind with turbulence, drag, attractors and repellers, acting on particles and
rigid bodies; and Follow Position / Follow Rotation for bodies (soft pulls to an animated pose).

Kinds (``ModelBuilder.add_force(kind, name=..., **settings)``), all scene-wide:

- ``"wind"``: an air velocity field. direction (3,) (normalised here), strength m/s (the mean air
  speed), turbulence (RMS gust speed as a fraction of the strength, >= 0), turbulence_scale m
  (size of the gusts), turbulence_frequency Hz (how fast they change as they drift downwind),
  seed (whole number >= 0). Nothing is pushed by the wind itself: particles feel it through
  their drag (``Model.drag``) and bodies through theirs (``add_rigid_body(drag=...)``), both
  quadratic in the speed relative to the air.
- ``"drag"``: Blender's Drag field, F = -(linear + quadratic |v|) v, linear in kg/s (N per m/s),
  quadratic in kg/m, on every particle and body (at its centre of mass; no torque).
- ``"attractor"``: Cinema 4D's Attractor / Blender's Force field at ``position`` (3,) m:
  acceleration ``strength`` m/s^2 at 1 m towards the point (negative pushes away), times the
  falloff ``"none"`` (1), ``"inverse"`` (1/r) or ``"inverse_square"`` (1/r^2) of the distance r m,
  with r clamped to >= min_distance m (no singularity) and no effect beyond max_distance m.

Shapes: n particles, B bodies (body arrays have a row B for the static world).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import quaternions as quat
from .checks import FLOAT32_MAX, MAX_SPEED
from .errors import JakobsenError

FALLOFFS = ("none", "inverse", "inverse_square")
# Random Fourier modes per turbulent wind: enough for gusts that do not look periodic, few enough
# that a 10k-vertex cloth pays (n, 16) cosines per substep.
WIND_MODES = 16

_DEFAULTS = {
    "wind": dict(direction=(1.0, 0.0, 0.0), strength=0.0, turbulence=0.0, turbulence_scale=1.0,
                 turbulence_frequency=1.0, seed=0),
    "drag": dict(linear=0.0, quadratic=0.0),
    "attractor": dict(position=(0.0, 0.0, 0.0), strength=0.0, falloff="none", min_distance=0.0, max_distance=None),
}


@dataclass(frozen=True)
class Forces:
    """The model's force fields, validated (a tuple of dicts from ``check_force``)."""

    fields: tuple = ()

    @property
    def count(self) -> int:
        return len(self.fields)

    def of_kind(self, kind: str) -> list[dict]:
        return [f for f in self.fields if f["kind"] == kind]

    @property
    def drag_coefficients(self) -> tuple[float, float]:
        """(linear kg/s, quadratic kg/m) of all drag fields together."""
        drags = self.of_kind("drag")
        return sum(f["linear"] for f in drags), sum(f["quadratic"] for f in drags)


def empty_forces() -> Forces:
    return Forces(())


# -- validation ---------------------------------------------------------------------------------


def _number(where, what, value, *, low=None, low_open=False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise JakobsenError(f"{where}: {what} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or abs(value) > FLOAT32_MAX:
        raise JakobsenError(f"{where}: {what} must be finite (in single precision too), got {value}")
    if low is not None and (value <= low if low_open else value < low):
        raise JakobsenError(f"{where}: {what} must be {'>' if low_open else '>='} {low:g}, got {value:g}")
    return value


def _vector(where, what, value) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise JakobsenError(f"{where}: {what} must be 3 finite numbers, got {value!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)) or not np.all(np.abs(v) <= FLOAT32_MAX):
        raise JakobsenError(f"{where}: {what} must be 3 finite numbers, got {value!r}")
    return v


def check_force(kind: str, name: str, **settings) -> dict:
    """Validate one force field's settings; raises JakobsenError naming the field.

    Returns the field as a dict (``kind``, ``name`` and its settings in SI units, plus what the
    solver precomputes: a wind's mean ``velocity`` and its gust modes).
    """
    where = f"force '{name}'"
    if kind not in _DEFAULTS:
        raise JakobsenError(f"{where}: kind must be one of {sorted(_DEFAULTS)}, got {kind!r}")
    unknown = sorted(set(settings) - set(_DEFAULTS[kind]))
    if unknown:
        raise JakobsenError(f"{where}: unknown setting(s) {', '.join(unknown)} for a {kind} field "
                            f"(known: {', '.join(sorted(_DEFAULTS[kind]))})")
    s = {**_DEFAULTS[kind], **settings}
    field = {"kind": kind, "name": name}
    if kind == "wind":
        field.update(_check_wind(where, s))
    elif kind == "drag":
        field["linear"] = _number(where, "linear (kg/s)", s["linear"], low=0.0)
        field["quadratic"] = _number(where, "quadratic (kg/m)", s["quadratic"], low=0.0)
    else:
        field.update(_check_attractor(where, s))
    return field


def _check_wind(where, s) -> dict:
    direction = _vector(where, "direction", s["direction"])
    length = float(np.linalg.norm(direction))
    if length < 1e-12:
        raise JakobsenError(f"{where}: direction must not be zero")
    strength = _number(where, "strength (m/s)", s["strength"], low=0.0)
    if strength > MAX_SPEED:
        raise JakobsenError(f"{where}: strength (m/s) is absurd, {strength:g} (at most {MAX_SPEED:g})")
    turbulence = _number(where, "turbulence", s["turbulence"], low=0.0)
    scale = _number(where, "turbulence scale (m)", s["turbulence_scale"], low=0.0, low_open=True)
    frequency = _number(where, "turbulence frequency (Hz)", s["turbulence_frequency"], low=0.0)
    seed = s["seed"]
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise JakobsenError(f"{where}: seed must be a whole number >= 0, got {seed!r}")
    velocity = direction / length * strength
    out = dict(direction=direction / length, strength=strength, turbulence=turbulence, turbulence_scale=scale,
               turbulence_frequency=frequency, seed=int(seed), velocity=velocity, modes=None)
    if turbulence > 0.0 and strength > 0.0:
        out["modes"] = _gust_modes(int(seed), strength * turbulence, scale, frequency)
    return out


def _gust_modes(seed: int, rms: float, scale: float, frequency: float):
    """Random Fourier modes of the gusts: wave vectors k (M, 3) 1/m, angular frequencies (M,)
    rad/s, phases (M,), amplitudes (M, 3) m/s.

    Each amplitude is perpendicular to its wave vector, so the gust field is divergence-free
    (air neither piles up nor vanishes); amplitudes sqrt(2/M) make the RMS gust speed ``rms``.
    Wavelengths and frequencies spread over a factor three around the settings so the sum does
    not repeat visibly.
    """
    rng = np.random.default_rng(seed)
    m = WIND_MODES
    k_dir = rng.normal(size=(m, 3))
    k_dir /= np.linalg.norm(k_dir, axis=1, keepdims=True)
    k = k_dir * (2.0 * np.pi / scale * rng.uniform(0.5, 1.5, m))[:, None]
    omega = 2.0 * np.pi * frequency * rng.uniform(0.5, 1.5, m)
    phase = rng.uniform(0.0, 2.0 * np.pi, m)
    a = rng.normal(size=(m, 3))
    a -= k_dir * np.einsum("ij,ij->i", a, k_dir)[:, None]
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    amp = a * (rms * math.sqrt(2.0 / m))
    for arr in (k, omega, phase, amp):
        arr.flags.writeable = False
    return k, omega, phase, amp


def _check_attractor(where, s) -> dict:
    position = _vector(where, "position", s["position"])
    strength = _number(where, "strength (m/s^2)", s["strength"])
    falloff = s["falloff"]
    if falloff not in FALLOFFS:
        raise JakobsenError(f"{where}: falloff must be one of {', '.join(FALLOFFS)}, got {falloff!r}")
    min_d = _number(where, "min distance (m)", 0.0 if s["min_distance"] is None else s["min_distance"], low=0.0)
    max_d = s["max_distance"]
    if max_d is None:
        max_d = math.inf
    else:
        if isinstance(max_d, bool) or not isinstance(max_d, (int, float, np.integer, np.floating)) \
                or math.isnan(max_d) or max_d <= 0.0:
            raise JakobsenError(f"{where}: max distance must be a positive number of metres (or None), got {max_d!r}")
        max_d = float(max_d)
        if max_d <= min_d:
            raise JakobsenError(f"{where}: max distance ({max_d:g} m) must exceed min distance ({min_d:g} m)")
    return dict(position=position, strength=strength, falloff=falloff, min_distance=min_d, max_distance=max_d)


def finalize_forces(specs: list[dict]) -> Forces:
    return Forces(tuple(specs))


# -- the fields ---------------------------------------------------------------------------------


def wind_velocity(field: dict, t: float, x: np.ndarray) -> np.ndarray:
    """Air velocity (n, 3) m/s of one wind at points x (n, 3) at time t.

    The gusts drift downwind with the mean wind (Taylor's frozen turbulence) while each mode
    also changes in place at its own frequency, so the field is smooth in space and time.
    """
    mean = field["velocity"]
    if field["modes"] is None:
        return np.broadcast_to(mean, x.shape).copy()
    k, omega, phase, amp = field["modes"]
    arg = (x - mean * t) @ k.T - omega * t + phase  # (n, M)
    return mean + np.cos(arg) @ amp


def air_velocity(forces: Forces, t: float, x: np.ndarray):
    """Sum of the winds' air velocities (n, 3) m/s at x (n, 3), or None without winds."""
    winds = forces.of_kind("wind")
    if not winds:
        return None
    air = wind_velocity(winds[0], t, x)
    for field in winds[1:]:
        air += wind_velocity(field, t, x)
    return air


def attractor_acceleration(field: dict, x: np.ndarray) -> np.ndarray:
    """Acceleration (n, 3) m/s^2 of one attractor on points x (n, 3)."""
    d = field["position"] - x
    r = np.sqrt(np.einsum("ij,ij->i", d, d))
    rr = np.maximum(r, field["min_distance"])
    falloff = field["falloff"]
    with np.errstate(divide="ignore", invalid="ignore"):
        if falloff == "none":
            size = np.full(len(r), field["strength"])
        elif falloff == "inverse":
            size = field["strength"] / rr
        else:
            size = field["strength"] / (rr * rr)
        # At the point itself there is no direction to pull in.
        size = np.where((r > 1e-12) & (r <= field["max_distance"]), size / np.maximum(r, 1e-300), 0.0)
    return d * size[:, None]


def acceleration(forces: Forces, x: np.ndarray):
    """Sum of the attractors' accelerations (n, 3) m/s^2 at x (n, 3), or None without attractors."""
    fields = forces.of_kind("attractor")
    if not fields:
        return None
    a = attractor_acceleration(fields[0], x)
    for field in fields[1:]:
        a += attractor_acceleration(field, x)
    return a


def _damp(v: np.ndarray, inv_mass: np.ndarray, linear: float, quadratic: float, h: float) -> np.ndarray:
    """v (n, 3) after one substep h of F = -(linear + quadratic |v|) v on masses 1/inv_mass (n,).

    Linear drag is integrated exactly (exp(-c w h)); quadratic drag implicitly
    (v' = v / (1 + q w |v| h)) so that it can never reverse the motion, however strong.
    """
    speed = np.sqrt(np.einsum("ij,ij->i", v, v))
    scale = np.exp(-linear * inv_mass * h) / (1.0 + quadratic * inv_mass * speed * h)
    return v * scale[:, None]


# -- particles ----------------------------------------------------------------------------------


def particle_air_and_acceleration(forces: Forces, t: float, x: np.ndarray, *, with_air: bool = True):
    """(air velocity (n, 3) m/s or None, extra acceleration (n, 3) m/s^2 or None) for particles
    at x (n, 3) at time t; None where the fields add nothing. with_air=False skips the winds (no
    particle has drag, so the air cannot reach them)."""
    return (air_velocity(forces, t, x) if with_air else None), acceleration(forces, x)


def drag_particles(forces: Forces, h: float, x: np.ndarray, x_prev: np.ndarray, inv_mass: np.ndarray) -> None:
    """The drag fields over one substep h, in place: the Verlet velocity (x - x_prev) / h of
    each particle (inverse mass inv_mass (n,) 1/kg; pinned ones have 0 and keep theirs) is
    damped by moving x_prev (n, 3)."""
    linear, quadratic = forces.drag_coefficients
    if linear <= 0.0 and quadratic <= 0.0:
        return
    v = (x - x_prev) / h
    x_prev[...] = x - _damp(v, inv_mass, linear, quadratic, h) * h


# -- bodies -------------------------------------------------------------------------------------


def apply_to_bodies(forces: Forces, bodies, t: float, h: float, x, q, v, w, inv_mass, inv_inertia,
                    air=None, accel=None) -> None:
    """Change the velocities v, w (B+1, 3) of the bodies the solver moves in place by one
    substep h of the force fields and Follow Position/Rotation; t is the substep's end, x (B+1, 3)
    and q (B+1, 4) the poses at its start; air: (3,) m/s, the still air's velocity
    (``SolverSettings.air_velocity``) that the winds add to; accel: (B+1, 3) m/s^2 the integrator
    adds after this (gravity), which the follow pulls must hold against.

    Order: attractors (explicit), air drag and drag fields (implicit, never reverse the motion),
    then the follow pulls (implicit), so a strong pull lands on its target whatever the rest did.
    Forces act at the centre of mass (no torque); accelerations are independent of the inertia,
    so inv_inertia is not needed.
    """
    count = bodies.count
    moving = np.flatnonzero(inv_mass[:count] > 0.0)
    if not len(moving):
        return
    t0 = t - h
    xm = x[moving]
    im = inv_mass[moving]
    pull = acceleration(forces, xm)
    if pull is not None:
        v[moving] += pull * h
    drag = bodies.drag[moving]
    if np.any(drag > 0.0):
        wind = air_velocity(forces, t0, xm)
        still = np.zeros(3) if air is None else np.asarray(air, dtype=np.float64)
        v_air = still + (0.0 if wind is None else wind)
        rel = v[moving] - v_air
        speed = np.sqrt(np.einsum("ij,ij->i", rel, rel))
        v[moving] = v_air + rel / (1.0 + drag * im * speed * h)[:, None]
    linear, quadratic = forces.drag_coefficients
    if linear > 0.0 or quadratic > 0.0:
        v[moving] = _damp(v[moving], im, linear, quadratic, h)
    _follow(bodies, moving, t, h, x, q, v, w, accel)


def animated_pose(bodies, k: int, t: float):
    """Pose (centre (3,) m, orientation (4,)) that body k's ``motion(t)`` gives it; its rest
    pose without a motion."""
    motion = bodies.motions[k]
    if motion is None:
        return bodies.rest_position[k], bodies.rest_orientation[k]
    m = np.asarray(motion(t), dtype=np.float64)
    if m.shape != (4, 4) or not np.all(np.isfinite(m)):
        raise JakobsenError(f"rigid body '{bodies.names[k]}': motion({t:g}) must return a finite 4x4 matrix")
    rot = m[:3, :3]
    return rot @ bodies.rest_position[k] + m[:3, 3], quat.multiply(quat.from_matrix(rot), bodies.rest_orientation[k])


def _follow(bodies, moving, t, h, x, q, v, w, accel=None) -> None:
    """Follow Position / Rotation: a = s^2 (target - x) - 2 s (v - v_target), critically damped,
    for the substep from t - h to t.

    Implicit Euler on the pose at the substep's end (x' = x + h v'):
    v' (1 + s h)^2 = v + h s^2 (x_target(t) - x) + 2 s h v_target. It is stable for any s h, a
    very strong pull lands on the target in one substep, and a target moving steadily is tracked
    with no lag. The integrator's own acceleration g (gravity) joins the implicit solve and is
    taken out again (the integrator adds it next), so a body hangs g / s^2 below its target as
    the spring would, not (1 + s h)^2 times that. Rotation is the same with the rotation vector of
    q_target q^-1 as the error.
    """
    sp, sr = bodies.follow_position[moving], bodies.follow_rotation[moving]
    active = (sp > 0.0) | (sr > 0.0)
    if not np.any(active):
        return
    ks = moving[active]
    sp, sr = sp[active], sr[active]
    # A body's animation is a Python callable: one call per body at each end of the substep.
    poses0 = [animated_pose(bodies, int(k), t - h) for k in ks]
    poses1 = [animated_pose(bodies, int(k), t) for k in ks]
    x0, q0 = np.array([p[0] for p in poses0]), np.array([p[1] for p in poses0])
    x1, q1 = np.array([p[0] for p in poses1]), np.array([p[1] for p in poses1])
    v_target = (x1 - x0) / h
    w_target = quat.angular_velocity(q1, q0, h)
    error = quat.log_rotation(quat.multiply(q1, quat.conjugate(q[ks])))
    g_h = np.zeros((len(ks), 3)) if accel is None else accel[ks] * h
    pulled = sp > 0.0
    for s, vel, target_vel, gap, extra in ((sp, v, v_target, x1 - x[ks], g_h * pulled[:, None]),
                                           (sr, w, w_target, error, 0.0)):
        sh = s * h
        vel[ks] = (vel[ks] + extra + (s * sh)[:, None] * gap + (2.0 * sh)[:, None] * target_vel) \
            / ((1.0 + sh) ** 2)[:, None] - extra
