"""The compiled connector solve, motor drives and springs against the numpy reference
(constraints.joints.solve_joints, constraints.motors.solve_motor_positions,
constraints.springs.apply_springs). Connectors: on
random poses of a rig with every connector kind, a pair held by two connectors, and a connector
to the world: the same corrections and limit hits to rounding (1e-9 relative after three steps:
numpy's matmul and LAPACK sum in their own order), the same impulses to what conditioning allows."""

import math

import numpy as np
import pytest

import jakobsen_engine as engine
from jakobsen_engine import backend
from jakobsen_engine.constraints import joints as reference

from .rigid_scenes import box_mesh, rotation

pytestmark = [pytest.mark.compares_backends,
              pytest.mark.skipif(backend.numba_problem() is not None, reason="numba cannot load here")]

KINDS = [("hinge", dict(angle_limits=(-0.3, 0.5))), ("ball_socket", {}), ("cardan", dict(cone_angle=0.4)),
         ("ragdoll", {}), ("slider", dict(distance_limits=(-0.1, 0.2))),
         ("twist_slider", dict(angle_limits=(-0.2, 0.2), distance_limits=(0.0, 0.1))), ("planar", {}),
         ("box", dict(box_limits=((-0.1, -0.05, 0.0), (0.1, 0.05, 0.2)))),
         ("wheel_suspension", dict(suspension_limits=(-0.2, 0.05), steering=0.3)), ("fixed", {}), ("cardan", {})]


def _rig(seed: int):
    rng = np.random.default_rng(seed)
    builder = engine.ModelBuilder()
    bodies = []
    for k in range(len(KINDS) + 3):
        size = rng.uniform(0.2, 0.8, 3)
        bodies.append(builder.add_rigid_body(*box_mesh(size, centre=(k * 0.9, 0.0, 1.0),
                                                       rotation=rotation(rng.normal(size=3), rng.uniform(0, 90))),
                                             shape="box", density=rng.uniform(100, 3000), name=f"B{k}"))
    builder.add_joint("hinge", None, bodies[0], (-0.45, 0.0, 1.0), axis=(0.0, 1.0, 0.0), name="to the world")
    for k, (kind, settings) in enumerate(KINDS):
        frame = rotation(rng.normal(size=3), rng.uniform(0, 180))
        builder.add_joint(kind, bodies[k], bodies[k + 1], (k * 0.9 + 0.45, 0.0, 1.0), frame=frame, name=f"{kind} {k}",
                          **settings)
    # Two connectors on one pair (redundant rows), and a separate mechanism on the world.
    n = len(KINDS)
    builder.add_joint("fixed", bodies[n], bodies[n + 1], (n * 0.9 + 0.45, 0.0, 1.0), name="fixed twice")
    builder.add_joint("hinge", bodies[n], bodies[n + 1], (n * 0.9 + 0.45, 0.0, 1.0), name="hinge on it too")
    builder.add_joint("fixed", None, bodies[n + 2], ((n + 2) * 0.9, 0.0, 1.0), name="alone")
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(backend="numpy"))
    return solver, rng


@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_connector_solve_matches_the_reference(seed):
    from jakobsen_engine.backend.numba import joints as compiled

    solver, rng = _rig(seed)
    rig = solver._rigid
    j, layout = solver.model.joints, rig.joint_layout
    state = solver.make_state()
    x, q = state.bodies.x.copy(), state.bodies.q.copy()
    count = len(x) - 1
    # Poses off their joints: moved by centimetres and turned by up to half a radian.
    x[:count] += rng.normal(scale=0.05, size=(count, 3))
    turn = rng.normal(scale=0.3, size=(count, 3))
    q[:count] = engine.geometry.quaternions.multiply(engine.geometry.quaternions.exp_rotation(turn), q[:count])
    S0 = np.zeros((count + 1, 6))
    S0[:count] = rng.normal(scale=0.01, size=(count, 6))
    active = rng.uniform(size=j.count) > 0.1
    steer = np.where(j.kind == reference.KINDS.index("wheel_suspension"), rng.uniform(-0.5, 0.5, j.count), 0.0)
    results = []
    for solve in ("numpy", "numba"):
        S, impulses, hits = S0.copy(), np.zeros((j.count, 6)), np.zeros((j.count, 6))
        for _ in range(3):  # repeated steps, as the passes of a substep
            if solve == "numpy":
                reference.solve_joints(j, layout, x, q, S, rig.inv_mass, rig.inv_inertia, active, steer, impulses,
                                       hits)
            else:
                compiled.solve_joints(j, layout, x, q, S, rig.inv_mass, rig.inv_inertia, active, steer, impulses,
                                      hits)
        results.append((S, impulses, hits))
    (s1, i1, h1), (s2, i2, h2) = results
    assert np.abs(s1).max() > 1e-3, "the rig was not off its joints"
    np.testing.assert_allclose(s2, s1, rtol=1e-9, atol=1e-12 * max(1.0, float(np.abs(s1).max())))
    # The impulses' split between the rows of the pair held twice is as ill-conditioned as the
    # damping makes it (1e-5 of the diagonal): rounding is amplified there, not in the corrections.
    np.testing.assert_allclose(i2, i1, rtol=1e-7, atol=1e-10 * max(1.0, float(np.abs(i1).max())))
    np.testing.assert_array_equal(h2, h1)
    assert math.isfinite(float(np.abs(s2).sum()))


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_motor_drives_match_the_reference(seed):
    from jakobsen_engine.backend.numba import motors as compiled
    from jakobsen_engine.constraints import motors as motors_reference
    from jakobsen_engine.geometry import quaternions as quat

    rng = np.random.default_rng(100 + seed)
    builder = engine.ModelBuilder()
    bodies = [builder.add_rigid_body(*box_mesh(rng.uniform(0.2, 0.8, 3), centre=(k * 1.0, 0.0, 1.0),
                                                rotation=rotation(rng.normal(size=3), rng.uniform(0, 90))),
                                     shape="box", density=rng.uniform(100, 3000), name=f"B{k}") for k in range(6)]
    drives = [("angular", "speed", 1), ("angular", "servo", 2), ("linear", "speed", 3), ("linear", "servo", 4),
              ("angular", "force", 5)]
    for k, (kind, mode, body) in enumerate(drives):
        builder.add_motor(bodies[body], bodies[0] if k % 2 else None, rng.normal(size=3), name=f"motor {k}",
                          kind=kind, mode=mode, target=float(rng.uniform(-2, 2)),
                          **{"force" if kind == "linear" else "torque": float(rng.uniform(10, 500))})
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(backend="numpy"))
    rig, m = solver._rigid, solver.model.motors
    state = solver.make_state()
    x, q = state.bodies.x.copy(), state.bodies.q.copy()
    count = len(x) - 1
    x_prev, q_prev = x.copy(), q.copy()
    x[:count] += rng.normal(scale=0.02, size=(count, 3))
    q[:count] = quat.multiply(quat.exp_rotation(rng.normal(scale=0.1, size=(count, 3))), q[:count])
    S0 = np.zeros((count + 1, 6))
    S0[:count] = rng.normal(scale=0.01, size=(count, 6))
    speeds = rng.uniform(-3, 3, m.count)
    h = 1.0 / 240
    for limit in (None, rng.uniform(1e-4, 1e-2, m.count)):
        results = []
        for solve in (motors_reference.solve_motor_positions, compiled.solve_motor_positions):
            S, lam = S0.copy(), np.zeros(m.count)
            for _ in range(3):
                solve(m, x, q, x_prev, q_prev, S, rig.inv_mass, rig.inv_inertia, h, speeds, lam, limit)
            results.append((S, lam))
        (s1, l1), (s2, l2) = results
        assert np.abs(s1 - S0).max() > 1e-6, "the drives did nothing"
        np.testing.assert_allclose(s2, s1, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(l2, l1, rtol=1e-12, atol=1e-18)


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_springs_match_the_reference(seed):
    """Linear, angular and both, soft and stiff (explicit and implicit), along an axis or between
    anchors, several on one body (stepped one after another) and one to the world, some broken."""
    from jakobsen_engine.backend.numba import springs as compiled
    from jakobsen_engine.constraints import springs as springs_reference
    from jakobsen_engine.geometry import quaternions as quat

    rng = np.random.default_rng(200 + seed)
    builder = engine.ModelBuilder()
    bodies = [builder.add_rigid_body(*box_mesh(rng.uniform(0.2, 0.8, 3), centre=(k * 1.0, 0.0, 1.0),
                                                rotation=rotation(rng.normal(size=3), rng.uniform(0, 90))),
                                     shape="box", density=rng.uniform(100, 3000), name=f"B{k}") for k in range(6)]
    for k in range(9):
        kind = ("linear", "angular", "both")[k % 3]
        stiff = 10.0 ** rng.uniform(1, 7)
        a = bodies[k % 5]
        b = None if k == 8 else bodies[(k % 5) + 1]
        anchor = np.array([(k % 5) * 1.0 + 0.5, 0.0, 1.0]) + rng.normal(scale=0.1, size=3)
        settings = dict(kind=kind, damping=float(rng.uniform(0, 50)))
        if kind != "angular":
            settings.update(stiffness=stiff, rest_length=float(rng.uniform(0.0, 0.5)))
        if kind != "linear":
            settings.update(angular_stiffness=stiff / 10, angular_damping=float(rng.uniform(0, 5)))
        builder.add_spring(a, b, anchor, anchor + rng.normal(scale=0.2, size=3), name=f"spring {k}", **settings)
    solver = engine.Solver(builder.finalize(), engine.SolverSettings(backend="numpy"))
    rig, s = solver._rigid, solver.model.springs
    state = solver.make_state()
    x, q = state.bodies.x.copy(), state.bodies.q.copy()
    count = len(x) - 1
    x[:count] += rng.normal(scale=0.05, size=(count, 3))
    q[:count] = quat.multiply(quat.exp_rotation(rng.normal(scale=0.3, size=(count, 3))), q[:count])
    v0 = np.vstack([rng.normal(size=(count, 3)), np.zeros((1, 3))])
    w0 = np.vstack([rng.normal(size=(count, 3)) * 3.0, np.zeros((1, 3))])
    rest = s.rest + rng.normal(scale=0.05, size=s.count)
    active = rng.uniform(size=s.count) > 0.15
    accel = np.tile([0.0, 0.0, -9.81], (count + 1, 1))
    h = 1.0 / 240
    results = []
    for apply in (springs_reference.apply_springs, compiled.apply_springs):
        v, w = v0.copy(), w0.copy()
        for _ in range(3):
            apply(s, x, q, v, w, rig.inv_mass, rig.inv_inertia, h, rest, active, accel)
        results.append((v, w))
    (v1, w1), (v2, w2) = results
    assert np.abs(v1 - v0).max() > 1e-4, "the springs did nothing"
    np.testing.assert_allclose(v2, v1, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w2, w1, rtol=1e-10, atol=1e-12)
