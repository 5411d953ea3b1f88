"""A vehicle: a chassis body and the wheels its Wheel Suspension connectors hold, with what the
driver sets (target speed, throttle, steering, brakes; numbers or tracks) and, optionally, a path
to follow. ``make_vehicle`` checks and lays it out at rest (``ModelBuilder.add_vehicle``);
``vehicles.control`` drives it every substep.

Everything is expressed in the chassis' body frame (its principal axes at the centre of mass) or,
for an axle, in its wheel's body frame, so the controller needs only the current poses.

Shapes: W wheels, A axles (wheels grouped by where they are along the chassis).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..constraints.joints import KINDS
from ..errors import JakobsenError
from ..geometry import quaternions as quat
from ..geometry.kinds import ShapeKind
from .path import Path, make_path

DRIVES = ("rear", "front", "all", "none")
DIFFERENTIALS = ("open", "locked")
GRAVITY = 9.81  # for sizing the locked differential's hold (the driver reads the solver's)
# The speed regulator: the drive closes a wheel-speed error within RESPONSE s (proportional, on
# the driven wheels' mean speed), and an integral on the chassis' own speed removes what rolling
# resistance, slopes and slip leave, over INTEGRAL s.
RESPONSE = 0.15
INTEGRAL = 1.0
# The integral holds while the speed error still closes at more than SETTLING of the rate the
# drive alone closes it (error / RESPONSE), farther than NEAR of the target (and NEAR_SPEED m/s)
# from it: on the way to the target the drive closes the error itself, and what the integral
# gathered then carried the car past it (a PI step response: a 0.3 m toy overshot 0.5 m/s by
# 9.5%, a car with mixed wheels by 13%, decaying over seconds). Held by a load (a slope, rolling
# resistance), the error stops closing and the integral takes it out.
SETTLING = 0.5
NEAR = 0.02
NEAR_SPEED = 0.01
# A handbrake at 1 holds the rear wheels with this many times the Brake Torque (they lock).
HANDBRAKE = 4.0
# Drift at 1 takes this fraction of the rear wheels' grip away at full steering lock.
DRIFT_GRIP = 0.6


@dataclass(frozen=True)
class Vehicle:
    """One vehicle at rest. Per wheel (W,): body, joint, brake motor, radius, axle in the wheel's
    frame pointing to the car's left (so forward rolling spins positively about it), hub position
    along forward and left in the chassis frame, axle index (0: the front), steered, driven, and
    whether its connector's Z points up (+1) or down (-1). Settings are numbers or callables of t."""

    name: str
    chassis: int
    wheels: np.ndarray
    joints: np.ndarray
    brakes: np.ndarray
    radius: np.ndarray
    axle_local: np.ndarray
    longitudinal: np.ndarray
    lateral: np.ndarray
    axle: np.ndarray
    steered: np.ndarray
    driven: np.ndarray
    steer_sign: np.ndarray
    forward_local: np.ndarray
    left_local: np.ndarray
    up_local: np.ndarray
    rear_x: float
    wheelbase: float
    rear_point_local: np.ndarray  # (3,) the rear axle's centre in the chassis frame
    roll_pairs: np.ndarray  # (k, 2) positions in `wheels` of an axle's left and right wheel
    roll_stiffness: np.ndarray  # (k,) N/m
    pivot_local: np.ndarray  # (W, 3) each connector's pivot in the chassis frame
    travel_axis_local: np.ndarray  # (W, 3) each connector's Z in the chassis frame
    mass: float  # chassis and wheels, kg
    target_speed: object
    throttle: object
    motor_torque: object
    steering: object
    brake: object
    handbrake: object
    max_steering: float
    ackermann: bool
    locked: bool
    traction_control: bool
    brake_torque: float
    rolling_resistance: float
    friction: np.ndarray  # (W,) the wheels' own friction
    path: Path | None
    look_ahead: float
    max_lateral_acceleration: float
    steering_response: float
    drift: float

    @property
    def count(self) -> int:
        return len(self.wheels)


def _setting(value, what: str, where: str, *, low=-math.inf, high=math.inf):
    """A number within [low, high], or a callable (a Track: its samples are checked)."""
    samples = getattr(value, "values", None)
    if callable(value) and samples is None:
        return value  # a function of t: checked when called (values_at)
    arr = np.asarray(samples if samples is not None else [value], dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr < low) or np.any(arr > high):
        bounds = f" within {low:g} and {high:g}" if math.isfinite(low) and math.isfinite(high) else \
            (f" of at least {low:g}" if math.isfinite(low) else "")
        raise JakobsenError(f"{where}: its {what} must be a finite number{bounds}, got {value!r}")
    return value if samples is not None else float(value)


def make_vehicle(builder, chassis: int, wheel_joints, *, name: str, forward, up=(0.0, 0.0, 1.0),
                 drive="rear", differential="open", target_speed=5.0, throttle=1.0, motor_torque=2000.0,
                 steering=0.0, brake=0.0, handbrake=0.0, max_steering=math.radians(35.0), ackermann=True,
                 traction_control=True,
                 brake_torque=5000.0, rolling_resistance=0.01, initial_speed=0.0, suspension=None, wheel_friction=None,
                 wheel_radii=None, path=None, path_speed=None, path_cyclic=False, look_ahead=0.6,
                 max_lateral_acceleration=5.0, steering_response=0.3, drift=0.0) -> Vehicle:
    """Check and lay out a vehicle from the builder's bodies and joints (see
    ``ModelBuilder.add_vehicle``); sets the wheels' suspension and the bodies' initial speed, and
    adds one brake motor per wheel."""
    where = f"vehicle '{name}'"
    bodies, joints = builder._bodies, builder._joints
    if not (0 <= chassis < len(bodies)):
        raise JakobsenError(f"{where}: its chassis is not a body of this model")
    if drive not in DRIVES:
        raise JakobsenError(f"{where}: drive must be one of {', '.join(DRIVES)}; got {drive!r}")
    if differential not in DIFFERENTIALS:
        raise JakobsenError(f"{where}: differential must be open or locked; got {differential!r}")
    wheel_joints = [int(j) for j in wheel_joints]
    if len(wheel_joints) < 2 or len(set(wheel_joints)) != len(wheel_joints):
        raise JakobsenError(f"{where}: it needs at least two different Wheel Suspension connectors")
    wheels = []
    for j in wheel_joints:
        if not (0 <= j < len(joints)):
            raise JakobsenError(f"{where}: connector {j} does not exist")
        spec = joints[j]
        if KINDS[spec["kind"]] != "wheel_suspension":
            raise JakobsenError(f"{where}: connector '{spec['name']}' is not a Wheel Suspension")
        if spec["a"] != chassis or spec["b"] is None:
            raise JakobsenError(f"{where}: connector '{spec['name']}' must hold the chassis as Object A and its "
                                "wheel as Object B")
        wheels.append(spec["b"])
    if len(set(wheels)) != len(wheels) or chassis in wheels:
        raise JakobsenError(f"{where}: each wheel must be a different body, and not the chassis")
    for k in [chassis] + wheels:
        if bodies[k].mode.name != "DYNAMIC":
            raise JakobsenError(f"{where}: '{bodies[k].name}' must be a dynamic body (Dynamic On)")

    up = np.asarray(up, float)
    f = np.asarray(forward, float)
    if up.shape != (3,) or f.shape != (3,) or not np.all(np.isfinite(up)) or not np.all(np.isfinite(f)):
        raise JakobsenError(f"{where}: forward and up must be 3 finite numbers each")
    up = up / max(np.linalg.norm(up), 1e-300)
    f = f - up * (f @ up)
    if np.linalg.norm(f) < 1e-6:
        raise JakobsenError(f"{where}: its forward direction is vertical")
    f /= np.linalg.norm(f)
    left = np.cross(up, f)

    c = bodies[chassis]
    to_chassis = quat.conjugate(c.orientation)
    hubs = np.array([joints[j]["pivot"] for j in wheel_joints])
    x_long = (hubs - c.position) @ f
    y_lat = (hubs - c.position) @ left
    W = len(wheels)

    # Axles: wheels within a wheel radius of each other along the chassis, the front one first.
    radii = np.zeros(W)
    axles_local = np.zeros((W, 3))
    for k, (b, j) in enumerate(zip(wheels, wheel_joints)):
        spec = bodies[b]
        axle = np.asarray(joints[j]["frame"])[:, 0]
        if abs(axle @ f) > math.cos(math.radians(60.0)):
            raise JakobsenError(f"{where}: the axle (X axis) of connector '{joints[j]['name']}' points along the "
                                "car's forward direction; a wheel's axle runs across the car")
        axle = axle if axle @ left >= 0 else -axle
        axles_local[k] = quat.rotate(quat.conjugate(spec.orientation), axle)
        if wheel_radii is not None:
            radii[k] = float(np.asarray(wheel_radii, float).reshape(-1)[k])
        elif spec.shape == ShapeKind.CYLINDER:
            radii[k] = float(spec.shape_params[0])
        else:
            p = spec.points
            radial = p - np.outer(p @ axles_local[k], axles_local[k])
            radii[k] = float(np.max(np.linalg.norm(radial, axis=1))) if len(p) else 0.0
    if not np.all(np.isfinite(radii)) or np.any(radii <= 0):
        raise JakobsenError(f"{where}: every wheel needs a positive radius")
    order = np.argsort(-x_long, kind="stable")
    axle_of = np.zeros(W, np.int64)
    group = 0
    for prev, k in zip(order[:-1], order[1:]):
        if x_long[prev] - x_long[k] > 0.5 * max(radii[prev], radii[k]):
            group += 1
        axle_of[k] = group
    axle_count = group + 1
    if axle_count < 2 and drive != "none":
        raise JakobsenError(f"{where}: its wheels stand on one axle across the car; a vehicle needs wheels at "
                            "the front and the back (check its forward direction; only a trailer, with Drive "
                            "None, may stand on one axle)")
    front = (axle_of == 0) if axle_count > 1 else np.zeros(W, bool)  # a trailer's one axle does not steer
    driven = {"rear": ~front, "front": front, "all": np.ones(W, bool), "none": np.zeros(W, bool)}[drive]
    rear_x = float(np.mean(x_long[axle_of == axle_count - 1])) if axle_count > 1 else float(np.min(x_long))
    rear_point = c.position + f * rear_x + left * float(np.mean(y_lat[axle_of == axle_count - 1]))
    wheelbase = float(np.mean(x_long[axle_of == 0])) - rear_x

    # Suspension per axle: free at rest, moving up by at most travel.
    suspension = suspension or {}
    roll_pairs, roll_k = [], []
    for g in range(axle_count):
        settings = suspension.get("front" if g == 0 else "rear")
        members = np.flatnonzero(axle_of == g)
        if settings is not None:
            rest = _setting(settings.get("rest", 0.0), "suspension rest", where)
            travel = _setting(settings.get("travel", 0.2), "suspension travel", where, low=1e-6)
            stiffness = _setting(settings.get("stiffness", 0.0), "suspension stiffness", where, low=0.0)
            damping = _setting(settings.get("damping", 0.0), "suspension damping", where, low=0.0)
            for k in members:
                spec = joints[wheel_joints[k]]
                spec["lower"][2], spec["upper"][2] = rest, rest + travel
                for spring in builder._springs:
                    if spring["name"] == spec["name"] and spring["linear"]:
                        spring["rest"], spring["stiffness"], spring["damping"] = rest, stiffness, damping
            anti_roll = _setting(settings.get("anti_roll", 0.0), "anti-roll stiffness", where, low=0.0)
            if anti_roll > 0 and len(members) >= 2:
                roll_pairs.append((members[np.argmax(y_lat[members])], members[np.argmin(y_lat[members])]))
                roll_k.append(anti_roll)

    steer_sign = np.array([1.0 if np.asarray(joints[j]["frame"])[:, 2] @ up >= 0 else -1.0 for j in wheel_joints])
    pivot_local = quat.rotate(to_chassis[None], hubs - c.position)
    travel_axis = quat.rotate(to_chassis[None], np.array([np.asarray(joints[j]["frame"])[:, 2] for j in wheel_joints]))

    if wheel_friction is not None:
        grip = _setting(wheel_friction, "wheel friction", where, low=0.0)
        for b in wheels:
            bodies[b].friction = grip

    speed0 = _setting(initial_speed, "initial speed", where)
    if speed0:
        for k in [chassis] + wheels:
            bodies[k].velocity = bodies[k].velocity + f * speed0
        for k, b in enumerate(wheels):
            bodies[b].angular_velocity = bodies[b].angular_velocity + \
                quat.rotate(bodies[b].orientation, axles_local[k]) * (speed0 / radii[k])

    # One brake per wheel: a drive to no spin relative to the chassis, with the brake's torque
    # (and the rolling resistance's, which is a brake that never lets go), set every substep.
    brakes = np.array([builder.add_motor(b, chassis, quat.rotate(bodies[b].orientation, axles_local[k]),
                                         name=f"{name} brake {bodies[b].name}", kind="angular", mode="speed",
                                         target=0.0, torque=0.0) for k, b in enumerate(wheels)], np.int64)

    # A locked differential: each driven wheel of an axle is driven to turn with its neighbour
    # (a drive of no relative spin about its axle, solved with the contacts), with torque enough
    # to hold against both tyres' full grip. That bound is generous (four times the car's weight
    # at the rim) and the solver holds it to what a substep resolves, as every motor; it is not
    # warned about (warn=False): the user never made this motor and cannot set its torque.
    mass = float(c.mass + sum(bodies[b].mass for b in wheels))
    if differential == "locked":
        lock = 4.0 * mass * GRAVITY * float(np.mean(radii))
        for g in range(axle_count):
            members = [k for k in np.flatnonzero((axle_of == g) & driven)]
            members.sort(key=lambda k: -y_lat[k])
            for k0, k1 in zip(members[:-1], members[1:]):
                builder.add_motor(wheels[k0], wheels[k1], quat.rotate(bodies[wheels[k0]].orientation, axles_local[k0]),
                                  name=f"{name} differential {bodies[wheels[k0]].name}", kind="angular", mode="speed",
                                  target=0.0, torque=lock, warn=False)

    the_path = None
    if path is not None:
        wheelbase = float(np.max(x_long) - np.min(x_long))
        the_path = make_path(path, path_speed, cyclic=path_cyclic, up=up, smoothing=max(wheelbase, 0.5),
                             where=where)

    return Vehicle(
        name=name, chassis=int(chassis), wheels=np.array(wheels, np.int64), joints=np.array(wheel_joints, np.int64),
        brakes=brakes, radius=radii, axle_local=axles_local, longitudinal=x_long, lateral=y_lat, axle=axle_of,
        steered=front, driven=driven, steer_sign=steer_sign,
        forward_local=quat.rotate(to_chassis, f), left_local=quat.rotate(to_chassis, left),
        up_local=quat.rotate(to_chassis, up), rear_x=rear_x, wheelbase=wheelbase,
        rear_point_local=quat.rotate(to_chassis, rear_point - c.position),
        roll_pairs=np.array(roll_pairs, np.int64).reshape(-1, 2), roll_stiffness=np.array(roll_k, float),
        pivot_local=pivot_local, travel_axis_local=travel_axis,
        mass=mass,
        target_speed=_setting(target_speed, "target speed", where),
        throttle=_setting(throttle, "throttle", where, low=0.0, high=1.0),
        motor_torque=_setting(motor_torque, "motor torque", where, low=0.0),
        steering=_setting(steering, "steering angle", where, low=-math.pi / 2, high=math.pi / 2),
        brake=_setting(brake, "brake", where, low=0.0, high=1.0),
        handbrake=_setting(handbrake, "handbrake", where, low=0.0, high=1.0),
        max_steering=_setting(max_steering, "maximum steering angle", where, low=0.0, high=math.pi / 2),
        ackermann=bool(ackermann), locked=differential == "locked", traction_control=bool(traction_control),
        brake_torque=_setting(brake_torque, "brake torque", where, low=0.0),
        rolling_resistance=_setting(rolling_resistance, "rolling resistance", where, low=0.0, high=10.0),
        friction=np.array([bodies[b].friction for b in wheels]), path=the_path,
        look_ahead=_setting(look_ahead, "look ahead", where, low=0.0),
        max_lateral_acceleration=_setting(max_lateral_acceleration, "maximum lateral acceleration", where, low=1e-3),
        steering_response=_setting(steering_response, "steering response", where, low=0.0),
        drift=_setting(drift, "drift", where, low=0.0, high=1.0),
    )


# The most a wheel may turn in one substep (rad) before its contact loses grip and speed: the
# rolling contact is solved at the substep's poses, and a car on 0.33 m wheels at 10 substeps of
# 1/240 s held its line and speed up to 12 m/s (0.15 rad) and drifted and slowed beyond.
MAX_WHEEL_TURN = 0.15


def vehicle_warnings(vehicles, h: float, substeps: int) -> list[str]:
    """The vehicles whose wheels turn more than MAX_WHEEL_TURN a substep at their target speed
    (the largest it takes), with the substeps that would resolve them."""
    out = []
    for car in vehicles:
        target = car.target_speed
        samples = getattr(target, "values", None)
        if callable(target) and samples is None:
            continue
        throttle = getattr(car.throttle, "values", car.throttle)
        if not callable(throttle) and not np.any(np.asarray(throttle, dtype=np.float64) > 0.0):
            continue  # (never driven: a toy left at Throttle 0 was told of a speed it never drives at)
        fastest = float(np.max(np.abs(samples))) if samples is not None else abs(float(target))
        turn = fastest / float(np.min(car.radius)) * h
        if turn > MAX_WHEEL_TURN:
            need = int(math.ceil(substeps * turn / MAX_WHEEL_TURN))
            # As many digits as show the turn above the limit (0.1515 is not "0.15, more than the 0.15").
            shown = next(text for text in (f"{turn:.{d}g}" for d in range(3, 10))
                         if float(text) > MAX_WHEEL_TURN or text == f"{turn:.9g}")
            out.append(f"vehicle '{car.name}': at {fastest:g} m/s its wheels turn {shown} rad a substep, more than "
                       f"the {MAX_WHEEL_TURN:g} their contacts resolve at {substeps} substeps: it would lose speed and "
                       f"drift off its line; use at least {need} substeps")
    return out
