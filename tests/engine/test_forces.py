"""Force fields as physics: wind and drag, drag fields, attractors and repellers, turbulence,
Follow Position / Follow Rotation."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import JakobsenError
from jakobsen_engine.forces import fields
from jakobsen_engine.geometry import quaternions as quat

from .rigid_scenes import G, box_mesh, rotation

NO_GRAVITY = engine.SolverSettings(gravity=(0.0, 0.0, 0.0))


def particle_world(positions, *, forces=(), masses=1.0, drag=0.0, velocities=None, settings=NO_GRAVITY):
    builder = engine.ModelBuilder()
    builder.add_particles(np.atleast_2d(positions), masses=masses, drag=drag, velocities=velocities)
    for kind, settings_ in forces:
        builder.add_force(kind, **settings_)
    solver = engine.Solver(builder.finalize(), settings)
    return solver, solver.make_state()


def body_world(*, forces=(), settings=NO_GRAVITY, mesh=None, **body):
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*(mesh or box_mesh((0.5, 0.5, 0.5))), name="box", **body)
    for kind, settings_ in forces:
        builder.add_force(kind, **settings_)
    solver = engine.Solver(builder.finalize(), settings)
    return solver, solver.make_state()


def run(solver, state, seconds):
    for _ in range(int(round(seconds * solver.settings.frame_rate))):
        solver.step_frame(state)


# -- wind and drag --------------------------------------------------------------------------------


def test_particle_with_drag_reaches_the_wind_speed():
    # Relative speed under quadratic drag k = drag/m falls as 5 / (1 + 5 k t): 0.4% left after 5 s.
    wind = ("wind", dict(direction=(0, 2, 0), strength=5.0))
    solver, state = particle_world([0, 0, 0], forces=[wind], drag=10.0)
    run(solver, state, 5.0)
    v = solver.velocities(state)[0]
    assert abs(v[1] - 5.0) < 0.01 * 5.0
    assert abs(v[0]) < 1e-9 and abs(v[2]) < 1e-9


def test_particle_without_drag_ignores_the_wind():
    solver, state = particle_world([0, 0, 0], forces=[("wind", dict(strength=5.0, turbulence=0.5))])
    run(solver, state, 1.0)
    assert np.all(state.positions == 0.0)


def test_body_with_drag_reaches_the_wind_speed_and_still_air_slows_it():
    wind = ("wind", dict(direction=(1, 0, 0), strength=4.0))
    solver, state = body_world(forces=[wind], mass=1.0, drag=10.0)
    run(solver, state, 5.0)
    assert abs(state.bodies.velocity[0, 0] - 4.0) < 0.01 * 4.0
    # No wind: quadratic drag alone, v(t) = v0 / (1 + k v0 t) with k = drag / m.
    solver, state = body_world(mass=2.0, drag=1.0, velocity=(3.0, 0, 0))
    run(solver, state, 1.0)
    assert state.bodies.velocity[0, 0] == pytest.approx(3.0 / (1.0 + 0.5 * 3.0 * 1.0), rel=0.01)


def test_linear_drag_field_decays_a_body_as_exp_of_minus_c_t_over_m():
    c, m, v0 = 3.0, 2.0, 4.0
    solver, state = body_world(forces=[("drag", dict(linear=c))], mass=m, velocity=(v0, 0, -1.0))
    run(solver, state, 1.0)
    expected = np.array([v0, 0.0, -1.0]) * math.exp(-c * 1.0 / m)
    np.testing.assert_allclose(state.bodies.velocity[0], expected, rtol=0.02)


def test_drag_fields_act_on_particles_by_their_mass_and_never_reverse_them():
    c = 1.0
    solver, state = particle_world([[0, 0, 0], [5, 0, 0]], masses=[1.0, 4.0], velocities=[[2, 0, 0], [2, 0, 0]],
                                   forces=[("drag", dict(linear=c)), ("drag", dict(quadratic=1e6))])
    run(solver, state, 0.5)
    v = solver.velocities(state)[:, 0]
    assert np.all(v >= 0.0) and np.all(np.isfinite(v))
    # A lone linear field: each particle decays as exp(-c t / m).
    solver, state = particle_world([[0, 0, 0], [5, 0, 0]], masses=[1.0, 4.0], velocities=[[2, 0, 0], [2, 0, 0]],
                                   forces=[("drag", dict(linear=c))])
    run(solver, state, 1.0)
    np.testing.assert_allclose(solver.velocities(state)[:, 0], 2.0 * np.exp(-c * 1.0 / np.array([1.0, 4.0])),
                               rtol=0.02)


# -- attractors -----------------------------------------------------------------------------------


def test_attractor_without_falloff_accelerates_a_body_at_its_strength():
    pull = ("attractor", dict(position=(0, 0, 0), strength=2.0))
    solver, state = body_world(forces=[pull], mesh=box_mesh((0.5, 0.5, 0.5), centre=(10, 0, 0)))
    run(solver, state, 0.5)
    v = state.bodies.velocity[0]
    assert v[0] == pytest.approx(-2.0 * 0.5, rel=0.01)
    assert abs(v[1]) < 1e-12 and abs(v[2]) < 1e-12


def test_inverse_square_falloff_goes_as_one_over_r_squared():
    # Two particles at 1 m and 2 m on different sides, one frame: v / t is the acceleration.
    for falloff, ratio in (("inverse_square", 0.25), ("inverse", 0.5)):
        solver, state = particle_world([[1, 0, 0], [0, -2, 0]],
                                       forces=[("attractor", dict(strength=3.0, falloff=falloff))])
        solver.step_frame(state)
        a = np.linalg.norm(solver.velocities(state), axis=1) / state.time
        assert a[0] == pytest.approx(3.0, rel=0.01)
        assert a[1] / a[0] == pytest.approx(ratio, rel=0.01)


def test_repeller_pushes_away_min_distance_clamps_and_max_distance_cuts_off():
    push = ("attractor", dict(position=(0, 0, 1), strength=-1.0, falloff="inverse_square", min_distance=0.5,
                              max_distance=3.0))
    solver, state = particle_world([[0, 0, 1.1], [0, 0, -0.5], [0, 0, 5.0]], forces=[push])
    solver.step_frame(state)
    v = solver.velocities(state)
    a = v[:, 2] / state.time
    assert a[0] == pytest.approx(1.0 / 0.5 ** 2, rel=0.01)  # clamped at 0.5 m, not 1 / 0.1^2 = 100
    assert a[1] == pytest.approx(-1.0 / 1.5 ** 2, rel=0.01)  # below the point: pushed down
    assert np.all(v[2] == 0.0)  # beyond max_distance


def test_pinned_particles_and_kinematic_bodies_feel_no_field():
    pull = ("attractor", dict(strength=5.0))
    solver, state = particle_world([[1, 0, 0]], masses=0.0, forces=[pull])
    run(solver, state, 0.2)
    assert np.all(state.positions == [[1, 0, 0]])
    solver, state = body_world(forces=[pull, ("wind", dict(strength=3.0))], mode="kinematic", drag=1.0,
                               mesh=box_mesh((0.5, 0.5, 0.5), centre=(2, 0, 0)))
    run(solver, state, 0.2)
    np.testing.assert_allclose(state.bodies.position[0], [2, 0, 0], atol=1e-12)


# -- turbulence -----------------------------------------------------------------------------------


GUSTY = dict(direction=(1, 1, 0), strength=6.0, turbulence=0.3, turbulence_scale=2.0, turbulence_frequency=0.5)


def gusty_cloud(seed):
    grid = np.stack(np.meshgrid(np.arange(4.0), np.arange(4.0), [0.0]), axis=-1).reshape(-1, 3)
    return particle_world(grid, drag=0.5, forces=[("wind", dict(GUSTY, seed=seed))])


def test_turbulence_is_seeded():
    runs = []
    for seed in (7, 7, 8):
        solver, state = gusty_cloud(seed)
        run(solver, state, 1.0)
        runs.append(state.positions.copy())
    assert np.array_equal(runs[0], runs[1])
    assert np.max(np.abs(runs[0] - runs[2])) > 1e-3
    # The gusts differ from particle to particle: each feels its own air.
    along = runs[0] @ np.array([1.0, 1.0, 0.0]) / math.sqrt(2.0)
    assert np.ptp(along) > 1e-3


def test_turbulent_air_averages_to_the_wind_and_gusts_at_the_turbulence():
    field = fields.check_force("wind", "Gusty", **GUSTY, seed=3)
    t = np.arange(0.0, 400.0, 0.05)
    air = np.array([fields.wind_velocity(field, ti, np.array([[0.3, -1.0, 2.0]]))[0] for ti in t])
    mean = air.mean(axis=0)
    expected = np.array([1.0, 1.0, 0.0]) / math.sqrt(2.0) * 6.0
    assert np.linalg.norm(mean - expected) < 0.03 * 6.0
    assert np.linalg.norm(air, axis=1).mean() == pytest.approx(6.0, rel=0.06)
    rms = math.sqrt(np.mean(np.sum((air - expected) ** 2, axis=1)))
    assert rms == pytest.approx(0.3 * 6.0, rel=0.1)


def test_turbulence_is_smooth_in_space_and_time():
    field = fields.check_force("wind", "Gusty", **GUSTY, seed=1)
    x = np.random.default_rng(0).uniform(-5, 5, (200, 3))
    base = fields.wind_velocity(field, 1.0, x)
    # Gust gradients are about rms 2 pi / scale (~6 /s) in space and, as the gusts drift by at
    # the wind speed, rms (2 pi f + 2 pi U / scale) (~35 m/s^2) in time: 1 mm or 1 ms moves the
    # air by hundredths of a m/s.
    dx = np.linalg.norm(fields.wind_velocity(field, 1.0, x + [1e-3, 0, 0]) - base, axis=1)
    dt = np.linalg.norm(fields.wind_velocity(field, 1.001, x) - base, axis=1)
    assert dx.max() < 0.02 and dt.max() < 0.1
    # ...but across a gust (a scale away) it changes by about the gust speed.
    far = np.linalg.norm(fields.wind_velocity(field, 1.0, x + [2.0, 0, 0]) - base, axis=1)
    assert far.mean() > 0.5


# -- follow position / rotation -------------------------------------------------------------------


def sliding(t):
    m = np.eye(4)
    m[:3, 3] = (1.0 * t, 0.5 * t, 0.0)
    return m


def test_follow_position_tracks_a_moving_target():
    solver, state = body_world(motion=sliding, follow_position=10.0)
    run(solver, state, 3.0)
    target = sliding(state.time)[:3, 3]
    assert np.linalg.norm(state.bodies.position[0] - target) < 1e-3
    np.testing.assert_allclose(state.bodies.velocity[0], [1.0, 0.5, 0.0], atol=1e-3)
    # Strength zero: a dynamic body ignores its motion.
    solver, state = body_world(motion=sliding)
    run(solver, state, 1.0)
    assert np.all(state.bodies.position[0] == 0.0)


def test_follow_position_is_a_critically_damped_spring():
    # Released 1 m from a still target: x(t) = (1 + s t) e^(-s t), no overshoot; under gravity
    # it hangs g / s^2 below.
    s = 4.0
    back = np.eye(4)
    back[0, 3] = -1.0  # motion is relative to the rest pose: the target is the origin
    solver, state = body_world(motion=lambda t: back, follow_position=s,
                               mesh=box_mesh((0.5, 0.5, 0.5), centre=(1, 0, 0)))
    lowest = 1.0
    for _ in range(24):
        solver.step_frame(state)
        lowest = min(lowest, state.bodies.position[0, 0])
    assert state.bodies.position[0, 0] == pytest.approx((1 + s) * math.exp(-s), rel=0.03)
    assert lowest > -1e-9
    solver, state = body_world(follow_position=10.0, settings=engine.SolverSettings())
    run(solver, state, 3.0)
    assert -state.bodies.position[0, 2] == pytest.approx(G / 100.0, rel=0.02)


def test_strong_follow_position_is_stable():
    solver, state = body_world(motion=sliding, follow_position=1e5)
    run(solver, state, 0.5)
    np.testing.assert_allclose(state.bodies.position[0], sliding(state.time)[:3, 3], atol=1e-6)


def turning(t):
    m = np.eye(4)
    m[:3, :3] = rotation((1, 2, 3), math.degrees(1.5 * t))
    return m


@pytest.mark.parametrize("strength", [10.0, 1e4])
def test_follow_rotation_turns_a_body_to_its_animated_orientation(strength):
    mesh = box_mesh((0.3, 0.6, 1.2), rotation=rotation((1, 0, 1), 25))
    solver, state = body_world(mesh=mesh, motion=turning, follow_rotation=strength)
    run(solver, state, 3.0)
    _, rot = solver.body_poses(state)
    target = quat.from_matrix(turning(state.time)[:3, :3])
    angle = np.linalg.norm(quat.log_rotation(quat.multiply(rot[0], quat.conjugate(target))))
    assert math.degrees(angle) < 1.0
    # Follow rotation alone leaves the position free.
    np.testing.assert_allclose(state.bodies.position[0], [0, 0, 0], atol=1e-9)


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, settings, words", [
    ("tornado", {}, "kind"),
    ("wind", dict(strength=math.nan), "strength"),
    ("wind", dict(strength=math.inf), "strength"),
    ("wind", dict(direction=(0, 0, 0)), "direction"),
    ("wind", dict(direction=(1, 0)), "direction"),
    ("wind", dict(turbulence_scale=-1.0), "turbulence scale"),
    ("wind", dict(turbulence=-0.1), "turbulence"),
    ("wind", dict(seed=1.5), "seed"),
    ("wind", dict(speed=3.0), "speed"),
    ("drag", dict(linear=-1.0), "linear"),
    ("drag", dict(quadratic=math.nan), "quadratic"),
    ("attractor", dict(falloff="cubic"), "falloff"),
    ("attractor", dict(position=(0, math.inf, 0)), "position"),
    ("attractor", dict(min_distance=2.0, max_distance=1.0), "max distance"),
])
def test_bad_force_settings_name_the_field(kind, settings, words):
    with pytest.raises(JakobsenError, match=rf"force 'Wind'.*{words}"):
        engine.ModelBuilder().add_force(kind, name="Wind", **settings)


@pytest.mark.parametrize("keyword", ["drag", "follow_position", "follow_rotation"])
def test_bad_body_force_settings_name_the_body(keyword):
    with pytest.raises(JakobsenError, match=r"rigid body 'Crate'.*" + keyword.replace("_", " ")):
        engine.ModelBuilder().add_rigid_body(*box_mesh(), name="Crate", **{keyword: -1.0})
