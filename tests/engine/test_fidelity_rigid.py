"""Physical fidelity of rigid bodies (issue 11): momentum that travels through touching bodies,
swings that keep their energy, bounces that neither gain nor lose it, precession, piles at rest.

Each test states a physical fact and checks it with a tolerance over a range of settings."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine

from .rigid_scenes import G, box_mesh, energy, rotation, uv_sphere

NO_GRAVITY = engine.SolverSettings(gravity=(0.0, 0.0, 0.0))


# -- Newton's cradle --------------------------------------------------------------------------

def free_cradle(count, speed, radius, mass=0.3):
    """``count`` equal balls in a row along X, touching, the first one 2 radii back from the
    others and moving into them at ``speed`` (no gravity, e = 1, no friction)."""
    builder = engine.ModelBuilder()
    for k in range(count):
        x = 2 * radius * k - (2 * radius if k == 0 else 0.0)
        builder.add_rigid_body(*uv_sphere(radius, centre=(x, 0, 0)), name=f"ball {k}", mass=mass, shape="sphere",
                               restitution=1.0, friction=0.0, velocity=(speed if k == 0 else 0.0, 0, 0))
    solver = engine.Solver(builder.finalize(), NO_GRAVITY)
    return solver, solver.make_state()


@pytest.mark.parametrize("count", [3, 5])
@pytest.mark.parametrize("speed, radius", [(0.5, 0.05), (2.0, 0.2), (4.0, 0.1)])
def test_a_newtons_cradle_passes_the_impact_to_the_last_ball(count, speed, radius):
    """e = 1, equal masses: the struck ball stops, the impulse runs through the touching ones
    and the last leaves with the first's speed (a sequence of pairwise elastic impacts)."""
    solver, state = free_cradle(count, speed, radius)
    mass = solver.model.bodies.mass
    p0 = (mass[:, None] * state.bodies.velocity).sum(axis=0)
    for _ in range(int(24 * (2 * radius / speed + 0.25)) + 1):  # the gap closed, then a quarter second
        solver.step_frame(state)
    v = state.bodies.velocity
    assert v[-1, 0] >= 0.9 * speed
    assert np.abs(v[:-1]).max() < 0.1 * speed
    p1 = (mass[:, None] * v).sum(axis=0)
    assert np.linalg.norm(p1 - p0) < 0.01 * np.linalg.norm(p0)


def hanging_cradle(count, degrees, radius=0.05, length=1.0):
    """Balls hanging on 1 m Ball and Socket connectors, touching at the bottom; the first is
    pulled out to ``degrees`` and let go."""
    builder = engine.ModelBuilder()
    for k in range(count):
        pivot_x = 2 * radius * k
        angle = math.radians(degrees) if k == 0 else 0.0
        centre = (pivot_x - length * math.sin(angle), 0, length - length * math.cos(angle))
        ball = builder.add_rigid_body(*uv_sphere(radius, centre=centre), name=f"ball {k}", mass=0.2, shape="sphere",
                                      restitution=1.0, friction=0.0)
        builder.add_joint("ball_socket", None, ball, (pivot_x, 0, length), name=f"string {k}")
    solver = engine.Solver(builder.finalize())
    return solver, solver.make_state()


@pytest.mark.parametrize("count", [3, 5])
@pytest.mark.parametrize("degrees", [10, 30])
def test_a_hanging_newtons_cradle_swings_the_last_ball_out(count, degrees):
    solver, state = hanging_cradle(count, degrees)
    speeds = []
    for _ in range(30):  # past the impact (a quarter period, 0.5 s) and the last ball's swing out
        solver.step_frame(state)
        speeds.append(np.linalg.norm(state.bodies.velocity, axis=1))
    speeds = np.array(speeds)
    hit = int(np.argmax(speeds[:, -1] > 0.05 * speeds[:, 0].max()))
    assert hit > 0
    impact = speeds[:hit + 1, 0].max()
    assert speeds[hit:, -1].max() >= 0.9 * impact
    assert speeds[hit + 1:, :-1].max() < 0.1 * impact


@pytest.mark.parametrize("restitution", [0.0, 0.5, 1.0])
def test_a_stack_of_bouncy_boxes_stands_still(restitution):
    """Touching bodies carry impacts, not resting weight: a stack of six boxes (and e up to 1)
    does not bounce or jitter."""
    size = 0.5
    builder = engine.ModelBuilder()
    for k in range(6):
        builder.add_rigid_body(*box_mesh((size,) * 3, centre=(0, 0, size / 2 + k * size)), name=f"box {k}",
                               shape="box", restitution=restitution)
    builder.add_collider(engine.Plane(restitution=restitution))
    solver = engine.Solver(builder.finalize())
    state = solver.make_state()
    start = state.bodies.position.copy()
    speeds = []
    for _ in range(24 * 4):
        solver.step_frame(state)
        speeds.append(np.linalg.norm(state.bodies.velocity, axis=1).max())
    assert np.abs(state.bodies.position - start).max() < 0.01 * size
    assert max(speeds[24:]) < 0.02
