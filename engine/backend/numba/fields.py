"""Force-field kernels compiled with numba: ``backend/numpy/fields.py`` with the same arguments and,
per point, the same arithmetic in the same order (one loop over the points, or over the waves
then the points, where numpy works a column at a time), so the same numbers but for the last bit
of the library functions (exp, pow, arccos).

The waves' cosines (gusts, noise) are the reference's polynomial, not ``math.cos``: without a
library call the loop over the points vectorises, which is most of what a gusty wind costs.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..numpy.fields import COS_COEFFICIENTS, DEGREES, INV_PI, PI_HIGH, PI_LOW

JIT = dict(cache=True, nogil=True, error_model="numpy")
C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10 = COS_COEFFICIENTS


@njit(inline="always", **JIT)
def cosine(a):
    n = math.floor(a * INV_PI + 0.5)
    r = (a - n * PI_HIGH) - n * PI_LOW
    r2 = r * r
    poly = ((((((((((C10 * r2 + C9) * r2 + C8) * r2 + C7) * r2 + C6) * r2 + C5) * r2 + C4) * r2 + C3) * r2 + C2)
             * r2 + C1) * r2 + C0)
    sign = 1.0 - 2.0 * (n - 2.0 * math.floor(n * 0.5))
    return sign * poly


@njit(**JIT)
def _columns(x):
    """x (n, 3) as three contiguous columns: the wave loops then read (and vectorise) unit-stride."""
    n = x.shape[0]
    x0, x1, x2 = np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        x0[i] = x[i, 0]
        x1[i] = x[i, 1]
        x2[i] = x[i, 2]
    return x0, x1, x2


@njit(**JIT)
def _add_waves(x0, x1, x2, k, theta, amp, o0, o1, o2):
    """o0, o1, o2 (n,) += sum over waves of cos(k_m . x + theta_m) amp_m, wave by wave (as numpy)."""
    n = x0.shape[0]
    for m in range(theta.shape[0]):
        k0, k1, k2, th = k[m, 0], k[m, 1], k[m, 2], theta[m]
        a0, a1, a2 = amp[m, 0], amp[m, 1], amp[m, 2]
        for i in range(n):
            c = cosine(x0[i] * k0 + x1[i] * k1 + x2[i] * k2 + th)
            o0[i] += c * a0
            o1[i] += c * a1
            o2[i] += c * a2


@njit(inline="always", **JIT)
def _falloff_function(d, low, high, power):
    if d > high:
        return 0.0
    if d < low:
        return 1.0
    if power != 0.0:
        return max(1.0 + d - low, 1e-300) ** -power
    return 1.0


@njit(inline="always", **JIT)
def _falloff_at(rel0, rel1, rel2, fac, distance, ax0, ax1, ax2, z, shape, low, high, power, rlow, rhigh, rpower):
    """The falloff at one point (``_falloff`` of the reference, but for the weights); the region's
    settings come unpacked (as scalars the loop keeps in registers)."""
    f = 1.0
    if z == 1.0:
        if fac < 0.0:
            f = 0.0
    elif z == 2.0:
        if fac > 0.0:
            f = 0.0
    if shape == 0.0:
        return f * _falloff_function(distance, low, high, power)
    f = f * _falloff_function(abs(fac), low, high, power)
    if shape == 1.0:
        r0 = rel0 - fac * ax0
        r1 = rel1 - fac * ax1
        r2 = rel2 - fac * ax2
        r = math.sqrt(r0 * r0 + r1 * r1 + r2 * r2)
    else:
        length = math.sqrt(rel0 * rel0 + rel1 * rel1 + rel2 * rel2)
        cos_angle = fac / length if length > 0.0 else 1.0
        r = math.acos(min(max(cos_angle, -1.0), 1.0)) * DEGREES
    return f * _falloff_function(r, rlow, rhigh, rpower)


@njit(inline="always", **JIT)
def _geometry_at(p0, p1, p2, c0, c1, c2, ax0, ax1, ax2, mode):
    """(offset from the origin, its part along the axis, the distance vector, its length) at a point."""
    rel0 = p0 - c0
    rel1 = p1 - c1
    rel2 = p2 - c2
    fac = rel0 * ax0 + rel1 * ax1 + rel2 * ax2
    if mode == 0.0:
        v0, v1, v2 = rel0, rel1, rel2
    elif mode == 1.0:
        v0, v1, v2 = rel0 - fac * ax0, rel1 - fac * ax1, rel2 - fac * ax2
    else:
        v0, v1, v2 = fac * ax0, fac * ax1, fac * ax2
    distance = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    return rel0, rel1, rel2, fac, v0, v1, v2, distance


@njit(**JIT)
def _region_falloff(x, region, weights, out):
    """out (n,) = the falloff of the region at x, times the weights (if any)."""
    c0, c1, c2, ax0, ax1, ax2 = region[0], region[1], region[2], region[3], region[4], region[5]
    mode, shape, z = region[6], region[7], region[8]
    low, high, power, rlow, rhigh, rpower = region[9], region[10], region[11], region[12], region[13], region[14]
    weighted = weights.shape[0] > 0
    for i in range(x.shape[0]):
        rel0, rel1, rel2, fac, _v0, _v1, _v2, distance = _geometry_at(x[i, 0], x[i, 1], x[i, 2], c0, c1, c2,
                                                                      ax0, ax1, ax2, mode)
        f = _falloff_at(rel0, rel1, rel2, fac, distance, ax0, ax1, ax2, z, shape, low, high, power, rlow, rhigh,
                        rpower)
        if weighted:
            f = f * weights[i]
        out[i] = f


@njit(**JIT)
def falloff(x, region, weights, out):
    f = np.empty(x.shape[0])
    _region_falloff(x, region, weights, f)
    for i in range(x.shape[0]):
        out[i] += f[i]


@njit(**JIT)
def wind_air(x, base, gust_scale, k, theta, amp, region, regional, weights, air):
    n = x.shape[0]
    waves = theta.shape[0] > 0
    g0, g1, g2 = np.zeros(n), np.zeros(n), np.zeros(n)
    if waves:
        x0, x1, x2 = _columns(x)
        _add_waves(x0, x1, x2, k, theta, amp, g0, g1, g2)
    weighted = weights.shape[0] > 0
    f = np.empty(n if regional else 0)
    if regional:
        _region_falloff(x, region, weights, f)
    for i in range(n):
        a0, a1, a2 = base[0], base[1], base[2]
        if waves:
            a0 = a0 + gust_scale * g0[i]
            a1 = a1 + gust_scale * g1[i]
            a2 = a2 + gust_scale * g2[i]
        if regional:
            a0, a1, a2 = a0 * f[i], a1 * f[i], a2 * f[i]
        elif weighted:
            a0, a1, a2 = a0 * weights[i], a1 * weights[i], a2 * weights[i]
        air[i, 0] += a0
        air[i, 1] += a1
        air[i, 2] += a2


@njit(**JIT)
def strength(x, s, k, theta, amp, out):
    n = x.shape[0]
    if theta.shape[0] == 0:
        for i in range(n):
            out[i] = s
        return
    x0, x1, x2 = _columns(x)
    sums = np.zeros(n)
    for m in range(theta.shape[0]):
        k0, k1, k2, th = k[m, 0], k[m, 1], k[m, 2], theta[m]
        for i in range(n):
            sums[i] += cosine(x0[i] * k0 + x1[i] * k1 + x2[i] * k2 + th) * 1.0
    for i in range(n):
        out[i] = s + amp * sums[i]


@njit(inline="always", **JIT)
def _grad(perm, gradients, corner, x, y, z):
    h = perm[corner]
    return gradients[0, h] * x + gradients[1, h] * y + gradients[2, h] * z


@njit(inline="always", **JIT)
def _perlin(px, py, pz, perm, gradients):
    cx, cy, cz = math.floor(px), math.floor(py), math.floor(pz)
    x0, y0, z0 = px - cx, py - cy, pz - cz
    ix, iy, iz = int(cx) & 255, int(cy) & 255, int(cz) & 255
    ux = x0 * x0 * x0 * (x0 * (x0 * 6.0 - 15.0) + 10.0)
    uy = y0 * y0 * y0 * (y0 * (y0 * 6.0 - 15.0) + 10.0)
    uz = z0 * z0 * z0 * (z0 * (z0 * 6.0 - 15.0) + 10.0)
    x1, y1, z1 = x0 - 1.0, y0 - 1.0, z0 - 1.0
    a = perm[ix] + iy
    b = perm[ix + 1] + iy
    aa, ab, ba, bb = perm[a] + iz, perm[a + 1] + iz, perm[b] + iz, perm[b + 1] + iz
    g000 = _grad(perm, gradients, aa, x0, y0, z0)
    g100 = _grad(perm, gradients, ba, x1, y0, z0)
    g010 = _grad(perm, gradients, ab, x0, y1, z0)
    g110 = _grad(perm, gradients, bb, x1, y1, z0)
    g001 = _grad(perm, gradients, aa + 1, x0, y0, z1)
    g101 = _grad(perm, gradients, ba + 1, x1, y0, z1)
    g011 = _grad(perm, gradients, ab + 1, x0, y1, z1)
    g111 = _grad(perm, gradients, bb + 1, x1, y1, z1)
    lo = g000 + ux * (g100 - g000)
    hi = g010 + ux * (g110 - g010)
    near = lo + uy * (hi - lo)
    lo = g001 + ux * (g101 - g001)
    hi = g011 + ux * (g111 - g011)
    far = lo + uy * (hi - lo)
    return near + uz * (far - near)


@njit(inline="always", **JIT)
def _turbulence(size, px, py, pz, perm, gradients):
    qx, qy, qz = px / size, py / size, pz / size
    total = 0.0
    amp, scale = 1.0, 1.0
    for _ in range(3):  # octaves 2, as the reference's default
        total += amp * (0.5 + 0.5 * _perlin(qx * scale, qy * scale, qz * scale, perm, gradients))
        amp *= 0.5
        scale *= 2.0
    return total * (4.0 / 7.0)


@njit(inline="always", **JIT)
def _turbulence_point(x, i, c0, c1, c2, ax0, ax1, ax2, global_coordinates, size, perm, gradients, d0, d1, d2):
    if global_coordinates:
        p0, p1, p2 = x[i, 0], x[i, 1], x[i, 2]
    else:
        p0, p1, p2 = (x[i, 0] - c0) + ax0, (x[i, 1] - c1) + ax1, (x[i, 2] - c2) + ax2
    d0[i] = -1.0 + 2.0 * _turbulence(size, p0, p1, p2, perm, gradients)
    d1[i] = -1.0 + 2.0 * _turbulence(size, p1, p2, p0, perm, gradients)
    d2[i] = -1.0 + 2.0 * _turbulence(size, p2, p0, p1, perm, gradients)


@njit(**JIT)
def _turbulence_directions(x, c0, c1, c2, ax0, ax1, ax2, global_coordinates, size, perm, gradients, d0, d1, d2):
    for i in range(x.shape[0]):
        _turbulence_point(x, i, c0, c1, c2, ax0, ax1, ax2, global_coordinates, size, perm, gradients, d0, d1, d2)


@njit(**JIT)
def blender_field(x, kind, region, params, s, k, theta, noise_amp, weights, perm, gradients, accel, rate):
    n = x.shape[0]
    st = np.empty(n)
    strength(x, s, k, theta, noise_amp, st)
    ax0, ax1, ax2 = region[3], region[4], region[5]
    point = region[6] == 0.0
    gravitation = params[0] != 0.0
    flow = params[1]
    size = params[2]
    global_coordinates = params[3] != 0.0
    damping2 = 2.0 * params[4]
    rest = params[5]
    falloffs = np.empty(n)
    _region_falloff(x, region, weights, falloffs)
    c0, c1, c2, mode = region[0], region[1], region[2], region[6]
    turbulent = kind == 2
    d0, d1, d2 = np.empty(n if turbulent else 0), np.empty(n if turbulent else 0), np.empty(n if turbulent else 0)
    if turbulent:
        _turbulence_directions(x, c0, c1, c2, ax0, ax1, ax2, global_coordinates, size, perm, gradients, d0, d1, d2)
    for i in range(n):
        rel0, rel1, rel2, fac, v0, v1, v2, distance = _geometry_at(x[i, 0], x[i, 1], x[i, 2], c0, c1, c2,
                                                                  ax0, ax1, ax2, mode)
        f = falloffs[i]
        si = st[i]
        on = 1.0 if f > 0.0 else 0.0
        if kind == 0:
            if gravitation:
                si = si / (distance * distance) if distance > 1.2e-7 else 0.0
            c = si * f / distance if distance > 0.0 else 0.0
            a0, a1, a2 = v0 * c, v1 * c, v2 * c
        elif kind == 1:
            s0 = ax1 * rel2 - ax2 * rel1
            s1 = ax2 * rel0 - ax0 * rel2
            s2 = ax0 * rel1 - ax1 * rel0
            if point:
                length = math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
                c = si * distance * f / length if length > 0.0 else 0.0
                a0, a1, a2 = s0 * c, s1 * c, s2 * c
            else:
                w = si * f
                ww = w * w
                a0 = (ax1 * s2 - ax2 * s1) * ww + s0 * w
                a1 = (ax2 * s0 - ax0 * s2) * ww + s1 * w
                a2 = (ax0 * s1 - ax1 * s0) * ww + s2 * w
                rate[i] += on
        elif kind == 2:
            c = si * f
            a0, a1, a2 = d0[i] * c, d1[i] * c, d2[i] * c
        else:
            if rest != 0.0:
                c = (distance - rest) / distance if distance > 0.0 else 0.0
                v0, v1, v2 = v0 * c, v1 * c, v2 * c
            c = -si * f
            a0, a1, a2 = v0 * c, v1 * c, v2 * c
            rate[i] += on * damping2 * math.sqrt(abs(si))
        if kind != 3:
            rate[i] += flow * f
        accel[i, 0] += a0
        accel[i, 1] += a1
        accel[i, 2] += a2


@njit(**JIT)
def drag_terms(x, linear, quadratic, region, regional, weights, linear_out, quadratic_out):
    weighted = weights.shape[0] > 0
    falloffs = np.empty(x.shape[0] if regional else 0)
    if regional:
        _region_falloff(x, region, weights, falloffs)
    for i in range(x.shape[0]):
        if regional:
            f = falloffs[i]
        elif weighted:
            f = weights[i]
        else:
            f = 1.0
        linear_out[i] += linear * f
        quadratic_out[i] += quadratic * f


@njit(**JIT)
def attractor(x, position, s, falloff_kind, min_distance, max_distance, accel):
    for i in range(x.shape[0]):
        d0 = position[0] - x[i, 0]
        d1 = position[1] - x[i, 1]
        d2 = position[2] - x[i, 2]
        r = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if r > 1e-12 and r <= max_distance:
            rr = max(r, min_distance)
            if falloff_kind == 0:
                size = s
            elif falloff_kind == 1:
                size = s / rr
            else:
                size = s / (rr * rr)
            size = size / max(r, 1e-300)
        else:
            size = 0.0
        accel[i, 0] += d0 * size
        accel[i, 1] += d1 * size
        accel[i, 2] += d2 * size


@njit(**JIT)
def damp_particles(x, x_prev, inv_mass, linear, quadratic, rate, h):
    for i in range(x.shape[0]):
        v0 = (x[i, 0] - x_prev[i, 0]) / h
        v1 = (x[i, 1] - x_prev[i, 1]) / h
        v2 = (x[i, 2] - x_prev[i, 2]) / h
        speed = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
        w = inv_mass[i]
        moving = 1.0 if w > 0.0 else 0.0
        scale = math.exp(-(linear[i] * w + rate[i] * moving) * h) / (1.0 + quadratic[i] * w * speed * h)
        x_prev[i, 0] = x[i, 0] - v0 * scale * h
        x_prev[i, 1] = x[i, 1] - v1 * scale * h
        x_prev[i, 2] = x[i, 2] - v2 * scale * h
