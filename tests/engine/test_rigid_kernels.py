"""The rigid step's fused kernels agree across the backends: given the same random inputs, numba
and numpy give the same numbers (to 1e-12 relative: the sums run in another order), and the
shortcuts the compiled contacts take lose nothing."""

import numpy as np
import pytest

from jakobsen_engine import backend
from jakobsen_engine.geometry import quaternions as quat

pytestmark = [pytest.mark.compares_backends,
              pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")]


@pytest.fixture(params=range(4))
def rng(request):
    return np.random.default_rng(2000 + request.param)


def both(kernel: str, module: str, make_args):
    out = []
    for name in ("numba", "numpy"):
        args = make_args()
        getattr(getattr(backend.select(name), module), kernel)(*args)
        out.append(args)
    return out


def assert_close(a, b, rows=None):
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            x, y = (x, y) if rows is None or x.ndim == 0 or len(x) < rows else (x[:rows], y[:rows])
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-13)


def _poses(rng, bodies):
    x = np.vstack([rng.normal(size=(bodies, 3)), np.zeros((1, 3))])
    q = np.vstack([quat.normalize(rng.normal(size=(bodies, 4))), [[1.0, 0.0, 0.0, 0.0]]])
    return x, q


def test_preparing_contacts_agrees_with_anchors_carried_over(rng):
    bodies, count, capacity = 7, 40, 48
    x, q = _poses(rng, bodies)
    # The substep's start: a small motion back, as a substep makes it.
    x_prev = x - 0.01 * np.vstack([rng.normal(size=(bodies, 3)), np.zeros((1, 3))])
    q_prev = quat.normalize(quat.multiply(quat.exp_rotation(0.05 * rng.normal(size=(bodies + 1, 3))), q))
    q_prev[-1] = (1.0, 0.0, 0.0, 0.0)
    inv_mass = np.append(rng.uniform(0.1, 2.0, bodies), 0.0)
    inv_inertia = np.vstack([rng.uniform(0.1, 3.0, (bodies, 3)), np.zeros((1, 3))])
    dynamic = np.append(rng.random(bodies) < 0.8, False)
    v_before, w_before = rng.normal(size=(bodies + 1, 3)), rng.normal(size=(bodies + 1, 3))
    accel = rng.normal(size=(bodies + 1, 3))
    ints = np.zeros((capacity, 4), np.int64)
    ints[:count, 0] = rng.integers(0, bodies, count)
    ints[:count, 1] = np.where(rng.random(count) < 0.4, bodies, rng.integers(0, bodies, count))
    ints[:count, 2] = np.where(rng.random(count) < 0.2, -1, rng.permutation(1000)[:count])
    local_a, local_b = rng.normal(size=(capacity, 3)), rng.normal(size=(capacity, 3))
    normal = rng.normal(size=(capacity, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    # Half the keys stuck in the last substep, and some that are no contact's now.
    keys = np.unique(np.concatenate([ints[:count:2, 2][ints[:count:2, 2] >= 0], 1000 + np.arange(5)]))
    residual = 1e-3 * rng.normal(size=(len(keys), 3))

    def args(anchor_keys=keys, anchor_residual=residual):
        return [x, q, x_prev, q_prev, inv_mass, inv_inertia, v_before, w_before, accel, dynamic, ints, local_a,
                local_b, normal, count, anchor_keys.copy(), anchor_residual.copy(), np.zeros((capacity, 3)),
                np.zeros((capacity, 3, 12)), np.zeros((capacity, 3, 12)), np.zeros((capacity, 3)), np.zeros(capacity),
                np.zeros((capacity, 3)), np.ones(capacity), np.ones((capacity, 2)), np.ones(capacity, np.int64),
                np.zeros(capacity, np.int64), np.zeros(capacity), np.zeros(capacity), np.zeros(capacity)]

    a, b = both("prepare_contacts", "rigid", args)
    assert_close(a, b)
    assert np.all(a[23][:count] == 0.0) and np.all(a[25][:count] == 0) and np.all(a[26][:count] == -1)
    # A contact whose key stuck takes its residual off its anchor: the anchors differ from those
    # made with nothing carried over by exactly that residual, and only there.
    fresh, _ = both("prepare_contacts", "rigid", lambda: args(np.zeros(0, np.int64), np.zeros((0, 3))))
    carried = np.isin(ints[:count, 2], keys)
    assert carried.any() and not carried.all()
    slot = np.searchsorted(keys, ints[:count, 2][carried])
    np.testing.assert_allclose(fresh[17][:count][carried] - a[17][:count][carried], residual[slot], atol=1e-12)
    np.testing.assert_array_equal(fresh[17][:count][~carried], a[17][:count][~carried])


def test_the_wheels_mesh_vertices_are_those_within_its_reach(rng):
    """``mesh_vertices_near`` with ``within`` keeps exactly the vertices of the cells' triangles
    no farther than that from the centre (sorted, unique)."""
    from jakobsen_engine.backend.numba.contacts import mesh_vertices_near
    import jakobsen_engine as engine

    n = 12
    gx, gy = np.meshgrid(np.linspace(-2, 2, n), np.linspace(-2, 2, n), indexing="ij")
    vertices = np.stack([gx.ravel(), gy.ravel(), 0.1 * rng.normal(size=n * n)], axis=1)
    faces = [[i * n + j, (i + 1) * n + j, (i + 1) * n + j + 1, i * n + j + 1] for i in range(n - 1)
             for j in range(n - 1)]
    builder = engine.ModelBuilder()
    builder.add_collider(engine.TriangleMesh.from_mesh(vertices, faces))
    builder.add_particles(np.zeros((1, 3)))  # (a model needs something that moves)
    geo = builder.finalize().shapes.kernel_arrays()
    for _ in range(10):
        c = rng.uniform(-1.5, 1.5, 3) * (1.0, 1.0, 0.2)
        reach = rng.uniform(0.2, 0.8)
        every = mesh_vertices_near(geo, 0, c[0], c[1], c[2], reach)
        near = mesh_vertices_near(geo, 0, c[0], c[1], c[2], reach, 0.7 * reach)
        expected = every[np.linalg.norm(geo[13][every] - c, axis=1) <= 0.7 * reach]
        np.testing.assert_array_equal(near, expected)
        assert len(every) > len(near)


def test_finding_and_advancing_the_fast_queries_agrees(rng):
    """``sweep.fast_hits`` on both backends: boxes thrown fast and spinning at the ground and at
    each other (some sides fast, some slow), the same hits in the same order."""
    import jakobsen_engine as engine
    from jakobsen_engine.bodies.rigid import CONTACT_DEPTH
    from jakobsen_engine.collision import sweep

    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    builder = engine.ModelBuilder()
    count = 6
    for k in range(count):
        size = rng.uniform(0.05, 0.3, 3)
        builder.add_rigid_body(corners * size + (0.4 * k, 0.0, rng.uniform(0.2, 0.5)), faces, shape="box")
    builder.add_collider(engine.Plane())
    model = builder.finalize()
    x0, q0 = _poses(rng, count)
    x0[:count, 0], x0[:count, 2] = 0.4 * np.arange(count), rng.uniform(0.1, 0.5, count)
    dx = np.vstack([rng.normal(scale=0.3, size=(count, 3)), np.zeros((1, 3))])
    dx[::2] *= 1e-3  # slow ones too
    phi = np.vstack([rng.normal(scale=0.5, size=(count, 3)), np.zeros((1, 3))])
    pairs = np.array([[a, b, b] for a in range(count) for b in range(a + 1, count)]
                     + [[a, count, 0] for a in range(count)], np.int64)
    pairs[:len(pairs) - count, 2] = model.bodies.shape_index[pairs[:len(pairs) - count, 1]]
    out = []
    for name in ("numba", "numpy"):
        s = sweep.Sweeper(model, backend.select(name).sweep)
        s.begin_frame(pairs)
        out.append(s.kernels.fast_hits(s.geo, x0, q0, dx, phi, s.sides, s.side_first, s.queries, s.local, s.radius,
                                       s.arm, s.body_arm, s.thickness, s.shape_thickness, s.bound, s.count,
                                       CONTACT_DEPTH, sweep.SWEEP_ITERATIONS, sweep.SWEEP_BISECTIONS,
                                       sweep.SWEEP_TOUCH))
    a, b = out
    assert len(a[0]) == len(b[0]) > 0
    np.testing.assert_array_equal(a[1], b[1])
    assert_close(a, b)
