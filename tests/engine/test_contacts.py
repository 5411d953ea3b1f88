"""Particles against colliders: restitution, Coulomb friction, moving colliders, every shape."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine

G = 9.81


def drop(collider, positions, *, radius=0.05, restitution=0.0, friction=0.5, velocities=None, settings=None):
    builder = engine.ModelBuilder()
    builder.add_particles(positions, radius=radius, restitution=restitution, friction=friction, velocities=velocities)
    builder.add_collider(collider)
    solver = engine.Solver(builder.finalize(), settings or engine.SolverSettings())
    return solver, solver.make_state()


@pytest.mark.parametrize("e", [0.3, 0.5, 0.8])
def test_bounce_reaches_e_squared_of_drop_height(e):
    height, radius = 1.0, 0.05
    floor = engine.Plane(restitution=e)
    solver, state = drop(floor, [(0, 0, height + radius)], radius=radius, restitution=e)
    bounced, peak = False, 0.0
    for _ in range(24 * 3):
        solver.step_frame(state)
        # velocities() is the mean over the last substep; in flight the velocity now is that + a h / 2
        vz = solver.velocities(state)[0, 2] - 0.5 * G * solver.h
        if vz > 0:
            bounced = True
        if bounced:
            # apex of the ballistic arc through this frame's position and velocity
            peak = max(peak, state.positions[0, 2] - radius + max(vz, 0.0) ** 2 / (2 * G))
            if vz < 0:  # past the top of the first bounce
                break
    assert bounced
    print(f"e = {e}: bounce {peak:.4f} m, expected {e * e * height:.4f} m")
    assert abs(peak - e * e * height) / (e * e * height) < 0.05


def test_no_restitution_means_no_bounce_and_rest_on_the_surface():
    radius = 0.05
    solver, state = drop(engine.Plane(), [(0, 0, 2.0)], radius=radius)
    heights = []
    for _ in range(24 * 2):
        solver.step_frame(state)
        heights.append(state.positions[0, 2])
    after_impact = np.array(heights[20:])
    assert after_impact.max() - radius < 1e-3
    assert abs(after_impact[-1] - radius) < 1e-6


def incline(angle_deg, mu):
    theta = math.radians(angle_deg)
    normal = np.array([0.0, -math.sin(theta), math.cos(theta)])
    return engine.Plane.from_point_normal((0, 0, 0), normal, friction=mu), normal, theta


@pytest.mark.parametrize("angle, mu", [(20, 0.5), (30, 0.6), (10, 0.2)])
def test_particle_on_incline_stays_when_tan_below_mu(angle, mu):
    plane, normal, theta = incline(angle, mu)
    assert math.tan(theta) < mu
    radius = 0.05
    solver, state = drop(plane, [normal * radius], radius=radius, friction=mu)
    start = state.positions[0].copy()
    for _ in range(48):  # 2 s
        solver.step_frame(state)
    assert np.linalg.norm(state.positions[0] - start) < 1e-3


@pytest.mark.parametrize("angle, mu", [(30, 0.3), (45, 0.5), (25, 0.0)])
def test_particle_on_incline_slides_with_coulomb_acceleration(angle, mu):
    plane, normal, theta = incline(angle, mu)
    assert math.tan(theta) > mu
    radius = 0.05
    solver, state = drop(plane, [normal * radius], radius=radius, friction=mu)
    start = state.positions[0].copy()
    seconds = 1.0
    for _ in range(int(24 * seconds)):
        solver.step_frame(state)
    travelled = np.linalg.norm(state.positions[0] - start)
    expected = 0.5 * G * (math.sin(theta) - mu * math.cos(theta)) * seconds ** 2
    print(f"slid {travelled:.4f} m, expected {expected:.4f} m")
    assert abs(travelled - expected) / expected < 0.05
    # it slid along the surface, not into it
    assert abs(np.dot(state.positions[0], normal) - radius) < 1e-6


def test_rising_plane_lifts_a_resting_particle():
    speed = 1.0

    def motion(t):
        m = np.eye(4)
        m[2, 3] = speed * t
        return m

    radius = 0.05
    solver, state = drop(engine.Plane(motion=motion), [(0, 0, radius)], radius=radius)
    for _ in range(24):
        solver.step_frame(state)
        assert abs(state.positions[0, 2] - (speed * state.time + radius)) < 1e-3


def test_conveyor_plane_drags_a_particle_up_to_its_speed_by_friction():
    speed = 0.5

    def motion(t):
        m = np.eye(4)
        m[0, 3] = speed * t
        return m

    radius = 0.05
    solver, state = drop(engine.Plane(motion=motion, friction=0.8), [(0, 0, radius)], radius=radius, friction=0.8)
    for _ in range(24):
        solver.step_frame(state)
    np.testing.assert_allclose(solver.velocities(state)[0], [speed, 0, 0], atol=0.01)


def rain(collider, check_outside, count=200, seed=7):
    rng = np.random.default_rng(seed)
    positions = rng.uniform([-1, -1, 1.5], [1, 1, 3.0], size=(count, 3))
    radius = 0.02
    builder = engine.ModelBuilder()
    builder.add_particles(positions, radius=radius, friction=0.2)
    builder.add_collider(collider)
    builder.add_collider(engine.Plane())
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()
    for _ in range(48):
        solver.step_frame(state)
        assert check_outside(state.positions, radius).all()
    return state


def rotation_z(deg, translate=(0, 0, 0)):
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    m = np.eye(4)
    m[:2, :2] = [[c, -s], [s, c]]
    m[:3, 3] = translate
    return m


def test_rain_on_sphere_never_ends_inside():
    center, r_sphere = np.array([0, 0, 0.6]), 0.5
    rain(engine.Sphere(radius=r_sphere, transform=rotation_z(0, center)),
         lambda x, r: np.linalg.norm(x - center, axis=1) >= r_sphere + r - 1e-9)


def test_rain_on_box_never_ends_inside():
    he = np.array([0.6, 0.4, 0.3])
    m = rotation_z(30, (0, 0, 0.5))

    def outside(x, r):
        q = (x - m[:3, 3]) @ m[:3, :3]
        outside = np.linalg.norm(np.maximum(np.abs(q) - he, 0), axis=1) >= r - 1e-9
        return np.any(np.abs(q) >= he + r - 1e-9, axis=1) | outside

    rain(engine.Box(half_extents=tuple(he), transform=m), outside)


def test_rain_on_capsule_never_ends_inside():
    m = rotation_z(0, (0, 0, 0.5))
    m[:3, :3] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]  # lying along y
    radius, half = 0.3, 0.5

    def outside(x, r):
        q = (x - m[:3, 3]) @ m[:3, :3]
        axis = np.zeros_like(q)
        axis[:, 2] = np.clip(q[:, 2], -half, half)
        return np.linalg.norm(q - axis, axis=1) >= radius + r - 1e-9

    rain(engine.Capsule(radius=radius, half_height=half, transform=m), outside)


def test_jakobsens_rod_stays_inside_the_cube_and_keeps_its_length():
    rng = np.random.default_rng(3)
    half = 1.0
    builder = engine.ModelBuilder()
    ends = builder.add_particles([(-0.3, 0, 0), (0.4, 0.2, 0.1)], masses=[1.0, 2.0],
                                 velocities=rng.normal(0, 6, size=(2, 3)), restitution=0.5, friction=0.3)
    builder.add_sticks(ends[:1], ends[1:])
    builder.add_collider(engine.BoxInterior(half_extents=(half, half, half), restitution=0.5, friction=0.3))
    model = builder.finalize()
    rest = model.sticks.rest[0]
    solver = engine.Solver(model)
    state = solver.make_state()
    worst = 0.0
    for _ in range(24 * 5):
        solver.step_frame(state)
        assert np.all(np.abs(state.positions) <= half + 1e-9)
        worst = max(worst, abs(np.linalg.norm(state.positions[1] - state.positions[0]) - rest) / rest)
    assert worst < 0.01


def test_perfectly_elastic_bounces_keep_energy():
    radius = 0.05
    solver, state = drop(engine.Plane(restitution=1.0), [(0, 0, 1.0 + radius)], radius=radius, restitution=1.0)
    start_energy = G * 1.0
    bounces, last_vz = 0, 0.0
    while bounces < 10:
        solver.step_frame(state)
        vz = solver.velocities(state)[0, 2] - 0.5 * G * solver.h
        if last_vz < 0 < vz:
            bounces += 1
        last_vz = vz
    energy = G * (state.positions[0, 2] - radius) + 0.5 * vz * vz
    assert abs(energy - start_energy) / start_energy < 0.02


@pytest.mark.compiled_only
@pytest.mark.parametrize("spike, offset", [(0.05, 0.0), (0.03, 0.04), (0.08, 0.07)])
def test_a_wheel_rests_on_a_mesh_vertex_that_pokes_up_under_its_tread(spike, offset):
    """A terrain's single raised vertex under the middle of a wheel's tread, between its caps'
    rim points: the wheel rests on the vertex, not on the flat faces around it."""
    from .vehicle_rigs import AXLE_FRAME, cylinder_mesh

    n = 21
    xs = np.linspace(-1.0, 1.0, n)
    X, Y = np.meshgrid(xs, xs)
    Z = np.zeros_like(X)
    Z[n // 2, n // 2] = spike
    verts = np.stack([X.ravel(), Y.ravel(), Z.ravel()], axis=1)
    faces = [[i * n + j, i * n + j + 1, (i + 1) * n + j + 1] for i in range(n - 1) for j in range(n - 1)]
    faces += [[i * n + j, (i + 1) * n + j + 1, (i + 1) * n + j] for i in range(n - 1) for j in range(n - 1)]
    radius = 0.3
    b = engine.ModelBuilder()
    wheel = b.add_rigid_body(*cylinder_mesh(radius, 0.2, (0.0, offset, radius + spike + 0.02)), name="wheel",
                             mass=10.0, shape="cylinder", shape_frame=AXLE_FRAME, friction=1.0)
    # Held upright on a vertical slider, so only its height is free.
    b.add_joint("slider", None, wheel, (0.0, offset, radius + spike), axis=(0, 0, 1), name="guide")
    b.add_collider(engine.TriangleMesh.from_mesh(verts, faces, friction=1.0))
    solver = engine.Solver(b.finalize())
    state = solver.make_state()
    for _ in range(48):
        solver.step_frame(state)
    hub = state.bodies.position[wheel.index]
    from_axle = math.hypot(hub[1], hub[2] - spike)  # the vertex at (0, 0, spike), the axle along X
    assert abs(from_axle - radius) < 2e-3


@pytest.mark.compiled_only
@pytest.mark.parametrize("spin, substeps", [(30.0, 4), (60.0, 4), (60.0, 10)])
@pytest.mark.parametrize("wall", [0.02, 0.05])
def test_a_plank_spinning_into_a_thin_wall_never_passes_through_it(spin, substeps, wall):
    """A 1 m plank thrown at 3 m/s spinning edgewise into a wall 2 or 5 cm thick: its ends sweep
    through far more than the wall's thickness in a substep, so the sweep of fast bodies must stop
    its turn where an end hits (and only there: a rolling wheel's rim is left turning,
    test_rolling.py). No corner ever gets past the wall's far face."""
    from .rigid_scenes import box_mesh

    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh((1.0, 0.1, 0.1), (-1.0, 0.0, 1.0)), shape="box", velocity=(3.0, 0, 0),
                           angular_velocity=(0, 0, spin))
    m = np.eye(4)
    m[:3, 3] = (0.0, 0.0, 1.0)
    builder.add_collider(engine.Box(half_extents=(wall / 2, 2.0, 2.0), transform=m))
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(substeps=substeps, gravity=(0, 0, 0)))
    state = solver.make_state()
    corners = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.05, 0.05) for z in (-0.05, 0.05)])
    nearest = -np.inf
    for _ in range(24):
        solver.step_frame(state)
        turn = engine.quaternions.to_matrix(state.bodies.orientation)[0]
        reach = float((corners @ turn.T + state.bodies.position[0])[:, 0].max())
        assert reach < wall / 2 + 0.01, reach
        nearest = max(nearest, reach)
    assert nearest > -wall / 2 - 0.05  # it came up to the wall (at some frame)
