"""The force-field kernels (``backend/*/fields.py``) agree: given the same random fields and points,
numba and numpy give the same numbers to 1e-12 of the largest (they differ only in the last bit
of exp, pow and arccos), every region packing, kind and option drawn at random; and the waves'
cosine polynomial is the cosine."""

import math

import numpy as np
import pytest

from jakobsen_engine import backend
from jakobsen_engine.backend.numpy import fields as reference
from jakobsen_engine.forces import fields

pytestmark = [pytest.mark.compares_backends,
              pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")]

N = 400


@pytest.fixture(params=range(6))
def seed(request):
    return 5000 + request.param


def both(kernel, make_args, outputs):
    """Run ``kernel`` of both backends on fresh copies of the same arguments; returns the output
    arguments (by position) after the call, numba's first."""
    out = []
    for name in ("numba", "numpy"):
        args = make_args()
        getattr(backend.select(name).fields, kernel)(*args)
        out.append([args[k] for k in outputs])
    return out


def assert_agree(a, b):
    for x, y in zip(a, b):
        scale = max(float(np.max(np.abs(y))), 1e-300)
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12 * scale)


def points(r):
    x = r.normal(scale=2.0, size=(N, 3))
    x[:3] = 0.0  # at the origin of a field there (see region): its singular cases
    return x


def region(r, *, mode=None):
    c = np.zeros(3) if r.random() < 0.5 else r.normal(size=3)
    axis = r.normal(size=3)
    axis /= np.linalg.norm(axis)
    shape = int(r.integers(3))
    low = 0.0 if r.random() < 0.4 else r.random()
    high = math.inf if r.random() < 0.3 else low + 3.0 * r.random()
    power = 0.0 if r.random() < 0.3 else 3.0 * r.random()
    radial_scale = 60.0 if shape == 2 else 1.5  # the cone's radial limits are degrees
    rlow = 0.0 if r.random() < 0.4 else radial_scale * r.random()
    rhigh = math.inf if r.random() < 0.3 else rlow + radial_scale * r.random()
    return np.array([*c, *axis, int(r.integers(3)) if mode is None else mode, shape, int(r.integers(3)), low, high,
                     power, rlow, rhigh, 3.0 * r.random()])


def weights(r):
    return np.zeros(0) if r.random() < 0.5 else r.random(N) * 2.0


def waves(r, count, dims):
    k = r.normal(size=(count, 3)) * 6.0
    theta = r.uniform(-300.0, 300.0, count)  # a phase after minutes of gusts
    amp = r.normal(size=(count, dims)) if dims else float(r.normal())
    return k, theta, amp


def x_at_origin(r, reg):
    x = points(r)
    x[:3] = reg[0:3]
    return x


def test_falloff_agrees(seed):
    r0 = np.random.default_rng(seed)
    for _ in range(8):
        s = int(r0.integers(1 << 30))

        def args():
            r = np.random.default_rng(s)
            reg = region(r)
            return [x_at_origin(r, reg), reg, weights(r), r.random(N)]

        a, b = both("falloff", args, [3])
        assert_agree(a, b)


def test_wind_agrees(seed):
    r0 = np.random.default_rng(seed)
    for case in range(8):
        s = int(r0.integers(1 << 30))

        def args():
            r = np.random.default_rng(s)
            reg = region(r)
            k, theta, amp = waves(r, 16 if case % 4 else 0, 3)
            return [x_at_origin(r, reg), r.normal(size=3) * 5.0, r.random(), k, theta, amp, reg, bool(case % 2),
                    weights(r), r.normal(size=(N, 3))]

        a, b = both("wind_air", args, [9])
        assert_agree(a, b)


@pytest.mark.parametrize("kind", range(4), ids=fields.BLENDER_KINDS)
def test_blender_fields_agree(seed, kind):
    r0 = np.random.default_rng(seed + 17 * kind)
    acted = 0
    for case in range(6):
        s = int(r0.integers(1 << 30))

        def args():
            r = np.random.default_rng(s)
            reg = region(r)
            params = np.array([float(r.random() < 0.5), r.random(), 0.2 + r.random(), float(r.random() < 0.5),
                               2.0 * r.random(), 0.0 if r.random() < 0.5 else r.random()])
            k, theta, amp = waves(r, 16 if case % 2 else 0, 0)
            return [x_at_origin(r, reg), kind, reg, params, r.normal() * 4.0, k, theta, amp, weights(r),
                    fields.PERLIN_PERMUTATION, fields.PERLIN_GRADIENTS, r.normal(size=(N, 3)), r.random(N)]

        a, b = both("blender_field", args, [11, 12])
        assert_agree(a, b)
        acted += bool(np.any(a[0] != args()[11]))
    assert acted >= 3  # not agreeing on nothing: most random fields reach some of the points


def test_strength_drag_attractor_and_damping_agree(seed):
    r0 = np.random.default_rng(seed)
    for case in range(6):
        s = int(r0.integers(1 << 30))

        def strength_args():
            r = np.random.default_rng(s)
            k, theta, amp = waves(r, 16 if case % 2 else 0, 0)
            return [points(r), r.normal(), k, theta, amp, np.empty(N)]

        assert_agree(*both("strength", strength_args, [5]))

        def drag_args():
            r = np.random.default_rng(s)
            reg = region(r)
            return [x_at_origin(r, reg), r.random(), r.random(), reg, bool(case % 2), weights(r), r.random(N),
                    r.random(N)]

        assert_agree(*both("drag_terms", drag_args, [6, 7]))

        def attractor_args():
            r = np.random.default_rng(s)
            position = r.normal(size=3)
            x = points(r)
            x[:3] = position
            low = r.random()
            return [x, position, r.normal() * 3.0, case % 3, low, math.inf if case < 3 else low + 2.0 * r.random(),
                    r.normal(size=(N, 3))]

        assert_agree(*both("attractor", attractor_args, [6]))

        def damp_args():
            r = np.random.default_rng(s)
            x = points(r)
            inv = np.where(r.random(N) < 0.2, 0.0, r.random(N) * 3.0)
            return [x, x - r.normal(scale=0.05, size=(N, 3)), inv, r.random(N), r.random(N), r.random(N) * 4.0,
                    1.0 / 240.0]

        assert_agree(*both("damp_particles", damp_args, [1]))


def test_wave_cosine_is_the_cosine():
    a = np.concatenate([np.linspace(-20.0, 20.0, 20001), np.random.default_rng(0).uniform(-1e4, 1e4, 20000),
                        np.arange(-64, 65) * (math.pi / 2)])
    # To the rounding of the argument itself (|a| eps) and a few ulps of the result.
    error = np.abs(reference.cosine(a) - np.cos(a))
    assert np.all(error <= 4e-16 + 4e-16 * np.abs(a)), np.max(error / (4e-16 + 4e-16 * np.abs(a)))
    compiled = backend.select("numba").fields.cosine
    assert all(compiled(v) == reference.cosine(np.array([v]))[0] for v in a[::97])
