"""Mesh colliders (``TriangleMesh``): continuous collision and deforming meshes.

A cloth vertex's motion over a substep, relative to the shape it meets (the shape's pose, and a
deforming mesh's vertices, one substep apart), is swept against the shape: a vertex that would
pass into a thin or fast shape within a substep is caught at the face it reached, on the side it
came from. Checked as physics at every substep (the solver's own substeps, recorded), over a range
of speeds, drops and shapes; without the sweep (the previous engine) the paddle pushes the cloth
through itself at each of these speeds and the 1 m drop ends under the table top.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import backend
from jakobsen_engine.errors import JakobsenError
from jakobsen_engine.geometry import kinds
from jakobsen_engine.geometry.primitives import grid
from jakobsen_engine.geometry.shapes import ShapeTable, TriangleMesh
from jakobsen_engine.tracks import Track


def box_mesh(lo, hi):
    """A closed box (8 vertices, 6 outward quads) from corner lo to corner hi."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    v = np.array([[x, y, z] for z in (lo[2], hi[2]) for y in (lo[1], hi[1]) for x in (lo[0], hi[0])])
    f = np.array([[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]])
    return v, f


def plate_mesh(size, n, thickness):
    """A closed plate of size x size m and the given thickness, its top face a grid of n x n
    vertices at z = 0 (so a deformation can move its top), the bottom a single quad."""
    top, quads = grid(n, n, size)
    bottom = np.array([[-size / 2, -size / 2, -thickness], [size / 2, -size / 2, -thickness],
                       [size / 2, size / 2, -thickness], [-size / 2, size / 2, -thickness]])
    v = np.vstack([top, bottom])
    b = len(top)
    faces = [list(q) for q in quads] + [[b, b + 3, b + 2, b + 1]]
    # The sides: each border edge of the top joined down to the bottom's side.
    idx = np.arange(n * n).reshape(n, n)  # [row (y), column (x)]
    sides = [(idx[0, :], b + 0, b + 1), (idx[:, -1], b + 1, b + 2), (idx[-1, ::-1], b + 2, b + 3),
             (idx[::-1, 0], b + 3, b + 0)]
    for edge, c0, c1 in sides:
        ring = list(edge)
        faces.append([c0, c1] + ring[::-1])
    return v, faces


def record_substeps(solver):
    """Wrap the solver's substep so each one's particle positions and body poses are kept."""
    frames = []
    inner = solver._substep

    def substep(state):
        inner(state)
        x, q, _, _ = state.bodies.arrays()
        frames.append((state.time, state.positions.copy(), x.copy(), q.copy()))

    solver._substep = substep
    return frames


def to_shape_frame(solver, shape, x, q, points):
    """World points (k, 3) in shape ``shape``'s own frame at body poses x, q."""
    from jakobsen_engine.backend.numpy import quat as Q
    from jakobsen_engine.backend.numpy.contacts import _shape_pose

    geo = solver.model.shapes.kernel_arrays()
    pos, rot = _shape_pose(geo, np.full(len(points), shape), x, q)
    return Q.rotate_back(rot, points - pos)


# -- the paddle ---------------------------------------------------------------------------------

PADDLE_X = (0.05, 0.65)  # m from the axis, along the paddle's local x
PADDLE_HALF = (0.005, 0.15)  # half thickness (y, 1 cm thick) and half height (z)
AXIS = np.array([0.0, -0.35, 0.55])


def paddle_pose(omega):
    def pose(t):
        a = -math.pi / 2 + omega * t  # starts pointing away from the cloth (-y), turns towards +x
        m = np.eye(4)
        c, s = math.cos(a), math.sin(a)
        m[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
        m[:3, 3] = AXIS
        return m
    return pose


def paddle_scene(omega, frames, thickness=0.005):
    cv, cf = grid(21, 17, 1.0, 0.8)
    cv = np.stack([cv[:, 0], np.zeros(len(cv)), cv[:, 1] + 0.6], axis=1)  # hanging in the y = 0 plane
    pins = (cv[:, 2] > 0.99).astype(float)
    pv, pf = box_mesh((PADDLE_X[0], -PADDLE_HALF[0], -PADDLE_HALF[1]), (PADDLE_X[1], PADDLE_HALF[0], PADDLE_HALF[1]))
    b = engine.ModelBuilder(track_rate=240.0, track_duration=frames / 24.0 + 0.1)
    b.add_cloth(cv, cf, thickness=thickness, pin_weights=pins, friction=0.3, bend_stiffness=0.01)
    duration = frames / 24.0 + 0.1
    motion = Track(rate=480.0, values=np.array([paddle_pose(omega)(i / 480.0)
                                                for i in range(int(duration * 480) + 2)]))
    b.add_collider(TriangleMesh.from_mesh(pv, pf, margin=0.02, name="paddle", motion=motion, friction=0.3))
    solver = engine.Solver(b.finalize(), engine.SolverSettings(frame_rate=24.0))
    return solver


def paddle_crossings(solver, frames):
    """(crossings, deepest inside, vertices the paddle pushed): a crossing is a vertex whose side
    of the paddle (its local y) changes between two substeps at a point within the paddle's face
    (2 cm in from its edges, where going round an edge cannot be mistaken for passing through)."""
    shape = int(np.flatnonzero(solver.model.shapes.kind == kinds.MESH)[0])
    history = [to_shape_frame(solver, shape, x, q, p) for _, p, x, q in frames]
    crossings, inside, pushed = 0, 0.0, np.zeros(len(history[0]), bool)
    for l0, l1 in zip(history[:-1], history[1:]):
        flip = np.sign(l0[:, 1]) != np.sign(l1[:, 1])
        u = l0[:, 1] / np.where(flip, l0[:, 1] - l1[:, 1], 1.0)
        c = l0 + u[:, None] * (l1 - l0)
        within = (c[:, 0] > PADDLE_X[0] + 0.02) & (c[:, 0] < PADDLE_X[1] - 0.02) & \
            (np.abs(c[:, 2]) < PADDLE_HALF[1] - 0.02)
        crossings += int(np.count_nonzero(flip & within))
        over = (l1[:, 0] > PADDLE_X[0]) & (l1[:, 0] < PADDLE_X[1]) & (np.abs(l1[:, 2]) < PADDLE_HALF[1])
        if np.any(over):
            inside = max(inside, float(np.max(PADDLE_HALF[0] - np.abs(l1[over, 1]))))
        pushed |= over & (np.abs(l1[:, 1]) < PADDLE_HALF[0] + 0.02)
    return crossings, inside, int(pushed.sum())


@pytest.mark.parametrize("omega", [5.0, 10.0, 20.0])
def test_fast_paddle_never_pushes_cloth_through_itself(omega):
    """A 1 cm paddle turning at 5, 10 and 20 rad/s (tip 3 to 13 m/s: 1.4 to 5.4 cm a substep,
    more than its thickness) sweeps through a hanging cloth: at no substep does a vertex pass
    from one side of it to the other, none is ever inside it, and it does push the cloth (many
    vertices end up against it)."""
    frames = 12
    solver = paddle_scene(omega, frames)
    record = record_substeps(solver)
    state = solver.make_state()
    for _ in range(frames):
        solver.step_frame(state)
    crossings, inside, pushed = paddle_crossings(solver, record)
    assert crossings == 0
    assert inside <= 0.0  # never inside its 1 cm
    assert pushed >= 20  # the paddle met the cloth (not a test that cannot fail)


# -- the tablecloth -----------------------------------------------------------------------------

TOP = (0.6, 0.4)  # half extents of the table top, m
TOP_Z = 0.75
TOP_THICK = 0.02


def table_scene(drop, resolution=25, substeps=10, legs=False, thick=TOP_THICK):
    """legs: four leg boxes 5 cm in from the top's edges reaching 1 cm into it, in the same mesh
    (parts that overlap, as modelled furniture often has them), and the mesh's default margin."""
    tv, tf = box_mesh((-TOP[0], -TOP[1], TOP_Z - thick), (TOP[0], TOP[1], TOP_Z))
    if legs:
        parts = [(tv, tf)]
        for sx in (-1, 1):
            for sy in (-1, 1):
                cx, cy = sx * (TOP[0] - 0.05), sy * (TOP[1] - 0.05)
                parts.append(box_mesh((cx - 0.03, cy - 0.03, 0.0), (cx + 0.03, cy + 0.03, TOP_Z - thick + 0.01)))
        tv = np.concatenate([v for v, _ in parts])
        tf = np.concatenate([np.asarray(f) + 8 * k for k, (_, f) in enumerate(parts)])
    cv, cf = grid(resolution, resolution, 1.6)
    cv[:, 2] = TOP_Z + drop
    b = engine.ModelBuilder()
    b.add_cloth(cv, cf, thickness=0.005, friction=0.5)
    b.add_collider(TriangleMesh.from_mesh(tv, tf, name="table") if legs else
                   TriangleMesh.from_mesh(tv, tf, margin=0.02, name="table top"))
    b.add_collider(engine.Plane.from_point_normal((0, 0, 0), (0, 0, 1)))
    # (Undamped with legs: a cloth that swings under the top finds the overlap.)
    return engine.Solver(b.finalize(), engine.SolverSettings(frame_rate=24.0, substeps=substeps,
                                                             damping=0.0 if legs else 1.0))


@pytest.mark.parametrize("drop,substeps,resolution,legs,thick", [
    (0.3, 10, 25, False, TOP_THICK), (1.0, 10, 25, False, TOP_THICK), (1.0, 5, 25, False, TOP_THICK),
    (1.0, 5, 61, True, 0.03), (0.5, 5, 45, True, 0.03), (1.0, 10, 61, True, 0.04)])
def test_tablecloth_dropped_never_ends_under_the_top(drop, substeps, resolution, legs, thick):
    """A tablecloth dropped from 0.3 and 1 m at 24 fps (4.4 m/s at 1 m: 1.8 cm a substep at 10
    substeps, 3.7 cm at 5, against a 2 cm top): at no substep does a vertex pass through the top
    (cross its mid-plane within its footprint) or sit inside it, the vertices that fell onto the
    top are never below its upper face by more than the cloth's thickness, and it drapes. With
    legs reaching into the top, a vertex swinging under it was pushed out of a leg and left
    inside the top (one contact a substep; at 61 x 61, 5 substeps)."""
    solver = table_scene(drop, substeps=substeps, resolution=resolution, legs=legs, thick=thick)
    record = record_substeps(solver)
    state = solver.make_state()
    frames = int(24 * (math.sqrt(2 * drop / 9.81) + (1.2 if legs else 0.6)))
    for _ in range(frames):
        solver.step_frame(state)
    rest = solver.model.rest_positions
    middle = (np.abs(rest[:, 0]) < TOP[0] - 0.05) & (np.abs(rest[:, 1]) < TOP[1] - 0.05)
    mid = TOP_Z - thick / 2
    worst, crossings, inside = 0.0, 0, 0
    previous = rest
    for _, p, _, _ in record:
        worst = max(worst, float(TOP_Z - p[middle, 2].min()))
        flip = (previous[:, 2] > mid) != (p[:, 2] > mid)
        u = (previous[:, 2] - mid) / np.where(flip, previous[:, 2] - p[:, 2], 1.0)
        c = previous + u[:, None] * (p - previous)
        crossings += int(np.count_nonzero(flip & (np.abs(c[:, 0]) < TOP[0]) & (np.abs(c[:, 1]) < TOP[1])))
        inside += int(np.count_nonzero((np.abs(p[:, 0]) < TOP[0]) & (np.abs(p[:, 1]) < TOP[1])
                                       & (p[:, 2] > TOP_Z - thick) & (p[:, 2] < TOP_Z)))
        previous = p
    assert crossings == 0
    assert inside == 0
    assert worst <= 0.005
    x = state.positions
    edges = (np.abs(rest[:, 0]) > TOP[0] + 0.1) | (np.abs(rest[:, 1]) > TOP[1] + 0.1)
    assert np.median(x[edges, 2]) < TOP_Z - 0.1  # the cloth hangs over the sides
    assert x[middle, 2].min() > TOP_Z  # and its middle lies on the top


# -- deforming meshes ---------------------------------------------------------------------------

def deforming_plate(motion, frames, rate=24.0, n=9, size=2.0, thickness=0.02):
    """A plate mesh whose every vertex is moved by motion(t) (3,) m: (vertices, faces, deformation)."""
    v, f = plate_mesh(size, n, thickness)
    values = np.array([v + np.asarray(motion(i / rate)) for i in range(frames + 2)])
    return v, f, values


def resting_cloth(builder, z, friction, size=0.4, n=9):
    cv, cf = grid(n, n, size)
    cv[:, 2] = z
    builder.add_cloth(cv, cf, thickness=0.005, friction=friction)


@pytest.mark.parametrize("speed", [0.2, 1.0, 2.5])
def test_cloth_rides_a_mesh_deforming_upwards(speed):
    """A plate whose vertices rise at 0.2, 1 and 2.5 m/s (2.5 m/s: 1 cm a substep, half its
    thickness) under a cloth: the cloth stays on its upper side at every substep and rises with it."""
    frames = 24
    start = 0.25  # s at rest first
    v, f, values = deforming_plate(lambda t: (0.0, 0.0, speed * max(t - start, 0.0)), frames)
    b = engine.ModelBuilder()
    resting_cloth(b, 0.006, friction=0.5)
    b.add_collider(TriangleMesh.from_mesh(v, f, margin=0.02, name="lift", deformation=values,
                                          deformation_rate=24.0))
    solver = engine.Solver(b.finalize(), engine.SolverSettings(frame_rate=24.0))
    record = record_substeps(solver)
    state = solver.make_state()
    for _ in range(frames):
        solver.step_frame(state)
    for t, p, _, _ in record:
        top = speed * max(t - start, 0.0)
        assert p[:, 2].min() >= top, f"under the plate at t = {t:.3f}"
    top = speed * (frames / 24.0 - start)
    assert np.all(np.abs(state.positions[:, 2] - top - 0.005) < 0.006)


@pytest.mark.parametrize("friction,carried", [(1.0, True), (0.0, False)])
def test_friction_carries_cloth_on_a_mesh_deforming_sideways(friction, carried):
    """A plate that slides 0.3 m along x by deformation (its vertices move; the collider itself
    does not): a cloth resting on it with friction is carried along within 2 cm; without friction
    it stays where it was within 2 cm."""
    frames = 36

    def slide(t):  # at rest for 0.3 s, then smoothly 0.3 m along x over 0.8 s
        u = min(max((t - 0.3) / 0.8, 0.0), 1.0)
        return (0.3 * (3 * u * u - 2 * u * u * u), 0.0, 0.0)

    v, f, values = deforming_plate(slide, frames)
    b = engine.ModelBuilder()
    resting_cloth(b, 0.006, friction=friction)
    b.add_collider(TriangleMesh.from_mesh(v, f, margin=0.02, name="belt", deformation=values,
                                          deformation_rate=24.0, friction=1.0))
    solver = engine.Solver(b.finalize(), engine.SolverSettings(frame_rate=24.0))
    state = solver.make_state()
    x0 = state.positions[:, 0].mean()
    for _ in range(frames):
        solver.step_frame(state)
    moved = state.positions[:, 0].mean() - x0
    assert abs(moved - (0.3 if carried else 0.0)) < 0.02
    assert state.positions[:, 2].min() > 0.0  # on top throughout


@pytest.mark.compiled_only
def test_deforming_mesh_against_a_rigid_body_runs():
    """A box dropped on a deforming plate lands on it (bodies read the deformed triangles too)."""
    v, f, values = deforming_plate(lambda t: (0.0, 0.0, 0.1 * t), 24)
    b = engine.ModelBuilder()
    b.add_collider(TriangleMesh.from_mesh(v, f, margin=0.02, name="plate", deformation=values,
                                          deformation_rate=24.0))
    bv, bf = box_mesh((-0.1, -0.1, 0.2), (0.1, 0.1, 0.4))
    b.add_rigid_body(bv, bf, name="box", mass=1.0, shape="box")
    solver = engine.Solver(b.finalize(), engine.SolverSettings(frame_rate=24.0, energy_guard=False))
    state = solver.make_state()
    for _ in range(24):
        solver.step_frame(state)
    z = state.bodies.position[0, 2]
    assert abs(z - (0.1 + 0.1)) < 0.02  # resting on the plate, which rose 0.1 m


def test_deformation_validation_names_the_collider():
    v, f = box_mesh((0, 0, 0), (1, 1, 1))
    good = np.repeat(v[None], 3, axis=0)
    with pytest.raises(JakobsenError, match="'lid'.*shape \\(frames, 8, 3\\)"):
        TriangleMesh.from_mesh(v, f, name="lid", deformation=good[:, :5], deformation_rate=24.0)
    bad = good.copy()
    bad[1, 2, 0] = np.nan
    with pytest.raises(JakobsenError, match="'lid'.*sample 1 has non-finite"):
        TriangleMesh.from_mesh(v, f, name="lid", deformation=bad, deformation_rate=24.0)
    with pytest.raises(JakobsenError, match="'lid'.*needs deformation_rate"):
        TriangleMesh.from_mesh(v, f, name="lid", deformation=good)
    with pytest.raises(JakobsenError, match="'lid'.*deformation_rate must be a positive"):
        TriangleMesh.from_mesh(v, f, name="lid", deformation=good, deformation_rate=0.0)
    with pytest.raises(JakobsenError, match="'lid'.*a Track has its own rate"):
        TriangleMesh.from_mesh(v, f, name="lid", deformation=Track(rate=24.0, values=good), deformation_rate=24.0)
    with pytest.raises(JakobsenError, match="'lid'.*absurdly far"):
        TriangleMesh.from_mesh(v, f, name="lid", deformation=good * 1e9, deformation_rate=24.0)
    flat = TriangleMesh.from_mesh(v, f, name="lid", deformation=Track(rate=24.0, values=good.reshape(3, -1)))
    assert flat.deformation.values.shape == (3, 8, 3)
    assert np.allclose(flat.vertices_at(1.0), v)


# -- the kernels agree --------------------------------------------------------------------------

def _pose(rng, spread):
    """A random rigid transform within ``spread`` m of the origin."""
    from jakobsen_engine.geometry.quaternions import to_matrix

    q = rng.normal(0.0, 1.0, 4)
    m = np.eye(4)
    m[:3, :3] = to_matrix((q / np.linalg.norm(q))[None])[0]
    m[:3, 3] = rng.uniform(-spread, spread, 3)
    return m


def _kernel_scene(seed):
    """A shape table with a static mesh, a deforming mesh, and a box, hull, sphere and mesh on a
    moving body, and particles moving fast near all of them (random)."""
    rng = np.random.default_rng(seed)
    table = ShapeTable()
    tv, tf = box_mesh((-0.5, -0.5, -0.01), (0.5, 0.5, 0.01))
    table.add_collider(TriangleMesh.from_mesh(tv, tf, margin=0.02, name="slab"))
    dv, df = plate_mesh(1.0, 5, 0.02)
    values = np.array([dv + rng.normal(0.0, 0.01, dv.shape) for _ in range(3)])
    deforming = TriangleMesh.from_mesh(dv, df, margin=0.02, name="skin", deformation=values, deformation_rate=24.0,
                                       transform=_pose(rng, 1.5))
    table.add_collider(deforming)
    body_shapes = [engine.Box(half_extents=(0.3, 0.2, 0.01)),
                   engine.ConvexHull.from_points(rng.normal(0.0, 0.3, (12, 3))),
                   engine.Sphere(radius=0.2), TriangleMesh.from_mesh(tv, tf, margin=0.02)]
    for k, shape in enumerate(body_shapes):
        table.add_collider(shape, owner=k, pose=np.eye(4))
    shapes = table.finalize()
    geo = list(shapes.kernel_arrays())
    geo[18] = values[0].copy()  # the deforming mesh one substep ago and now
    a, b = shapes.mesh_vertex_start[1], shapes.mesh_vertex_start[2]
    geo[13] = shapes.vertices.copy()
    geo[13][a:b] = values[1]
    geo[18] = shapes.vertices.copy()
    geo[18][a:b] = values[0]
    from jakobsen_engine.geometry.shapes import face_normals

    geo[20] = face_normals(shapes.triangles, geo[13])
    geo[21] = np.array([0.0, float(np.linalg.norm(values[1] - values[0], axis=1).max()), 0.0])
    geo = tuple(geo)
    bodies = len(body_shapes)
    x = rng.normal(0.0, 1.0, (bodies + 1, 3))
    q = rng.normal(0.0, 1.0, (bodies + 1, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    x_prev = x - rng.normal(0.0, 0.02, x.shape)
    q_prev = q + rng.normal(0.0, 0.05, q.shape)
    q_prev /= np.linalg.norm(q_prev, axis=1)[:, None]
    # Particles near each shape's surface, each moving up to 6 cm (through the thin ones).
    n = 600
    from jakobsen_engine.backend.numpy import quat as Q
    from jakobsen_engine.backend.numpy.contacts import _shape_pose

    s = rng.integers(0, shapes.count, n)
    spos, srot = _shape_pose(geo, s, x, q)
    local = rng.uniform(-0.5, 0.5, (n, 3)) * np.array([1.0, 1.0, 0.1])
    end = spos + Q.rotate(srot, local)
    start = end + rng.normal(0.0, 0.03, (n, 3))
    cand = np.array(sorted({(i, int(j)) for i, k in enumerate(s) for j in (k, (k + 1) % shapes.count)}))
    return geo, x, q, x_prev, q_prev, end, start, np.full(n, 0.005), cand


@pytest.mark.compares_backends
@pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")
@pytest.mark.parametrize("chunks", [3, 16, 5000])
def test_particle_contacts_answered_on_all_cores_are_the_serial_answers_bits(chunks, kernel_backend, monkeypatch):
    # Chunks of whole particles, each written from its first candidate's slot and joined in
    # order: the same contacts in the same order as one serial pass, whatever the chunks (more
    # chunks than particles too).
    if kernel_backend != "numba":
        pytest.skip("compares the compiled paths itself")
    import numba

    from jakobsen_engine.backend.numba import contacts as compiled

    if numba.get_num_threads() < 2:
        pytest.skip("one thread: the parallel path is not taken")
    geo, x, q, x_prev, q_prev, end, start, radii, cand = _kernel_scene(4)
    results = []
    for threshold in (10**9, 1):
        monkeypatch.setattr(compiled, "PARALLEL_CANDIDATES", threshold)
        monkeypatch.setattr(compiled, "CANDIDATE_CHUNKS", chunks)
        n = len(cand)
        out = (np.full(n, -7, np.int64), np.zeros((n, 3)), np.zeros(n), np.zeros((n, 3)), np.zeros(n, np.int64))
        count = compiled.particle_contacts(geo, x, q, x_prev, q_prev, end, start, radii, cand, len(geo[0]), *out)
        results.append((count,) + tuple(o[:count] for o in out))
    (serial_count, *serial), (parallel_count, *parallel) = results
    assert serial_count == parallel_count > 50
    for u, v in zip(serial, parallel):
        np.testing.assert_array_equal(u, v)


@pytest.mark.compares_backends
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_particle_contact_kernels_agree(seed, kernel_backend):
    """numba and numpy give the same contacts (1e-12), sweeps and deforming meshes included, and
    some of the contacts are sweeps (a test of what they agree on)."""
    geo, x, q, x_prev, q_prev, end, start, radii, cand = _kernel_scene(seed)
    results = []
    for name in backend.NAMES:
        k = backend.select(name).contacts
        n = len(cand)
        out = (np.zeros(n, np.int64), np.zeros((n, 3)), np.zeros(n), np.zeros((n, 3)), np.zeros(n, np.int64))
        count = k.particle_contacts(geo, x, q, x_prev, q_prev, end, start, radii, cand, len(geo[0]), *out)
        results.append((count,) + tuple(o[:count] for o in out))
    a, b = results
    assert a[0] == b[0] and a[0] > 50
    for u, v in zip(a[1:], b[1:]):
        assert np.allclose(u, v, rtol=1e-12, atol=1e-12)
    # The same particles not moving: no sweeps. Many contacts differ: sweeps were compared.
    k = backend.select("numpy").contacts
    n = len(cand)
    out = (np.zeros(n, np.int64), np.zeros((n, 3)), np.zeros(n), np.zeros((n, 3)), np.zeros(n, np.int64))
    geo_still = geo[:18] + (geo[13],) + geo[19:21] + (np.zeros(len(geo[21])),) + geo[22:]
    count = k.particle_contacts(geo_still, x, q, x, q, end, end, radii, cand, len(geo[0]), *out)
    still = dict(zip(out[0][:count], out[2][:count]))
    swept = [i for i, p in enumerate(a[1]) if p not in still or not np.allclose(still[p], a[3][i])]
    assert len(swept) >= 20


@pytest.mark.parametrize("thickness", [0.12, 0.2, 0.35])
@pytest.mark.parametrize("margin", [0.02, 0.1])
def test_a_cloth_thicker_than_a_mesh_s_margin_rests_at_its_thickness(thickness, margin):
    """The mesh's lookup reaches as far as the thickest cloth's Thickness, whatever margin it was
    built with: before, a cloth of 20 cm Thickness on a table of 10 cm margin fell to the margin
    and was thrown back out, bobbing 3 cm for ever."""
    top = 0.75
    v, f = box_mesh((-1.0, -1.0, top - 0.1), (1.0, 1.0, top))
    builder = engine.ModelBuilder()
    builder.add_collider(engine.TriangleMesh.from_mesh(v, f, margin=margin, name="Table"))
    cv, cf = grid(7, 7, 1.0)
    cv[:, 2] = top + thickness + 0.05
    builder.add_cloth(cv, cf, thickness=thickness)
    solver = engine.Solver(builder.finalize(), engine.SolverSettings())
    state = solver.make_state()
    heights = []
    for _ in range(36):
        solver.step_frame(state)
        heights.append(state.positions[:, 2] - top)
    late = np.array(heights[12:])
    assert np.all(np.abs(late - thickness) < 1e-3), (late.min(), late.max())
