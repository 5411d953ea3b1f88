"""Whole scenes step to the same motion on both kernel backends.

The kernel tests (test_kernels*.py) compare each kernel on random inputs. These compare what a
user gets from the solver as a whole, with every kind of part in play at once (cloth with pins,
self-collision, a mesh collider, a sphere and wind; cloth and rigid bodies pushing each other;
boxes, round shapes, connectors, a spring and a motor), so that the reference backend is known to
run the same solver, not only the same kernels. It is what lets the physics tests run most of their
range on the compiled backend alone (see conftest.py): the numpy reference gives the same numbers.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import backend
from jakobsen_engine.geometry.primitives import grid

from .rigid_scenes import box_mesh, uv_sphere
from .rigid_scenes import rotation as rigid_rotation

pytestmark = [pytest.mark.compares_backends,
              pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")]


def cloth_on_a_bumpy_mesh(stretch):
    builder = engine.ModelBuilder()
    v, f = grid(13, 13, 0.6)
    v[:, 2] += 0.25
    pins = ((np.abs(v[:, 0]) > 0.29) & (v[:, 1] > 0.29)).astype(float)
    builder.add_cloth(v, f, pin_weights=pins, self_collision=True, self_distance=0.01, friction=0.4, drag=0.3,
                      stretch_stiffness=stretch, bend_stiffness=0.01)
    gv, gf = grid(7, 7, 1.2)
    gv[:, 2] = 0.03 * np.sin(5 * gv[:, 0]) * np.cos(4 * gv[:, 1])
    builder.add_collider(engine.TriangleMesh.from_mesh(gv, gf, margin=0.02, friction=0.6))
    builder.add_collider(engine.Sphere(radius=0.1))
    builder.add_force("wind", strength=2.0, direction=(1.0, 0.3, 0.0), turbulence=0.5)
    return builder, engine.SolverSettings(substeps=8), 24


def bodies_on_a_sheet(density):
    builder = engine.ModelBuilder()
    v, f = grid(11, 11, 0.8)
    v[:, 2] += 0.3
    builder.add_cloth(v, f, pin_weights=(np.max(np.abs(v[:, :2]), axis=1) > 0.39).astype(float), density=density)
    builder.add_rigid_body(*box_mesh((0.15, 0.15, 0.15), (0.05, 0.0, 0.6)), mass=0.5, shape="box")
    builder.add_rigid_body(*uv_sphere(0.08, (-0.1, 0.1, 0.8)), mass=0.3, shape="sphere")
    builder.add_collider(engine.Plane())
    return builder, engine.SolverSettings(substeps=10), 20


def bodies_and_connectors(restitution):
    builder = engine.ModelBuilder()
    builder.add_collider(engine.Plane.from_point_normal((0, 0, 0), (0.1, 0.0, 1.0), friction=0.7))
    for i in range(3):
        builder.add_rigid_body(*box_mesh((0.3, 0.3, 0.3), (0.0, 0.0, 0.16 + 0.31 * i)), shape="box",
                               restitution=restitution)
    builder.add_rigid_body(*uv_sphere(0.2, (0.8, 0.0, 0.5)), shape="sphere", angular_velocity=(0, 3, 0))
    builder.add_rigid_body(*box_mesh((0.6, 0.2, 0.2), (-0.8, 0.0, 0.5)), shape="capsule")
    builder.add_rigid_body(*box_mesh((0.3, 0.3, 0.2), (-0.8, 0.8, 0.5)), shape="cylinder")
    arm = builder.add_rigid_body(*box_mesh((0.6, 0.1, 0.1), (0.3, 1.0, 1.5)), shape="box")
    arm2 = builder.add_rigid_body(*box_mesh((0.6, 0.1, 0.1), (0.9, 1.0, 1.5)), shape="box")
    builder.add_joint("hinge", None, arm, (0.0, 1.0, 1.5), axis=(0, 1, 0))
    builder.add_joint("ball_socket", arm, arm2, (0.6, 1.0, 1.5))
    builder.add_spring(None, arm2, (1.2, 1.0, 2.5), (1.2, 1.0, 1.5), rest_length=0.8, stiffness=200.0)
    builder.add_motor(arm, None, (0, 1, 0), mode="speed", target=2.0, torque=5.0)
    return builder, engine.SolverSettings(substeps=10), 10


def crates_across_each_other(turn):
    """Boxes and hulls meeting where their faces' edges cross (``face_crossings``) and edge on
    edge: a crate turned on another, a plank across two, crossed beams, a crate tipped onto a
    world table's edge and one dropped corner first."""
    from .rigid_scenes import rotation

    builder = engine.ModelBuilder()
    builder.add_collider(engine.Plane(friction=0.6))
    top = np.eye(4)
    top[:3, 3] = (1.5, 0.0, 0.3)
    builder.add_collider(engine.Box(half_extents=(0.4, 0.4, 0.3), transform=top))
    builder.add_rigid_body(*box_mesh((0.5, 0.5, 0.5), (0.0, 0.0, 0.25)), shape="box")
    builder.add_rigid_body(*box_mesh((0.5, 0.5, 0.5), (0.05, 0.0, 0.78), rotation((0, 0, 1), turn)))
    builder.add_rigid_body(*box_mesh((1.2, 0.2, 0.05), (0.0, 0.0, 1.1), rotation((0, 0, 1), 2 * turn)),
                           shape="box", angular_velocity=(0.0, 1.0, 0.0))
    builder.add_rigid_body(*box_mesh((0.2, 1.0, 0.1), (-1.0, 0.0, 0.05)))
    builder.add_rigid_body(*box_mesh((1.0, 0.2, 0.1), (-1.0, 0.1, 0.25), rotation((1, 1, 0), turn)), shape="box")
    builder.add_rigid_body(*box_mesh((0.3, 0.3, 0.3), (1.3, 0.3, 0.9), rotation((1, 0, 1), 40.0)),
                           angular_velocity=(2.0, 0.0, 0.0))
    return builder, engine.SolverSettings(substeps=10), 24


def _step(builder, settings, frames, name):
    solver = engine.Solver(builder.finalize(), dataclasses.replace(settings, backend=name))
    assert solver.backend.name == name
    state = solver.make_state()
    start = state.positions.copy(), state.bodies.x.copy()
    for _ in range(frames):
        solver.step_frame(state)
    return (state.positions.copy(), state.bodies.x.copy(), state.bodies.q.copy()), start


@pytest.mark.parametrize("scene, setting", [(cloth_on_a_bumpy_mesh, np.inf), (cloth_on_a_bumpy_mesh, 500.0),
                                            (bodies_on_a_sheet, 0.2), (bodies_on_a_sheet, 3.0),
                                            (bodies_and_connectors, 0.0), (bodies_and_connectors, 0.6),
                                            (crates_across_each_other, 20.0), (crates_across_each_other, 45.0)])
def test_a_scene_steps_to_the_same_motion_on_both_backends(scene, setting):
    compiled, start = _step(*scene(setting), "numba")
    reference, _ = _step(*scene(setting), "numpy")
    for what, a, b in zip(("particle positions", "body positions", "body orientations"), compiled, reference):
        assert a.shape == b.shape
        if len(a):
            gap = float(np.abs(a - b).max())
            assert gap <= 1e-8, f"{scene.__name__}({setting}): the backends' {what} differ by {gap:.2e}"
    # Motion, not a scene at rest, is compared: something travelled several centimetres.
    travelled = max(float(np.abs(a - r).max()) if len(a) else 0.0 for a, r in zip(reference[:2], start))
    assert travelled > 0.03, f"{scene.__name__}({setting}): nothing moved"


def a_pile_of_boxes(restitution):
    """27 boxes, a little turned, dropped in a heap onto a slope: every colour of pairs has
    bodies touching several others, and some bounce."""
    builder = engine.ModelBuilder()
    builder.add_collider(engine.Plane.from_point_normal((0, 0, 0), (0.05, 0.0, 1.0), friction=0.6))
    r = np.random.default_rng(7)
    for k in range(27):
        i, j, m = k % 3, (k // 3) % 3, k // 9
        turn = rigid_rotation(r.normal(size=3), float(r.uniform(0.0, 20.0)))
        builder.add_rigid_body(*box_mesh((0.3, 0.3, 0.3), (0.32 * i + 0.05 * m, 0.32 * j, 0.2 + 0.33 * m), turn),
                               shape="box", restitution=restitution, friction=0.5)
    return builder, engine.SolverSettings(substeps=10, sleeping=False), 18


@pytest.mark.parametrize("restitution", [0.0, 0.5])
def test_the_contacts_solved_on_all_cores_give_the_serial_solves_bits(restitution, monkeypatch):
    """Big scenes (1,000 boxes) find, make and solve their contacts on all cores: the pairs in
    chunks whose contacts are joined in order, each colour's pairs side by side (they share no
    moving body), each contact's rows side by side. Forced here for every colour and contact of a
    small pile, in more chunks than cores, with buffers that grow as the pile lands: the same bits
    as the serial solve, and the reference's motion."""
    from jakobsen_engine.backend.numba import contacts as finding
    from jakobsen_engine.backend.numba import rigid as compiled

    monkeypatch.setattr(compiled, "PARALLEL_PAIRS", 10**9)
    monkeypatch.setattr(compiled, "PARALLEL_CONTACTS", 10**9)
    monkeypatch.setattr(finding, "PARALLEL_FIND_PAIRS", 10**9)
    serial, start = _step(*a_pile_of_boxes(restitution), "numba")
    monkeypatch.setattr(compiled, "PARALLEL_PAIRS", 1)
    monkeypatch.setattr(compiled, "PARALLEL_CONTACTS", 1)
    monkeypatch.setattr(finding, "PARALLEL_FIND_PAIRS", 1)
    monkeypatch.setattr(finding, "find_chunks", lambda: 5)
    threads = compiled._threads
    used = []
    monkeypatch.setattr(compiled, "_threads", lambda *a: used.append(threads(*a)) or used[-1])
    chunked = finding._find_contacts_parallel
    found = []
    monkeypatch.setattr(finding, "_find_contacts_parallel", lambda *a: found.append(a[-1][0].shape) or chunked(*a))
    on_all_cores, _ = _step(*a_pile_of_boxes(restitution), "numba")
    assert any(t is not None for t in used), "the colours were not solved on all cores"
    assert found and found[0][0] == 4, "the contacts were not found in chunks"
    assert len({shape[1] for shape in found}) > 1, "the chunks' buffers never had to grow"
    for a, b in zip(serial, on_all_cores):
        np.testing.assert_array_equal(a, b)
    assert float(np.abs(serial[1] - start[1]).max()) > 0.1  # the pile fell and spread
    # The reference (slow: the first frames, where the bottom boxes land and the others fall on them).
    builder, settings, _ = a_pile_of_boxes(restitution)
    on_all_cores, _ = _step(builder, settings, 5, "numba")
    builder, settings, _ = a_pile_of_boxes(restitution)
    reference, _ = _step(builder, settings, 5, "numpy")
    for what, a, b in zip(("body positions", "body orientations"), on_all_cores[1:], reference[1:]):
        assert float(np.abs(a - b).max()) <= 1e-8, f"the backends' {what} differ"
