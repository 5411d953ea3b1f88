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
