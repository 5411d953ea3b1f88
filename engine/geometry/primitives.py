"""Simple meshes for tests, benchmarks and demos (the same layout Blender's own primitives use)."""

from __future__ import annotations

import numpy as np


def grid(x_vertices: int, y_vertices: int, size_x: float, size_y: float | None = None):
    """A flat quad grid in the z = 0 plane, centred on the origin.

    Returns vertices (x_vertices * y_vertices, 3) m, x varying fastest, and quad faces
    ((x_vertices - 1) * (y_vertices - 1), 4) counter-clockwise seen from +z.
    """
    size_y = size_x if size_y is None else size_y
    xs = np.linspace(-size_x / 2, size_x / 2, x_vertices)
    ys = np.linspace(-size_y / 2, size_y / 2, y_vertices)
    gx, gy = np.meshgrid(xs, ys)
    vertices = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=1)
    ix, iy = np.meshgrid(np.arange(x_vertices - 1), np.arange(y_vertices - 1))
    a = (iy * x_vertices + ix).ravel()
    faces = np.stack([a, a + 1, a + 1 + x_vertices, a + x_vertices], axis=1)
    return vertices, faces


def cube(divisions: int, size: float, *, sphere: bool = False):
    """A closed cube surface of side ``size`` m centred on the origin, each side cut into
    divisions x divisions quads, faces pointing outwards (Blender's Cube, subdivided); with
    ``sphere`` its vertices pushed out onto the sphere of diameter ``size`` (a quad sphere).

    Returns vertices (v, 3) m and quad faces (6 divisions^2, 4).
    """
    n = int(divisions)
    if n < 1:
        raise ValueError("a cube needs at least one division per side")
    lattice = np.stack(np.meshgrid(*(np.arange(n + 1),) * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    on_surface = np.any((lattice == 0) | (lattice == n), axis=1)
    points = lattice[on_surface]
    number = np.full((n + 1) ** 3, -1, np.int64)
    key = (lattice[:, 0] * (n + 1) + lattice[:, 1]) * (n + 1) + lattice[:, 2]
    number[key[on_surface]] = np.arange(len(points))

    def vid(p):
        return number[(p[..., 0] * (n + 1) + p[..., 1]) * (n + 1) + p[..., 2]]

    faces = []
    u, v = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    u, v = u.ravel(), v.ravel()
    for axis in range(3):
        a, b = (axis + 1) % 3, (axis + 2) % 3
        for level, outward in ((0, -1), (n, 1)):
            corners = []
            for du, dv in ((0, 0), (1, 0), (1, 1), (0, 1)):
                p = np.zeros((len(u), 3), np.int64)
                p[:, axis], p[:, a], p[:, b] = level, u + du, v + dv
                corners.append(vid(p))
            quad = np.stack(corners, axis=1)
            # (a, b, axis) is right-handed: a->b counter-clockwise seen from +axis.
            faces.append(quad if outward > 0 else quad[:, ::-1])
    vertices = points / n * size - size / 2
    if sphere:
        vertices = vertices / np.linalg.norm(vertices, axis=1, keepdims=True) * (size / 2)
    return vertices.astype(np.float64), np.concatenate(faces)
