"""Surface kernels compiled with numba: ``backend/numpy/surfaces.py`` with the same arguments
and the same sums in the same order."""

from __future__ import annotations

from numba import njit

from ..numpy.surfaces import VOLUME_ROUNDS, VOLUME_TOLERANCE

JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**JIT)
def project_volumes(x, w, triangles, tri_offsets, starts, stops, which, target, alpha, lam, grad):
    for r in range(which.shape[0]):
        s = which[r]
        p0 = starts[s]
        p1 = stops[s]
        count = p1 - p0
        for _ in range(VOLUME_ROUNDS):
            c0 = 0.0
            c1 = 0.0
            c2 = 0.0
            for p in range(p0, p1):
                c0 += x[p, 0]
                c1 += x[p, 1]
                c2 += x[p, 2]
            c0 /= count
            c1 /= count
            c2 /= count
            vol = 0.0
            for t in range(tri_offsets[s], tri_offsets[s + 1]):
                i = triangles[t, 0]
                j = triangles[t, 1]
                k = triangles[t, 2]
                a0, a1, a2 = x[i, 0] - c0, x[i, 1] - c1, x[i, 2] - c2
                b0, b1, b2 = x[j, 0] - c0, x[j, 1] - c1, x[j, 2] - c2
                d0, d1, d2 = x[k, 0] - c0, x[k, 1] - c1, x[k, 2] - c2
                vol += a0 * (b1 * d2 - b2 * d1) + a1 * (b2 * d0 - b0 * d2) + a2 * (b0 * d1 - b1 * d0)
            vol /= 6.0
            residual = -(vol - target[s]) - alpha[s] * lam[s]
            if abs(residual) <= VOLUME_TOLERANCE * abs(target[s]):
                break
            for p in range(p0, p1):
                grad[p, 0] = 0.0
                grad[p, 1] = 0.0
                grad[p, 2] = 0.0
            for t in range(tri_offsets[s], tri_offsets[s + 1]):
                i = triangles[t, 0]
                j = triangles[t, 1]
                k = triangles[t, 2]
                a0, a1, a2 = x[i, 0] - c0, x[i, 1] - c1, x[i, 2] - c2
                b0, b1, b2 = x[j, 0] - c0, x[j, 1] - c1, x[j, 2] - c2
                d0, d1, d2 = x[k, 0] - c0, x[k, 1] - c1, x[k, 2] - c2
                # b x d, d x a, a x b: the volume's gradient at each corner (times 6)
                grad[i, 0] += b1 * d2 - b2 * d1
                grad[i, 1] += b2 * d0 - b0 * d2
                grad[i, 2] += b0 * d1 - b1 * d0
                grad[j, 0] += d1 * a2 - d2 * a1
                grad[j, 1] += d2 * a0 - d0 * a2
                grad[j, 2] += d0 * a1 - d1 * a0
                grad[k, 0] += a1 * b2 - a2 * b1
                grad[k, 1] += a2 * b0 - a0 * b2
                grad[k, 2] += a0 * b1 - a1 * b0
            denom = 0.0
            for p in range(p0, p1):
                g0, g1, g2 = grad[p, 0] / 6.0, grad[p, 1] / 6.0, grad[p, 2] / 6.0
                denom += w[p] * (g0 * g0 + g1 * g1 + g2 * g2)
            dlam = residual / (denom + alpha[s] + 1e-300)
            lam[s] += dlam
            for p in range(p0, p1):
                f = w[p] * dlam
                x[p, 0] += f * (grad[p, 0] / 6.0)
                x[p, 1] += f * (grad[p, 1] / 6.0)
                x[p, 2] += f * (grad[p, 2] / 6.0)
