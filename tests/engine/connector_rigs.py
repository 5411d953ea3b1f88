"""Connector rigs shared by the connector tests: two boxes joined at the origin in a tilted frame,
and an independent measurement of how B sits relative to A in the joint's frame."""

import math

import numpy as np

import jakobsen_engine as engine
from jakobsen_engine.geometry import quaternions as quat

from .rigid_scenes import box_mesh, rotation

FRAME = rotation((1.0, 2.0, 3.0), 40.0)  # the joint's X, Y, Z at rest, deliberately not the world's
PIVOT = np.array([0.0, 0.0, 0.0])
NO_GRAVITY = engine.SolverSettings(gravity=(0.0, 0.0, 0.0))


def two_boxes(kind, settings=None, world_a=False, b_centre=None, **joint):
    """Box A (0.6 m, 216 kg) and box B (0.4 m, 64 kg) either side of the pivot along the frame's X
    (or only B, on the world; ``b_centre`` moves B), joined by a connector of ``kind``; returns
    solver, state."""
    builder = engine.ModelBuilder()
    x = FRAME[:, 0]
    a = None if world_a else builder.add_rigid_body(*box_mesh((0.6,) * 3, centre=-0.5 * x, rotation=FRAME),
                                                    shape="box", name="A")
    centre = 0.4 * x if b_centre is None else b_centre
    b = builder.add_rigid_body(*box_mesh((0.4,) * 3, centre=centre, rotation=FRAME), shape="box", name="B")
    builder.add_joint(kind, a, b, PIVOT, frame=FRAME, name=kind, **joint)
    solver = engine.Solver(builder.finalize(), settings or NO_GRAVITY)
    return solver, solver.make_state()


def relative(solver, state, world_a=False):
    """B's pivot offset (3,) m in A's joint frame, and B's joint frame in A's (3x3)."""
    t, r = solver.body_poses(state)
    rot = quat.to_matrix(r)
    if world_a:
        ra, ta = np.eye(3), np.zeros(3)
        rb, tb = rot[0], t[0]
    else:
        ra, ta, rb, tb = rot[0], t[0], rot[1], t[1]
    fa, fb = ra @ FRAME, rb @ FRAME
    offset = fa.T @ ((rb @ PIVOT + tb) - (ra @ PIVOT + ta))
    return offset, fa.T @ fb


def swing_twist_degrees(rel):
    """Swing (the tilt of B's Z from A's) and twist (about Z) of a relative rotation, degrees."""
    swing = math.degrees(math.acos(np.clip(rel[2, 2], -1.0, 1.0)))
    q = quat.from_matrix(rel)
    twist = math.degrees(2.0 * math.atan2(q[3], q[0]))
    return swing, (twist + 180.0) % 360.0 - 180.0


def rotation_degrees(rel):
    return math.degrees(math.acos(np.clip((np.trace(rel) - 1.0) / 2.0, -1.0, 1.0)))


def shove(state, rng, linear=0.5, angular=2.0):
    """Random pushes on every body: velocity and spin kicks (m/s, rad/s, normal)."""
    n = len(state.bodies.velocity)
    state.bodies.velocity[...] += rng.normal(0.0, linear, (n, 3))
    state.bodies.angular_velocity[...] += rng.normal(0.0, angular, (n, 3))
