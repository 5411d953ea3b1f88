"""Springs, motors and the wheel suspension as physics: frequencies, sags, decays, torques."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import JakobsenError

from .rigid_scenes import G, box_mesh

NO_GRAVITY = engine.SolverSettings(gravity=(0.0, 0.0, 0.0))


def crossings(times, values):
    """Times where values cross zero upwards (linear interpolation)."""
    out = []
    for k in range(1, len(values)):
        if values[k - 1] < 0.0 <= values[k]:
            out.append(times[k - 1] + (times[k] - times[k - 1]) * -values[k - 1] / (values[k] - values[k - 1]))
    return np.array(out)


def hanging_mass(k=1000.0, c=0.0, mass=10.0, start=0.0, settings=None, **spring):
    """A 10 kg box on a vertical spring from a world anchor 1 m above its top (rest length 1 m),
    its top ``start`` m below the rest position."""
    builder = engine.ModelBuilder()
    body = builder.add_rigid_body(*box_mesh((0.2,) * 3, centre=(0, 0, -1.1 - start)), name="weight", mass=mass,
                                  shape="box")
    builder.add_spring(None, body, (0, 0, 0), (0, 0, -1.0 - start), name="spring", rest_length=1.0, stiffness=k,
                       damping=c, **spring)
    solver = engine.Solver(builder.finalize(), settings or engine.SolverSettings())
    return solver, solver.make_state()


def run(solver, state, seconds, probe):
    times, values = [], []
    for _ in range(int(round(24 * seconds))):
        solver.step_frame(state)
        times.append(state.time)
        values.append(probe(state))
    return np.array(times), np.array(values)


def test_a_mass_on_a_spring_oscillates_at_sqrt_k_over_m():
    k, m = 1000.0, 10.0
    solver, state = hanging_mass(k=k, mass=m, start=0.1, settings=NO_GRAVITY)
    times, z = run(solver, state, 4.0, lambda s: s.bodies.position[0, 2] + 1.1)
    period = np.diff(crossings(times, z)).mean()
    assert abs(2 * math.pi / period - math.sqrt(k / m)) / math.sqrt(k / m) < 0.03
    assert abs(z.max() - 0.1) < 0.005  # undamped: it keeps its amplitude


def test_a_mass_on_a_spring_sags_m_g_over_k():
    k, m = 1000.0, 10.0
    c = 2 * math.sqrt(k * m)  # critically damped, so it settles quickly
    solver, state = hanging_mass(k=k, c=c, mass=m)
    run(solver, state, 3.0, lambda s: 0.0)
    sag = -1.1 - state.bodies.position[0, 2]
    assert abs(sag - m * G / k) / (m * G / k) < 0.05


def test_spring_damping_decays_the_amplitude_as_exp_minus_c_t_over_2m():
    k, m, c = 1000.0, 10.0, 20.0  # damping ratio 0.1
    solver, state = hanging_mass(k=k, c=c, mass=m, start=0.1, settings=NO_GRAVITY)
    times, z = run(solver, state, 3.0, lambda s: s.bodies.position[0, 2] + 1.1)
    peaks = [(times[i], -z[i]) for i in range(1, len(z) - 1) if -z[i] > -z[i - 1] and -z[i] >= -z[i + 1]]
    (t0, a0), (t1, a1) = peaks[0], peaks[-1]
    measured = math.log(a0 / a1) / (t1 - t0)
    assert abs(measured - c / (2 * m)) / (c / (2 * m)) < 0.05


@pytest.mark.compiled_only
def test_an_angular_spring_twists_back_at_sqrt_k_over_i():
    k, size, m = 50.0, 0.4, 64.0
    inertia = m * (size ** 2 + size ** 2) / 12
    builder = engine.ModelBuilder()
    body = builder.add_rigid_body(*box_mesh((size,) * 3), name="wheel", mass=m, shape="box")
    builder.add_spring(None, body, (0, 0, 0), name="torsion", kind="angular", angular_stiffness=k)
    builder.add_joint("hinge", None, body, (0, 0, 0), axis=(0, 0, 1))
    solver = engine.Solver(builder.finalize(), NO_GRAVITY)
    state = solver.make_state()
    state.bodies.angular_velocity[0] = (0, 0, 0.5)
    times, w = run(solver, state, 6.0, lambda s: s.bodies.angular_velocity[0, 2])
    period = np.diff(crossings(times, w)).mean()
    expected = math.sqrt(k / inertia)
    assert abs(2 * math.pi / period - expected) / expected < 0.03


def test_a_spring_stretched_past_its_elastic_limit_keeps_part_of_the_stretch():
    # Pulled 0.3 m down by hand (a servo), it gives way beyond 0.1 m: the new rest is ~0.2 m longer.
    solver, state = hanging_mass(k=1000.0, c=200.0, start=0.3, settings=NO_GRAVITY, elastic_limits=(0.05, 0.1))
    run(solver, state, 3.0, lambda s: 0.0)
    assert abs(state.bodies.spring_rest[0] - 1.2) < 0.01
    assert abs(-1.1 - state.bodies.position[0, 2] - 0.2) < 0.01  # settles at the new rest


def test_a_spring_breaks_when_stretched_past_its_breaking_length():
    solver, state = hanging_mass(k=1000.0, start=0.0, break_stretch=0.05)  # m g / k = 0.098 m > 0.05
    run(solver, state, 2.0, lambda s: 0.0)
    assert [name for name, _ in solver.broken_connectors(state)] == ["spring"]
    assert state.bodies.position[0, 2] < -5.0  # it fell
    solver, state = hanging_mass(k=1000.0, c=200.0, start=0.0, break_stretch=0.2)
    run(solver, state, 2.0, lambda s: 0.0)
    assert solver.broken_connectors(state) == []


def test_a_stiff_spring_stays_stable():
    solver, state = hanging_mass(k=1e9, c=0.0, mass=1.0)
    run(solver, state, 1.0, lambda s: 0.0)
    assert abs(-1.1 - state.bodies.position[0, 2]) < 1e-3


@pytest.mark.parametrize("settings, message", [
    (dict(anchor_b=(0, 0, 0), rest_length=0.0), "anchors coincide and its rest length is 0"),
    (dict(stiffness=-5.0), "stiffness must be a non-negative number"),
    (dict(damping=float("nan")), "damping must be a non-negative number"),
    (dict(kind="torsion"), "type must be one of"),
])
def test_bad_springs_are_rejected_by_name(settings, message):
    builder = engine.ModelBuilder()
    body = builder.add_rigid_body(*box_mesh((0.2,) * 3), name="crate")
    settings = dict(settings)  # the parameter is shared by the runs on both backends
    anchor_b = settings.pop("anchor_b", (0, 0, 0.1))
    with pytest.raises(JakobsenError, match=f"spring 'Spring': .*{message}"):
        builder.add_spring(None, body, (0, 0, 0), anchor_b, name="Spring", **settings)


# -- motors -----------------------------------------------------------------------------------

def wheel(mass=20.0, size=0.6):
    """A flat square wheel (I about Z = m (a^2 + a^2) / 12) on a hinge to the world, no gravity."""
    builder = engine.ModelBuilder()
    body = builder.add_rigid_body(*box_mesh((size, size, 0.1)), name="wheel", mass=mass, shape="box")
    builder.add_joint("hinge", None, body, (0, 0, 0), axis=(0, 0, 1), name="axle")
    inertia = mass * (size ** 2 + size ** 2) / 12
    return builder, body, inertia


@pytest.mark.compiled_only
def test_an_angular_motor_accelerates_at_torque_over_inertia_then_holds_its_speed_under_a_load():
    torque, target = 12.0, 10.0
    builder, body, inertia = wheel()
    builder.add_motor(body, None, (0, 0, 1), name="motor", mode="speed", target=target, torque=torque)
    solver = engine.Solver(builder.finalize(), NO_GRAVITY)
    state = solver.make_state()
    times, w = run(solver, state, 0.5, lambda s: s.bodies.angular_velocity[0, 2])
    accel = np.polyfit(times, w, 1)[0]
    assert abs(accel - torque / inertia) / (torque / inertia) < 0.05
    run(solver, state, 1.5, lambda s: 0.0)
    assert abs(state.bodies.angular_velocity[0, 2] - target) / target < 0.02


@pytest.mark.compiled_only
@pytest.mark.parametrize("load_ratio", [0.5, 1.5])
def test_a_motor_holds_its_speed_under_a_load_below_its_torque_and_slows_above(load_ratio):
    torque, target = 12.0, 10.0
    builder, body, inertia = wheel()
    builder.add_motor(body, None, (0, 0, 1), name="motor", mode="speed", target=target, torque=torque)
    builder.add_motor(body, None, (0, 0, -1), name="brake", mode="force", torque=load_ratio * torque)
    builder_state = engine.Solver(builder.finalize(), NO_GRAVITY)
    solver, state = builder_state, builder_state.make_state()
    state.bodies.angular_velocity[0] = (0, 0, target)
    times, w = run(solver, state, 1.0, lambda s: s.bodies.angular_velocity[0, 2])
    if load_ratio < 1.0:
        assert np.abs(w - target).max() / target < 0.02
    else:
        decel = -np.polyfit(times, w, 1)[0]
        expected = (load_ratio - 1.0) * torque / inertia
        assert abs(decel - expected) / expected < 0.05


@pytest.mark.compiled_only
def test_a_servo_reaches_and_holds_its_target_angle_against_gravity_without_overshooting():
    # An arm on a horizontal hinge, lifted by a servo to 45 degrees and held there.
    builder = engine.ModelBuilder()
    arm = builder.add_rigid_body(*box_mesh((1.0, 0.1, 0.1), centre=(0.5, 0, 0)), name="arm", mass=5.0, shape="box")
    builder.add_joint("hinge", None, arm, (0, 0, 0), axis=(0, -1, 0))
    builder.add_motor(arm, None, (0, -1, 0), name="servo", mode="servo", target=math.radians(45), torque=60.0)
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()

    def angle(s):
        x = s.bodies.position[0]
        return math.degrees(math.atan2(x[2], x[0]))

    times, angles = run(solver, state, 3.0, angle)
    held = angles[times > 1.5]
    assert np.abs(held - 45.0).max() < 1.0
    assert abs(angles[times <= 1.5][-1] - 45.0) < 0.2  # settled by 1.5 s
    assert angles.max() < 45.0 + 1.0  # no overshoot on the way


@pytest.mark.compiled_only
def test_a_servo_follows_a_target_that_changes_every_frame():
    builder, body, _ = wheel()
    builder.add_motor(body, None, (0, 0, 1), name="servo", mode="servo", torque=50.0,
                      target=lambda t: 0.5 * math.sin(t))
    solver = engine.Solver(builder.finalize(), NO_GRAVITY)
    state = solver.make_state()
    def angle(s):
        _, rotation = solver.body_poses(s)
        return 2 * math.atan2(rotation[0, 3], rotation[0, 0])

    times, angles = run(solver, state, 4.0, angle)
    lag = np.abs(angles - 0.5 * np.sin(times))[times > 1.0]
    assert math.degrees(lag.max()) < 3.0


@pytest.mark.compiled_only
def test_a_linear_motor_pushes_a_slider_to_its_target_speed():
    builder = engine.ModelBuilder()
    cart = builder.add_rigid_body(*box_mesh((0.4, 0.4, 0.4)), name="cart", mass=50.0, shape="box")
    builder.add_joint("slider", None, cart, (0, 0, 0), axis=(1, 0, 0))
    builder.add_motor(cart, None, (1, 0, 0), name="motor", kind="linear", mode="speed", target=2.0, force=100.0)
    solver = engine.Solver(builder.finalize(), NO_GRAVITY)
    state = solver.make_state()
    times, v = run(solver, state, 0.5, lambda s: s.bodies.velocity[0, 0])
    assert abs(np.polyfit(times, v, 1)[0] - 2.0) / 2.0 < 0.05  # 100 N / 50 kg
    run(solver, state, 1.0, lambda s: 0.0)
    assert abs(state.bodies.velocity[0, 0] - 2.0) < 0.02


@pytest.mark.parametrize("settings, message", [
    (dict(torque=-1.0), "torque must be a non-negative finite number"),
    (dict(kind="linear"), "needs a force"),
    (dict(mode="turbo", torque=1.0), "mode must be one of"),
])
def test_bad_motors_are_rejected_by_name(settings, message):
    builder = engine.ModelBuilder()
    body = builder.add_rigid_body(*box_mesh((0.2,) * 3), name="crate")
    with pytest.raises(JakobsenError, match=f"motor 'Motor': .*{message}"):
        builder.add_motor(body, None, (0, 0, 1), name="Motor", **settings)


def test_a_motor_without_a_body_is_rejected():
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh((0.2,) * 3), name="crate")
    with pytest.raises(JakobsenError, match="motor 'Motor': it has no body to drive"):
        builder.add_motor(None, None, (0, 0, 1), name="Motor", torque=1.0)


# -- wheel suspension -------------------------------------------------------------------------

def cylinder_mesh(radius, width, centre, segments=24):
    """A closed cylinder along X."""
    angles = np.linspace(0, 2 * math.pi, segments, endpoint=False)
    ring = np.stack([np.cos(angles), np.sin(angles)], axis=1) * radius
    verts = [(-width / 2, y, z) for y, z in ring] + [(width / 2, y, z) for y, z in ring]
    faces = [list(range(segments))[::-1], list(range(segments, 2 * segments))]
    faces += [[k, (k + 1) % segments, segments + (k + 1) % segments, segments + k] for k in range(segments)]
    return np.array(verts) + np.asarray(centre, float), faces


@pytest.mark.compiled_only
def test_a_car_on_four_suspended_wheels_settles_at_rest_minus_its_weight_share_over_k():
    chassis_mass, k, rest = 400.0, 20000.0, -0.1
    builder = engine.ModelBuilder()
    chassis = builder.add_rigid_body(*box_mesh((1.2, 2.4, 0.3), centre=(0, 0, 0.8)), name="chassis",
                                     mass=chassis_mass, shape="box")
    wheels = []
    for k_x, k_y in ((-1, -1), (1, -1), (-1, 1), (1, 1)):
        centre = (0.75 * k_x, 0.9 * k_y, 0.4)
        wheel_body = builder.add_rigid_body(*cylinder_mesh(0.3, 0.2, centre), name=f"wheel {k_x} {k_y}", mass=15.0,
                                            shape="cylinder", shape_frame=np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]]),
                                            friction=1.0)
        builder.add_joint("wheel_suspension", chassis, wheel_body, centre, frame=np.eye(3),
                          suspension_rest=rest, suspension_stiffness=k, suspension_damping=2000.0,
                          suspension_limits=(-0.3, 0.3), name=f"suspension {k_x} {k_y}")
        wheels.append(wheel_body)
    builder.add_collider(engine.Plane.from_point_normal((0, 0, 0), (0, 0, 1)))
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()
    run(solver, state, 4.0, lambda s: 0.0)
    # Each wheel's offset along the chassis' Z from its connector: rest + its share of the weight / k.
    t, r = solver.body_poses(state)
    rot = engine.quaternions.to_matrix(r)
    expected = rest + chassis_mass * G / 4 / k
    for n, w in enumerate(wheels, start=1):
        pivot = np.array([0.75 * (-1 if n in (1, 3) else 1), 0.9 * (-1 if n < 3 else 1), 0.4])
        on_chassis = rot[0] @ pivot + t[0]
        on_wheel = rot[n] @ pivot + t[n]
        offset = rot[0].T @ (on_wheel - on_chassis)
        assert abs(offset[2] - expected) / (chassis_mass * G / 4 / k) < 0.05
        assert np.abs(offset[:2]).max() < 1e-3  # the wheels keep their axles
    assert np.linalg.norm(state.bodies.velocity) < 0.01  # at rest

