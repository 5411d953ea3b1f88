"""Verlet integration against closed-form mechanics: projectile, drag, pendulum."""

import math

import numpy as np

import jakobsen_engine as engine

G = 9.81


def single_particle(position, velocity=(0, 0, 0), *, mass=1.0, drag=0.0, settings=None):
    builder = engine.ModelBuilder()
    builder.add_particles([position], masses=mass, velocities=[velocity], drag=drag)
    solver = engine.Solver(builder.finalize(), settings or engine.SolverSettings())
    return solver, solver.make_state()


def test_projectile_lands_where_the_textbook_says():
    # Seed 000's school problem: v0 = 15 m/s at 45 degrees, g = 9.81 -> range v0^2 sin(2a) / g.
    v0, angle = 15.0, math.radians(45.0)
    expected = v0 ** 2 * math.sin(2 * angle) / G
    settings = engine.SolverSettings(frame_rate=24, substeps=10, gravity=(0, 0, -G))
    solver, state = single_particle((0, 0, 0), (v0 * math.cos(angle), 0, v0 * math.sin(angle)), settings=settings)
    samples = [(state.time, *state.positions[0, [0, 2]])]
    while state.positions[0, 2] >= 0.0:
        solver.step_frame(state)
        samples.append((state.time, *state.positions[0, [0, 2]]))
    t, x, z = np.array(samples[-3:]).T
    # Verlet started with x* = x - v h + a h^2 / 2 is exact for constant acceleration, so the
    # samples lie on the parabola and a quadratic through the last three finds the landing exactly.
    cz = np.polyfit(t, z, 2)
    roots = np.roots(cz)
    t_land = roots[(roots > t[0]) & (roots <= t[-1])][0].real
    x_land = np.polyval(np.polyfit(t, x, 1), t_land)
    assert abs(x_land - expected) / expected < 1e-6


def test_free_flight_positions_are_exact_at_every_frame():
    settings = engine.SolverSettings(frame_rate=30, substeps=3)
    v = np.array([2.0, -1.0, 7.0])
    solver, state = single_particle((1, 2, 3), v, settings=settings)
    for _ in range(30):
        solver.step_frame(state)
    t = state.time
    expected = np.array([1, 2, 3]) + v * t + 0.5 * np.array(settings.gravity) * t * t
    np.testing.assert_allclose(state.positions[0], expected, rtol=0, atol=1e-9)


def test_quadratic_drag_reaches_terminal_speed():
    # A parachutist (seed 000): R = k v^2, terminal speed sqrt(m g / k).
    m, k = 80.0, 12.0
    solver, state = single_particle((0, 0, 1000), mass=m, drag=k)
    for _ in range(24 * 20):  # 20 s, many time constants
        solver.step_frame(state)
    speed = np.linalg.norm(solver.velocities(state)[0])
    terminal = math.sqrt(m * G / k)
    assert abs(speed - terminal) / terminal < 0.01


def test_wind_drag_pulls_particle_to_air_speed():
    # With no gravity, quadratic drag relative to the air takes a particle to the wind's speed.
    settings = engine.SolverSettings(gravity=(0, 0, 0), air_velocity=(5.0, 0, 0))
    solver, state = single_particle((0, 0, 0), mass=0.1, drag=0.5, settings=settings)
    for _ in range(24 * 10):
        solver.step_frame(state)
    np.testing.assert_allclose(solver.velocities(state)[0], [5.0, 0, 0], atol=0.05)


def test_damping_is_the_same_rate_at_any_substep_count():
    speeds = []
    for substeps in (5, 20):
        settings = engine.SolverSettings(gravity=(0, 0, 0), damping=0.5, substeps=substeps)
        solver, state = single_particle((0, 0, 0), (10, 0, 0), settings=settings)
        for _ in range(24):
            solver.step_frame(state)
        speeds.append(np.linalg.norm(solver.velocities(state)[0]))
    expected = 10 * math.exp(-0.5)
    for s in speeds:
        assert abs(s - expected) / expected < 0.01


def test_pendulum_period_matches_small_angle_formula():
    length = 1.0
    angle = math.radians(3.0)
    builder = engine.ModelBuilder()
    pivot = builder.add_particles([(0, 0, 0)], masses=0.0)
    bob = builder.add_particles([(length * math.sin(angle), 0, -length * math.cos(angle))], masses=1.0)
    builder.add_sticks(pivot, bob)
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(frame_rate=24, substeps=10))
    state = solver.make_state()
    crossings, previous, t_previous = [], state.positions[1, 0], state.time
    for _ in range(24 * 12):
        solver.step_frame(state)
        x = state.positions[1, 0]
        if previous > 0.0 >= x:  # crossing the vertical the same way: once per period
            crossings.append(t_previous + (state.time - t_previous) * previous / (previous - x))
        previous, t_previous = x, state.time
    periods = np.diff(crossings)
    expected = 2 * math.pi * math.sqrt(length / G)
    assert len(periods) >= 4
    assert abs(periods.mean() - expected) / expected < 0.01
    # the stick held: the bob is still on the circle
    assert abs(np.linalg.norm(state.positions[1]) - length) < 1e-9
