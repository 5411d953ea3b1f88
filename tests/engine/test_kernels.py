"""The two backends agree: every kernel, given the same random inputs, gives the same numbers on
numba and on numpy (bit for bit where the order of operations is the same, which is everywhere
here), and each gives the same numbers on every run."""

import numpy as np
import pytest

from jakobsen_engine import backend
from jakobsen_engine.builder import colour_sticks

pytestmark = pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")


@pytest.fixture(params=range(4))
def rng(request):
    return np.random.default_rng(1000 + request.param)


def both(kernel: str, module: str, make_args):
    """Run ``kernel`` of both backends on copies of the same arguments; returns the two results
    (the arguments after the call, since kernels work in place), numba's first."""
    out = []
    for name in ("numba", "numpy"):
        args = make_args()
        getattr(getattr(backend.select(name), module), kernel)(*args)
        out.append(args)
    return out


def assert_same(a, b):
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)


def test_verlet_integration_agrees(rng):
    n = 500
    seed = int(rng.integers(1 << 30))

    def args(drag=True):
        r = np.random.default_rng(seed)
        x = r.normal(size=(n, 3))
        xp = x + r.normal(scale=0.01, size=(n, 3))
        movable = (r.random(n) > 0.1).astype(float)
        accel = r.normal(size=(n, 3)) * 10
        drag_w = r.random(n) * 2 if drag else np.zeros(0)
        air = r.normal(size=(n, 3))
        return [x, xp, movable, accel, 0.999, 1 / 240, drag_w, air]

    for drag in (True, False):
        a, b = both("verlet_integrate", "particles", lambda: args(drag))
        assert_same(a, b)
        assert np.abs(a[0] - args(drag)[0]).max() > 0  # it moved something


def test_stick_sweeps_agree_on_a_random_net_with_every_kind_and_compliance(rng):
    n, m = 300, 900
    seed = int(rng.integers(1 << 30))

    def args(sqrt=False):
        r = np.random.default_rng(seed)
        x = r.normal(size=(n, 3))
        inv = np.where(r.random(n) < 0.1, 0.0, r.random(n) + 0.5)
        i = r.integers(0, n, m)
        j = (i + 1 + r.integers(0, n - 1, m)) % n
        keep = (inv[i] > 0) | (inv[j] > 0)  # the builder drops sticks between two pinned particles
        i, j = i[keep], j[keep]
        count = len(i)
        colour = colour_sticks(i, j, inv > 0)
        order = np.argsort(colour, kind="stable")
        i, j, colour = i[order], j[order], colour[order]
        offsets = np.searchsorted(colour, np.arange(colour.max() + 2))
        rest = r.random(count) + 0.1
        alpha = np.where(r.random(count) < 0.5, 0.0, r.random(count) * 1e-3)
        kind = r.integers(0, 3, count).astype(np.int8)
        c = len(offsets) - 1
        passes = np.array([[0, c // 2, 1], [c // 2, c, 3]], dtype=np.int64)
        return [x, i, j, inv[i], inv[j], rest, alpha, kind, np.zeros(count), offsets, passes, sqrt]

    for sqrt in (False, True):
        a, b = both("project_sticks", "particles", lambda: args(sqrt))
        assert_same(a, b)
        assert np.abs(a[0] - args()[0]).max() > 1e-3
        again = both("project_sticks", "particles", lambda: args(sqrt))[0]
        assert_same(a, again)  # deterministic


def test_goals_agree(rng):
    seed = int(rng.integers(1 << 30))

    def args():
        r = np.random.default_rng(seed)
        x = r.normal(size=(50, 3))
        index = r.choice(50, 20, replace=False)
        return [x, index, r.normal(size=(20, 3)), r.random(20), r.random(20) * 1e-2, r.normal(size=(20, 3)) * 1e-3]

    a, b = both("project_goals", "particles", args)
    assert_same(a, b)


def test_contact_response_agrees_for_bounces_slides_and_rests(rng):
    seed = int(rng.integers(1 << 30))
    n, c = 200, 120

    def args():
        r = np.random.default_rng(seed)
        x = r.normal(size=(n, 3))
        xp = x - r.normal(scale=0.05, size=(n, 3))
        k = r.choice(n, c, replace=False)
        normal = r.normal(size=(c, 3))
        normal /= np.linalg.norm(normal, axis=1, keepdims=True)
        depth = r.random(c) * 0.01
        return [x, xp, k, normal * depth[:, None], depth, r.normal(scale=0.001, size=(c, 3)),
                r.normal(size=(c, 3)) * 10, r.random(c), r.random(c), 1 / 240, 0.05]

    a, b = both("respond_to_contacts", "particles", args)
    assert_same(a, b)


def shape_table():
    """One of every shape kind, in the world at odd poses."""
    import jakobsen_engine as engine
    from jakobsen_engine.geometry.primitives import grid
    from jakobsen_engine.geometry.shapes import ShapeTable

    table = ShapeTable()
    rng = np.random.default_rng(3)
    hull_points = rng.normal(size=(30, 3)) * [0.5, 0.3, 0.4]
    v, f = grid(9, 9, 3.0)
    v = np.asarray(v, float)
    v[:, 2] = 0.2 * np.sin(3 * v[:, 0]) * np.cos(2 * v[:, 1])
    colliders = [engine.Plane(), engine.Sphere(radius=0.4), engine.Capsule(radius=0.3, half_height=0.5),
                 engine.Box(half_extents=(0.4, 0.3, 0.2)), engine.Cylinder(radius=0.35, half_height=0.25),
                 engine.ConvexHull.from_points(hull_points), engine.TriangleMesh.from_mesh(v, f, margin=0.15),
                 engine.BoxInterior(half_extents=(1.0, 0.8, 0.6))]
    for k, c in enumerate(colliders):
        table.add_collider(c)
    return table.finalize()


@pytest.mark.parametrize("use_prefer", [False, True])
def test_every_shape_kinds_distance_agrees(rng, use_prefer):
    shapes = shape_table()
    geo = shapes.kernel_arrays()
    k = 4000
    s = rng.integers(0, shapes.count, k)
    q = rng.normal(size=(k, 3)) * 0.6
    # Points near the features where the tie-breaks decide: on faces, edges and corners of the box.
    box = s == 3
    q[box] = np.clip(q[box], -1, 1) * [0.4, 0.3, 0.2] * rng.choice([1.0, 1.001, 0.999], size=(int(box.sum()), 3))
    r = rng.random(k) * 0.05
    prefer = rng.normal(size=(k, 3))
    from jakobsen_engine.backend.numba import distance as nb
    from jakobsen_engine.backend.numpy import distance as npd

    n_np, d_np = npd.distance(geo, s, q, r, prefer, use_prefer)
    n_nb, d_nb = np.zeros((k, 3)), np.zeros(k)
    for i in range(k):
        *n, d = nb.distance(geo, s[i], q[i, 0], q[i, 1], q[i, 2], r[i], *prefer[i], use_prefer)
        n_nb[i], d_nb[i] = n, d
    np.testing.assert_array_equal(d_nb, d_np)
    hit = np.isfinite(d_np)
    np.testing.assert_array_equal(n_nb[hit], n_np[hit])
    # A physical check that cannot pass by agreement alone: the sphere's depth is radius + r - |q|.
    sph = s == 1
    np.testing.assert_allclose(d_np[sph], 0.4 + r[sph] - np.linalg.norm(q[sph], axis=1), rtol=0, atol=1e-15)
    assert np.all(np.abs(np.linalg.norm(n_np[hit], axis=1) - 1.0) < 1e-12)
