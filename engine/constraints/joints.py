"""Connectors between rigid bodies (or a body and the world): the Cinema 4D set.

Every connector type is one joint with a frame (X, Y, Z axes) at a pivot, fixed in each body at
creation, and a setting per degree of freedom:

- translation along each frame axis: locked, free, or limited to [lower, upper];
- swing (how far B's Z axis leans from A's): locked, free, or within a cone;
- twist (rotation about the Z axis): locked, free, or limited to [lower, upper].

=================  ================  =============  ====================================
type               translation       swing          twist
=================  ================  =============  ====================================
fixed              locked            locked         locked
hinge              locked            locked         free or limited
ball_socket        locked            free           free
cardan             locked            free or cone   locked (A's X square to B's Y)
ragdoll            locked            cone           limited
slider             Z free/limited    locked         locked
twist_slider       Z free/limited    locked         free or limited
planar             X, Y free         locked         free (turns about the normal)
box                all limited       locked         locked
wheel_suspension   Z limited+spring  locked*        free (the spin about X)
=================  ================  =============  ====================================

(*) The wheel's rotation frame has its twist axis along X (the axle), and A's side of it is
turned about Z by the steering angle, which may change every frame.

Each pass projects the pivots together along the locked (or violated) axes with one 3x3 solve
of both bodies' inverse mass matrices, then turns the frames with one 3x3 solve of their inverse
inertias. Poses are re-evaluated exactly (not linearised) at every pass, so long chains converge.
The impulses of a substep give the joint's force and torque, against which it breaks.

Shapes: J joints, B bodies (index B is the world).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from ..backend.numpy.rigid import world_inverse_inertia
from ..checks import FLOAT32_MAX, MAX_COORDINATE, check_range
from ..constraints import kinds as connector_kinds
from ..constraints.common import check_ends, values_at
from ..errors import JakobsenError
from ..geometry import quaternions as quat
from ..geometry import reproducible
from ..geometry.reproducible import arctan2


class Lin(IntEnum):
    LOCKED = 0
    FREE = 1
    LIMITED = 2


class Swing(IntEnum):
    LOCKED = 0
    FREE = 1
    CONE = 2


class Twist(IntEnum):
    LOCKED = 0
    FREE = 1
    LIMITED = 2


KINDS = connector_kinds.KINDS  # the table's order is the index stored in Joints.kind
_L, _F, _M = Lin.LOCKED, Lin.FREE, Lin.LIMITED
# kind -> (translation X, Y, Z; swing; twist) before the settings' limits are applied
_DOFS = {
    "fixed": ((_L, _L, _L), Swing.LOCKED, Twist.LOCKED),
    "hinge": ((_L, _L, _L), Swing.LOCKED, Twist.FREE),
    "ball_socket": ((_L, _L, _L), Swing.FREE, Twist.FREE),
    "cardan": ((_L, _L, _L), Swing.FREE, Twist.LOCKED),
    "ragdoll": ((_L, _L, _L), Swing.CONE, Twist.LIMITED),
    "slider": ((_L, _L, _F), Swing.LOCKED, Twist.LOCKED),
    "twist_slider": ((_L, _L, _F), Swing.LOCKED, Twist.FREE),
    "planar": ((_F, _F, _L), Swing.LOCKED, Twist.FREE),
    "box": ((_M, _M, _M), Swing.LOCKED, Twist.LOCKED),
    "wheel_suspension": ((_L, _L, _M), Swing.LOCKED, Twist.FREE),
}
# Turns the frame so its Z is the old X: the wheel's twist (spin) axis is its axle, X.
_Z_FROM_X = quat.from_matrix(np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]]))


@dataclass(frozen=True)
class Joints:
    """All joints, in the order they were added (``ModelBuilder.add_joint`` returns the index).

    kind: (J,) index into KINDS; a, b: (J,) bodies (B for the world); local_a, local_b: (J, 3) the
    pivot in each body's frame (world coordinates for the world); frame_a: (J, 4) the joint frame
    in A's body frame (translation axes); rot_a, rot_b: (J, 4) the rotation frame (Z = twist
    axis) in each body's frame; steer_axis: (J, 3) the wheel's steering axis in A's frame;
    lin_mode: (J, 3) ``Lin``; lin_lower, lin_upper: (J, 3) m; swing_mode: (J,) ``Swing``; cone:
    (J,) rad; twist_mode: (J,) ``Twist``; twist_lower, twist_upper: (J,) rad; bounce: (J,) limit
    restitution; break_force: (J,) N; break_torque: (J,) N m (inf: unbreakable);
    ignore_collisions: (J,) bool; steering: (J,) float or callable(t) -> rad; names: (J,).
    """

    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray
    local_a: np.ndarray
    local_b: np.ndarray
    frame_a: np.ndarray
    rot_a: np.ndarray
    rot_b: np.ndarray
    steer_axis: np.ndarray
    lin_mode: np.ndarray
    lin_lower: np.ndarray
    lin_upper: np.ndarray
    swing_mode: np.ndarray
    cone: np.ndarray
    twist_mode: np.ndarray
    twist_lower: np.ndarray
    twist_upper: np.ndarray
    bounce: np.ndarray
    break_force: np.ndarray
    break_torque: np.ndarray
    ignore_collisions: np.ndarray
    steering: tuple
    names: tuple

    @property
    def count(self) -> int:
        return len(self.kind)

    @property
    def steered(self) -> bool:
        return any(callable(s) or s != 0.0 for s in self.steering)

    def steering_at(self, t: float) -> np.ndarray:
        """Steering angles (J,) rad at time t."""
        return values_at(self.steering, t, tuple(f"connector '{n}'" for n in self.names), "the steering angle")


def empty_joints() -> Joints:
    return finalize_joints([], None, 0)


def _frame_from(axis, frame, where: str) -> np.ndarray:
    """A 3x3 rotation (columns X, Y, Z) from a given frame, or from a Z axis alone."""
    if frame is not None:
        m = np.asarray(frame, float)
        if m.shape == (4, 4):
            m = m[:3, :3]
        if m.shape != (3, 3) or not np.all(np.isfinite(m)):
            raise JakobsenError(f"{where}: the frame must be a finite 3x3 rotation")
        # (Relative to its size: a frame squashed flat has no nearest rotation to speak of.)
        if np.linalg.det(m / max(float(np.abs(m).max()), 1e-300)) <= 1e-9:
            raise JakobsenError(f"{where}: the frame is mirrored (negative scale) or flat; give a rotation")
        # The nearest rotation (drops scale and shear): the polar factor, U V^T of an SVD, without
        # LAPACK (the same bits on every numpy: see ``reproducible``).
        return reproducible.rotation_polar(m)
    z = np.asarray(axis, float)
    if z.shape != (3,) or not np.all(np.isfinite(z)) or np.linalg.norm(z) < 1e-12:
        raise JakobsenError(f"{where}: the axis must be a finite non-zero vector")
    z = z / np.linalg.norm(z)
    helper = np.array([1.0, 0, 0]) if abs(z[0]) < 0.9 else np.array([0, 1.0, 0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], axis=1)


def _pair(value, what: str, where: str, *, angle: bool) -> tuple[float, float]:
    lo, hi = (float(v) for v in value)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise JakobsenError(f"{where}: {what} must be finite")
    check_range([lo, hi], what, where, limit=MAX_COORDINATE, unit="m")
    if lo > hi:
        raise JakobsenError(f"{where}: {what}: the lower limit {lo:g} is above the upper {hi:g}")
    if angle:
        # 180 degrees typed into Blender's field is stored in single precision, 3.1415927 > pi:
        # within that rounding a limit is taken as +-180 (it was refused).
        slack = 1e-6
        if lo < -math.pi - slack or hi > math.pi + slack:
            raise JakobsenError(f"{where}: {what} must lie within -180 and 180 degrees")
        lo, hi = max(lo, -math.pi), min(hi, math.pi)
    return lo, hi


def _non_negative(value, what: str, where: str, *, infinite: bool = False) -> float:
    v = float(value)
    if math.isnan(v) or v < 0 or (math.isinf(v) and not infinite) or (math.isfinite(v) and v > FLOAT32_MAX):
        raise JakobsenError(f"{where}: {what} must be a non-negative number (finite in single precision), "
                            f"got {value!r}")
    return v


def check_joint(kind: str, a, b, pivot, name: str, body_count: int, *, axis=(0.0, 0.0, 1.0), frame=None,
                angle_limits=None, distance_limits=None, cone_angle=None, twist_limits=None, box_limits=None,
                limit_bounce=0.0, breaking_force=math.inf, breaking_torque=math.inf, ignore_collisions=True,
                steering=0.0, suspension_limits=(-0.3, 0.0)) -> dict:
    """Validate one joint's settings; returns the spec ``finalize_joints`` takes."""
    where = f"connector '{name}'"
    if kind not in _DOFS:
        raise JakobsenError(f"{where}: type must be one of {', '.join(KINDS)}; got {kind!r}")
    check_ends(where, a, b, body_count)
    p = np.asarray(pivot, float)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise JakobsenError(f"{where}: the pivot must be 3 finite numbers")
    check_range(p, "the pivot", where, limit=MAX_COORDINATE, unit="m")
    lin, swing, twist = _DOFS[kind]
    lin_mode = np.array(lin, np.int8)
    lower, upper = np.zeros(3), np.zeros(3)
    twist_lo, twist_hi, cone = 0.0, 0.0, 0.0
    if kind in ("hinge", "twist_slider") and angle_limits is not None:
        twist = Twist.LIMITED
        twist_lo, twist_hi = _pair(angle_limits, "the angle limits", where, angle=True)
    if kind in ("slider", "twist_slider") and distance_limits is not None:
        lin_mode[2] = Lin.LIMITED
        lower[2], upper[2] = _pair(distance_limits, "the distance limits", where, angle=False)
    if kind == "ragdoll" or (kind == "cardan" and cone_angle is not None):
        swing = Swing.CONE
        cone = _non_negative(math.radians(45) if cone_angle is None else cone_angle, "the cone angle", where)
        if cone > math.pi:
            raise JakobsenError(f"{where}: the cone angle must be at most 180 degrees")
    if kind == "ragdoll":
        twist_lo, twist_hi = _pair((-math.radians(30), math.radians(30)) if twist_limits is None else twist_limits,
                                   "the twist limits", where, angle=True)
    if kind == "box":
        if box_limits is None:
            raise JakobsenError(f"{where}: a Box connector needs box_limits ((x, y, z) lower, (x, y, z) upper)")
        lo, hi = (np.asarray(v, float) for v in box_limits)
        if lo.shape != (3,) or hi.shape != (3,) or not np.all(np.isfinite(lo) & np.isfinite(hi)) or np.any(lo > hi):
            raise JakobsenError(f"{where}: box_limits must be finite (lower xyz, upper xyz) with lower <= upper")
        check_range(np.stack([lo, hi]), "box_limits", where, limit=MAX_COORDINATE, unit="m")
        lower, upper = lo, hi
    if kind == "wheel_suspension":
        lower[2], upper[2] = _pair(suspension_limits, "the suspension limits", where, angle=False)
        if not (callable(steering) or math.isfinite(float(steering))):
            raise JakobsenError(f"{where}: the steering angle must be a finite number or a function of time")
    elif steering != 0.0:
        raise JakobsenError(f"{where}: only a Wheel Suspension steers")
    bounce = float(limit_bounce)
    if not (0.0 <= bounce <= 1.0):
        raise JakobsenError(f"{where}: limit bounce must be within 0 and 1, got {limit_bounce!r}")
    return dict(kind=KINDS.index(kind), a=a, b=b, pivot=p, frame=_frame_from(axis, frame, where),
                lin_mode=lin_mode, lower=lower, upper=upper, swing=int(swing), cone=cone, twist=int(twist),
                twist_lower=twist_lo, twist_upper=twist_hi, bounce=bounce,
                break_force=_non_negative(breaking_force, "the breaking force", where, infinite=True),
                break_torque=_non_negative(breaking_torque, "the breaking torque", where, infinite=True),
                ignore=bool(ignore_collisions), steering=steering if callable(steering) else float(steering),
                name=name)


def starts_outside(spec: dict) -> str | None:
    """A warning if a joint's limits leave out where its bodies start (a connector's frame is
    where they are at rest: distance 0 along every axis, angle 0): the first step pulls them onto
    the limits at once, which can fling them (a slider limited to 0.2-0.5 m jumped to 0.5 at
    12 m/s), silently. None if they start within."""
    where = f"connector '{spec['name']}'"
    for axis, name in enumerate("XYZ"):
        lo, hi = float(spec["lower"][axis]), float(spec["upper"][axis])
        if spec["lin_mode"][axis] == Lin.LIMITED and not lo <= 0.0 <= hi:
            what = "distance limits" if spec["kind"] != KINDS.index("box") else f"{name} limits"
            return (f"{where}: its bodies start outside its {what} ({lo:g} to {hi:g} m; they start at 0), so "
                    "the first step snaps them onto the limits, which can fling them; place them within the limits "
                    "or widen the limits to take in where they start")
    lo, hi = float(spec["twist_lower"]), float(spec["twist_upper"])
    if spec["twist"] == Twist.LIMITED and not lo <= 0.0 <= hi:
        return (f"{where}: its bodies start outside its angle limits ({math.degrees(lo):.4g} to "
                f"{math.degrees(hi):.4g} degrees; they start at 0), so the first step snaps them onto the limits, "
                "which can fling them; turn them within the limits or widen the limits to take in where they start")
    return None


def finalize_joints(specs: list[dict], bodies, world: int) -> Joints:
    """Joint specs (from check_joint) -> Joints, expressed in the bodies' rest frames."""
    n = len(specs)
    if n:
        pos = np.vstack([bodies.rest_position, np.zeros((1, 3))])
        ori = np.vstack([bodies.rest_orientation, [[1.0, 0, 0, 0]]])
    a = np.array([world if s["a"] is None else s["a"] for s in specs], np.int64)
    b = np.array([world if s["b"] is None else s["b"] for s in specs], np.int64)
    pivot = np.array([s["pivot"] for s in specs], float).reshape(n, 3)
    frame = quat.from_matrix(np.array([s["frame"] for s in specs]).reshape(n, 3, 3)) if n else np.zeros((0, 4))
    kind = np.array([s["kind"] for s in specs], np.int8)
    wheel = kind == KINDS.index("wheel_suspension")
    rot_frame = frame.copy()
    rot_frame[wheel] = quat.multiply(frame[wheel], np.broadcast_to(_Z_FROM_X, (int(wheel.sum()), 4)))
    if n:
        inv_a, inv_b = quat.conjugate(ori[a]), quat.conjugate(ori[b])
        local_a = quat.rotate(inv_a, pivot - pos[a])
        local_b = quat.rotate(inv_b, pivot - pos[b])
        frame_a = quat.multiply(inv_a, frame)
        rot_a, rot_b = quat.multiply(inv_a, rot_frame), quat.multiply(inv_b, rot_frame)
        steer_axis = quat.rotate(frame_a, np.broadcast_to([0.0, 0.0, 1.0], (n, 3)))
    else:
        local_a = local_b = steer_axis = np.zeros((0, 3))
        frame_a = rot_a = rot_b = np.zeros((0, 4))
    def col(key, dtype=float, shape=()):
        return np.array([s[key] for s in specs], dtype).reshape((n,) + shape)

    return Joints(
        kind=kind, a=a, b=b, local_a=local_a, local_b=local_b,
        frame_a=frame_a, rot_a=rot_a, rot_b=rot_b, steer_axis=steer_axis,
        lin_mode=col("lin_mode", np.int8, (3,)), lin_lower=col("lower", float, (3,)),
        lin_upper=col("upper", float, (3,)),
        swing_mode=col("swing", np.int8), cone=col("cone"), twist_mode=col("twist", np.int8),
        twist_lower=col("twist_lower"), twist_upper=col("twist_upper"), bounce=col("bounce"),
        break_force=col("break_force"), break_torque=col("break_torque"), ignore_collisions=col("ignore", bool),
        steering=tuple(s["steering"] for s in specs), names=tuple(s["name"] for s in specs))


def _wrap(angle):
    return (angle + np.pi) % (2 * np.pi) - np.pi


def joint_errors(joints: Joints, sel, x, q, steer):
    """For joints ``sel``: the world pivots p1, p2 (k, 3), the translation frame's axes E
    (k, 3, 3) at A, the offset of B's pivot in that frame (k, 3), and the rotation frames Fa, Fb
    (k, 4) (A's turned by the steering)."""
    a, b = joints.a[sel], joints.b[sel]
    p1 = x[a] + quat.rotate(q[a], joints.local_a[sel])
    p2 = x[b] + quat.rotate(q[b], joints.local_b[sel])
    axes = quat.to_matrix(quat.multiply(q[a], joints.frame_a[sel]))
    offset = np.einsum("kji,kj->ki", axes, p2 - p1)
    local_a = joints.rot_a[sel]
    if np.any(steer[sel] != 0.0):
        local_a = quat.multiply(quat.exp_rotation(joints.steer_axis[sel] * steer[sel, None]), local_a)
    fa = quat.multiply(q[a], local_a)
    fb = quat.multiply(q[b], joints.rot_b[sel])
    return p1, p2, axes, offset, fa, fb


def swing_twist(fa, fb):
    """Swing angle (k,) between the frames' Z axes, its axis (k, 3) (za x zb, unit; zero when
    aligned), and the twist angle (k,) of B about Z relative to A, in (-pi, pi]."""
    ez = np.broadcast_to([0.0, 0.0, 1.0], fa.shape[:-1] + (3,))
    za, zb = quat.rotate(fa, ez), quat.rotate(fb, ez)
    c = quat.cross(za, zb)
    s = np.linalg.norm(c, axis=-1)
    swing = arctan2(s, np.einsum("ki,ki->k", za, zb))  # (not np.arctan2: see ``geometry.reproducible``)
    axis = c / np.maximum(s, 1e-300)[:, None] * (s > 1e-12)[:, None]
    r = quat.multiply(quat.conjugate(fa), fb)
    twist = _wrap(2.0 * arctan2(r[:, 3], r[:, 0]))
    return swing, axis, twist, za, zb


@dataclass(frozen=True)
class JointLayout:
    """Joints grouped into mechanisms (connected through shared bodies), each solved as one
    system. rows: (C, 6 Jmax) the joint row (6 j + r) of each mechanism's rows, -1 for padding;
    bodies: (C, Bmax) the mechanism's moving bodies, -1 for padding; side_a, side_b: (J,) the
    column slot of each joint's bodies in its mechanism (-1: the world or a kinematic body)."""

    rows: np.ndarray
    bodies: np.ndarray
    side_a: np.ndarray
    side_b: np.ndarray
    mechanism: np.ndarray

    def __post_init__(self):
        # Where each real row sits: (mechanism, row slot) and (joint, row of the joint), and the
        # column blocks of its bodies; fixed for the model, so computed once.
        ci, ri = np.nonzero(self.rows >= 0)
        jj, rr = self.rows[ci, ri] // 6, self.rows[ci, ri] % 6
        sa, sb = self.side_a[jj], self.side_b[jj]
        object.__setattr__(self, "index", (ci, ri, jj, rr, sa >= 0, sb >= 0, sa, sb))


def joint_layout(joints: Joints, dynamic: np.ndarray) -> JointLayout:
    """Mechanisms of the joint graph over the dynamic bodies (B+1,) (union-find, once per model)."""
    parent = {}

    def find(i):
        while parent.setdefault(i, i) != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(joints.a.tolist(), joints.b.tolist()):
        moving = [k for k in (i, j) if dynamic[k]]
        for k in moving:
            find(k)
        if len(moving) == 2:
            parent[find(moving[0])] = find(moving[1])
    roots = sorted({find(k) for k in parent})
    bodies_of = {r: sorted(k for k in parent if find(k) == r) for r in roots}
    mech = np.array([roots.index(find(i if dynamic[i] else j)) if (dynamic[i] or dynamic[j]) else -1
                     for i, j in zip(joints.a.tolist(), joints.b.tolist())], np.int64)
    count = len(roots)
    jmax = max([int((mech == c).sum()) for c in range(count)] + [1])
    bmax = max([len(v) for v in bodies_of.values()] + [1])
    rows = np.full((count, 6 * jmax), -1, np.int64)
    bodies = np.full((count, bmax), -1, np.int64)
    side_a = np.full(joints.count, -1, np.int64)
    side_b = np.full(joints.count, -1, np.int64)
    for c, r in enumerate(roots):
        members = np.flatnonzero(mech == c)
        rows[c, :6 * len(members)] = (6 * members[:, None] + np.arange(6)).ravel()
        bodies[c, :len(bodies_of[r])] = bodies_of[r]
        slot = {k: n for n, k in enumerate(bodies_of[r])}
        side_a[members] = [slot.get(int(k), -1) for k in joints.a[members]]
        side_b[members] = [slot.get(int(k), -1) for k in joints.b[members]]
    return JointLayout(rows, bodies, side_a, side_b, mech)


def redundant_mechanisms(joints: Joints, layout: JointLayout, x, q, inv_mass, inv_inertia) -> np.ndarray:
    """(C,) bool: the mechanisms whose rows (every row that can act: locked or limited) repeat
    one another at poses x, q (B+1): loops (a bridge hinged to the world at both ends) and
    several connectors on one pair. Their system is singular, and pushed along rows that are
    not those of the poses now (``solve_joints``' x_start) the damped solve of its rounding
    gives huge opposite impulses; so they keep Newton's rows."""
    count = len(layout.rows)
    out = np.zeros(count, bool)
    if not count:
        return out
    ja, jb, _, _ = joint_rows(joints, x, q, np.zeros(joints.count), np.ones(joints.count, bool))
    can = np.zeros((joints.count, 6), bool)
    can[:, :3] = joints.lin_mode != Lin.FREE
    can[:, 3] = joints.swing_mode != Swing.FREE
    can[:, 4] = joints.swing_mode == Swing.LOCKED
    can[:, 5] = joints.twist_mode != Twist.FREE
    bmax = layout.bodies.shape[1]
    rot = quat.to_matrix(q)
    for m in range(count):
        codes = layout.rows[m][layout.rows[m] >= 0]
        codes = codes[can[codes // 6, codes % 6]]
        if not len(codes):
            continue
        jac = np.zeros((len(codes), bmax * 6))
        for k, code in enumerate(codes):
            j, r = code // 6, code % 6
            if layout.side_a[j] >= 0:
                jac[k, 6 * layout.side_a[j]:6 * layout.side_a[j] + 6] += ja[j, r]
            if layout.side_b[j] >= 0:
                jac[k, 6 * layout.side_b[j]:6 * layout.side_b[j] + 6] += jb[j, r]
        scale = np.zeros((bmax * 6, bmax * 6))
        for slot, body in enumerate(layout.bodies[m]):
            if body < 0:
                continue
            scale[6 * slot:6 * slot + 3, 6 * slot:6 * slot + 3] = np.eye(3) * inv_mass[body]
            scale[6 * slot + 3:6 * slot + 6, 6 * slot + 3:6 * slot + 6] = world_inverse_inertia(rot[body],
                                                                                             inv_inertia[body])
        a = jac @ scale @ jac.T
        d = np.sqrt(np.maximum(np.diag(a), 1e-300))
        eig = np.linalg.eigvalsh(a / d[:, None] / d[None, :])
        out[m] = len(codes) > 6 * int(np.count_nonzero(layout.bodies[m] >= 0)) or eig.min() < 1e-8
    return out


# Damping added to the diagonal of each mechanism's system, relative to each row's own diagonal;
# it softens a redundant (singular) direction instead of inverting noise, and costs a well-posed
# joint about this fraction of its correction per pass (the passes make it up).
JOINT_DAMPING = 1e-5
# The most one Newton step of a mechanism may turn a body, rad (see solve_joints).
JOINT_MAX_TURN = 0.3


def joint_rows(joints: Joints, x, q, steer, active):
    """The joints' constraint rows at poses x, q: Jacobians ja, jb (J, 6, 6) [row, (dx, dtheta)]
    for body A and B, errors c (J, 6) (the first 3 rows translation along the frame axes, the
    last 3 rotation) and which rows act (J, 6) bool (c is 0 where they do not)."""
    n = joints.count
    p1, p2, axes, offset, fa, fb = joint_errors(joints, np.arange(n), x, q, steer)
    r2 = p2 - x[joints.b]
    mode = joints.lin_mode
    limited = offset - np.clip(offset, joints.lin_lower, joints.lin_upper)
    err = np.where(mode == Lin.LOCKED, offset, np.where(mode == Lin.LIMITED, limited, 0.0))
    lin_on = ((mode == Lin.LOCKED) | ((mode == Lin.LIMITED) & (limited != 0.0))) & active[:, None]
    e = np.swapaxes(axes, 1, 2)  # (J, 3 rows, 3): the frame axes as rows
    ja = np.zeros((n, 6, 6))
    jb = np.zeros((n, 6, 6))
    c = np.zeros((n, 6))
    # C = e . (p2 - p1): moving A along e lowers it, moving B raises it; turning A turns e too,
    # so A's lever arm reaches to B's pivot (it matters along free axes, where p2 - p1 is long).
    ja[:, :3, :3] = -e
    ja[:, :3, 3:] = -quat.cross((p2 - x[joints.a])[:, None, :], e)
    jb[:, :3, :3] = e
    jb[:, :3, 3:] = quat.cross(r2[:, None, :], e)
    c[:, :3] = err
    # Rotation: ``turn`` turns A (relative to B) onto the joint; rows along a basis whose first
    # vector is the swing axis and whose last is the twist axis.
    swing, s_axis, twist, za, zb = swing_twist(fa, fb)
    mid = za + zb
    mid /= np.maximum(np.linalg.norm(mid, axis=1), 1e-12)[:, None]
    helper = np.where((np.abs(mid[:, 0]) < 0.9)[:, None], [1.0, 0, 0], [0, 1.0, 0])
    fallback = quat.cross(mid, helper)
    b1 = np.where((np.linalg.norm(s_axis, axis=1) > 0.5)[:, None], s_axis, fallback)
    b1 /= np.linalg.norm(b1, axis=1)[:, None]
    b2 = quat.cross(mid, b1)
    basis = np.stack([b1, b2, mid], axis=1)  # (J, 3, 3)
    sm, tm = joints.swing_mode, joints.twist_mode
    swing_err = np.where(sm == Swing.LOCKED, swing, np.where(sm == Swing.CONE, np.maximum(swing - joints.cone, 0), 0))
    twist_err = np.where(tm == Twist.LOCKED, twist,
                         np.where(tm == Twist.LIMITED, twist - np.clip(twist, joints.twist_lower, joints.twist_upper),
                                  0.0))
    turn = b1 * swing_err[:, None] + mid * twist_err[:, None]
    full = (sm == Swing.LOCKED) & (tm == Twist.LOCKED)
    if np.any(full):
        turn[full] = quat.log_rotation(quat.multiply(fb[full], quat.conjugate(fa[full])))
    ang_on = np.stack([(sm == Swing.LOCKED) | ((sm == Swing.CONE) & (swing_err > 0)),
                       sm == Swing.LOCKED,
                       (tm == Twist.LOCKED) | ((tm == Twist.LIMITED) & (twist_err != 0))], axis=1) & active[:, None]
    # Turning A by d and B by d' changes turn by -(d - d'): C = -basis . turn, J_A = basis.
    ja[:, 3:, 3:] = basis
    jb[:, 3:, 3:] = -basis
    c[:, 3:] = -np.einsum("kri,ki->kr", basis, turn)
    cardan = (tm == Twist.LOCKED) & (sm != Swing.LOCKED)
    if np.any(cardan):
        # A universal joint: A's X stays square to B's Y (C = xa . yb), which is what stops the
        # twist of a Cardan shaft; a swing-twist angle would be singular well before 180 degrees.
        xa = quat.rotate(fa[cardan], np.broadcast_to([1.0, 0, 0], (int(cardan.sum()), 3)))
        yb = quat.rotate(fb[cardan], np.broadcast_to([0, 1.0, 0], (int(cardan.sum()), 3)))
        u = quat.cross(xa, yb)
        ja[cardan, 5, 3:], jb[cardan, 5, 3:] = u, -u
        c[cardan, 5] = np.einsum("ki,ki->k", xa, yb)
    on = np.concatenate([lin_on, ang_on], axis=1)
    c *= on
    return ja, jb, c, on


def limit_rows(joints: Joints) -> np.ndarray:
    """(J, 6) bool: the rows that are limits (inequalities), which Limit Bounce acts on."""
    rows = np.zeros((joints.count, 6), bool)
    rows[:, :3] = joints.lin_mode == Lin.LIMITED
    rows[:, 3] = joints.swing_mode == Swing.CONE
    rows[:, 5] = (joints.twist_mode == Twist.LIMITED)
    return rows


def bounce_limits(joints: Joints, layout: JointLayout, x, q, v, w, v_before, w_before, inv_mass, inv_inertia,
                  steer, active, limit_hits, min_speed: float) -> None:
    """Limit Bounce, after a substep: limit rows hit in it (``limit_hits`` (J, 6), the sign of the
    error they were hit with, 0 where not hit) that arrived faster than ``min_speed`` leave at
    -bounce times that speed. Solved at the velocity level with every other row of the mechanism
    held (their rates kept at zero), so a bounce does not throw the other joints out. In place on
    v, w (B+1, 3)."""
    if not np.any(limit_hits[:, :] != 0) or not np.any(joints.bounce > 0.0):
        return
    ja, jb, _, on = joint_rows(joints, x, q, steer, active)
    vw, vw0 = np.hstack([v, w]), np.hstack([v_before, w_before])
    a, b = joints.a, joints.b

    def rates(vel):
        return np.einsum("kri,ki->kr", ja, vel[a]) + np.einsum("kri,ki->kr", jb, vel[b])

    now, before = rates(vw), rates(vw0)
    bouncing = (limit_hits * before > min_speed) & (joints.bounce[:, None] > 0.0) & active[:, None]
    if not np.any(bouncing):
        return
    rows = on | bouncing
    target = np.where(bouncing, -joints.bounce[:, None] * before, 0.0)
    delta = _mechanism_solve(layout, ja * rows[..., None], jb * rows[..., None], rows, target - now, q, inv_mass,
                             inv_inertia)[0]
    moving = layout.bodies >= 0
    # A bounce gives back at most what the substep took: a mechanism never leaves it with more
    # kinetic energy than it had at the substep's start. (Its rows can disagree: a Box
    # connector's limit bouncing along the axis that a Planar one on the same pair locks, so
    # asked to reverse and to stop at once, the least-squares split of a redundant pair of rows
    # is huge and opposite, and threw a 28 t body with ten times its energy.) The step is
    # shortened, keeping its direction, to stay within that.
    body = np.where(moving, layout.bodies, len(inv_mass) - 1)
    m = np.where(moving, 1.0 / np.maximum(inv_mass[body], 1e-300), 0.0)
    inertia = np.where(moving[..., None], 1.0 / np.maximum(inv_inertia[body], 1e-300), 0.0)
    rot = quat.to_matrix(q[body])

    def kinetic(vel):
        spin = np.einsum("cbji,cbj->cbi", rot, vel[..., 3:])
        return 0.5 * (np.sum(m * np.einsum("cbi,cbi->cb", vel[..., :3], vel[..., :3]), axis=1)
                      + np.sum(np.einsum("cbi,cbi->cb", inertia * spin, spin), axis=1))

    now_v, start_v = vw[body], vw0[body]
    limit = kinetic(start_v)
    change = kinetic(now_v + delta) - kinetic(now_v)
    linear = np.sum(m * np.einsum("cbi,cbi->cb", now_v[..., :3], delta[..., :3]), axis=1) + np.sum(
        np.einsum("cbi,cbi->cb", inertia * np.einsum("cbji,cbj->cbi", rot, now_v[..., 3:]),
                  np.einsum("cbji,cbj->cbi", rot, delta[..., 3:])), axis=1)
    quadratic = change - linear
    over = kinetic(now_v) + change > limit
    if np.any(over):
        # Largest s in [0, 1] with KE(now) + s linear + s^2 quadratic <= limit.
        room = limit - kinetic(now_v)
        disc = np.maximum(linear * linear + 4.0 * quadratic * np.maximum(room, 0.0), 0.0)
        s = np.where(quadratic > 0.0, (-linear + np.sqrt(disc)) / np.maximum(2.0 * quadratic, 1e-300), 0.0)
        scale = np.where(over, np.clip(s, 0.0, 1.0), 1.0)
        delta = delta * scale[:, None, None]
    np.add.at(vw, layout.bodies[moving], delta[moving])
    v[...], w[...] = vw[:, :3], vw[:, 3:]


def _mechanism_solve(layout: JointLayout, ja, jb, on, rhs, q, inv_mass, inv_inertia):
    """Solve J W J^T lambda = rhs for every mechanism at once: ja, jb (J, 6, 6) the rows'
    Jacobians (zero where they do not act), on (J, 6) which rows act, rhs (J, 6). Returns each
    mechanism body's change W J^T lambda (C, Bmax, 6) and lambda per joint row (J, 6)."""
    count, width = layout.rows.shape
    bmax = layout.bodies.shape[1]
    ci, ri, jj, rr, use_a, use_b, sa, sb = layout.index
    # Each mechanism's Jacobian (C, rows, 6 Bmax): a joint's rows in its bodies' column blocks.
    jac = np.zeros((count, width, bmax, 6))
    jac[ci[use_a], ri[use_a], sa[use_a]] = ja[jj[use_a], rr[use_a]]
    jac[ci[use_b], ri[use_b], sb[use_b]] = jb[jj[use_b], rr[use_b]]
    body = np.where(layout.bodies >= 0, layout.bodies, len(inv_mass) - 1)  # padding: the world, W = 0
    rot = quat.to_matrix(q[body])
    # The mechanism's inverse mass matrix W, block diagonal (C, 6 Bmax, 6 Bmax); plain matmuls
    # from here on (einsum over four indices is many times slower for these small sizes).
    blocks = np.zeros((count, bmax, 6, 6))
    blocks[:, :, [0, 1, 2], [0, 1, 2]] = inv_mass[body][:, :, None]
    blocks[:, :, 3:, 3:] = world_inverse_inertia(rot, inv_inertia[body])
    w_full = np.zeros((count, bmax, 6, bmax, 6))
    w_full[:, np.arange(bmax), :, np.arange(bmax), :] = np.moveaxis(blocks, 1, 0)
    w_full = w_full.reshape(count, 6 * bmax, 6 * bmax)
    jac = jac.reshape(count, width, 6 * bmax)
    wjt = w_full @ np.swapaxes(jac, 1, 2)  # (C, 6 Bmax, rows)
    a_mat = jac @ wjt
    on_rows = np.zeros((count, width), bool)
    on_rows[ci, ri] = on[jj, rr]
    # Rows that do not act: 1 on the diagonal, so their lambda is 0. Rows that act get a small
    # damping relative to their own diagonal: a loop (a bridge hinged to the world at both ends)
    # or several connectors on one pair of bodies repeat constraints, the matrix is singular, and
    # the exact solve of the rounding noise between repeated rows would be huge opposite impulses.
    # (Relative to the mechanism's mean diagonal, the damping of a heavy body's rows, or of
    # translation rows next to a small body's rotation rows (1/kg against 1/(kg m^2)), was many
    # times their own diagonal: those rows barely moved in a pass, the error left behind came
    # back as speed, and a light body held to a heavy one by two connectors gained energy.)
    diag = np.einsum("cii->ci", a_mat)
    mean = np.sum(diag * on_rows, axis=1) / np.maximum(on_rows.sum(axis=1), 1)
    damp = JOINT_DAMPING * np.maximum(diag, 1e-12 * mean[:, None])
    a_mat += np.eye(width) * np.where(on_rows, damp, 1.0)[:, :, None]
    b_vec = np.zeros((count, width))
    b_vec[ci, ri] = rhs[jj, rr]
    lam = _spd_solve(a_mat, b_vec) * on_rows
    per_row = np.zeros(on.shape)
    per_row[jj, rr] = lam[ci, ri]
    return (wjt @ lam[..., None]).reshape(count, bmax, 6), per_row


def _spd_solve(a, b):
    """x with a x = b for symmetric positive definite a (C, n, n), b (C, n).

    A Cholesky factor (LAPACK) and two substitutions in numpy: LAPACK's general solver wakes
    OpenBLAS's threads, which for systems this small costs a hundred times the arithmetic when
    the cores are busy (measured: 3 ms against 0.03 ms for 24 x 24). Large systems, and singular
    ones (redundant connectors between the same two bodies), go to the general solver.
    """
    n = a.shape[-1]
    if n <= 96:
        try:
            low = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            low = None
        if low is not None:
            y = np.empty_like(b)
            for i in range(n):
                y[:, i] = (b[:, i] - np.einsum("cj,cj->c", low[:, i, :i], y[:, :i])) / low[:, i, i]
            x = np.empty_like(b)
            for i in range(n - 1, -1, -1):
                x[:, i] = (y[:, i] - np.einsum("cj,cj->c", low[:, i + 1:, i], x[:, i + 1:])) / low[:, i, i]
            return x
    scale = np.einsum("cii->c", a)[:, None, None] / n
    return np.linalg.solve(a + 1e-9 * scale * np.eye(n), b[..., None])[..., 0]


def solve_joints(joints: Joints, layout: JointLayout, x, q, S, inv_mass, inv_inertia, active, steer,
                 impulses, limit_hits=None, x_start=None, q_start=None, from_start=None) -> None:
    """One Newton step on every joint at once, adding to the corrections S (B+1, 6) [dx, dtheta].

    Each mechanism's rows are solved together (J W J^T lambda = -C, W the bodies' inverse mass
    matrices at the substep's poses), so a chain is as stiff as a single joint; poses are
    re-evaluated with the corrections so far, so repeated steps converge on the exact joint.
    ``impulses`` (J, 6) accumulates each joint's position impulses (kg m, kg m^2) over the substep.

    x_start, q_start (B+1, 3), (B+1, 4): the poses at the substep's start. Given, the translation
    rows push along their directions there (the frame axes and the lever arms to the pivot at the
    substep's start), their errors still from the poses now: SHAKE's projection, whose impulse
    does no work on the motion the joint allows. Pushed along the rows of the poses now (the lever
    arm at the end of the substep's motion), the pull that holds a pendulum up tilts back against
    its swing by the substep's turn, a damping of g h / L (a 70 degree swing fell to 48 degrees in
    6 periods at 240 Hz), and a whirl's own centripetal pull took 0.4 (omega h)^2 of its speed per
    substep (30% a second at 2 rev/s, 0.4 m). from_start (J,) bool: the joints that do so (all
    when None); those of redundant mechanisms (``redundant_mechanisms``) must not.
    """
    if not len(layout.rows):
        return
    xs = x + S[:, :3]
    qs = quat.multiply(quat.exp_rotation(S[:, 3:]), q)
    ja, jb, c, on = joint_rows(joints, xs, qs, steer, active)
    if x_start is not None:
        ja0, jb0, _, _ = joint_rows(joints, x_start, q_start, steer, active)
        use = np.ones(joints.count, bool) if from_start is None else from_start
        ja[use, :3], jb[use, :3] = ja0[use, :3], jb0[use, :3]
    if limit_hits is not None:
        # Limit rows that act (for Limit Bounce), with the side of the limit they were hit on.
        hit = on & limit_rows(joints)
        limit_hits[hit] = np.sign(c[hit])
    ja = ja * on[..., None]
    jb = jb * on[..., None]
    delta, per_row = _mechanism_solve(layout, ja, jb, on, -c, q, inv_mass, inv_inertia)
    # The rows are linear in the corrections only for small turns; a mechanism thrown far off its
    # joints (a light body squeezed between a heavy one and the ground) would be turned by a
    # radian or more in one step and land further off, so a step is shortened (all of it, which
    # keeps its direction) to turn no body by more than JOINT_MAX_TURN; the next passes go on.
    turn = np.linalg.norm(delta[:, :, 3:], axis=2).max(axis=1)
    scale = np.minimum(1.0, JOINT_MAX_TURN / np.maximum(turn, 1e-300))
    if np.any(scale < 1.0):
        delta = delta * scale[:, None, None]
        per_row = per_row * np.where(layout.mechanism >= 0, scale[np.maximum(layout.mechanism, 0)], 0.0)[:, None]
    moving = layout.bodies >= 0
    np.add.at(S, layout.bodies[moving], delta[moving])
    # Impulse sizes for breaking: the rows' lambdas per joint, translation and rotation.
    impulses[:, :3] += np.einsum("kr,kri->ki", per_row[:, :3], jb[:, :3, :3])
    impulses[:, 3:] += per_row[:, 3:]
