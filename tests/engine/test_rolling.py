"""Round shapes roll on their true surface: spheres and cylinders down slopes at the accelerations
of rolling without slipping, a wheel coasting on flat ground, a cylinder rolling at a constant
height (no polygon bumps), a ball rolling over a box's edge without a jump."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine

from .rigid_scenes import G, uv_sphere

RADIUS = 0.4


def cylinder_mesh(radius, length, centre=(0, 0, 0), axis=(1.0, 0.0, 0.0), segments=48):
    """A closed cylinder along ``axis`` (a unit vector) and the frame (3, 3) whose z is that axis."""
    z = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.array([0.0, 0.0, 1.0]) if abs(z[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    frame = np.stack([x, y, z], axis=1)
    angle = 2 * math.pi * np.arange(segments) / segments
    ring = np.stack([radius * np.cos(angle), radius * np.sin(angle), np.zeros(segments)], axis=1)
    local = np.concatenate([ring - [0, 0, length / 2], ring + [0, 0, length / 2]])
    verts = local @ frame.T + np.asarray(centre, float)
    faces = [list(range(segments))[::-1], list(range(segments, 2 * segments))]
    faces += [[k, (k + 1) % segments, segments + (k + 1) % segments, segments + k] for k in range(segments)]
    return verts, faces, frame


def slope(degrees, friction):
    theta = math.radians(degrees)
    normal = np.array([0.0, -math.sin(theta), math.cos(theta)])
    downhill = np.array([0.0, -math.cos(theta), -math.sin(theta)])
    return engine.Plane.from_point_normal((0, 0, 0), normal, friction=friction), normal, downhill, theta


def run(builder, frames, settings=None):
    solver = engine.Solver(builder.finalize(), settings or engine.SolverSettings())
    state = solver.make_state()
    times, positions, velocities, spins = [], [], [], []
    for _ in range(frames):
        solver.step_frame(state)
        times.append(state.time)
        positions.append(state.bodies.position[0].copy())
        velocities.append(state.bodies.velocity[0].copy())
        spins.append(state.bodies.angular_velocity[0].copy())
    return solver, np.array(times), np.array(positions), np.array(velocities), np.array(spins)


def fitted_acceleration(times, distance):
    """a of the best fit s = s0 + v0 t + a t^2 / 2."""
    design = np.stack([np.ones_like(times), times, 0.5 * times ** 2], axis=1)
    return np.linalg.lstsq(design, distance, rcond=None)[0][2]


@pytest.mark.compiled_only
@pytest.mark.parametrize("degrees", [10, 20, 30])
def test_a_sphere_rolls_down_a_slope_at_five_sevenths_g_sin_theta_without_slipping(degrees):
    plane, normal, downhill, theta = slope(degrees, friction=0.8)
    assert 0.8 > (2 / 7) * math.tan(theta)  # friction enough to roll without slipping
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*uv_sphere(RADIUS, centre=normal * RADIUS), shape="sphere", friction=0.8)
    builder.add_collider(plane)
    _, t, x, v, w = run(builder, 36)
    keep = t > 0.25  # once it has settled into rolling
    a = fitted_acceleration(t[keep], (x[keep] - x[0]) @ downhill)
    expected = 5 / 7 * G * math.sin(theta)
    assert abs(a - expected) / expected < 0.03, (a, expected)
    # Rolling, not slipping: the contact point is at rest, v = omega x r.
    contact = v[-1] + np.cross(w[-1], -normal * RADIUS)
    assert np.linalg.norm(contact) < 0.01 * np.linalg.norm(v[-1])
    # On the slope all the while: the centre stays one radius above it.
    assert np.abs(x @ normal - RADIUS).max() < 1e-3


@pytest.mark.compiled_only
@pytest.mark.parametrize("degrees", [10, 20, 30])
def test_a_cylinder_rolls_down_a_slope_at_two_thirds_g_sin_theta_without_slipping(degrees):
    plane, normal, downhill, theta = slope(degrees, friction=0.8)
    verts, faces, frame = cylinder_mesh(RADIUS, 0.5, centre=normal * RADIUS, axis=(1.0, 0.0, 0.0))
    builder = engine.ModelBuilder()
    builder.add_rigid_body(verts, faces, shape="cylinder", shape_frame=frame, friction=0.8)
    builder.add_collider(plane)
    _, t, x, v, w = run(builder, 36)
    keep = t > 0.25
    a = fitted_acceleration(t[keep], (x[keep] - x[0]) @ downhill)
    expected = 2 / 3 * G * math.sin(theta)
    assert abs(a - expected) / expected < 0.03, (a, expected)
    contact = v[-1] + np.cross(w[-1], -normal * RADIUS)
    assert np.linalg.norm(contact) < 0.01 * np.linalg.norm(v[-1])
    assert np.abs(x @ normal - RADIUS).max() < 1e-3


def coasting(radius, width, speed, frames=48):
    """A wheel (a cylinder along y) set rolling along x on flat ground: ``run``'s motion."""
    verts, faces, frame = cylinder_mesh(radius, width, centre=(0, 0, radius), axis=(0.0, 1.0, 0.0))
    builder = engine.ModelBuilder()
    builder.add_rigid_body(verts, faces, shape="cylinder", shape_frame=frame, friction=0.9,
                           velocity=(speed, 0, 0), angular_velocity=(0, speed / radius, 0))
    builder.add_collider(engine.Plane(friction=0.9))
    return run(builder, frames)


@pytest.mark.compiled_only
@pytest.mark.parametrize("speed", [2.0, 5.0, 12.0])
def test_a_wheel_coasting_on_flat_ground_keeps_its_speed(speed):
    _, t, x, v, w = coasting(RADIUS, 0.25, speed)
    assert np.linalg.norm(v[-1]) >= 0.95 * speed
    assert np.abs(x[:, 1]).max() < 0.01 * x[-1, 0]  # and straight on


@pytest.mark.compiled_only
@pytest.mark.parametrize("radius, width, speed", [(0.1, 0.06, 8.0), (0.15, 0.09, 12.0), (0.2, 0.12, 12.0),
                                                  (0.1, 0.03, 5.0)])
def test_a_narrow_wheel_coasting_fast_rolls_on_straight_without_slipping(radius, width, speed):
    """A wheel narrower than its radius turning a fifth to a half radian a substep: its rim points
    come down to the ground faster than its thin side allows the contacts to take back, and the
    sweep of fast bodies (collision.sweep) looks at each; a rim point touching the ground at the
    bottom of its turn is no impact, so the wheel rolls on straight, its speed and spin kept (it
    was stopped turning at each touch: 8 m/s on a 10 cm wheel lost 15% and veered 2.6 m in 2 s)."""
    _, t, x, v, w = coasting(radius, width, speed)
    assert np.linalg.norm(v[-1]) >= 0.99 * speed
    assert abs(np.linalg.norm(w[-1]) * radius - np.linalg.norm(v[-1])) < 0.01 * speed  # rolling, not slipping
    assert np.abs(x[:, 1]).max() < 0.01 and np.ptp(x[:, 2]) < 1e-4  # straight on, upright


@pytest.mark.compiled_only
@pytest.mark.parametrize("turns_per_second", [0.5, 1.0, 2.0])
def test_a_rolling_cylinder_keeps_its_height_over_a_full_turn(turns_per_second):
    """No polygon: the centre of a cylinder rolling on a plane stays at its radius within 0.1 mm."""
    omega = 2 * math.pi * turns_per_second
    verts, faces, frame = cylinder_mesh(RADIUS, 0.3, centre=(0, 0, RADIUS), axis=(0.0, 1.0, 0.0))
    builder = engine.ModelBuilder()
    builder.add_rigid_body(verts, faces, shape="cylinder", shape_frame=frame, friction=0.9,
                           velocity=(omega * RADIUS, 0, 0), angular_velocity=(0, omega, 0))
    builder.add_collider(engine.Plane(friction=0.9))
    frames = int(math.ceil(24 / turns_per_second)) + 2
    _, t, x, v, w = run(builder, frames)
    assert x[-1, 0] > 2 * math.pi * RADIUS * 0.95  # it did roll a full turn
    assert np.ptp(x[:, 2]) < 1e-4 and abs(x[:, 2].mean() - RADIUS) < 1e-4


@pytest.mark.compiled_only
@pytest.mark.parametrize("speed", [0.5, 1.5, 3.0])
def test_a_ball_rolls_over_a_boxs_edge_without_a_jump(speed):
    """On a flat box top, then round its edge and down: the ball's centre never rises."""
    half = np.array([1.0, 1.0, 0.5])
    top = 2 * half[2]
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*uv_sphere(RADIUS, centre=(0.0, 0.0, top + RADIUS)), shape="sphere", friction=0.8,
                           velocity=(speed, 0, 0), angular_velocity=(0, speed / RADIUS, 0))
    m = np.eye(4)
    m[:3, 3] = (-half[0] + 0.5, 0, half[2])
    builder.add_collider(engine.Box(half_extents=tuple(half), transform=m, friction=0.8))
    builder.add_collider(engine.Plane(friction=0.8))
    _, t, x, v, w = run(builder, 60)
    assert x[-1, 0] > 0.5 + RADIUS and x[-1, 2] < top  # it went over the edge and down
    rise = np.diff(x[:, 2])
    assert x[:, 2].max() < top + RADIUS + 1e-3  # never above its rolling height: no jump at the edge
    assert rise.max() < 1e-3
