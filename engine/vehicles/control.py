"""Driving the vehicles, once a substep, before the bodies move (the driver of each car).

For each vehicle, from the poses and velocities at the substep's start:
- steering: the driver's angle, or on a path the angle that keeps the front axle on it (the
  Stanley controller: the heading error plus the cross-track error over the speed) at a steering
  rate the response time allows; each steered wheel turned by its Ackermann angle;
- speed: a target (the driver's, or on a path the most the curvature ahead allows at the
  lateral acceleration limit, braking in time); the drive torque closes the driven wheels' speed
  error within ``vehicle.RESPONSE`` s and an integral on the chassis' speed takes out what
  rolling resistance and slopes leave (once the error has stopped closing by itself:
  ``vehicle.SETTLING``), within the Motor Torque times the Throttle; each driven
  wheel of an axle gets the same torque (an open differential; a locked one is a drive between
  the wheels, see ``vehicle.make_vehicle``); the chassis takes the reaction;
- traction control (on unless switched off): a driven wheel's torque is held to what keeps it
  within a tenth (and half a metre a second) of the ground's speed under it;
- brakes: each wheel's brake motor gets the brake's and the handbrake's torque plus the rolling
  resistance's (weight share x coefficient x radius), a brake that never lets go;
- anti-roll bars: equal and opposite forces on an axle's wheels and the chassis, in proportion to
  the difference of their travel;
- drift: the rear wheels lose part of their grip in proportion to the steering.

The car moves only through its wheels: the controller sets torques, brake torques, steering
angles and grip; contacts and connectors do the rest.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import JakobsenError
from ..geometry import quaternions as quat
from ..geometry.reproducible import arctan2
from .vehicle import DRIFT_GRIP, HANDBRAKE, INTEGRAL, NEAR, NEAR_SPEED, RESPONSE, SETTLING, Vehicle

# Path following: below this speed (m/s) the steering acts as at it.
SOFT_SPEED = 1.0
# Braking for a turn ahead uses this share of the lateral limit as deceleration.
BRAKING_SHARE = 0.5
# Traction control: a driven wheel may turn this fraction, plus SLIP_SPEED m/s at its rim, faster
# than the ground passes under it.
SLIP = 0.1
SLIP_SPEED = 0.5
# Following a path, the driver brakes fully when this much (m/s) faster than the speed wanted.
BRAKING_SPEED = 1.0


class VehicleState:
    """What the drivers remember between substeps: the speed integral (N m), the speed error of
    the last substep (m/s; NaN when not driving), the steering angle (rad) and the path segment
    last found, per vehicle."""

    def __init__(self, count: int):
        self.integral = np.zeros(count)
        self.error = np.full(count, np.nan)
        self.steer = np.zeros(count)
        self.hint = np.full(count, -1, np.int64)

    def copy(self) -> "VehicleState":
        out = VehicleState(len(self.integral))
        out.integral[...], out.error[...] = self.integral, self.error
        out.steer[...], out.hint[...] = self.steer, self.hint
        return out

    def __setstate__(self, saved: dict) -> None:
        # (A checkpoint of a bake from before the last error was kept: none yet.)
        saved.setdefault("error", np.full(len(saved["integral"]), np.nan))
        self.__dict__.update(saved)


def _value(setting, t: float, where: str, what: str) -> float:
    """A setting (a number or a function of t) at t (as ``values_at``, without its array: six a
    substep per vehicle)."""
    v = float(setting(t)) if callable(setting) else float(setting)
    if not math.isfinite(v):
        raise JakobsenError(f"{where}: {what} at t = {t:g} s is not finite")
    return v


def drive_vehicles(vehicles: tuple, state: VehicleState, t: float, h: float, gravity: float, x, q, v, w,
                   inv_mass, inv_inertia, steer, effort, friction, kernels) -> None:
    """One substep of every vehicle's driver, in place: angular velocities w (drive torques and
    their reaction), v and w (anti-roll bars), joint steering angles ``steer`` (J,), the brake
    motors' efforts ``effort`` (M,), and the wheels' ``friction`` (B + 1,). kernels: the
    backend's ``vehicles`` module (``drive_wheels``)."""
    for k, car in enumerate(vehicles):
        _drive(car, k, state, t, h, gravity, x, q, v, w, inv_mass, inv_inertia, steer, effort, friction, kernels)


def _drive(car: Vehicle, k: int, state: VehicleState, t, h, gravity, x, q, v, w, inv_mass, inv_inertia, steer,
           effort, friction, kernels) -> None:
    # What the driver asks for is decided here (the settings may be functions of time, and a path
    # is followed by a search along it); what the wheels do with it is one kernel
    # (``drive_wheels``: as numpy glue it was a fifth of the car example's time).
    where = f"vehicle '{car.name}'"
    target = _value(car.target_speed, t, where, "the target speed")
    if car.path is not None:
        c = car.chassis
        forward, left, up = quat.rotate(np.repeat(q[c][None], 3, axis=0),
                                        np.stack([car.forward_local, car.left_local, car.up_local]))
        speed = float(v[c] @ forward)
        angle, target, braking = _follow(car, k, state, t, h, x, q, v, forward, left, up, speed, target)
    else:
        braking = 0.0
        angle = min(max(_value(car.steering, t, where, "the steering angle"), -car.max_steering), car.max_steering)
        state.steer[k] = angle
    _steer_wheels(car, angle, steer)
    brake = max(_value(car.brake, t, where, "the brake"), braking)
    available = _value(car.throttle, t, where, "the throttle") * _value(car.motor_torque, t, where,
                                                                          "the motor torque") * (1.0 - brake)
    handbrake = _value(car.handbrake, t, where, "the handbrake")
    # Drift: the rear lets go in proportion to the steering.
    drifting = car.drift > 0.0 and car.max_steering > 0.0
    grip_loss = DRIFT_GRIP * car.drift * min(abs(state.steer[k]) / car.max_steering, 1.0) if drifting else 0.0
    kernels.drive_wheels(car.chassis, car.wheels, car.driven, car.axle, car.radius, car.brakes, car.forward_local,
                         car.up_local, car.axle_local, car.roll_pairs, car.roll_stiffness, car.pivot_local,
                         car.travel_axis_local, car.mass, car.friction, target, available, brake, handbrake, drifting,
                         grip_loss, car.traction_control, car.brake_torque, car.rolling_resistance, state.integral,
                         state.error, k, h, gravity, RESPONSE, INTEGRAL, SETTLING, NEAR, NEAR_SPEED, HANDBRAKE, SLIP,
                         SLIP_SPEED, x, q, v, w, inv_mass, inv_inertia, effort, friction)


def _steer_wheels(car: Vehicle, angle: float, steer) -> None:
    """Each steered wheel's connector turned by its angle: with Ackermann, the angle that points
    it at the turning centre on the rear axle's line (the inner wheel turns more)."""
    steered = np.flatnonzero(car.steered)
    if not len(steered):
        return
    if car.ackermann and abs(angle) > 1e-9:
        s = math.copysign(1.0, angle)
        base = car.longitudinal[steered] - car.rear_x
        radius = float(np.mean(base)) / math.tan(abs(angle))
        angles = s * arctan2(base, radius - s * car.lateral[steered])  # (see ``geometry.reproducible``)
    else:
        angles = np.full(len(steered), angle)
    steer[car.joints[steered]] = car.steer_sign[steered] * angles


def _follow(car: Vehicle, k: int, state: VehicleState, t, h, x, q, v, forward, left, up, speed, target):
    """The steering angle, target speed and brake that follow the path (see the module docstring)."""
    path = car.path
    c = car.chassis
    rear = x[c] + quat.rotate(q[c], car.rear_point_local)
    segment, s, closest = path.closest(rear, int(state.hint[k]))
    state.hint[k] = segment
    tangent = path.sample(s, path.tangent)
    tangent = tangent - up * (tangent @ up)
    tangent /= max(np.linalg.norm(tangent), 1e-12)
    # Rear-wheel feedback: the yaw rate that keeps the rear axle on the path (the path's own
    # turn, fed forward a steering response ahead, less the heading and offset errors over a
    # critically damped distance of the look-ahead at this speed).
    heading_error = math.atan2(float(np.cross(tangent, forward) @ up), float(forward @ tangent))  # > 0: points left
    offset = float(np.cross(tangent, rear - closest) @ up)  # > 0: left of the path
    moving = max(abs(speed), SOFT_SPEED)
    span = max(car.look_ahead * moving, 0.5 * car.wheelbase)
    kappa = float(path.sample(s + moving * 0.5 * car.steering_response, path.curvature))
    sinc = math.sin(heading_error) / heading_error if abs(heading_error) > 1e-9 else 1.0
    yaw_rate = moving * (kappa * math.cos(heading_error) / max(1.0 - kappa * offset, 0.2)
                         - 2.0 / span * heading_error - offset * sinc / (span * span))
    wanted = math.atan(car.wheelbase * yaw_rate / moving)
    wanted = min(max(wanted, -car.max_steering), car.max_steering)
    if car.steering_response > 0.0:
        rate = car.max_steering / car.steering_response * h
        wanted = state.steer[k] + min(max(wanted - state.steer[k], -rate), rate)
    state.steer[k] = wanted

    # Speed: the profile, held to what the curvature ahead allows when braking in time.
    # Planned from the front axle (the car's front enters a turn first), braking at a share of
    # the lateral limit.
    brake = BRAKING_SHARE * car.max_lateral_acceleration
    front = s + car.wheelbase
    horizon = speed * speed / (2.0 * brake) + 1.0
    ahead, distance = path.ahead(front, horizon)
    here = np.array([front if path.cyclic else min(front, path.length)])
    ahead, distance = np.concatenate([here, ahead]), np.concatenate([[0.0], distance])
    kappa = np.interp(ahead % path.length if path.cyclic else ahead, path.s, path.sharpness)
    limit = np.minimum(np.sqrt(car.max_lateral_acceleration / np.maximum(kappa, 1e-9)),
                       abs(target) * np.interp(ahead % path.length if path.cyclic else ahead, path.s, path.speed))
    cruise = float(np.min(np.sqrt(limit * limit + 2.0 * brake * distance)))
    if not path.cyclic:
        # Stop with the chassis' centre (ahead of the rear axle by -rear_x) at the end.
        cruise = min(cruise, math.sqrt(2.0 * brake * max(path.length - s + car.rear_x, 0.0)))
    # Faster than that: the driver brakes too (the drive alone slows at its torque's pace).
    braking = min(max((abs(speed) - cruise) / BRAKING_SPEED, 0.0), 1.0)
    return wanted, math.copysign(cruise, target if target else 1.0), braking
