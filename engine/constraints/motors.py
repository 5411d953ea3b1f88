"""Motors: Cinema 4D's Motor object, plus a servo.

A motor turns (angular) or pushes (linear) its body about / along an axis fixed in that body,
relative to a reference body or the world, which takes the reaction:

- "speed" (C4D's Regulate Speed): each substep, a drive solved with the contacts and joints that
  turns the body by target * substep relative to its reference, with no more than the maximum
  torque (force);
- "force" (C4D's Apply Force): a constant torque (force);
- "servo": a target angle (position) from the rest pose, reached along the fastest profile the
  maximum torque (force) can brake from, then held.

Targets, efforts (the torque or force) and the on/off switch may be numbers or functions of
time (animated every frame); ``Motors.at(t)`` gives the motors as they are at t.

Shapes: M motors, B bodies (index B is the world).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..geometry import quaternions as quat
from ..geometry.reproducible import arctan2
from ..constraints.common import check_ends, values_at
from ..checks import FLOAT32_MAX, MAX_ANGULAR_SPEED, MAX_SPEED
from ..errors import JakobsenError
from ..backend.numpy.rigid import world_inverse_inertia
from ..bodies.rigid import CONTACT_DEPTH, MAX_SUBSTEP_TURN, body_thickness

MODES = ("speed", "force", "servo")
# Servo: how fast the remaining error is closed (1/s) once it is small; farther away, the speed a
# quarter of the motor's torque could still stop in time (a quarter, because the inertia the motor
# sees is its body's about its centre, while a jointed body turns about its pivot: an arm on a
# hinge has four times the inertia there, and with a half it overshot by 6 degrees).
SERVO_RATE = 30.0
SERVO_BRAKE = 0.25
# What one substep can resolve of a motor. A speed or servo drive moves (turns) its body within
# the contact and connector solve, after the sweep (collision.sweep) has taken back the free motion;
# a drive that pushes a body further in one substep than the contacts can take back (a fraction
# CONTACT_DEPTH of its thickness; for a turn, that arc at its bounding radius) wins over them every
# pass and leaves the body inside what it pushes against, where the contacts and the drive fight
# it out (a 1 kg box driven into the ground with 1e5 N spun off at 100 m/s). A force motor that
# accelerates its body by more than that in a substep tears its connectors (a 5 g wheel under
# 1500 N m spun thousands of turns a substep). Both are held to it (with a warning, see
# ``drive_warnings``); more substeps raise the limit. And a turn of more than MAX_TURN rad in a
# substep cannot be told from one the other way round (its angle wraps at half a turn), so speed
# targets are held below it and force motors stop pushing there (linear ones at MAX_SPEED).
# (The same turn the contacts resolve, which a body's own starting spin is warned about.)
MAX_TURN = MAX_SUBSTEP_TURN


@dataclass(frozen=True)
class Motors:
    """a: (M,) the driven bodies; b: (M,) the references (B: the world); axis_a: (M, 3) the axis
    in A's frame; linear: (M,) bool; mode: (M,) index into MODES; effort: (M,) N m or N (the most
    a speed or servo motor applies, the constant of a force motor); targets: (M,) numbers or
    callables; rest_relative: (M, 4) A's orientation relative to B's at rest; rest_offset: (M, 3)
    A's centre relative to B's, in B's frame, at rest; names: (M,); efforts, switches: (M,)
    numbers or callables, the effort and on (>= 0.5) / off over time (``effort`` is the largest
    effort, what the warnings judge); warn: (M,) bool, False for a hold sized for the worst case
    that is meant to be held to what a substep resolves (see ``check_motor``): no warning for it."""

    a: np.ndarray
    b: np.ndarray
    axis_a: np.ndarray
    linear: np.ndarray
    mode: np.ndarray
    effort: np.ndarray
    targets: tuple
    rest_relative: np.ndarray
    rest_offset: np.ndarray
    names: tuple
    efforts: tuple = ()
    switches: tuple = ()
    warn: tuple = ()

    @property
    def count(self) -> int:
        return len(self.a)

    @property
    def animated(self) -> bool:
        return any(callable(e) for e in self.efforts) or any(callable(s) for s in self.switches)

    def at(self, t: float) -> "Motors":
        """The motors at time t: their efforts then, 0 for those switched off."""
        if not self.animated:
            return self
        where = tuple(f"motor '{n}'" for n in self.names)
        effort = values_at(self.efforts, t, where, "the torque or force")
        on = values_at(self.switches, t, where, "the on/off switch") >= 0.5
        return replace(self, effort=np.where(on, np.maximum(effort, 0.0), 0.0))

    def targets_at(self, t: float) -> np.ndarray:
        return values_at(self.targets, t, tuple(f"motor '{n}'" for n in self.names), "the target")


def empty_motors() -> Motors:
    return finalize_motors([], None, 0)


def check_motor(a, b, axis, name: str, body_count: int, *, kind="angular", mode="speed", target=0.0,
                torque=None, force=None, enabled=True, warn=True) -> dict:
    """A motor's settings, checked. warn=False: a hold whose effort is a generous bound, meant to be
    held to what a substep resolves like any motor (a vehicle's locked differential: it has to hold
    against both tyres' full grip, and the user never made it), so ``drive_warnings`` does not
    report that hold as a setting to fix."""
    where = f"motor '{name}'"
    if a is None:
        raise JakobsenError(f"{where}: it has no body to drive (Object A)")
    check_ends(where, a, b, body_count)
    if kind not in ("angular", "linear"):
        raise JakobsenError(f"{where}: type must be angular or linear; got {kind!r}")
    if mode not in MODES:
        raise JakobsenError(f"{where}: mode must be one of {', '.join(MODES)}; got {mode!r}")
    u = np.asarray(axis, float)
    if u.shape != (3,) or not np.all(np.isfinite(u)) or np.linalg.norm(u) < 1e-12:
        raise JakobsenError(f"{where}: the axis must be a finite non-zero vector")
    what, value = ("torque", torque) if kind == "angular" else ("force", force)
    if value is None:
        raise JakobsenError(f"{where}: an {kind} motor needs a {what}")
    values = getattr(value, "values", None)  # a Track: its samples are what it can be
    if callable(value) and values is None:
        raise JakobsenError(f"{where}: an animated {what} must be a Track (samples over time)")
    samples = np.asarray(values if values is not None else [value], dtype=float)
    if not (np.all(np.isfinite(samples)) and np.all(samples >= 0) and np.all(samples <= FLOAT32_MAX)):
        raise JakobsenError(f"{where}: the {what} must be a non-negative finite number (turn the axis round to "
                            f"reverse it), got {value!r}")
    if not callable(target) and not math.isfinite(float(target)):
        raise JakobsenError(f"{where}: the target must be a finite number or a function of time")
    if not callable(enabled) and not isinstance(enabled, (bool, int, float, np.bool_, np.floating, np.integer)):
        raise JakobsenError(f"{where}: on/off must be a bool, a number (>= 0.5: on) or a function of time")
    return dict(a=a, b=b, axis=u / np.linalg.norm(u), linear=kind == "linear", mode=MODES.index(mode),
                effort=float(samples.max()), effort_over_time=value if callable(value) else float(value),
                switch=enabled if callable(enabled) else float(enabled),
                target=target if callable(target) else float(target), name=name, warn=bool(warn))


def finalize_motors(specs: list[dict], bodies, world: int) -> Motors:
    n = len(specs)
    a = np.array([s["a"] for s in specs], np.int64)
    b = np.array([world if s["b"] is None else s["b"] for s in specs], np.int64)
    if n:
        pos = np.vstack([bodies.rest_position, np.zeros((1, 3))])
        ori = np.vstack([bodies.rest_orientation, [[1.0, 0, 0, 0]]])
        axis_a = quat.rotate(quat.conjugate(ori[a]), np.array([s["axis"] for s in specs]))
        rest_relative = quat.multiply(quat.conjugate(ori[b]), ori[a])
        rest_offset = quat.rotate(quat.conjugate(ori[b]), pos[a] - pos[b])
    else:
        axis_a = rest_offset = np.zeros((0, 3))
        rest_relative = np.zeros((0, 4))
    return Motors(a=a, b=b, axis_a=axis_a, linear=np.array([s["linear"] for s in specs], bool),
                  mode=np.array([s["mode"] for s in specs], np.int8),
                  # A motor switched off for good has no effort (one switched by a track: see ``at``).
                  effort=np.array([0.0 if not callable(s["switch"]) and s["switch"] < 0.5 else s["effort"]
                                   for s in specs]),
                  targets=tuple(s["target"] for s in specs), rest_relative=rest_relative, rest_offset=rest_offset,
                  names=tuple(s["name"] for s in specs), efforts=tuple(s["effort_over_time"] for s in specs),
                  switches=tuple(s["switch"] for s in specs), warn=tuple(s.get("warn", True) for s in specs))


def motor_positions(motors: Motors, x, q):
    """World axes n (M, 3), and how far each driven body has turned (rad, about the axis, in
    (-pi, pi]) or moved (m, along the axis) relative to its reference since rest, (M,)."""
    a, b = motors.a, motors.b
    n = quat.rotate(q[a], motors.axis_a)
    rel = quat.multiply(quat.conjugate(q[b]), q[a])
    turned = quat.multiply(rel, quat.conjugate(motors.rest_relative))  # in B's frame
    axis_b = quat.rotate(quat.conjugate(q[b]), n)
    s = np.einsum("ki,ki->k", turned[:, 1:], axis_b)
    angle = (2.0 * arctan2(s, turned[:, 0]) + np.pi) % (2 * np.pi) - np.pi
    offset = quat.rotate(quat.conjugate(q[b]), x[a] - x[b]) - motors.rest_offset
    moved = np.einsum("ki,ki->k", offset, axis_b)
    return n, np.where(motors.linear, moved, angle)


def _effective(motors: Motors, q, n, inv_mass, inv_inertia):
    """Per motor: the world inverse inertias (M, 3, 3) of A and B and the inverse mass (M,) of
    the relative motion along (about) the axis."""
    a, b = motors.a, motors.b
    rot_a, rot_b = quat.to_matrix(q[a]), quat.to_matrix(q[b])
    ia, ib = world_inverse_inertia(rot_a, inv_inertia[a]), world_inverse_inertia(rot_b, inv_inertia[b])
    w_lin = inv_mass[a] + inv_mass[b]
    w_ang = np.einsum("ki,kij,kj->k", n, ia + ib, n)
    return ia, ib, np.where(motors.linear, w_lin, w_ang)


def _apply(motors: Motors, sel, n, j, ia, ib, v, w, inv_mass):
    """Impulse j (M,) along/about n on A, and its reaction on B, for motors ``sel``."""
    a, b = motors.a[sel], motors.b[sel]
    p = (j[sel, None] * n[sel])
    lin = motors.linear[sel]
    np.add.at(v, a[lin], inv_mass[a[lin], None] * p[lin])
    np.subtract.at(v, b[lin], inv_mass[b[lin], None] * p[lin])
    ang = ~lin
    np.add.at(w, a[ang], np.einsum("kij,kj->ki", ia[sel][ang], p[ang]))
    np.subtract.at(w, b[ang], np.einsum("kij,kj->ki", ib[sel][ang], p[ang]))


def apply_motor_forces(motors: Motors, x, q, v, w, inv_mass, inv_inertia, h: float, t: float, step_limit=None,
                       speed_limit=None) -> None:
    """"force" motors: a substep of their constant torque or force, in place on v, w; within what
    moves the body by ``step_limit`` (M,) m or rad in a substep, and no longer pushing once the
    body runs at ``speed_limit`` (M,) m/s or rad/s relative to its reference (see
    ``drive_limits``)."""
    sel = motors.mode == MODES.index("force")
    if not np.any(sel):
        return
    n, _ = motor_positions(motors, x, q)
    ia, ib, w_eff = _effective(motors, q, n, inv_mass, inv_inertia)
    impulse = motors.effort * h
    if step_limit is not None:
        # A force a substep cannot resolve is held (as a drive's is) to what it can: a torque that
        # spun a 5 g wheel by thousands of turns a substep tore its connectors apart.
        impulse = np.minimum(impulse, step_limit / np.maximum(w_eff * h, 1e-300))
        a, b = motors.a, motors.b
        rel = np.where(motors.linear[:, None], v[a] - v[b], w[a] - w[b])
        speed = np.einsum("ki,ki->k", rel, n)
        impulse = np.clip(impulse, 0.0, np.maximum(speed_limit - speed, 0.0) / np.maximum(w_eff, 1e-300))
    _apply(motors, sel, n, impulse, ia, ib, v, w, inv_mass)


def drive_limits(motors: Motors, bodies, h: float):
    """What a substep of h s can resolve, per motor (M,): the most its drive may move (m) or
    turn (rad) its body in one substep relative to the reference, and the fastest speed target
    (m/s or rad/s)."""
    if not motors.count:
        return np.zeros(0), np.zeros(0)
    a = motors.a
    thickness = body_thickness(bodies)[a]
    reach = np.maximum(bodies.bound_radius[a], 1e-300)
    step = CONTACT_DEPTH * np.where(motors.linear, thickness, thickness / reach)
    speed = np.where(motors.linear, MAX_SPEED, min(MAX_TURN / h, MAX_ANGULAR_SPEED))
    return step, speed


def drive_warnings(motors: Motors, bodies, h: float, substeps: int) -> list[str]:
    """The speed and servo motors that a substep of h s cannot resolve as set, and what they are
    held to (estimated at the rest pose), as warnings."""
    out = []
    if not motors.count:
        return out
    step, speed = drive_limits(motors, bodies, h)
    count = bodies.count
    inv_mass = np.append(bodies.inverse_mass, 0.0)
    inv_inertia = np.vstack([bodies.inverse_inertia, np.zeros((1, 3))])
    q = np.vstack([bodies.rest_orientation, [[1.0, 0.0, 0.0, 0.0]]])
    n = quat.rotate(q[motors.a], motors.axis_a)
    _, _, w_eff = _effective(motors, q, n, inv_mass, inv_inertia)
    per = f"{substeps} substeps of {h:.3g} s"
    for k in range(motors.count):
        name, body = motors.names[k], bodies.names[motors.a[k]] if motors.a[k] < count else "the world"
        what, unit, moves, dunit = ("force", "N", "move", "m") if motors.linear[k] \
            else ("torque", "N m", "turn", "rad")
        limit = step[k] / max(w_eff[k] * h * h, 1e-300)
        if motors.effort[k] > limit and (not motors.warn or motors.warn[k]):
            out.append(f"motor '{name}': its {what} of {motors.effort[k]:g} {unit} would {moves} '{body}' by "
                       f"{motors.effort[k] * h * h * w_eff[k]:.3g} {dunit} in one substep, more than its contacts and "
                       f"connectors can take back at {per}; it acts with at most {limit:.3g} {unit} "
                       "(more substeps raise the limit)")
        target = motors.targets[k]
        if MODES[motors.mode[k]] == "speed" and not callable(target) and abs(target) > speed[k]:
            out.append(f"motor '{name}': its target of {target:g} rad/s turns '{body}' more than {MAX_TURN:g} rad "
                       f"in a substep at {per}; it is held to {speed[k]:.3g} rad/s (more substeps raise the limit)")
    return out


def motor_speeds(motors: Motors, x, q, inv_mass, inv_inertia, t: float, speed_limit=None) -> np.ndarray:
    """The relative speed (M,) rad/s or m/s each "speed" and "servo" motor drives towards over
    the coming substep (0 for "force" motors): the target, or for a servo the approach to its
    angle (position) from the pose at the substep's start; within ``speed_limit`` (M,) (see
    ``drive_limits``)."""
    target = motors.targets_at(t)
    servo = motors.mode == MODES.index("servo")
    if np.any(servo):
        n, position = motor_positions(motors, x, q)
        _, _, w_eff = _effective(motors, q, n, inv_mass, inv_inertia)
        error = target - position
        error = np.where(motors.linear, error, (error + np.pi) % (2 * np.pi) - np.pi)
        brake = np.sqrt(2.0 * SERVO_BRAKE * motors.effort * w_eff * np.abs(error))
        target = np.where(servo, np.sign(error) * np.minimum(SERVO_RATE * np.abs(error), brake), target)
    if speed_limit is not None:
        target = np.clip(target, -speed_limit, speed_limit)
    return np.where(motors.mode == MODES.index("force"), 0.0, target)


def solve_motor_positions(motors: Motors, x, q, x_prev, q_prev, S, inv_mass, inv_inertia, h: float, speeds,
                          lam, step_limit=None) -> None:
    """One pass of the "speed" and "servo" motors as position drives, adding to the corrections
    S (B+1, 6): each turns (moves) its body relative to the reference by speed * h over the
    substep, the accumulated impulse ``lam`` (M,) kg m^2 (kg m) kept within effort * h^2 and
    within what moves the body by ``step_limit`` (M,) m or rad (see ``drive_limits``).

    Solved with the contacts and joints, a drive gets its way against the substep's friction
    and joints (applied after them, as a velocity kick, they would take part of it back each
    substep: a car's driven wheels turned 7% slower than their target).
    """
    sel = motors.mode != MODES.index("force")
    if not np.any(sel):
        return
    a, b = motors.a, motors.b
    xs = x + S[:, :3]
    qs = quat.multiply(quat.exp_rotation(S[:, 3:]), q)
    n = quat.rotate(qs[a], motors.axis_a)
    turned = quat.log_rotation(quat.multiply(qs[a], quat.conjugate(q_prev[a]))) \
        - quat.log_rotation(quat.multiply(qs[b], quat.conjugate(q_prev[b])))
    moved = (xs[a] - x_prev[a]) - (xs[b] - x_prev[b])
    progress = np.einsum("ki,ki->k", n, np.where(motors.linear[:, None], moved, turned))
    ia, ib, w_eff = _effective(motors, q, n, inv_mass, inv_inertia)
    limit = motors.effort * h * h
    if step_limit is not None:
        limit = np.minimum(limit, step_limit / np.maximum(w_eff, 1e-300))
    total = np.clip(lam + (speeds * h - progress) / np.maximum(w_eff, 1e-300), -limit, limit)
    step = np.where(sel & (w_eff > 0), total - lam, 0.0)
    lam += step
    p = step[:, None] * n
    lin = motors.linear
    np.add.at(S[:, :3], a[lin], inv_mass[a[lin], None] * p[lin])
    np.subtract.at(S[:, :3], b[lin], inv_mass[b[lin], None] * p[lin])
    ang = ~lin
    np.add.at(S[:, 3:], a[ang], np.einsum("kij,kj->ki", ia[ang], p[ang]))
    np.subtract.at(S[:, 3:], b[ang], np.einsum("kij,kj->ki", ib[ang], p[ang]))
