"""Vehicles in the engine: what the driver does (differentials, reverse, handbrake, anti-roll,
paths, speed profiles, trailers), measured as physics against the kinematic models.

The driver is Python and numpy, the same on both kernel backends (their kernels are compared in
test_kernels*.py and tests/addon/test_backends_agree.py); a car on the numpy reference takes about
a second a frame, so these run on the compiled kernels only.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import JakobsenError, Track
from jakobsen_engine.vehicles.path import make_path

from .rigid_scenes import box_mesh
from .vehicle_rigs import G, car, chassis_position, forward_speed, run


@pytest.fixture(autouse=True)
def compiled_only(kernel_backend):
    if kernel_backend == "numpy":
        pytest.skip("vehicles are stepped on the compiled kernels (the drive kernel is held to the reference by "
                    "test_rigid_kernels.py)")


def _circle_radius(points):
    A = np.c_[2 * points, np.ones(len(points))]
    cx, cy, c = np.linalg.lstsq(A, (points ** 2).sum(axis=1), rcond=None)[0]
    return math.sqrt(c + cx * cx + cy * cy), (cx, cy)


def _positions(solver, state, ch):
    return chassis_position(state, ch)


@pytest.mark.parametrize("steer_deg", [8.0, 15.0])
def test_an_open_differential_turns_tighter_than_a_locked_one_and_near_the_bicycle_model(steer_deg):
    radii = {}
    for diff in ("open", "locked"):
        b, _, ch, _ = car(target_speed=2.5, steering=math.radians(steer_deg), differential=diff)
        _, _, samples = run(b, 16.0, record=lambda s, st: chassis_position(st, ch))
        radii[diff], _ = _circle_radius(np.array(samples)[len(samples) // 3:, :2])
    bicycle = math.hypot(2.8 / math.tan(math.radians(steer_deg)), 1.4)
    assert abs(radii["open"] - bicycle) < 0.04 * bicycle
    # Both rear wheels forced to one speed push the car wide.
    assert radii["locked"] > radii["open"]


TOY = dict(radius=0.15, chassis_mass=2.0, wheel_mass=0.1, wheelbase=0.4, track=0.3, width=0.05, travel=0.03)
VAN = dict(radius=0.4, chassis_mass=2500.0, wheel_mass=40.0, wheelbase=3.2, track=1.8, width=0.3)


@pytest.mark.parametrize("rig, target, drive, slope", [
    (TOY, 0.5, "rear", 0.0), (TOY, 1.5, "all", 0.0), ({}, 2.0, "front", 0.0), ({}, 5.0, "rear", 0.0),
    (VAN, 3.0, "all", 0.0), (TOY, 0.5, "rear", 8.0), ({}, 2.0, "front", 6.0)])
def test_the_speed_control_reaches_the_target_speed_without_overshooting_it(rig, target, drive, slope):
    """A car from rest at its Target Speed, on flat ground and up a slope (gravity tilted), from a
    0.15 m toy to a van: it never goes more than 3% past the target and is within 2% of it after
    6 s. (A PI regulator's integral, gathered while the drive closed the error itself, carried a
    toy 9.5% past 0.5 m/s; on a slope the integral is what takes out the error the load leaves.)"""
    g = (0.0, -G * math.sin(math.radians(slope)), -G * math.cos(math.radians(slope)))
    settings = engine.SolverSettings(gravity=g)
    b, _, ch, _ = car(target_speed=target, drive=drive, **rig)
    _, _, speeds = run(b, 8.0, settings=settings, record=lambda solver, state: forward_speed(state, ch))
    speeds = np.array(speeds) / target
    assert speeds.max() < 1.03
    assert np.abs(speeds[6 * 24:] - 1.0).max() < 0.02


@pytest.mark.parametrize("speed", [-2.0, -4.0])
def test_a_negative_target_speed_reverses(speed):
    b, _, ch, _ = car(target_speed=speed)
    _, state, samples = run(b, 6.0, record=lambda s, st: (forward_speed(st, ch), *chassis_position(st, ch)))
    a = np.array(samples)
    assert abs(a[-24:, 0].mean() - speed) < 0.05 * abs(speed)
    assert a[-1, 2] < 0.0  # it went backwards along Y
    assert abs(a[-1, 1]) < 0.02 * abs(a[-1, 2])


def test_the_handbrake_locks_the_rear_wheels_and_the_front_ones_roll():
    b, _, ch, wheels = car(initial_speed=6.0, throttle=0.0, handbrake=1.0)
    solver, state, _ = run(b, 0.5)
    w = state.bodies.angular_velocity
    front = [k for k, h in enumerate(wheels) if "front" in h.name]
    rear = [k for k, h in enumerate(wheels) if "rear" in h.name]
    v = forward_speed(state, ch)
    assert v > 1.0  # still moving
    for k in front:
        assert abs(np.linalg.norm(w[wheels[k].index]) - v / 0.33) < 0.1 * v / 0.33
    for k in rear:
        assert np.linalg.norm(w[wheels[k].index] - w[ch.index]) < 0.05 * v / 0.33


def _roll(state, ch, rest):
    from jakobsen_engine.geometry import quaternions as quat

    rel = quat.multiply(state.bodies.orientation[ch.index:ch.index + 1], quat.conjugate(rest[None]))
    up = quat.rotate(rel, np.array([[0.0, 0.0, 1.0]]))[0]
    return math.degrees(math.acos(min(1.0, up[2])))


@pytest.mark.parametrize("stiffness", [20000.0, 60000.0])
def test_anti_roll_bars_reduce_the_body_roll_in_a_turn(stiffness):
    rolls = []
    k = 1200.0 * G / 4 / 0.05
    for anti_roll in (0.0, stiffness):
        axle = dict(rest=0.0, travel=0.2, stiffness=k, damping=2 * 0.4 * math.sqrt(k * 300.0), anti_roll=anti_roll)
        b, _, ch, _ = car(target_speed=8.0, steering=math.radians(14.0), suspension={"front": axle, "rear": axle})
        rest = np.array(b._bodies[ch.index].orientation)
        _, state, _ = run(b, 6.0)
        rolls.append(_roll(state, ch, rest))
    assert rolls[0] > 0.2  # it rolls in the turn at all (degrees)
    assert rolls[1] < 0.8 * rolls[0]


def test_a_closed_path_is_lapped_on_its_line():
    angles = np.linspace(0.0, 2 * math.pi, 73)[:-1]
    R = 12.0
    points = np.stack([R * np.cos(angles) - R, R * np.sin(angles), np.zeros_like(angles)], axis=1)
    # A circle through the car's start (0, 0) heading +Y, turning left.
    b, _, ch, _ = car(target_speed=5.0, path=points, path_cyclic=True, max_lateral_acceleration=4.0)
    _, _, samples = run(b, 20.0, record=lambda s, st: chassis_position(st, ch))
    p = np.array(samples)[:, :2]
    distance = np.abs(np.linalg.norm(p - [-R, 0.0], axis=1) - R)
    assert distance[48:].max() < 0.4
    turned = np.unwrap(np.arctan2(p[:, 1], p[:, 0] + R))
    assert turned[-1] - turned[0] > 2 * math.pi  # more than a lap: it does not stop at the "end"


@pytest.mark.parametrize("factor", [0.4, 0.7])
def test_the_path_speed_profile_scales_the_target_speed_along_the_path(factor):
    y = np.linspace(0.0, 90.0, 91)
    points = np.stack([np.zeros_like(y), y, np.zeros_like(y)], axis=1)
    speed = np.where(y < 35.0, 1.0, factor)
    b, _, ch, _ = car(target_speed=6.0, path=points, path_speed=speed)
    # (18 s: at 0.4 it passes 50 m at about 14 s; the late stretch is 50-60 m)
    _, _, samples = run(b, 18.0, record=lambda s, st: (forward_speed(st, ch), chassis_position(st, ch)[1]))
    a = np.array(samples)
    early = a[(a[:, 1] > 15) & (a[:, 1] < 25), 0]
    late = a[(a[:, 1] > 50) & (a[:, 1] < 60), 0]
    assert len(early) > 24 and len(late) > 24
    assert abs(early.mean() - 6.0) < 0.3
    assert abs(late.mean() - 6.0 * factor) < 0.05 * 6.0 * factor + 0.1


def test_a_trailer_on_a_ball_and_socket_is_towed_in_line():
    b, _, ch, _ = car(target_speed=4.0, name="car")
    # The trailer: a box on two wheels, its own vehicle without a motor; hitched 0.6 m behind the car.
    t, _, tch, _ = car(builder=b, name="trailer", drive="none", position=(0.0, -6.2), ground=False,
                       wheelbase=2.0, chassis_mass=300.0)
    # Car chassis spans y in [-2, 2]; the trailer's in [-7.8, -4.6] (wheelbase 2 + 1.2, at y = -6.2).
    b.add_joint("ball_socket", ch, tch, (0.0, -2.6, 0.55), name="hitch")
    _, state, samples = run(b, 8.0, record=lambda s, st: (chassis_position(st, ch), chassis_position(st, tch)))
    car_p = np.array([s[0] for s in samples])
    trailer_p = np.array([s[1] for s in samples])
    gap = car_p - trailer_p
    assert np.all(np.abs(np.linalg.norm(gap[:, :2], axis=1) - 6.2) < 0.15)
    assert np.abs(trailer_p[:, 0]).max() < 0.1  # in line behind
    v = np.diff(trailer_p[-24:, 1]) * 24.0
    assert abs(v.mean() - 4.0) < 0.2


def test_a_motor_switched_off_by_a_track_lets_its_body_coast():
    b = engine.ModelBuilder()
    disc = b.add_rigid_body(*box_mesh((1.0, 1.0, 0.1)), name="disc", mass=2.0)
    b.add_joint("hinge", None, disc, (0, 0, 0), axis=(0, 0, 1), name="axle")
    # On for the first second (the samples at 24/s), off after.
    switch = Track(rate=24.0, values=np.r_[np.ones(25), np.zeros(48)])
    b.add_motor(disc, None, (0, 0, 1), name="drive", mode="force", torque=Track(rate=24.0, values=np.full(73, 0.5)),
                enabled=switch)
    settings = engine.SolverSettings(gravity=(0.0, 0.0, 0.0))
    solver = engine.Solver(b.finalize(settings), settings)
    state = solver.make_state()
    spins = []
    for _ in range(72):
        solver.step_frame(state)
        spins.append(state.bodies.angular_velocity[disc.index][2])
    inertia = 2.0 * (1.0 + 1.0) / 12.0  # about Z
    assert abs(spins[23] - 0.5 / inertia * 1.0) < 0.03 * 0.5 / inertia
    assert abs(spins[-1] - spins[30]) < 1e-6 * abs(spins[30]) + 1e-9  # coasting: no torque after the switch


def test_bad_vehicles_are_refused_with_a_message_naming_them():
    b, _, ch, wheels = car(name="first")
    with pytest.raises(JakobsenError, match="vehicle 'second'.*at least two"):
        b.add_vehicle(ch, [0], name="second", forward=(0, 1, 0))
    with pytest.raises(JakobsenError, match="vehicle 'third'.*drive"):
        b.add_vehicle(ch, [0, 1], name="third", forward=(0, 1, 0), drive="sideways")
    with pytest.raises(JakobsenError, match="vertical"):
        b.add_vehicle(ch, [0, 1, 2, 3], name="fourth", forward=(0, 0, 1))
    with pytest.raises(JakobsenError, match="one axle"):
        # Forward along the axles: every wheel is on "one axle" across it.
        b.add_vehicle(ch, [0, 2], name="fifth", forward=(0, 1, 0))
    with pytest.raises(JakobsenError, match="throttle"):
        b.add_vehicle(ch, [0, 1, 2, 3], name="sixth", forward=(0, 1, 0), throttle=2.0)
    with pytest.raises(JakobsenError, match="at least two finite points"):
        b.add_vehicle(ch, [0, 1, 2, 3], name="seventh", forward=(0, 1, 0), path=[(0, 0, 0)])


def test_a_path_is_measured_on_the_ground():
    R = 5.0
    a = np.linspace(0.0, math.pi, 60)
    path = make_path(np.stack([R * np.cos(a), R * np.sin(a), 0.3 * a], axis=1))
    inner = (path.s > 2.0) & (path.s < path.length - 2.0)
    assert np.allclose(path.curvature[inner], 1.0 / R, rtol=0.03)
    assert np.allclose(path.sharpness[inner], 1.0 / R, rtol=0.03)
    k, s, point = path.closest(np.array([0.0, 6.0, 0.0]), -1)
    assert abs(s - path.length / 2) < 0.2


@pytest.mark.parametrize("speed", [18.0, 24.0])
def test_a_fast_car_is_warned_about_and_holds_its_line_at_the_substeps_it_is_told(speed):
    b, _, _, _ = car(target_speed=speed)
    coarse = engine.SolverSettings(substeps=10)
    warnings = [w for w in engine.Solver(b.finalize(coarse), coarse).warnings if "vehicle 'car'" in w]
    assert len(warnings) == 1 and "substeps" in warnings[0]
    need = int(warnings[0].rsplit("at least ", 1)[1].split()[0])
    b, _, ch, _ = car(target_speed=speed)
    fine = engine.SolverSettings(substeps=need)
    solver, state, samples = run(b, speed / (0.3 * G) + 3.0, settings=fine,
                                 record=lambda s, st: (forward_speed(st, ch), *chassis_position(st, ch)))
    assert not [w for w in solver.warnings if "vehicle" in w]
    a = np.array(samples)
    assert abs(a[-24:, 0].mean() - speed) < 0.05 * speed
    assert abs(a[-1, 1]) < 0.01 * a[-1, 2]


def test_a_locked_differential_is_not_warned_about_and_a_user_motor_still_is():
    """The locked differential's hold (sized to four times the car's weight at the rim, more than
    a substep resolves) is the vehicle's own: no warning names it. A motor the user made with
    the same torque on the same wheel still gets its warning."""
    b, _, _, wheels = car(differential="locked")
    settings = engine.SolverSettings(substeps=10)
    warnings = engine.Solver(b.finalize(settings), settings).warnings
    assert not [w for w in warnings if "differential" in w], warnings
    b, _, ch, wheels = car(differential="locked")
    b.add_motor(wheels[0], ch, (1.0, 0.0, 0.0), name="mine", kind="angular", mode="speed", target=0.0,
                torque=16000.0)
    warnings = engine.Solver(b.finalize(settings), settings).warnings
    assert [w for w in warnings if "motor 'mine'" in w and "at most" in w], warnings
    assert not [w for w in warnings if "differential" in w], warnings


def test_the_wheel_turn_warning_shows_a_turn_above_its_limit():
    """Just past the limit (12 m/s on 0.33 m wheels at 10 substeps: 0.1515 rad a substep), the
    warning's two numbers differ: the turn is shown with the digits that put it above 0.15."""
    b, _, _, _ = car(target_speed=12.0)
    settings = engine.SolverSettings(substeps=10)
    warnings = [w for w in engine.Solver(b.finalize(settings), settings).warnings if "vehicle 'car'" in w]
    assert len(warnings) == 1, warnings
    turn = float(warnings[0].split("wheels turn ", 1)[1].split()[0])
    assert turn == pytest.approx(12.0 / 0.33 / 240.0, rel=1e-2) and turn > 0.15, warnings[0]


def test_a_car_that_is_never_driven_is_not_warned_about_its_target_speed():
    """Throttle 0 throughout (a car only braked, or parked, with the default target speed left
    as it is): it never drives at its target speed, so no warning tells it to take more
    substeps for that speed; with throttle, or throttle keyed on later, the warning stands."""
    settings = engine.SolverSettings(substeps=10)
    warned = []
    for throttle in (0.0, engine.Track(rate=24.0, values=np.zeros(49)), 1.0,
                     engine.Track(rate=24.0, values=np.r_[np.zeros(24), np.ones(25)])):
        b, _, _, _ = car(target_speed=18.0, throttle=throttle)
        warned.append(any("vehicle 'car'" in w for w in engine.Solver(b.finalize(settings), settings).warnings))
    assert warned == [False, False, True, True]
