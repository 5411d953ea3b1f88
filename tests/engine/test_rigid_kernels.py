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
    ints[:count, 3] = rng.random(count) < 0.5  # A's point a fixed point of A (a corner), or not (a round surface)
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
    # With nothing carried, a fixed point's anchor is exactly where that point of A was at the
    # substep's start (B's frame then); a round surface's is where A's motion to first order
    # brings its contact point back to, which differs by about (A's turn)^2 times its arm.
    a_, b_ = ints[:count, 0], ints[:count, 1]
    start = x_prev[a_] + quat.rotate(q_prev[a_], local_a[:count])
    exact = quat.rotate(quat.conjugate(q_prev[b_]), start - x_prev[b_])
    fixed = ints[:count, 3] == 1
    np.testing.assert_allclose(fresh[17][:count][fixed], exact[fixed], atol=1e-12)
    assert np.abs(fresh[17][:count][~fixed] - exact[~fixed]).max() > 1e-6


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
                                       sweep.SWEEP_TOUCH, sweep.SWEEP_TURN_SAMPLES))
    a, b = out
    assert len(a[0]) == len(b[0]) > 0
    np.testing.assert_array_equal(a[1], b[1])
    assert_close(a, b)


def test_the_sweeps_corrections_agree(rng):
    """``sweep.relative_motion`` and ``sweep.correct_hits`` on both backends: a whole sweep of
    boxes thrown fast and spinning at the ground and at each other ends with the same poses, and
    it corrected something (a body taken back, or its turn stopped at the impact)."""
    import jakobsen_engine as engine
    from jakobsen_engine.collision import sweep

    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    builder = engine.ModelBuilder()
    count = 6
    for k in range(count):
        size = rng.uniform(0.05, 0.3, 3)
        builder.add_rigid_body(corners * size + (0.3 * k, 0.0, 0.3), faces, shape="box", mass=rng.uniform(0.5, 3))
    builder.add_collider(engine.Plane())
    model = builder.finalize()
    x0, q0 = _poses(rng, count)
    x0[:count, 0], x0[:count, 1], x0[:count, 2] = 0.3 * np.arange(count), 0.0, rng.uniform(0.2, 0.4, count)
    x1 = x0 + np.vstack([rng.normal(scale=0.25, size=(count, 3)) - (0.0, 0.0, 0.3), np.zeros((1, 3))])
    q1 = quat.normalize(quat.multiply(quat.exp_rotation(np.vstack([rng.normal(scale=0.8, size=(count, 3)),
                                                                    np.zeros((1, 3))])), q0))
    inv_mass = np.append(1.0 / model.bodies.mass, 0.0)
    pairs = np.array([[a, b, b] for a in range(count) for b in range(a + 1, count)]
                     + [[a, count, 0] for a in range(count)], np.int64)
    pairs[:len(pairs) - count, 2] = model.bodies.shape_index[pairs[:len(pairs) - count, 1]]
    out = []
    for name in ("numba", "numpy"):
        kernels = backend.select(name).sweep
        motion = kernels.relative_motion(x0, q0, x1, q1)
        s = sweep.Sweeper(model, kernels)
        s.begin_frame(pairs)
        xe, qe = x1.copy(), q1.copy()
        changed = s.run(x0, q0, xe, qe, inv_mass)
        out.append((motion, changed, xe, qe))
    (motion_a, changed_a, xa, qa), (motion_b, changed_b, xb, qb) = out
    assert_close(motion_a, motion_b)
    assert changed_a and changed_b
    np.testing.assert_allclose(xa, xb, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(qa, qb, rtol=1e-12, atol=1e-13)
    assert np.abs(xa - x1).max() + np.abs(qa - q1).max() > 1e-3


@pytest.mark.parametrize("drive, traction, drifting, bars", [("rear", True, False, True), ("front", False, True, True),
                                                             ("all", True, True, False), ("all", False, False, True)])
def test_the_vehicle_drive_agrees(rng, drive, traction, drifting, bars):
    """``vehicles.drive_wheels`` on both backends: a car (four wheels, two axles, rear, front or
    all-wheel drive, with and without anti-roll bars) at random poses and velocities, asked random
    speeds, torques and brakes: the same angular and linear velocities, speed integral, brake
    efforts and grip."""
    from .vehicle_rigs import car

    axle = dict(rest=0.0, travel=0.2, stiffness=6e4, damping=4e3, anti_roll=rng.uniform(1e3, 2e4) if bars else 0.0)
    builder, index, chassis, wheels = car(drive=drive, suspension={"front": axle, "rear": axle},
                                          drift=0.6 if drifting else 0.0)
    model = builder.finalize()
    vehicle = model.vehicles[index]
    bodies = model.bodies.count
    x, q = _poses(rng, bodies)
    x[wheels[0].index:wheels[-1].index + 1] = x[chassis.index] + rng.normal(scale=0.8, size=(len(wheels), 3))
    v = np.vstack([rng.normal(scale=3.0, size=(bodies, 3)), np.zeros((1, 3))])
    w = np.vstack([rng.normal(scale=10.0, size=(bodies, 3)), np.zeros((1, 3))])
    inv_mass = np.append(1.0 / model.bodies.mass, 0.0)
    inv_inertia = np.vstack([rng.uniform(0.01, 2.0, size=(bodies, 3)), np.zeros((1, 3))])
    for _ in range(3):
        settings = dict(target=rng.uniform(-20, 20), available=rng.uniform(0, 3000) * rng.integers(0, 2),
                        brake=rng.uniform(0, 1), handbrake=rng.uniform(0, 1), integral=rng.uniform(-500, 500),
                        last=rng.choice([np.nan, rng.uniform(-20, 20)]))

        def args():
            return (vehicle.chassis, vehicle.wheels, vehicle.driven, vehicle.axle, vehicle.radius, vehicle.brakes,
                    vehicle.forward_local, vehicle.up_local, vehicle.axle_local, vehicle.roll_pairs,
                    vehicle.roll_stiffness, vehicle.pivot_local, vehicle.travel_axis_local, vehicle.mass,
                    vehicle.friction, settings["target"], settings["available"], settings["brake"],
                    settings["handbrake"], drifting, 0.3 if drifting else 0.0, traction, vehicle.brake_torque,
                    vehicle.rolling_resistance, np.array([0.0, settings["integral"]]),
                    np.array([0.0, settings["last"]]), 1, 1 / 240, 9.81, 0.15, 0.5, 0.5, 0.02, 0.01, 0.8, 0.1, 0.5,
                    x.copy(), q.copy(), v.copy(), w.copy(), inv_mass, inv_inertia,
                    np.zeros(model.motors.count), np.full(bodies + 1, 0.7))

        a, b = both("drive_wheels", "vehicles", args)
        assert_close(a, b)
        # The speed error kept for the next substep: the target less the chassis' forward speed
        # (none when there is no drive).
        forward = quat.rotate(q[chassis.index][None], vehicle.forward_local[None])[0]
        if settings["available"] > 0:
            assert a[25][1] == pytest.approx(settings["target"] - v[chassis.index] @ forward, abs=1e-12)
        else:
            assert np.isnan(a[25][1])
        if bars:
            assert len(vehicle.roll_pairs) == 2 and np.abs(a[-6] - v).max() > 1e-6  # the bars pushed
        else:
            assert not len(vehicle.roll_pairs) and np.array_equal(a[-6], v)
        assert np.all(a[-2] > 0)  # brakes and rolling resistance
        if drifting:
            rear = vehicle.axle > 0  # the rear lets go of 0.3 of its grip, the front keeps its own
            np.testing.assert_allclose(a[-1][vehicle.wheels], vehicle.friction * np.where(rear, 0.7, 1.0))
        if settings["available"] > 0 and not traction:  # (random spins may all be slips traction control cuts)
            assert np.abs(a[-5] - w).max() > 1e-6  # the drive turned the wheels


def test_the_restitution_targets_agree(rng):
    """``rigid.restitution_targets`` on both backends: random contacts in pairs (touching or not,
    approaching or resting, some about to touch), the same choice and the same speeds; and a pair
    that bounces takes its contacts that close within the substep with it."""
    pairs = 60
    pair_first = np.concatenate([[0], np.cumsum(rng.integers(1, 5, pairs))]).astype(np.int64)
    count = int(pair_first[-1])
    seed = int(rng.integers(1 << 30))
    results = []
    for name in ("numba", "numpy"):
        r = np.random.default_rng(seed)
        inputs = (np.where(r.uniform(size=count) < 0.6, r.uniform(0, 1e-3, count), 0.0),
                  np.where(r.uniform(size=count) < 0.8, r.uniform(0, 1, count), 0.0),
                  r.normal(scale=2.0, size=count), r.normal(scale=1e-3, size=count),
                  r.normal(scale=10.0, size=count), r.uniform(-1e-3, 1e-2, count), pair_first, 0.05, 1 / 240,
                  count + 5)
        results.append(backend.select(name).rigid.restitution_targets(*inputs))
    (bounce, touching, soon, target, solved), reference = results
    for a, b in zip(results[0], reference):
        assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(bounce, reference[0])
    np.testing.assert_array_equal(touching, reference[1])
    np.testing.assert_array_equal(soon, reference[2])
    np.testing.assert_array_equal(solved, reference[4])
    np.testing.assert_allclose(target, reference[3], rtol=1e-12, atol=1e-15)
    assert soon.any() and (~bounce & solved[:count]).any()  # bounces of the coming substep, and rests
    assert not target[count:].any() and not solved[count:].any()


def test_the_carried_slip_of_stuck_contacts_agrees(rng):
    """``rigid.stuck_anchors`` on both backends: the held contacts' keys in order and their slip."""
    bodies, count = 5, 30
    x, q = _poses(rng, bodies)
    ints = np.stack([rng.integers(0, bodies, count), rng.integers(0, bodies + 1, count),
                     rng.permutation(count * 3)[:count] - 5], axis=1).astype(np.int64)
    local_a, anchor = rng.normal(size=(count + 4, 3)), rng.normal(size=(count + 4, 3))
    stuck = rng.integers(0, 2, count + 4).astype(np.int64)
    lam = np.where(rng.uniform(size=count + 4) < 0.7, 1.0, 0.0)
    a = backend.select("numba").rigid.stuck_anchors(x, q, ints, local_a, anchor, stuck, lam, count)
    b = backend.select("numpy").rigid.stuck_anchors(x, q, ints, local_a, anchor, stuck, lam, count)
    np.testing.assert_array_equal(a[0], b[0])
    assert len(a[0]) > 3 and np.all(np.diff(a[0]) > 0)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-12, atol=1e-13)
