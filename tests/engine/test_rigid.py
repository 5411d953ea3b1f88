"""Rigid bodies as physics: mass properties, spin, bounce, friction, stacking, momentum, rest."""

import math
import re

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import JakobsenError
from jakobsen_engine.geometry import quaternions as quat

from .rigid_scenes import (G, angular_momentum, box_corners_now, box_mesh, boxes_overlap, depth_in_body, energy,
                           rotation, shape_surface, uv_sphere, world)

NO_GRAVITY = engine.SolverSettings(gravity=(0.0, 0.0, 0.0))


def test_cluster_has_the_mesh_mass_centre_and_inertia():
    size = np.array([0.4, 1.0, 2.0])
    mesh = box_mesh(size, centre=(1, 2, 3), rotation=rotation((1, 1, 0), 30))
    solver, state, _ = world((mesh, dict(density=500.0)), settings=NO_GRAVITY)
    b = solver.model.bodies
    mass = 500.0 * size.prod()
    assert np.isclose(b.mass[0], mass)
    np.testing.assert_allclose(b.rest_position[0], [1, 2, 3], atol=1e-12)
    expected = np.sort(mass / 12 * np.array([size[1] ** 2 + size[2] ** 2, size[0] ** 2 + size[2] ** 2,
                                             size[0] ** 2 + size[1] ** 2]))
    np.testing.assert_allclose(np.sort(b.inertia[0]), expected, rtol=1e-9)
    # Jakobsen's four particles carry the same mass, centre and inertia tensor.
    particles = solver.body_cluster_positions(state)[0]
    m = b.mass[0] / 4
    centre = particles.mean(axis=0)
    np.testing.assert_allclose(centre, [1, 2, 3], atol=1e-12)
    d = particles - centre
    second = m * d.T @ d
    inertia_world = np.trace(second) * np.eye(3) - second
    rot = quat.to_matrix(b.rest_orientation[0])
    np.testing.assert_allclose(inertia_world, rot @ np.diag(b.inertia[0]) @ rot.T, rtol=1e-9, atol=1e-9)


def test_mass_given_directly_overrides_density():
    solver, _, _ = world((box_mesh(), dict(mass=3.0)), settings=NO_GRAVITY)
    assert solver.model.bodies.mass[0] == 3.0


def test_spin_about_a_principal_axis_is_kept():
    # The thesis: plain Verlet + projection keeps 17% of a 5 rev/s spin after 1 s at 60 Hz.
    omega = 2 * math.pi * 5.0
    solver, state, _ = world((box_mesh((1, 1, 0.2)), dict(angular_velocity=(0, 0, omega))), settings=NO_GRAVITY)
    for _ in range(48):
        solver.step_frame(state)
    spin = np.linalg.norm(state.bodies.angular_velocity[0])
    assert spin >= 0.99 * omega


def test_asymmetric_body_tumbles_with_constant_angular_momentum():
    mesh = box_mesh((0.3, 1.0, 2.0), rotation=rotation((1, 2, 3), 40))
    solver, state, _ = world((mesh, dict(angular_velocity=(3.0, 1.0, 2.0))), settings=NO_GRAVITY)
    start = angular_momentum(solver, state)
    start_axis = state.bodies.angular_velocity[0] / np.linalg.norm(state.bodies.angular_velocity[0])
    turned = 0.0
    for _ in range(48):
        solver.step_frame(state)
        axis = state.bodies.angular_velocity[0] / np.linalg.norm(state.bodies.angular_velocity[0])
        turned = max(turned, math.degrees(math.acos(np.clip(axis @ start_axis, -1, 1))))
    end = angular_momentum(solver, state)
    assert np.linalg.norm(end - start) / np.linalg.norm(start) < 0.01
    assert turned > 10.0  # the spin axis wanders (precession), it does not settle


@pytest.mark.parametrize("e", [0.3, 0.5, 0.8])
def test_box_bounces_to_e_squared_of_its_drop_height(e):
    height = 1.0
    solver, state, _ = world((box_mesh(centre=(0, 0, 0.5 + height)), dict(shape="box", restitution=e)),
                             colliders=[engine.Plane(restitution=e)])
    bounced, peak = False, 0.0
    for _ in range(24 * 3):
        solver.step_frame(state)
        vz = state.bodies.velocity[0, 2]
        bounced |= vz > 0
        if bounced:
            peak = max(peak, state.bodies.position[0, 2] - 0.5 + max(vz, 0.0) ** 2 / (2 * G))
            if vz < 0:
                break
    assert abs(peak - e * e * height) / (e * e * height) < 0.05


@pytest.mark.compiled_only
def test_perfectly_elastic_box_keeps_its_energy_over_ten_bounces():
    solver, state, _ = world((box_mesh(centre=(0, 0, 1.5)), dict(shape="box", restitution=1.0)),
                             colliders=[engine.Plane(restitution=1.0)])
    start = energy(solver, state)[0]
    bounces, last_vz = 0, 0.0
    while bounces < 10 and state.time < 20:
        solver.step_frame(state)
        vz = state.bodies.velocity[0, 2]
        bounces += last_vz < 0 < vz
        last_vz = vz
    assert bounces == 10
    assert abs(energy(solver, state)[0] - start) / start < 0.02


def incline(degrees, mu):
    theta = math.radians(degrees)
    normal = np.array([0.0, -math.sin(theta), math.cos(theta)])
    rot = rotation((1, 0, 0), degrees)
    return engine.Plane.from_point_normal((0, 0, 0), normal, friction=mu), normal, rot, theta


@pytest.mark.compiled_only
@pytest.mark.parametrize("degrees, mu", [(20, 0.5), (30, 0.7)])
def test_box_on_incline_stays_when_tan_below_mu(degrees, mu):
    plane, normal, rot, theta = incline(degrees, mu)
    assert math.tan(theta) < mu
    mesh = box_mesh(centre=normal * 0.5, rotation=rot)
    solver, state, _ = world((mesh, dict(shape="box", friction=mu)), colliders=[plane])
    for _ in range(6):  # let it settle into contact
        solver.step_frame(state)
    start = state.bodies.position[0].copy()
    for _ in range(48):
        solver.step_frame(state)
    assert np.linalg.norm(state.bodies.position[0] - start) < 1e-3


@pytest.mark.compiled_only
@pytest.mark.parametrize("degrees, mu", [(30, 0.3), (40, 0.5)])
def test_box_on_incline_slides_with_coulomb_acceleration(degrees, mu):
    plane, normal, rot, theta = incline(degrees, mu)
    assert math.tan(theta) > mu
    mesh = box_mesh(centre=normal * 0.5, rotation=rot)
    solver, state, _ = world((mesh, dict(shape="box", friction=mu)), colliders=[plane])
    start = state.bodies.position[0].copy()
    seconds = 1.0
    for _ in range(int(24 * seconds)):
        solver.step_frame(state)
    travelled = np.linalg.norm(state.bodies.position[0] - start)
    expected = 0.5 * G * (math.sin(theta) - mu * math.cos(theta)) * seconds ** 2
    assert abs(travelled - expected) / expected < 0.05
    assert abs(state.bodies.position[0] @ normal - 0.5) < 2e-3  # sliding on its face, not tumbling


@pytest.mark.compiled_only
def test_stack_of_ten_boxes_stands_still():
    size = 0.9
    bodies = [(box_mesh((size,) * 3, centre=(0, 0, size / 2 + k * size)), dict(shape="box", name=f"box {k}"))
              for k in range(10)]
    solver, state, _ = world(*bodies, colliders=[engine.Plane()])
    start = state.bodies.position.copy()
    drift, speeds = [], []
    for frame in range(24 * 10):
        solver.step_frame(state)
        drift.append(np.linalg.norm(state.bodies.position[:, :2] - start[:, :2], axis=1).max())
        speeds.append(np.linalg.norm(state.bodies.velocity, axis=1).max())
    assert max(drift) < 0.02 * size
    assert abs(state.bodies.position[-1, 2] - start[-1, 2]) < 0.02 * size  # it does not sink either
    # No jitter growing over time: the last second moves no more than the second second.
    assert max(speeds[-24:]) <= max(max(speeds[24:48]), 1e-3)


def test_head_on_collision_conserves_momentum():
    a = (box_mesh(centre=(-1.5, 0, 0)), dict(shape="box", velocity=(3, 0, 0), mass=2.0, restitution=0.5))
    b = (uv_sphere(0.5, centre=(1.5, 0.3, 0.2)), dict(velocity=(-2, 0, 0), mass=1.0, restitution=0.5,
                                                     angular_velocity=(0, 0, 1)))
    solver, state, _ = world(a, b, settings=NO_GRAVITY)
    mass = solver.model.bodies.mass
    p0 = (mass[:, None] * state.bodies.velocity).sum(axis=0)
    l0 = angular_momentum(solver, state)
    for _ in range(24):
        solver.step_frame(state)
    assert state.bodies.velocity[0, 0] < 2.0  # they did collide
    p1 = (mass[:, None] * state.bodies.velocity).sum(axis=0)
    l1 = angular_momentum(solver, state)
    assert np.linalg.norm(p1 - p0) / np.linalg.norm(p0) < 1e-6
    assert np.linalg.norm(l1 - l0) / max(np.linalg.norm(l0), 1.0) < 1e-3


@pytest.mark.compiled_only
def test_cube_dropped_on_its_corner_settles_flat_and_rests():
    # Nearly corner-down (3 degrees off, as a real drop is never perfect: exactly balanced, a
    # perfect solver may keep it on its corner, as a perfectly balanced real cube would).
    tilt = rotation((1, 0, 0), 45) @ rotation((0, 1, 0), math.degrees(math.atan(1 / math.sqrt(2))) + 3)
    solver, state, _ = world((box_mesh(centre=(0, 0, 1.5), rotation=tilt), dict(shape="box")),
                             colliders=[engine.Plane()])
    for _ in range(24 * 5):
        solver.step_frame(state)
    assert abs(state.bodies.position[0, 2] - 0.5) < 2e-3  # resting on a face
    assert np.linalg.norm(state.bodies.velocity[0]) < 1e-2
    assert np.linalg.norm(state.bodies.angular_velocity[0]) < 1e-2
    # a face is down: one of the cube's own axes is vertical. (Not the body frame's: a cube's
    # principal moments are all equal, so its principal axes, and the body frame, can point
    # anywhere; the shape frame is the one that follows the faces.)
    b = solver.model.bodies
    rot = quat.to_matrix(state.bodies.orientation[0]) @ b.shape_rotation[0]
    assert np.abs(rot[2]).max() > 0.999
    # and its four lowest corners all touch the ground
    lowest = (state.bodies.position[0] + quat.rotate(state.bodies.orientation[0], b.point_local))[:, 2] \
        - b.point_radius
    assert np.abs(np.sort(lowest)[:4]).max() < 1e-3


def test_open_mesh_falls_back_to_its_convex_hull():
    v, faces = box_mesh((1, 2, 3))
    builder = engine.ModelBuilder()
    builder.add_rigid_body(v, faces[:-1], name="open box", density=100.0)
    assert any("not closed" in w for w in builder.warnings)
    assert np.isclose(builder.finalize().bodies.mass[0], 600.0)


def _ellipsoid_scan(count, seed):
    u = np.random.default_rng(seed).normal(size=(count, 3))
    return u / np.linalg.norm(u, axis=1)[:, None] * [0.2, 0.12, 0.06]


@pytest.mark.parametrize("mesh", ["squashed sphere", "turned pebble", "round sphere", "scan of 1,000",
                                  "scan of 20,000"])
def test_a_dense_curved_mesh_s_hull_leaves_out_little_of_it(mesh):
    """A dense mesh's hull keeps at most 256 vertices, each added the farthest outside the hull so
    far: no vertex of a squashed UV sphere, a turned pebble, a round sphere or a scanned ellipsoid
    lies outside it by more than 1.2% of the mesh's size. (Cut down to the extreme points along
    256 directions, a UV sphere of 0.2 m squashed to half its height kept vertices 7.5 mm (1.9%)
    outside and rested that far in the ground; the pebble 6 mm, the 20,000-point scan 5.3 mm.)"""
    from jakobsen_engine.geometry.mesh import convex_hull

    sphere = uv_sphere(0.2, rings=16, segments=32)[0]
    turn = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))[0]
    v = {"squashed sphere": sphere * [1.0, 1.0, 0.5], "turned pebble": sphere * [1.0, 0.8, 0.3] @ turn,
         "round sphere": sphere, "scan of 1,000": _ellipsoid_scan(1000, 2),
         "scan of 20,000": _ellipsoid_scan(20000, 3)}[mesh]
    idx, tris = convex_hull(v, mesh)
    assert len(idx) <= 256
    a, b, c = (v[tris[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1)[:, None]
    outside = (v @ n.T - np.einsum("ij,ij->i", n, a)[None]).max(axis=1)
    assert outside.max() < 0.012 * np.ptp(v, axis=0).max(), outside.max()


def test_a_mesh_on_a_line_is_rejected():
    v = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], float)
    with pytest.raises(JakobsenError, match="rigid body 'rod'.*line"):
        engine.ModelBuilder().add_rigid_body(v, [[0, 1, 2, 3]], name="rod")


# (size of the square m, its tilt degrees about x, shape)
@pytest.mark.parametrize("size, tilt, shape", [(0.05, 0.0, "automatic"), (0.5, 30.0, "convex_hull"),
                                               (0.5, 60.0, "box"), (3.0, 10.0, "automatic")])
def test_a_flat_mesh_falls_as_a_plate_and_lies_on_the_ground(size, tilt, shape):
    """A Plane made a rigid body (a card, a sheet of plywood) is a plate a hundredth of its size
    thick (at least 1 mm): its mass from its density is area x thickness x density, it falls and
    comes to lie flat on the ground, its middle half the plate's thickness up, and the builder
    says so. (It was refused: "the vertices lie in one plane".)"""
    half = size / 2
    square = np.array([[-half, -half, 0], [half, -half, 0], [half, half, 0], [-half, half, 0]], float)
    v = square @ rotation((1, 0, 0), tilt).T + [0, 0, size]
    builder = engine.ModelBuilder()
    builder.add_rigid_body(v, [[0, 1, 2, 3]], name="card", density=700.0, shape=shape)
    builder.add_collider(engine.Plane())
    assert any("'card'" in w and "flat" in w and "plate" in w for w in builder.warnings), builder.warnings
    thickness = engine.bodies.rigid.plate_thickness(float(np.ptp(v, axis=0).max()))
    solver = engine.Solver(builder.finalize())
    assert solver.model.bodies.mass[0] == pytest.approx(size * size * thickness * 700.0, rel=1e-6)
    state = solver.make_state()
    for _ in range(24 * 3):
        solver.step_frame(state)
    assert state.bodies.position[0, 2] == pytest.approx(thickness / 2, abs=0.1 * thickness + 1e-4)
    assert np.linalg.norm(state.bodies.velocity[0]) < 0.01


@pytest.mark.parametrize("kwargs, words", [
    (dict(mass=0.0), "mass must be a positive"),
    (dict(mass=-2.0), "mass must be a positive"),
    (dict(density=0.0), "density must be a positive"),
    (dict(density=-5.0), "density must be a positive"),
    (dict(shape="teapot"), "collision shape must be one of"),
    (dict(friction=-1.0), "friction must be between"),
])
def test_bad_body_settings_are_rejected(kwargs, words):
    with pytest.raises(JakobsenError, match=f"rigid body 'crate'.*{words}"):
        engine.ModelBuilder().add_rigid_body(*box_mesh(), name="crate", **kwargs)


@pytest.mark.compiled_only
def test_kinematic_body_pushes_and_is_not_pushed():
    def motion(t):
        m = np.eye(4)
        m[0, 3] = 2.0 * t  # 2 m/s along x
        return m

    pusher = (box_mesh(centre=(-1.2, 0, 0.5)), dict(shape="box", mode="kinematic", motion=motion, name="pusher"))
    crate = (box_mesh((0.5, 0.5, 0.5), centre=(0, 0, 0.25)), dict(shape="box", mass=10.0, name="crate"))
    solver, state, _ = world(pusher, crate, colliders=[engine.Plane(friction=0.2)])
    for _ in range(24):
        solver.step_frame(state)
    np.testing.assert_allclose(state.bodies.position[0], [-1.2 + 2.0 * state.time, 0, 0.5], atol=1e-9)
    assert state.bodies.position[1, 0] > 0.3  # the crate was pushed ahead
    assert state.bodies.position[1, 0] - state.bodies.position[0, 0] >= 0.75 - 2e-3  # and not pushed into


def test_ghost_body_passes_through_everything():
    ghost = (box_mesh(centre=(0, 0, 1.0)), dict(shape="box", mode="ghost"))
    solver, state, _ = world(ghost, colliders=[engine.Plane()])
    for _ in range(24):
        solver.step_frame(state)
    assert state.bodies.position[0, 2] < -1.0  # fell through the floor


def test_body_poses_map_rest_points_to_current_points():
    mesh = box_mesh((1, 2, 0.5), centre=(3, 0, 2), rotation=rotation((0, 1, 1), 20))
    solver, state, _ = world((mesh, dict(shape="box", angular_velocity=(1, 2, 3))), settings=NO_GRAVITY)
    for _ in range(12):
        solver.step_frame(state)
    translation, rotation_q = solver.body_poses(state)
    b = solver.model.bodies
    rest_points = b.rest_position[0] + quat.rotate(b.rest_orientation[0], b.point_local)
    now_points = state.bodies.position[0] + quat.rotate(state.bodies.orientation[0], b.point_local)
    np.testing.assert_allclose(quat.rotate(rotation_q[0], rest_points) + translation[0], now_points, atol=1e-9)


@pytest.mark.compiled_only
@pytest.mark.parametrize("shape", ["sphere", "capsule", "cylinder", "convex_hull"])
def test_every_shape_rests_on_the_ground_without_sinking(shape):
    mesh = uv_sphere(0.5, centre=(0, 0, 1.0)) if shape != "convex_hull" else box_mesh(centre=(0, 0, 1.0))
    solver, state, _ = world((mesh, dict(shape=shape, name=shape)), colliders=[engine.Plane()],
                             settings=engine.SolverSettings(damping=0.0))
    for _ in range(48):
        solver.step_frame(state)
    lowest = shape_surface(solver, state, 0)[:, 2].min()  # from the true surface, not the contact points
    assert -2e-3 < lowest < 2e-3


@pytest.mark.compiled_only
def test_bodies_of_every_shape_pair_do_not_interpenetrate():
    shapes = ["box", "sphere", "capsule", "cylinder", "convex_hull"]
    bodies = []
    for k, shape in enumerate(shapes):
        for j in range(2):
            centre = (0.15 * j, 0.1 * k - 0.2, 0.6 + 1.1 * (2 * k + j))
            mesh = box_mesh((0.8, 0.6, 0.5), centre=centre, rotation=rotation((1, j, k), 17 * k + 5))
            bodies.append((mesh, dict(shape=shape, name=f"{shape} {j}")))
    solver, state, _ = world(*bodies, colliders=[engine.Plane()])
    for _ in range(24 * 4):
        solver.step_frame(state)
    b = solver.model.bodies
    # every point of every body's true surface is outside (or within 1 cm of the surface of) every other body
    for owner in range(b.count):
        points = shape_surface(solver, state, owner)
        for target in range(b.count):
            if target != owner:
                depth = depth_in_body(solver, state, target, points)
                assert depth.max() < 0.01, (b.names[owner], b.names[target], depth.max())


@pytest.mark.compiled_only
@pytest.mark.parametrize("radius, half, tilt, seed", [(0.4, 0.25, 30, 0), (0.4, 0.25, 55, 4), (0.3, 0.1, 40, 7),
                                                      (0.25, 0.4, 65, 8), (0.5, 0.05, 20, 9)])
@pytest.mark.parametrize("target", ["collider", "body"])
def test_a_cylinder_falling_over_a_box_s_edge_stays_out_of_it(radius, half, tilt, seed, target):
    """A cylinder dropped tilted onto the edge of a 1 m box slides or rolls off it: no point of
    its rims goes into the box by more than 2% of its radius at any frame. (An edge across the
    rim between two of its 16 rim points went 4-5 cm into a 0.4 m cylinder, unseen.)"""
    rng = np.random.default_rng(seed)
    turn = rotation(rng.normal(size=3), tilt)
    centre = np.array([rng.uniform(-0.3, 0.3), 0.5 + rng.uniform(-0.2, 0.2), 0.6 + radius + half + 0.05])
    angle = np.linspace(0, 2 * np.pi, 32, endpoint=False)
    ring = np.stack([radius * np.cos(angle), radius * np.sin(angle), np.zeros(32)], axis=1)
    vertices = np.concatenate([ring - [0, 0, half], ring + [0, 0, half]]) @ turn.T + centre
    faces = [list(range(32))[::-1], list(range(32, 64))] + [[i, (i + 1) % 32, 32 + (i + 1) % 32, 32 + i]
                                                           for i in range(32)]
    box = [(box_mesh((1.0, 1.0, 1.0)), dict(name="box", mode="kinematic", friction=0.6))] if target == "body" else []
    colliders = [engine.Plane()] + ([engine.Box(half_extents=(0.5, 0.5, 0.5), friction=0.6)] if target == "collider"
                                    else [])
    solver, state, _ = world(((vertices, faces), dict(name="cylinder", shape="cylinder", friction=0.6)), *box,
                             colliders=colliders)
    worst = 0.0
    for _ in range(36):
        solver.step_frame(state)
        rim = shape_surface(solver, state, 0, count=720)
        worst = max(worst, float(np.min(0.5 - np.abs(rim), axis=1).max()))
    assert worst < 0.02 * radius


@pytest.mark.compiled_only
@pytest.mark.parametrize("ground", ["plane", "mesh"])
def test_a_pyramid_of_boxes_stands_still(ground):
    """Three boxes, two straddling them, one on top (2 cm gaps, friction 0.5): a resting pile
    stays put. (Nearly dependent contact rows once launched it kilometres.)"""
    from jakobsen_engine.geometry.primitives import grid
    builder = engine.ModelBuilder()
    size, gap = 0.4, 0.02
    for row, count in enumerate((3, 2, 1)):
        for i in range(count):
            x = (i - (count - 1) / 2) * (size + gap)
            builder.add_rigid_body(*box_mesh((size,) * 3, centre=(x, 0, size / 2 + row * size + 0.001)),
                                   name=f"box {row} {i}", mass=4.0, shape="box", friction=0.5)
    if ground == "plane":
        builder.add_collider(engine.Plane.from_point_normal((0, 0, 0), (0, 0, 1), friction=0.9))
    else:
        v, f = grid(21, 21, 10.0)
        v = np.asarray(v, float)
        v[:, :2] -= v[:, :2].mean(axis=0)
        builder.add_collider(engine.TriangleMesh.from_mesh(v, f, friction=0.9))
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()
    start = state.bodies.position.copy()
    for _ in range(24):
        solver.step_frame(state)
    assert np.abs(state.bodies.position - start).max() < 5e-3
    assert np.linalg.norm(state.bodies.velocity, axis=1).max() < 0.05


@pytest.mark.compiled_only
@pytest.mark.parametrize("height, speed, friction, substeps, shape", [
    (0.4, 1.0, 0.5, 10, "automatic"), (0.4, 1.5, 0.8, 5, "box"), (0.1, 0.5, 0.5, 10, "automatic"),
    (0.05, 0.3, 0.8, 10, "box"), (0.05, 0.3, 0.2, 20, "automatic"), (0.2, 0.7, 0.5, 10, "box")])
def test_a_row_of_dominoes_as_wide_as_each_other_falls_to_the_end(height, speed, friction, substeps, shape):
    """Twelve dominoes (0.15 x 0.625 x 1 of their height, half their height apart), the first
    pushed: each falls onto the next, to the last, and none ends inside another. (A domino's top
    corner lies on the next one's side plane, the two being as wide: falling a few millimetres
    into its back face in one substep it was pushed out sideways, its friction held it 5 mm
    inside, and a row of 0.4 m dominoes pushed at 1 m/s stopped at the second, leaning still.)"""
    count = 12
    bodies = []
    for i in range(count):
        mesh = box_mesh((0.15 * height, 0.625 * height, height), centre=(0.5 * height * i, 0, height / 2))
        bodies.append((mesh, dict(name=f"domino {i}", density=600.0, friction=friction, shape=shape,
                                  velocity=(speed, 0, 0) if i == 0 else (0, 0, 0))))
    solver, state, _ = world(*bodies, colliders=[engine.Plane(friction=0.5)],
                             settings=engine.SolverSettings(substeps=substeps))
    for _ in range(24 * 4):
        solver.step_frame(state)
    # Upright a domino's centre is at half its height; leaning on the next one while that one
    # still stands, at 0.49; leaning on the next one that has fallen (lying on the ground, or
    # leaning on the one after, or on the end of the last where that slid on), at a fifth to a
    # third. So every one below 0.4 has fallen onto a fallen one: the row fell to the end.
    centre = state.bodies.position[:, 2] / height
    assert np.all(centre < 0.4), np.round(centre, 2)
    assert np.linalg.norm(state.bodies.velocity, axis=1).max() < 0.05 * height / 0.4 + 0.01
    for k in range(count - 1):
        for j in (k - 1, k + 1):
            if 0 <= j < count:
                assert depth_in_body(solver, state, j, shape_surface(solver, state, k)).max() < 0.01 * height


@pytest.mark.parametrize("shape", ["automatic", "box"])
@pytest.mark.parametrize("depth, tilt", [(0.05, 0.0), (0.15, 0.0), (0.3, 0.0), (0.15, 25.0)])
def test_boxes_and_hulls_starting_inside_each_other_or_a_thin_ground_are_named_with_their_depth(shape, depth,
                                                                                              tilt):
    """Crates sunk into each other (one of a size on another, corners on its edges), into a 1 cm
    thick static plate and into a floor that is a triangle mesh (none of their corners inside
    either) are named with how deep, whatever the shape; crates near each other but apart, turned
    any way, or standing on the floor, are not."""
    b = engine.ModelBuilder()
    turn = rotation((0, 1, 0), tilt)
    b.add_rigid_body(*box_mesh((1.0, 1.0, 1.0), (0.0, 0.0, 0.5)), name="lower", shape=shape)
    b.add_rigid_body(*box_mesh((1.0, 1.0, 1.0), (0.0, 0.0, 1.5 - depth)), name="upper", shape=shape)
    b.add_rigid_body(*box_mesh((20.0, 20.0, 0.01), (0.0, 0.0, -0.005)), name="plate", mode="kinematic", shape=shape)
    b.add_rigid_body(*box_mesh((1.0, 1.0, 1.0), (4.0, 0.0, 0.5 - depth), turn), name="sunk", shape=shape)
    rng = np.random.default_rng(int(depth * 100 + tilt))
    for k in range(6):  # pairs a hair apart along a random direction, turned any way
        gap = rng.normal(size=3)
        gap /= np.linalg.norm(gap)
        first, second = rotation(rng.normal(size=3), rng.uniform(0, 90)), rotation(rng.normal(size=3),
                                                                                   rng.uniform(0, 90))
        centre = np.array([10.0 + 4 * k, 0.0, 3.0])
        b.add_rigid_body(*box_mesh((0.8, 0.5, 0.3), centre, first), name=f"near {k}", shape=shape)
        # Move the second along the gap until its vertices and the first's are 5 mm apart along it.
        v1 = box_mesh((0.8, 0.5, 0.3), (0, 0, 0), first)[0] @ gap
        v2 = box_mesh((0.6, 0.6, 0.4), (0, 0, 0), second)[0] @ gap
        b.add_rigid_body(*box_mesh((0.6, 0.6, 0.4), centre + gap * (v1.max() - v2.min() + 0.005), second),
                         name=f"apart {k}", shape=shape)
    # A floor that is a triangle mesh (a Collider with Shape Mesh, a Dynamic Off ground): behind
    # its faces only its margin counts as inside, so no corner of a crate sunk into it is.
    from jakobsen_engine.geometry.primitives import grid
    v, f = grid(5, 5, 4.0)
    v = np.asarray(v, float) - [2.0, 2.0, 0.0] + [60.0, 0.0, 0.0]
    b.add_collider(engine.TriangleMesh.from_mesh(v, f, name="floor"))
    b.add_rigid_body(*box_mesh((1.0, 1.0, 1.0), (60.3, 0.2, 0.5 - depth), turn), name="in floor", shape=shape)
    b.add_rigid_body(*box_mesh((1.0, 1.0, 1.0), (61.2, -1.0, 0.5)), name="on floor", shape=shape)
    solver = engine.Solver(b.finalize())
    found = [w for w in solver.warnings if "starts" in w]

    def depth_named(*names):
        said = [w for w in found if all(f"'{name}'" in w for name in names)]
        assert len(said) == 1, found
        return float(re.search(r"starts ([0-9.]+) cm inside", said[0]).group(1)) / 100

    # (a hull's vertices are pulled in by a thousandth of their distance from its centre)
    assert depth_named("upper", "lower") == pytest.approx(depth, abs=2e-3)
    # The one that moves is named as starting inside the one that does not, as deep as it must
    # move to be out: up by how far its lowest corner is under the plate's top, or down by how
    # far its highest point is above the plate's bottom (to fall through it).
    assert any("'sunk' starts" in w and "'plate'" in w for w in found), found
    lowest = 0.5 * (abs(turn[2, 0]) + abs(turn[2, 1]) + abs(turn[2, 2])) - 0.5 + depth
    assert depth_named("sunk", "plate") == pytest.approx(lowest, abs=2e-3)
    assert depth_named("in floor", "floor") == pytest.approx(lowest, abs=2e-3)
    assert not any("'near" in w or "'apart" in w or "'on floor'" in w for w in found), found


@pytest.mark.parametrize("depth", [0.03, 0.12])
def test_a_body_starting_inside_the_ground_or_another_is_named_with_its_depth(depth):
    b = engine.ModelBuilder()
    b.add_rigid_body(*box_mesh((1.0, 1.0, 1.0), (0.0, 0.0, 0.5 - depth)), name="sunk", mass=1.0, shape="box")
    b.add_rigid_body(*box_mesh((1.0, 1.0, 1.0), (3.0, 0.0, 0.5)), name="resting", mass=1.0, shape="box")
    b.add_rigid_body(*box_mesh((1.0, 1.0, 1.0), (3.0, 0.0, 1.5 - depth)), name="on top", mass=1.0, shape="box")
    b.add_collider(engine.Plane.from_point_normal((0, 0, 0), (0, 0, 1), name="ground"))
    solver = engine.Solver(b.finalize())
    found = [w for w in solver.warnings if "starts" in w]
    assert len(found) == 2, found
    assert any("'sunk'" in w and "'ground'" in w and f"{depth * 100:.1f} cm" in w for w in found)
    assert any("'on top'" in w and "'resting'" in w or "'resting'" in w and "'on top'" in w for w in found)
    assert not any("'resting'" in w and "'ground'" in w for w in found)


# (how deep each upper crate is placed into the one below, m; how far to the side; its turn,
# degrees; its size, m, on a 1 m crate)
@pytest.mark.parametrize("shape", ["box", "automatic"])
@pytest.mark.parametrize("sunk, side, turn, size", [(0.05, 0.3, 0.0, 1.0), (0.2, 0.3, 0.0, 1.0), (0.3, 0.0, 0.0, 1.0),
                                                    (0.15, 0.0, 30.0, 0.6)])
def test_crates_placed_into_each_other_are_moved_apart_without_being_thrown(sunk, side, turn, size, shape):
    """A column of three crates, each placed into the one below (by eye, or an import): crates
    of one width have their corners on each other's side planes, 0 mm from them, and the
    contacts left them stuck inside each other. Before the first frame they are moved apart the
    least way out, the one on the ground staying: after the first frame they overlap by less
    than 1 mm, nothing moves faster than 5 cm/s from then on, and each upper crate rests on the
    one below within 1 cm of where it was put, lifted by how deep it was in."""
    builder = engine.ModelBuilder()
    meshes = [box_mesh((1.0, 1.0, 1.0), (0.0, 0.0, 0.5)),
              box_mesh((size,) * 3, (side, 0.0, 1.0 + size / 2 - sunk), rotation((0, 0, 1), turn)),
              box_mesh((size,) * 3, (side / 2, 0.0, 1.0 + 1.5 * size - 2 * sunk), rotation((0, 0, 1), turn))]
    for k, mesh in enumerate(meshes):
        builder.add_rigid_body(*mesh, name=f"crate {k}", mass=300.0 * np.ptp(mesh[0][:, 2]) ** 3, shape=shape)
    builder.add_collider(engine.Plane())
    solver = engine.Solver(builder.finalize())
    assert any("'crate 0' starts" in w and "'crate 1'" in w for w in solver.warnings), solver.warnings
    state = solver.make_state()
    start = state.bodies.position.copy()
    fastest = 0.0
    for frame in range(24):
        solver.step_frame(state)
        if frame == 0:
            corners = [box_corners_now(solver, state, k, mesh[0]) for k, mesh in enumerate(meshes)]
            assert boxes_overlap(corners[0], corners[1]) < 1e-3
            assert boxes_overlap(corners[1], corners[2]) < 1e-3
        else:
            fastest = max(fastest, float(np.linalg.norm(state.bodies.velocity, axis=1).max()))
    assert fastest < 0.05
    assert np.linalg.norm(state.bodies.position[0] - start[0]) < 1e-3
    for k in (1, 2):
        assert state.bodies.position[k, :2] == pytest.approx(start[k, :2], abs=0.01)
        assert state.bodies.position[k, 2] == pytest.approx(1.0 + (k - 0.5) * size, abs=0.01)


def _on_crossing(name):
    """Boxes resting face on face across each other's edges, with no corner of either inside
    the other (m, degrees): (mesh, on the ground) pairs, and the world colliders."""
    turn = rotation((0, 0, 1), 0.0)
    if name.startswith("turned"):
        angle = float(name.split()[1])
        return [(box_mesh((1.0, 1.0, 1.0), (0.0, 0.0, 0.5)), True),
                (box_mesh((1.0, 1.0, 1.0), (0.0, 0.0, 1.5), rotation((0, 0, 1), angle)), False)], []
    if name.startswith("offset"):
        dx, dy = (float(v) for v in name.split()[1:])
        return [(box_mesh((0.8, 0.8, 0.6), (0.0, 0.0, 0.3)), True),
                (box_mesh((0.8, 0.8, 0.6), (dx, dy, 0.9)), False)], []
    if name == "crossed beams":
        return [(box_mesh((2.4, 0.2, 0.15), (0.0, 0.0, 0.075)), True),
                (box_mesh((0.25, 1.8, 0.2), (0.1, 0.0, 0.25), rotation((0, 0, 1), 20.0)), False)], []
    if name == "log cabin":
        low = [(box_mesh((2.0, 0.2, 0.2), (0.0, y, 0.1)), True) for y in (-0.8, 0.8)]
        return low + [(box_mesh((0.2, 2.0, 0.2), (x, 0.0, 0.3)), False) for x in (-0.8, 0.8)], []
    if name == "plank on crates":
        return [(box_mesh((0.5, 0.5, 0.5), (-0.7, 0.0, 0.25)), True),
                (box_mesh((0.5, 0.5, 0.5), (0.7, 0.0, 0.25)), True),
                (box_mesh((2.1, 0.3, 0.04), (0.0, 0.0, 0.52), turn), False)], []
    # A crate turned over the corner of a table that is a world collider (its corner has no
    # sample point to touch the crate with).
    top = np.eye(4)
    top[2, 3] = 0.4
    if name == "over a table's corner":
        table = engine.Box(half_extents=(0.5, 0.5, 0.4), transform=top)
    else:
        table = engine.ConvexHull.from_points(box_mesh((1.0, 1.0, 0.8))[0], transform=top)
    return [(box_mesh((0.6, 0.6, 0.3), (0.35, 0.35, 0.95), rotation((0, 0, 1), 45.0)), False)], [table]


@pytest.mark.parametrize("shape", ["box", "automatic"])
@pytest.mark.parametrize("scene", ["turned 10", "turned 25", "turned 45", "turned 70", "offset 0.2 0.1",
                                   "offset 0.3 -0.25", "crossed beams", "log cabin", "plank on crates",
                                   "over a table's corner", "over a hull table's corner"])
def test_boxes_resting_across_each_others_edges_stay_where_they_are_put(scene, shape):
    """A crate turned on another, an offset crate, crossed beams, a plank across two crates, a
    crate over a table's corner: they touch where their faces' edges cross, with no corner of
    either inside the other, and fell through each other (or slid off). Each rests where it was
    put: after 1.5 s within 3 mm (settling under its weight), slower than 1 cm/s, no two
    overlapping by more than 2 mm."""
    bodies, colliders = _on_crossing(scene)
    builder = engine.ModelBuilder()
    for k, (mesh, _) in enumerate(bodies):
        builder.add_rigid_body(*mesh, name=f"box {k}", density=500.0, shape=shape)
    builder.add_collider(engine.Plane())
    for c in colliders:
        builder.add_collider(c)
    solver = engine.Solver(builder.finalize())
    assert not [w for w in solver.warnings if "starts" in w], solver.warnings
    state = solver.make_state()
    start = state.bodies.position.copy()
    for _ in range(36):
        solver.step_frame(state)
    moved = np.linalg.norm(state.bodies.position - start, axis=1)
    assert moved.max() < 3e-3, moved
    assert np.linalg.norm(state.bodies.velocity, axis=1).max() < 0.01
    corners = [box_corners_now(solver, state, k, mesh[0]) for k, (mesh, _) in enumerate(bodies)]
    for i in range(len(corners)):
        for j in range(i + 1, len(corners)):
            assert boxes_overlap(corners[i], corners[j]) < 2e-3, (i, j)


@pytest.mark.parametrize("shape", ["box", "automatic"])
@pytest.mark.parametrize("beyond", [0.05, 0.2])
def test_a_crate_whose_centre_is_past_the_edge_below_tips_off(beyond, shape):
    """The other side of the same contacts: a crate placed across another's edge, its centre of
    mass past that edge by 5 to 20% of its width (and turned, so the corners are outside), is not
    held up by where their edges cross: within 2 s it has tipped off and fallen past the top of
    the one below."""
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh((1.0, 1.0, 1.0), (0.0, 0.0, 0.5)), name="below", density=500.0, shape=shape)
    builder.add_rigid_body(*box_mesh((0.8, 0.8, 0.8), (0.5 + 0.8 * beyond, 0.1, 1.4), rotation((0, 0, 1), 15.0)),
                           name="across", density=500.0, shape=shape)
    builder.add_collider(engine.Plane())
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()
    for _ in range(48):
        solver.step_frame(state)
    assert state.bodies.position[1, 2] < 1.0
