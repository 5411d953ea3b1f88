"""Meshes and small scenes shared by the rigid-body tests."""

import math

import numpy as np

import jakobsen_engine as engine

G = 9.81
BOX_FACES = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]


def box_mesh(size=(1.0, 1.0, 1.0), centre=(0.0, 0.0, 0.0), rotation=None):
    """A closed box (8 vertices, 6 outward quads), optionally rotated (3x3) about its centre."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * np.asarray(size) / 2
    if rotation is not None:
        corners = corners @ np.asarray(rotation).T
    return corners + np.asarray(centre, float), [list(f) for f in BOX_FACES]


def rotation(axis, degrees):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    a = math.radians(degrees)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(a) * k + (1 - math.cos(a)) * k @ k


def uv_sphere(radius=0.5, centre=(0, 0, 0), rings=12, segments=24):
    """A closed UV sphere."""
    verts = [(0, 0, radius)]
    for i in range(1, rings):
        phi = math.pi * i / rings
        for j in range(segments):
            th = 2 * math.pi * j / segments
            verts.append((radius * math.sin(phi) * math.cos(th), radius * math.sin(phi) * math.sin(th),
                          radius * math.cos(phi)))
    verts.append((0, 0, -radius))
    faces = [[0, 1 + (j + 1) % segments, 1 + j] for j in range(segments)]
    for i in range(rings - 2):
        a, b = 1 + i * segments, 1 + (i + 1) * segments
        faces += [[a + j, a + (j + 1) % segments, b + (j + 1) % segments, b + j] for j in range(segments)]
    last = len(verts) - 1
    base = 1 + (rings - 2) * segments
    faces += [[base + j, base + (j + 1) % segments, last] for j in range(segments)]
    return np.array(verts) + np.asarray(centre, float), faces


def world(*bodies, colliders=(), settings=None):
    """Build a model from (mesh, kwargs) pairs and colliders; returns solver, state, handles."""
    builder = engine.ModelBuilder()
    handles = [builder.add_rigid_body(*mesh, **kwargs) for mesh, kwargs in bodies]
    for c in colliders:
        builder.add_collider(c)
    solver = engine.Solver(builder.finalize(), settings or engine.SolverSettings())
    return solver, solver.make_state(), handles


def energy(solver, state, gravity=G):
    b = solver.model.bodies
    rot = engine.quaternions.to_matrix(state.bodies.orientation)
    w_body = np.einsum("bji,bj->bi", rot, state.bodies.angular_velocity)
    kinetic = 0.5 * b.mass * np.einsum("bi,bi->b", state.bodies.velocity, state.bodies.velocity) \
        + 0.5 * np.einsum("bi,bi->b", b.inertia * w_body, w_body)
    return kinetic + b.mass * gravity * state.bodies.position[:, 2]


def angular_momentum(solver, state, about=(0, 0, 0)):
    """Total angular momentum (3,) kg m^2/s about a point."""
    b = solver.model.bodies
    rot = engine.quaternions.to_matrix(state.bodies.orientation)
    spin = np.einsum("bij,bj->bi", rot, b.inertia * np.einsum("bji,bj->bi", rot, state.bodies.angular_velocity))
    orbit = np.cross(state.bodies.position - np.asarray(about), b.mass[:, None] * state.bodies.velocity)
    return (spin + orbit).sum(axis=0)


def shape_surface(solver, state, k, count=400):
    """Points (m, 3) on the true surface of body k's collision shape, in the world, sampled
    densely from the shape's own description (not from the solver's contact features)."""
    from jakobsen_engine.geometry import kinds

    shapes = solver.model.shapes
    s = solver.model.bodies.shape_index[k]
    kind, p = int(shapes.kind[s]), shapes.params[s]
    golden = math.pi * (3.0 - math.sqrt(5.0))
    i = np.arange(count) + 0.5
    z = 1.0 - 2.0 * i / count
    ring = np.sqrt(1.0 - z * z)
    sphere = np.stack([ring * np.cos(golden * i), ring * np.sin(golden * i), z], axis=1)
    angle = np.linspace(0.0, 2.0 * math.pi, count, endpoint=False)
    circle = np.stack([np.cos(angle), np.sin(angle), np.zeros(count)], axis=1)
    if kind == kinds.SPHERE:
        local = sphere * p[0]
    elif kind == kinds.CAPSULE:
        local = np.concatenate([sphere * p[0] + [0, 0, p[1]], sphere * p[0] - [0, 0, p[1]]])
    elif kind == kinds.CYLINDER:
        local = np.concatenate([circle * p[0] + [0, 0, p[1]], circle * p[0] - [0, 0, p[1]]])
    elif kind == kinds.BOX:
        local = np.array([[x, y, w] for x in (-1, 1) for y in (-1, 1) for w in (-1, 1)], float) * p[:3]
    else:  # a hull: its vertices are its extreme points
        b = solver.model.bodies
        return (state.bodies.position[k] + engine.quaternions.rotate(state.bodies.orientation[k],
                                                                     b.point_local[b.point_body == k]))
    in_body = shapes.position[s] + engine.quaternions.rotate(np.broadcast_to(shapes.rotation[s], (len(local), 4)),
                                                              local)
    return state.bodies.position[k] + engine.quaternions.rotate(
        np.broadcast_to(state.bodies.orientation[k], (len(local), 4)), in_body)


def depth_in_body(solver, state, target, points):
    """How deep (m) each world point lies inside body ``target``'s collision shape (< 0: outside),
    by the numpy reference's distance routine."""
    from jakobsen_engine import backend

    shapes = solver.model.shapes
    s = solver.model.bodies.shape_index[target]
    x, q = state.bodies.position[target], state.bodies.orientation[target]
    pos = x + engine.quaternions.rotate(q, shapes.position[s])
    rot = engine.quaternions.multiply(q, shapes.rotation[s])
    local = engine.quaternions.rotate(np.broadcast_to(engine.quaternions.conjugate(rot), (len(points), 4)),
                                      points - pos)
    _, depth = backend.select("numpy").distance.distance(shapes.kernel_arrays(), np.full(len(points), s), local,
                                                         np.zeros(len(points)), np.zeros_like(local), False)
    return depth


def box_corners_now(solver, state, k, rest_corners):
    """Where the corners (8, 3) a box body was built from are now, moved with body k."""
    b = solver.model.bodies
    now = engine.quaternions.to_matrix(state.bodies.orientation[k][None])[0]
    rest = engine.quaternions.to_matrix(np.asarray(b.rest_orientation[k])[None])[0]
    return (np.asarray(rest_corners) - b.rest_position[k]) @ rest @ now.T + state.bodies.position[k]


def boxes_overlap(a, b):
    """How deep two boxes overlap (m; <= 0: apart by that much), given their corners (8, 3) in
    ``box_mesh``'s order, by separating axes (both boxes' face normals and the crossings of their
    edges): an independent measure, not the solver's."""
    def axes(c):
        e = np.array([c[4] - c[0], c[2] - c[0], c[1] - c[0]])
        return e / np.linalg.norm(e, axis=1)[:, None]

    ea, eb = axes(np.asarray(a)), axes(np.asarray(b))
    cross = np.cross(ea[:, None, :], eb[None, :, :]).reshape(-1, 3)
    length = np.linalg.norm(cross, axis=1)
    n = np.concatenate([ea, eb, cross[length > 1e-9] / length[length > 1e-9, None]])
    pa, pb = np.asarray(a) @ n.T, np.asarray(b) @ n.T
    return float(np.min(np.minimum(pa.max(axis=0) - pb.min(axis=0), pb.max(axis=0) - pa.min(axis=0))))
