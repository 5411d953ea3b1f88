"""Sleeping (``solver.sleeping``): bodies that have come to rest stop being stepped, and wake
when something moving reaches them; what is still moving, however slowly it starts, never
sleeps."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine

from .rigid_scenes import G, box_mesh, rotation, uv_sphere

FPS = 24


def frames(solver, state, n):
    for _ in range(n):
        solver.step_frame(state)


@pytest.mark.parametrize("size", [0.1, 0.5, 2.0])
def test_a_box_at_rest_falls_asleep_and_stays_exactly_where_it_rested(size):
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh((size,) * 3, (0, 0, size)), shape="box")
    builder.add_collider(engine.Plane())
    settings = engine.SolverSettings(frame_rate=FPS)
    solver = engine.Solver(builder.finalize(), settings)
    state = solver.make_state()
    frames(solver, state, 2 * FPS)  # it lands, settles, and is quiet for a second
    assert state.bodies.asleep[0]
    rest = state.bodies.position.copy(), state.bodies.orientation.copy()
    assert abs(rest[0][0, 2] - size / 2) < 0.01 * size  # asleep where it rests, on the ground
    frames(solver, state, FPS)
    assert np.array_equal(state.bodies.position, rest[0]) and np.array_equal(state.bodies.orientation, rest[1])
    assert not np.any(state.bodies.velocity) and not np.any(state.bodies.angular_velocity)
    # Off, it never sleeps (and rests in the same place within a hundredth of a millimetre).
    awake = engine.Solver(solver.model, engine.SolverSettings(frame_rate=FPS, sleeping=False))
    other = awake.make_state()
    frames(awake, other, 3 * FPS)
    assert not other.bodies.asleep.any()
    assert np.abs(other.bodies.position - rest[0]).max() < 1e-5 + 1e-3 * size


@pytest.mark.parametrize("speed", [1.0, 3.0])
def test_a_ball_rolling_into_a_sleeping_box_wakes_it_and_pushes_it_as_if_it_had_been_awake(speed):
    """The box sleeps by the time the ball comes; what it does after the hit is what it does
    with sleeping off (within a centimetre)."""
    def scene(sleeping):
        builder = engine.ModelBuilder()
        builder.add_rigid_body(*box_mesh((0.5, 0.5, 0.5), (0, 0, 0.25)), shape="box", friction=0.5, mass=5.0)
        start = -2.0 - 1.5 * speed  # arrives after the box has slept (about 1.5 s)
        builder.add_rigid_body(*uv_sphere(0.2, (start, 0, 0.2)), shape="sphere", friction=0.5, mass=20.0,
                               velocity=(speed, 0, 0), angular_velocity=(0, speed / 0.2, 0), name="ball")
        builder.add_collider(engine.Plane(friction=0.5))
        solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS, sleeping=sleeping))
        return solver, solver.make_state()

    solver, state = scene(True)
    slept = False
    for _ in range(6 * FPS):
        solver.step_frame(state)
        slept |= bool(state.bodies.asleep[0])
    assert slept
    reference, ref_state = scene(False)
    frames(reference, ref_state, 6 * FPS)
    moved = state.bodies.position[0, 0]
    assert moved > 0.05  # pushed
    assert abs(moved - ref_state.bodies.position[0, 0]) < 0.01 + 0.05 * abs(ref_state.bodies.position[0, 0])


@pytest.mark.compiled_only
@pytest.mark.parametrize("degrees", [0.2, 0.5, 2.0])
def test_a_ball_on_a_gentle_slope_never_sleeps_and_rolls_at_five_sevenths_g_sin_theta(degrees):
    """Starting from rest its speed is below the sleep speed for a while (at 0.2 degrees, over a
    second): it drifts from where it became quiet and stays awake."""
    theta = math.radians(degrees)
    normal = np.array([0.0, -math.sin(theta), math.cos(theta)])
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*uv_sphere(0.3, 0.3 * normal), shape="sphere", friction=0.8)
    builder.add_collider(engine.Plane.from_point_normal((0, 0, 0), normal, friction=0.8))
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS))
    state = solver.make_state()
    seconds = 4
    frames(solver, state, seconds * FPS)
    expected = 5.0 / 7.0 * G * math.sin(theta) * state.time
    assert not state.bodies.asleep[0]
    assert np.linalg.norm(state.bodies.velocity[0]) == pytest.approx(expected, rel=0.03)


@pytest.mark.parametrize("tilt", [0.5, 2.0])
def test_a_tall_box_leaning_slightly_past_its_edge_still_topples(tilt):
    """Balanced just past its edge it starts from rest and tips slowly at first: it must not be
    put to sleep leaning."""
    size = (0.2, 0.2, 1.0)
    turn = rotation((0, 1, 0), math.degrees(math.atan2(0.1, 0.5)) + tilt)  # its corner under its centre, and past
    verts, faces = box_mesh(size, rotation=turn)
    verts[:, 2] -= verts[:, 2].min()
    builder = engine.ModelBuilder()
    builder.add_rigid_body(verts, faces, shape="box", friction=0.9)
    builder.add_collider(engine.Plane(friction=0.9))
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS))
    state = solver.make_state()
    frames(solver, state, 5 * FPS)
    assert state.bodies.position[0, 2] < 0.15  # lying on its side (its centre 0.1 m up)


def test_a_box_on_a_still_platform_sleeps_and_rides_the_platform_when_it_starts_to_rise():
    def lift(t):
        m = np.eye(4)
        m[2, 3] = 0.0 if t < 2.0 else min(t - 2.0, 1.0) * 0.5  # still for 2 s, then up 0.5 m in 1 s
        return m

    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh((2.0, 2.0, 0.2), (0, 0, -0.1)), shape="box", mode="kinematic", motion=lift)
    builder.add_rigid_body(*box_mesh((0.4, 0.4, 0.4), (0, 0, 0.2)), shape="box", friction=0.5)
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS))
    state = solver.make_state()
    frames(solver, state, int(1.9 * FPS))
    assert state.bodies.asleep[1]
    lowest = np.inf
    while state.time < 3.5:
        solver.step_frame(state)
        top = 0.0 if state.time < 2.0 else min(state.time - 2.0, 1.0) * 0.5
        lowest = min(lowest, state.bodies.position[1, 2] - 0.2 - top)
    assert state.bodies.position[1, 2] == pytest.approx(0.7, abs=0.005)  # on the raised platform
    assert lowest > -0.005  # never sunk into it


def test_a_stack_sleeps_as_one_and_a_ball_rolling_into_it_wakes_all_of_it():
    builder = engine.ModelBuilder()
    for k in range(5):
        builder.add_rigid_body(*box_mesh((0.4, 0.4, 0.4), (0, 0, 0.2 + 0.4 * k)), shape="box", friction=0.6,
                               mass=2.0)
    ball = builder.add_rigid_body(*uv_sphere(0.15, (-6.0, 0, 0.15)), shape="sphere", mass=10.0, friction=0.6,
                                  velocity=(4.0, 0, 0), angular_velocity=(0, 4.0 / 0.15, 0))
    builder.add_collider(engine.Plane(friction=0.6))
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS))
    state = solver.make_state()
    start = state.bodies.position[:5].copy()
    # The ball rolls (it never sleeps: it moves); the stack is asleep, as one, before it arrives.
    frames(solver, state, int(1.2 * FPS))
    assert state.bodies.asleep[:5].all() and not state.bodies.asleep[ball.index]
    assert len(set(state.bodies.sleep_group[:5])) == 1
    hit = False
    for _ in range(3 * FPS):
        solver.step_frame(state)
        moved = np.linalg.norm(state.bodies.position[:5] - start, axis=1) > 1e-3
        if moved.any() and not hit:
            hit = True
            assert not state.bodies.asleep[:5].any()  # woken whole, not just the box it hit
    assert hit
    assert state.bodies.position[4, 2] < 1.7  # the stack was knocked over


def test_a_body_turned_by_a_motor_never_sleeps():
    builder = engine.ModelBuilder()
    disc = builder.add_rigid_body(*box_mesh((1.0, 1.0, 0.1), (0, 0, 1.0)), shape="box")
    builder.add_joint("hinge", disc, None, (0, 0, 1.0), frame=np.eye(3))  # held still until its motor starts
    builder.add_motor(disc, None, (0, 0, 1), mode="speed", target=lambda t: 0.0 if t < 2.0 else 2.0,
                      torque=100.0)
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS))
    state = solver.make_state()
    frames(solver, state, 3 * FPS)
    assert not state.bodies.asleep[0]
    assert abs(state.bodies.angular_velocity[0, 2]) > 1.0


@pytest.mark.parametrize("turns_a_frame", [1.0, 2.0])
def test_a_flywheel_spinning_whole_turns_a_frame_does_not_sleep(turns_a_frame):
    """A body is quiet when it is slow at the frame's end or over the frame (a jitter of a few
    substeps is rest). A free flywheel on a hinge spinning exactly one or two turns a frame ends
    each frame where it began, yet it is not at rest: it keeps spinning."""
    builder = engine.ModelBuilder()
    omega = 2.0 * math.pi * turns_a_frame * FPS
    wheel = builder.add_rigid_body(*box_mesh((0.4, 0.4, 0.05), (0, 0, 1.0)), shape="box",
                                   angular_velocity=(0, 0, omega))
    builder.add_joint("hinge", wheel, None, (0, 0, 1.0), frame=np.eye(3))
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS, substeps=40,
                                                                     energy_guard=False))
    state = solver.make_state()
    frames(solver, state, 2 * FPS)
    assert not state.bodies.asleep[0]
    assert abs(state.bodies.angular_velocity[0, 2]) > 0.9 * omega


def test_cloth_dropped_onto_a_sleeping_box_wakes_it_and_drapes_over_it():
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh((0.4, 0.4, 0.4), (0, 0, 0.2)), shape="box", mass=0.5)
    n = 15
    u = np.linspace(-0.6, 0.6, n)
    gx, gy = np.meshgrid(u, u, indexing="ij")
    verts = np.stack([gx.ravel(), gy.ravel(), np.full(n * n, 4.0)], axis=1)
    faces = [[i * n + j, (i + 1) * n + j, (i + 1) * n + j + 1, i * n + j + 1] for i in range(n - 1)
             for j in range(n - 1)]
    builder.add_cloth(verts, faces, density=0.3)
    builder.add_collider(engine.Plane())
    # (The box rests from the start: it sleeps after a quarter of a second, the cloth lands later.)
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS, sleep_time=0.25))
    state = solver.make_state()
    woke = slept = False
    for _ in range(3 * FPS):
        was = bool(state.bodies.asleep[0])
        solver.step_frame(state)
        slept |= was
        woke |= was and not state.bodies.asleep[0]
    assert slept and woke
    centre = np.abs(state.positions[:, :2]).max(axis=1) < 0.15
    assert state.positions[centre, 2].min() > 0.4  # lying on the box's top, not through it
    assert state.positions[:, 2].min() < 0.3  # and hanging over its sides


@pytest.mark.parametrize("speed", [0.004, 0.008, 0.05])
def test_a_motor_pushing_slowly_moves_a_sleeping_box_as_an_awake_one(speed):
    """A driven body never sleeps and may push slower than the sleep speed: it still wakes what
    it pushes (it stalled against the sleeping box)."""
    def push(sleeping):
        builder = engine.ModelBuilder()
        builder.add_rigid_body(*box_mesh((0.4, 0.4, 0.4), (0, 0, 0.2)), shape="box", friction=0.5, mass=1.0)
        pusher = builder.add_rigid_body(*box_mesh((0.2, 0.4, 0.4), (-0.33, 0, 0.2)), shape="box", mass=5.0,
                                        friction=0.0)
        builder.add_motor(pusher, None, (1, 0, 0), kind="linear", mode="speed",
                          target=lambda t: 0.0 if t < 1.5 else speed, force=500.0)
        builder.add_collider(engine.Plane(friction=0.5))
        solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS, sleeping=sleeping))
        state = solver.make_state()
        slept = False
        for _ in range(5 * FPS):
            solver.step_frame(state)
            slept |= bool(state.bodies.asleep[0])
        return slept, state.bodies.position[0, 0]

    (slept, moved), (_, reference) = push(True), push(False)
    assert slept  # it slept before the pusher started
    assert reference > 0.5 * speed * 3.5 - 0.03  # (awake it is pushed: the pusher closes its 3 cm gap first)
    assert moved == pytest.approx(reference, abs=1e-3)


def test_a_sleeping_box_kicked_or_moved_by_a_script_wakes():
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh((0.4, 0.4, 0.4), (0, 0, 0.2)), shape="box")
    builder.add_collider(engine.Plane())
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=FPS))
    state = solver.make_state()
    frames(solver, state, FPS)
    assert state.bodies.asleep[0]
    state.bodies.velocity[0] = (0.0, 0.0, 3.0)  # kicked upwards
    solver.step_frame(state)
    assert not state.bodies.asleep[0] and state.bodies.position[0, 2] > 0.25
    frames(solver, state, 2 * FPS)
    assert state.bodies.asleep[0]
    state.bodies.position[0, 2] = 1.5  # lifted into the air
    frames(solver, state, FPS // 2)
    assert state.bodies.position[0, 2] < 1.5 - 0.5 * G * 0.4 ** 2  # falling


def test_turning_sleeping_off_wakes_what_sleeps():
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh((0.4, 0.4, 0.4), (0, 0, 0.2)), shape="box", friction=0.1)
    builder.add_collider(engine.Plane(friction=0.1))
    model = builder.finalize()
    solver = engine.Solver(model, engine.SolverSettings(frame_rate=FPS))
    state = solver.make_state()
    frames(solver, state, FPS)
    assert state.bodies.asleep[0]
    awake = engine.Solver(model, engine.SolverSettings(frame_rate=FPS, sleeping=False))
    awake.step_frame(state)
    assert not state.bodies.asleep.any()


def test_settings_out_of_range_are_refused_naming_the_setting():
    for name, value in (("sleep_speed", -1.0), ("sleep_speed", float("nan")), ("sleep_time", 0.0),
                        ("sleeping", "yes")):
        with pytest.raises(engine.JakobsenError) as error:
            engine.SolverSettings(**{name: value}).validate()
        assert error.value.setting == name
