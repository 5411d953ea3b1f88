"""Surface kernels in numpy: the volume a closed cloth keeps (pressure), the reference of
``backend/numba/surfaces.py`` (the same sums in the same order: sequential, as ``cumsum`` runs).

Shapes: n particles, T triangles (sorted by surface), S surfaces.
"""

from __future__ import annotations

import numpy as np


# The volume is cubic in the positions, so one linearised step from a far state misses: a coarse
# sphere (56 vertices) blown to twice its volume against its sticks settled 13% over the target.
# Newton rounds on this one scalar constraint (each O(triangles)) until the residual is below
# VOLUME_TOLERANCE of the target; repeated XPBD steps on one constraint converge to its compliant
# solution, so a finite pressure stiffness means the same as before, only reached.
VOLUME_ROUNDS = 8
VOLUME_TOLERANCE = 1e-6


def _sequential_sum(a):
    """Sum along axis 0 one item after another (numba's loop order; ``sum`` is pairwise)."""
    return np.cumsum(a, axis=0)[-1] if len(a) else np.zeros(a.shape[1:])


def project_volumes(x, w, triangles, tri_offsets, starts, stops, which, target, alpha, lam, grad):
    """XPBD projection of each surface in ``which`` to its target volume, in place on x and lam
    (up to VOLUME_ROUNDS Newton rounds, until the residual is below VOLUME_TOLERANCE of the target).

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
        tri = triangles[a:b]
        ww = w[p0:p1]
        for _ in range(VOLUME_ROUNDS):
            centre = _sequential_sum(x[p0:p1]) / (p1 - p0)
            pa, pb, pc = x[tri[:, 0]] - centre, x[tri[:, 1]] - centre, x[tri[:, 2]] - centre
            bxc, cxa, axb = np.cross(pb, pc), np.cross(pc, pa), np.cross(pa, pb)
            vol = _sequential_sum(pa[:, 0] * bxc[:, 0] + pa[:, 1] * bxc[:, 1] + pa[:, 2] * bxc[:, 2]) / 6.0
            residual = -(vol - target[s]) - alpha[s] * lam[s]
            if abs(residual) <= VOLUME_TOLERANCE * abs(target[s]):
                break
            grad[p0:p1] = 0.0
            np.add.at(grad, tri.ravel(), np.stack([bxc, cxa, axb], axis=1).reshape(-1, 3))
            g = grad[p0:p1] / 6.0
            denom = _sequential_sum(ww * (g[:, 0] * g[:, 0] + g[:, 1] * g[:, 1] + g[:, 2] * g[:, 2]))
            dlam = residual / (denom + alpha[s] + 1e-300)
            lam[s] += dlam
            x[p0:p1] += (ww * dlam)[:, None] * g
