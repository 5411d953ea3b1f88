"""Connectors as physics: the first joints (ball and socket, hinge, fixed)."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import JakobsenError

from .rigid_scenes import G, box_mesh

NO_GRAVITY = engine.SolverSettings(gravity=(0.0, 0.0, 0.0))


def build(*bodies, joints=(), settings=None):
    builder = engine.ModelBuilder()
    handles = [builder.add_rigid_body(*mesh, **kw) for mesh, kw in bodies]
    for kind, a, b, pivot, kw in joints:
        builder.add_joint(kind, None if a is None else handles[a], None if b is None else handles[b], pivot, **kw)
    solver = engine.Solver(builder.finalize(), settings or engine.SolverSettings())
    return solver, solver.make_state()


@pytest.mark.compiled_only
def test_rod_on_a_ball_joint_swings_with_the_physical_pendulum_period():
    # A slender rod hanging from one end: T = 2 pi sqrt(I_pivot / (m g d)), I_pivot = m L^2 / 3, d = L / 2.
    length, angle = 1.0, math.radians(4.0)
    rot = np.array([[1, 0, 0], [0, math.cos(angle), -math.sin(angle)], [0, math.sin(angle), math.cos(angle)]])
    centre = rot @ np.array([0, 0, -length / 2])
    rod = (box_mesh((0.02, 0.02, length), centre=centre, rotation=rot), dict(shape="box"))
    solver, state = build(rod, joints=[("ball_socket", None, 0, (0, 0, 0), {})])
    crossings, previous, t_previous = [], state.bodies.position[0, 1], 0.0
    for _ in range(24 * 8):
        solver.step_frame(state)
        y = state.bodies.position[0, 1]
        if previous < 0.0 <= y:
            crossings.append(t_previous + (state.time - t_previous) * -previous / (y - previous))
        previous, t_previous = y, state.time
        # the pivot stays put: the rod's top end is at the origin
        top = state.bodies.position[0] + engine.quaternions.rotate(
            engine.quaternions.multiply(state.bodies.orientation[0],
                                        engine.quaternions.conjugate(solver.model.bodies.rest_orientation[0])),
            -centre)
        assert np.linalg.norm(top) < 1e-3
    expected = 2 * math.pi * math.sqrt((length ** 2 / 3) / (G * length / 2))
    periods = np.diff(crossings)
    assert len(periods) >= 3
    assert abs(periods.mean() - expected) / expected < 0.01


@pytest.mark.compiled_only
def test_hinge_spins_freely_about_its_axis_and_keeps_it():
    omega = 2 * 2 * math.pi  # 2 rev/s
    wheel = (box_mesh((0.6, 0.6, 0.1)), dict(shape="box", angular_velocity=(0, 0, omega)))
    solver, state = build(wheel, joints=[("hinge", None, 0, (0, 0, 0), dict(axis=(0, 0, 1)))], settings=NO_GRAVITY)
    for _ in range(24):
        solver.step_frame(state)
    w = state.bodies.angular_velocity[0]
    assert abs(w[2] - omega) / omega < 0.01  # < 1% lost in a second
    assert np.linalg.norm(w[:2]) < 1e-6
    assert np.linalg.norm(state.bodies.position[0]) < 1e-3


@pytest.mark.compiled_only
def test_hinge_locks_the_other_rotations_under_a_push():
    door = (box_mesh((1.0, 0.05, 2.0), centre=(0.5, 0, 1.0)), dict(shape="box"))
    solver, state = build(door, joints=[("hinge", None, 0, (0, 0, 1.0), dict(axis=(0, 0, 1)))])
    state.bodies.angular_velocity[0] = (3.0, 0.0, 2.0)  # a shove with an off-axis part
    for _ in range(24 * 2):
        solver.step_frame(state)
    rot = engine.quaternions.to_matrix(state.bodies.orientation[0]) @ \
        engine.quaternions.to_matrix(solver.model.bodies.rest_orientation[0]).T
    tilt = math.degrees(math.acos(np.clip(rot[2, 2], -1, 1)))
    assert tilt < 0.5  # the hinge axis stays vertical
    assert abs(np.linalg.norm(state.bodies.position[0, :2]) - 0.5) < 1e-3  # centre on its circle


@pytest.mark.compiled_only
def test_chain_of_hinged_links_keeps_its_links_together():
    # Each mechanism's joints are solved together, so a long chain is as tight as one joint.
    links, size = 20, 0.3
    bodies = [(box_mesh((size, 0.05, 0.05), centre=((k + 0.5) * size, 0, 2.0)), dict(shape="box", name=f"link {k}"))
              for k in range(links)]
    joints = [("hinge", None, 0, (0, 0, 2.0), dict(axis=(0, 1, 0)))]
    joints += [("hinge", k - 1, k, (k * size, 0, 2.0), dict(axis=(0, 1, 0))) for k in range(1, links)]
    solver, state = build(*bodies, joints=joints)
    model = solver.model
    worst = 0.0
    for _ in range(24 * 10):
        solver.step_frame(state)
        x, q = state.bodies.position, state.bodies.orientation
        j = model.joints
        xs = np.vstack([x, np.zeros((1, 3))])
        qs = np.vstack([q, [[1.0, 0, 0, 0]]])
        p1 = xs[j.a] + engine.quaternions.rotate(qs[j.a], j.local_a)
        p2 = xs[j.b] + engine.quaternions.rotate(qs[j.b], j.local_b)
        worst = max(worst, np.linalg.norm(p1 - p2, axis=1).max())
    assert worst < 1e-3
    assert state.bodies.position[:, 2].min() < 1.0  # it really swung down


def test_connector_with_no_bodies_is_rejected():
    builder = engine.ModelBuilder()
    builder.add_rigid_body(*box_mesh(), name="crate")
    with pytest.raises(JakobsenError, match="connector 'Hinge': it has neither Object A nor Object B"):
        builder.add_joint("hinge", None, None, (0, 0, 0), name="Hinge")


@pytest.mark.compiled_only
def test_a_bridge_hinged_to_the_world_at_both_ends_carries_crates():
    """A loop of connectors repeats constraints (the planks' hinges all forbid the same sideways
    motion), so its system is singular; it must still hold together, not explode."""
    planks, width = 8, 0.4
    bodies = [(box_mesh((width - 0.02, 1.0, 0.05), centre=((k + 0.5) * width, 0, 2.0)),
               dict(shape="box", mass=5.0, name=f"plank {k}")) for k in range(planks)]
    bodies += [(box_mesh((0.3,) * 3, centre=(1.0 + 0.6 * i, 0, 2.4 + 0.3 * i)), dict(shape="box", mass=20.0))
               for i in range(2)]
    joints = [("hinge", None, 0, (0, 0, 2.0), dict(axis=(0, 1, 0)))]
    joints += [("hinge", k - 1, k, (k * width, 0, 2.0), dict(axis=(0, 1, 0))) for k in range(1, planks)]
    joints += [("hinge", planks - 1, None, (planks * width, 0, 2.0), dict(axis=(0, 1, 0)))]
    solver, state = build(*bodies, joints=joints)
    j = solver.model.joints
    worst = 0.0
    for _ in range(36):
        solver.step_frame(state)
        xs = np.vstack([state.bodies.position, np.zeros((1, 3))])
        qs = np.vstack([state.bodies.orientation, [[1.0, 0, 0, 0]]])
        p1 = xs[j.a] + engine.quaternions.rotate(qs[j.a], j.local_a)
        p2 = xs[j.b] + engine.quaternions.rotate(qs[j.b], j.local_b)
        worst = max(worst, np.linalg.norm(p1 - p2, axis=1).max())
    assert worst < 1e-3
    crates = state.bodies.position[planks:]
    assert np.all(np.abs(crates[:, 2] - (2.025 + 0.15)) < 0.05)  # resting on the deck
    assert np.linalg.norm(state.bodies.velocity, axis=1).max() < 0.1
