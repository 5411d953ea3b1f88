"""Surface kernels in numpy: the volume a closed cloth keeps (pressure), the reference of
``backend/numba/surfaces.py`` (the same sums in the same order: sequential, as ``cumsum`` runs).

Shapes: n particles, T triangles (sorted by surface), S surfaces.
"""

from __future__ import annotations

import numpy as np


def _sequential_sum(a):
    """Sum along axis 0 one item after another (numba's loop order; ``sum`` is pairwise)."""
    return np.cumsum(a, axis=0)[-1] if len(a) else np.zeros(a.shape[1:])


def project_volumes(x, w, triangles, tri_offsets, starts, stops, which, target, alpha, lam, grad):
    """One XPBD projection of each surface in ``which`` to its target volume, in place on x and lam.

    C = V(x) - target (m^3), V = sum over triangles (a, b, c) of a . (b x c) / 6 about the
    surface's centroid, whose gradient at a corner is the cross product of the other two / 6:
    dlam = (-C - alpha lam) / (sum w |grad C|^2 + alpha), x += w grad C dlam. alpha (S,):
    compliance / h^2 (0 = held exactly); lam (S,) accumulated over the substep; grad: (n, 3)
    scratch; tri_offsets (S + 1,): surface s owns triangles [tri_offsets[s], tri_offsets[s+1]),
    particles [starts[s], stops[s]).
    """
    for s in which:
        a, b = tri_offsets[s], tri_offsets[s + 1]
        p0, p1 = starts[s], stops[s]
        centre = _sequential_sum(x[p0:p1]) / (p1 - p0)
        tri = triangles[a:b]
        pa, pb, pc = x[tri[:, 0]] - centre, x[tri[:, 1]] - centre, x[tri[:, 2]] - centre
        bxc, cxa, axb = np.cross(pb, pc), np.cross(pc, pa), np.cross(pa, pb)
        vol = _sequential_sum(pa[:, 0] * bxc[:, 0] + pa[:, 1] * bxc[:, 1] + pa[:, 2] * bxc[:, 2]) / 6.0
        grad[p0:p1] = 0.0
        np.add.at(grad, tri.ravel(), np.stack([bxc, cxa, axb], axis=1).reshape(-1, 3))
        g = grad[p0:p1] / 6.0
        ww = w[p0:p1]
        denom = _sequential_sum(ww * (g[:, 0] * g[:, 0] + g[:, 1] * g[:, 1] + g[:, 2] * g[:, 2]))
        c = vol - target[s]
        dlam = (-c - alpha[s] * lam[s]) / (denom + alpha[s] + 1e-300)
        lam[s] += dlam
        x[p0:p1] += (ww * dlam)[:, None] * g
