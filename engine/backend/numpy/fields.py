"""Force-field kernels in numpy: the fields of ``forces/fields.py`` evaluated at many points, the
reference of ``backend/numba/fields.py`` (per point the same arithmetic in the same order).

Every kernel adds what it finds to its output arrays (so several fields sum in place), over
points x (n, 3). A field's region comes packed by ``forces.fields`` as ``region`` (15,):

    0:3   the field's origin, 3:6 its unit axis,
    6     which vector measures the distance: 0 the offset from the origin (point shape), 1 its part
          across the axis (line shape; a vortex of any shape but point), 2 its part along the axis (plane),
    7     falloff shape: 0 sphere (by that distance), 1 tube, 2 cone (by the height along the axis and
          the distance from the axis, or the angle from it in degrees),
    8     z direction: 0 both sides, 1 only where the offset along the axis is >= 0, 2 only <= 0,
    9:12  min distance (0 when off: the same falloff), max distance (inf when off), power,
    12:15 the radial min, max and power (tube and cone).

weights: (n,) per-point factors, or empty for none. Waves (gusts, noise) are cosines
cos(k . x + theta) with theta (M,) per wave, computed by ``cosine`` (a polynomial, not ``np.cos``:
numba's compiled loop then vectorises and both backends give the same bits).

Shapes: n points, M waves.
"""

from __future__ import annotations

import numpy as np

# cos(r) = sum of (-1)^j r^(2j) / (2j)! for j = 0..10: on |r| <= pi/2 the next term is below 2e-17.
COS_COEFFICIENTS = tuple((-1.0) ** j / float(np.prod(np.arange(1, 2 * j + 1, dtype=np.float64))) for j in range(11))
# pi in two parts (Cody and Waite) so the reduced argument keeps its digits for arguments of thousands.
PI_HIGH = 3.141592653589793
PI_LOW = 1.2246467991473532e-16
INV_PI = 1.0 / PI_HIGH
DEGREES = 180.0 / PI_HIGH


def cosine(a):
    """cos(a) (elementwise) to about 1e-15 for |a| up to 1e4: a = n pi + r with |r| <= pi/2,
    cos a = (-1)^n cos r, cos r by its Taylor series (Horner)."""
    n = np.floor(a * INV_PI + 0.5)
    r = (a - n * PI_HIGH) - n * PI_LOW
    r2 = r * r
    c = COS_COEFFICIENTS
    poly = c[10]
    for j in range(9, -1, -1):
        poly = poly * r2 + c[j]
    sign = 1.0 - 2.0 * (n - 2.0 * np.floor(n * 0.5))
    return sign * poly


def _wave_sums(x, k, theta, amp):
    """sum over waves m of cos(k_m . x + theta_m) amp_m: (n, 3) for amp (M, 3), (n,) for amp (M,)."""
    out = np.zeros((len(x),) + amp.shape[1:])
    x0, x1, x2 = x[:, 0], x[:, 1], x[:, 2]
    for m in range(len(theta)):
        c = cosine(x0 * k[m, 0] + x1 * k[m, 1] + x2 * k[m, 2] + theta[m])
        out += c[:, None] * amp[m] if amp.ndim == 2 else c * amp[m]
    return out


def _falloff_function(d, low, high, power):
    """Blender's ``falloff_func``: 0 beyond ``high``, 1 within ``low``, else (1 + d - low)^-power."""
    with np.errstate(over="ignore"):  # where d < low, whose value is replaced by 1
        out = np.power(np.maximum(1.0 + d - low, 1e-300), -power) if power != 0.0 else np.ones_like(d)
    out = np.where(d < low, 1.0, out)
    return np.where(d > high, 0.0, out)


def _geometry(x, region):
    """(offset from the origin (n, 3), offset along the axis (n,), vector the distance is measured
    along (n, 3), its length (n,))."""
    rel = x - region[0:3]
    axis = region[3:6]
    fac = rel[:, 0] * axis[0] + rel[:, 1] * axis[1] + rel[:, 2] * axis[2]
    mode = region[6]
    if mode == 0.0:
        vec = rel
    else:
        along = fac[:, None] * axis
        vec = rel - along if mode == 1.0 else along
    distance = np.sqrt(vec[:, 0] * vec[:, 0] + vec[:, 1] * vec[:, 1] + vec[:, 2] * vec[:, 2])
    return rel, fac, vec, distance


def _falloff(rel, fac, distance, region, weights):
    """Blender's ``effector_falloff`` (n,): z direction, then sphere, tube or cone, times the weights."""
    z = region[8]
    f = np.ones(len(rel))
    if z == 1.0:
        f = np.where(fac < 0.0, 0.0, f)
    elif z == 2.0:
        f = np.where(fac > 0.0, 0.0, f)
    shape = region[7]
    if shape == 0.0:
        f = f * _falloff_function(distance, region[9], region[10], region[11])
    else:
        f = f * _falloff_function(np.abs(fac), region[9], region[10], region[11])
        axis = region[3:6]
        if shape == 1.0:
            r0 = rel[:, 0] - fac * axis[0]
            r1 = rel[:, 1] - fac * axis[1]
            r2 = rel[:, 2] - fac * axis[2]
            r = np.sqrt(r0 * r0 + r1 * r1 + r2 * r2)
        else:
            length = np.sqrt(rel[:, 0] * rel[:, 0] + rel[:, 1] * rel[:, 1] + rel[:, 2] * rel[:, 2])
            with np.errstate(invalid="ignore", divide="ignore"):
                cos_angle = np.where(length > 0.0, fac / length, 1.0)
            r = np.arccos(np.minimum(np.maximum(cos_angle, -1.0), 1.0)) * DEGREES
        f = f * _falloff_function(r, region[12], region[13], region[14])
    if len(weights):
        f = f * weights
    return f


def falloff(x, region, weights, out):
    """out (n,) += the falloff of the region at x."""
    rel, fac, _, distance = _geometry(x, region)
    out += _falloff(rel, fac, distance, region, weights)


def wind_air(x, base, gust_scale, k, theta, amp, region, regional, weights, air):
    """air (n, 3) += (base + gust_scale sum_m cos(k_m . x + theta_m) amp_m) times the falloff.

    base (3,) m/s: the mean wind now; k (M, 3), theta (M,), amp (M, 3): the gust modes (M may be 0);
    regional: whether the falloff can be other than 1 (else only the weights, if any, scale it)."""
    a = np.broadcast_to(base, x.shape)
    if len(theta):
        a = a + gust_scale * _wave_sums(x, k, theta, amp)
    if regional:
        rel, fac, _, distance = _geometry(x, region)
        a = a * _falloff(rel, fac, distance, region, weights)[:, None]
    elif len(weights):
        a = a * weights[:, None]
    air += a


def strength(x, s, k, theta, amp, out):
    """out (n,) = the strength s plus the noise amp sum_m cos(k_m . x + theta_m) (M may be 0)."""
    out[:] = s + amp * _wave_sums(x, k, theta, np.ones(len(theta))) if len(theta) else s


def perlin_noise(p, perm, gradients):
    """Improved Perlin noise (k,) in about [-1, 1] at points p (k, 3); 0 on the integer lattice.
    perm (512,) the shuffled table twice over, gradients (3, 256) each hash's gradient by component."""
    cell = np.floor(p)
    f = p - cell
    i = cell.astype(np.intp) & 255
    u = f * f * f * (f * (f * 6.0 - 15.0) + 10.0)
    x0, y0, z0 = f[:, 0], f[:, 1], f[:, 2]
    x1, y1, z1 = x0 - 1.0, y0 - 1.0, z0 - 1.0
    a = perm[i[:, 0]] + i[:, 1]
    b = perm[i[:, 0] + 1] + i[:, 1]
    z = i[:, 2]
    aa, ab, ba, bb = perm[a] + z, perm[a + 1] + z, perm[b] + z, perm[b + 1] + z
    gx, gy, gz = gradients[0], gradients[1], gradients[2]

    def grad(corner, x, y, zz):
        h = perm[corner]
        return gx[h] * x + gy[h] * y + gz[h] * zz

    def lerp(t, lo, hi):
        return lo + t * (hi - lo)

    ux, uy, uz = u[:, 0], u[:, 1], u[:, 2]
    near = lerp(uy, lerp(ux, grad(aa, x0, y0, z0), grad(ba, x1, y0, z0)),
                lerp(ux, grad(ab, x0, y1, z0), grad(bb, x1, y1, z0)))
    far = lerp(uy, lerp(ux, grad(aa + 1, x0, y0, z1), grad(ba + 1, x1, y0, z1)),
               lerp(ux, grad(ab + 1, x0, y1, z1), grad(bb + 1, x1, y1, z1)))
    return lerp(uz, near, far)


def turbulence(size, p, perm, gradients, octaves=2):
    """Blender's ``BLI_noise_generic_turbulence(size, x, y, z, octaves, hard=False)`` (k,) at p
    (k, 3): octaves + 1 layers of 0.5 + 0.5 noise, each half the size and half the weight of the
    last, normalised to [0, 1] (mean 1/2)."""
    q = p / size
    total = np.zeros(len(p))
    amp, scale = 1.0, 1.0
    for _ in range(octaves + 1):
        total += amp * (0.5 + 0.5 * perlin_noise(q * scale, perm, gradients))
        amp *= 0.5
        scale *= 2.0
    return total * (float(1 << octaves) / float((1 << (octaves + 1)) - 1))


def blender_field(x, kind, region, params, s, k, theta, noise_amp, weights, perm, gradients, accel, rate):
    """accel (n, 3) m/s^2 += one Blender field's velocity-free acceleration at x, rate (n,) 1/s +=
    its velocity terms (a = -rate v), as ``do_physical_effector`` with the location flag, zero where
    the falloff is zero.

    kind: 0 force, 1 vortex, 2 turbulence, 3 harmonic; params (6,): gravitation (0/1), flow 1/s,
    turbulence size m, turbulence in global coordinates (0/1), harmonic damping ratio, rest length m;
    s: the strength now; k, theta, noise_amp: its noise waves (M may be 0; ``strength``)."""
    n = len(x)
    rel, fac, vec, distance = _geometry(x, region)
    f = _falloff(rel, fac, distance, region, weights)
    st = np.empty(n)
    strength(x, s, k, theta, noise_amp, st)
    axis = region[3:6]
    on = f > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == 0:
            if params[0] != 0.0:
                st = np.where(distance > 1.2e-7, st / (distance * distance), 0.0)
            a = vec * np.where(distance > 0.0, st * f / distance, 0.0)[:, None]
        elif kind == 1:
            swirl = np.cross(axis, rel)
            if region[6] == 0.0:  # point: along the swirl by the distance
                length = np.sqrt(swirl[:, 0] * swirl[:, 0] + swirl[:, 1] * swirl[:, 1] + swirl[:, 2] * swirl[:, 2])
                a = swirl * np.where(length > 0.0, st * distance * f / length, 0.0)[:, None]
            else:
                w = st * f
                # -W^2 r (centripetal) + W axis x r; the -v of Blender's formula is the rate.
                a = np.cross(axis, swirl) * (w * w)[:, None] + swirl * w[:, None]
                rate += on
        elif kind == 2:
            p = x if params[3] != 0.0 else rel + axis
            turned = np.concatenate([p, p[:, [1, 2, 0]], p[:, [2, 0, 1]]])  # one call for three components
            direction = (-1.0 + 2.0 * turbulence(params[2], turned, perm, gradients)).reshape(3, n).T
            a = direction * (st * f)[:, None]
        else:
            rest = params[5]
            stretch = vec * np.where(distance > 0.0, (distance - rest) / distance, 0.0)[:, None] if rest else vec
            a = stretch * (-st * f)[:, None]
            rate += on * (2.0 * params[4]) * np.sqrt(np.abs(st))
    if kind != 3:
        rate += params[1] * f
    accel += a


def drag_terms(x, linear, quadratic, region, regional, weights, linear_out, quadratic_out):
    """linear_out (n,) kg/s += linear times the falloff, quadratic_out (n,) kg/m += quadratic times it."""
    if regional:
        rel, fac, _, distance = _geometry(x, region)
        f = _falloff(rel, fac, distance, region, weights)
    elif len(weights):
        f = weights
    else:
        f = np.ones(len(x))
    linear_out += linear * f
    quadratic_out += quadratic * f


def attractor(x, position, s, falloff_kind, min_distance, max_distance, accel):
    """accel (n, 3) += an attractor's pull: s m/s^2 towards position (3,) times falloff_kind 0 (1),
    1 (1/r) or 2 (1/r^2) of r clamped to >= min_distance, none beyond max_distance (inf: no limit)."""
    d = position - x
    r = np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])
    rr = np.maximum(r, min_distance)
    with np.errstate(divide="ignore", invalid="ignore"):
        if falloff_kind == 0:
            size = np.full(len(r), s)
        elif falloff_kind == 1:
            size = s / rr
        else:
            size = s / (rr * rr)
        # At the point itself there is no direction to pull in.
        size = np.where((r > 1e-12) & (r <= max_distance), size / np.maximum(r, 1e-300), 0.0)
    accel += d * size[:, None]


def damp_particles(x, x_prev, inv_mass, linear, quadratic, rate, h):
    """One substep h of F = -(linear + quadratic |v|) v and a = -rate v on the Verlet velocities
    v = (x - x_prev) / h, in place on x_prev (n, 3); linear, quadratic, rate (n,).

    Linear drag and the rate exactly (exp(-(c w + rate) h)), quadratic drag implicitly
    (v' = v / (1 + q w |v| h)), so nothing reverses; pinned particles (w = 0) keep their velocity."""
    v = (x - x_prev) / h
    speed = np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])
    moving = inv_mass > 0.0
    scale = np.exp(-(linear * inv_mass + rate * moving) * h) / (1.0 + quadratic * inv_mass * speed * h)
    x_prev[...] = x - v * scale[:, None] * h
