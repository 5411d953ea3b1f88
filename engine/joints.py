"""Joints between rigid bodies (or a body and the world): ball and socket, hinge, fixed.

The first connectors of the Cinema 4D set, solved in the same linearised Extended XPBD pass as the
contacts: a joint's pivot on each body is projected together (a 3x3 solve with both bodies'
inverse mass matrices), a hinge's axes are turned parallel, a fixed joint's relative rotation is
held. Joints are coloured once, when the model is built, so no body appears twice in a colour.

Shapes: J joints, B bodies (index B is the world).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from . import quaternions as quat
from .errors import JakobsenError


class JointKind(IntEnum):
    BALL = 0  # Ball and Socket: the pivots coincide, any rotation
    HINGE = 1  # the pivots coincide, rotation about one axis only
    FIXED = 2  # the pivots coincide, no relative rotation


JOINT_NAMES = {"ball_socket": JointKind.BALL, "hinge": JointKind.HINGE, "fixed": JointKind.FIXED}


@dataclass(frozen=True)
class Joints:
    """kind: (J,); a, b: (J,) bodies (b == B for the world); local_a, local_b: (J, 3) the pivot in
    each body's frame (world coordinates for the world); axis_a, axis_b: (J, 3) the hinge axis in
    each frame; rest_relative: (J, 4) b's orientation relative to a's at rest (fixed joints);
    names: (J,); colour_bounds: (c + 1,) joints are stored colour by colour."""

    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray
    local_a: np.ndarray
    local_b: np.ndarray
    axis_a: np.ndarray
    axis_b: np.ndarray
    rest_relative: np.ndarray
    names: tuple
    colour_bounds: np.ndarray

    @property
    def count(self) -> int:
        return len(self.kind)


def empty_joints() -> Joints:
    z3 = np.zeros((0, 3))
    zi = np.zeros(0, np.int64)
    return Joints(np.zeros(0, np.int8), zi, zi, z3, z3, z3, z3, np.zeros((0, 4)), (), np.zeros(1, np.int64))


def finalize_joints(specs: list[dict], bodies, world: int) -> Joints:
    """Joint specs (from ModelBuilder.add_joint) -> Joints, expressed in the bodies' rest frames."""
    if not specs:
        return empty_joints()
    kind = np.array([s["kind"] for s in specs], np.int8)
    a = np.array([world if s["a"] is None else s["a"] for s in specs], np.int64)
    b = np.array([world if s["b"] is None else s["b"] for s in specs], np.int64)
    pivot = np.array([s["pivot"] for s in specs], float)
    axis = np.array([s["axis"] for s in specs], float)
    pos = np.vstack([bodies.rest_position, np.zeros((1, 3))])
    ori = np.vstack([bodies.rest_orientation, [[1.0, 0, 0, 0]]])
    inv_a, inv_b = quat.conjugate(ori[a]), quat.conjugate(ori[b])
    local_a = quat.rotate(inv_a, pivot - pos[a])
    local_b = quat.rotate(inv_b, pivot - pos[b])
    axis_a, axis_b = quat.rotate(inv_a, axis), quat.rotate(inv_b, axis)
    rest_relative = quat.multiply(inv_a, ori[b])
    # Greedy colouring: a joint takes the lowest colour free at both of its (moving) bodies.
    colour = np.zeros(len(specs), np.int64)
    used: dict[int, set] = {}
    for k, (i, j) in enumerate(zip(a.tolist(), b.tolist())):
        taken = (used.get(i, set()) if i != world else set()) | (used.get(j, set()) if j != world else set())
        c = 0
        while c in taken:
            c += 1
        colour[k] = c
        used.setdefault(i, set()).add(c)
        used.setdefault(j, set()).add(c)
    order = np.argsort(colour, kind="stable")
    bounds = np.searchsorted(colour[order], np.arange(colour.max() + 2))
    return Joints(kind[order], a[order], b[order], local_a[order], local_b[order], axis_a[order], axis_b[order],
                  rest_relative[order], tuple(specs[k]["name"] for k in order), bounds)


def check_joint(kind: str, a, b, pivot, axis, name: str, body_count: int) -> dict:
    where = f"connector '{name}'"
    if kind not in JOINT_NAMES:
        raise JakobsenError(f"{where}: type must be one of {sorted(JOINT_NAMES)}, got {kind!r}")
    if a is None and b is None:
        raise JakobsenError(f"{where}: it has neither Object A nor Object B")
    for side, body in (("Object A", a), ("Object B", b)):
        if body is not None and not (0 <= body < body_count):
            raise JakobsenError(f"{where}: {side} is not a rigid body of this model")
    if a is not None and a == b:
        raise JakobsenError(f"{where}: Object A and Object B are the same body")
    p = np.asarray(pivot, float)
    u = np.asarray(axis, float)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise JakobsenError(f"{where}: the pivot must be 3 finite numbers")
    if u.shape != (3,) or not np.all(np.isfinite(u)) or np.linalg.norm(u) < 1e-12:
        raise JakobsenError(f"{where}: the axis must be a finite non-zero vector")
    return dict(kind=JOINT_NAMES[kind], a=a, b=b, pivot=p, axis=u / np.linalg.norm(u), name=name)


def _skew(v):
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def solve_joints(joints: Joints, x, q, x_prev, S, inv_mass, inv_inertia) -> None:
    """One Gauss-Seidel pass over the joints, colour by colour, adding to the corrections S (B+1, 6).

    Lever arms are measured from the bodies' current centres, about which the corrections will
    turn them (contacts use the substep's start instead, which conserves angular momentum exactly
    but puts a swinging chain's pivots off by the distance a body moves in a substep).
    """
    for c in range(len(joints.colour_bounds) - 1):
        s = slice(joints.colour_bounds[c], joints.colour_bounds[c + 1])
        a, b = joints.a[s], joints.b[s]
        rot_a, rot_b = quat.to_matrix(q[a]), quat.to_matrix(q[b])
        p1 = x[a] + np.einsum("kij,kj->ki", rot_a, joints.local_a[s])
        p2 = x[b] + np.einsum("kij,kj->ki", rot_b, joints.local_b[s])
        r1, r2 = p1 - x[a], p2 - x[b]
        ia = np.einsum("kij,kj,klj->kil", rot_a, inv_inertia[a], rot_a)  # world inverse inertia
        ib = np.einsum("kij,kj,klj->kil", rot_b, inv_inertia[b], rot_b)
        dxa, dtha, dxb, dthb = S[a, :3], S[a, 3:], S[b, :3], S[b, 3:]
        # Positional: make the two pivots meet (linearised in this substep's corrections).
        gap = (p1 + dxa + quat.cross(dtha, r1)) - (p2 + dxb + quat.cross(dthb, r2))
        k1, k2 = _skew(r1), _skew(r2)
        mass = (inv_mass[a] + inv_mass[b])[:, None, None] * np.eye(3) \
            - k1 @ ia @ k1 - k2 @ ib @ k2
        impulse = -np.linalg.solve(mass + 1e-12 * np.eye(3), gap[..., None])[..., 0]
        S[a, :3] += inv_mass[a, None] * impulse
        S[a, 3:] += np.einsum("kij,kj->ki", ia, quat.cross(r1, impulse))
        S[b, :3] -= inv_mass[b, None] * impulse
        S[b, 3:] -= np.einsum("kij,kj->ki", ib, quat.cross(r2, impulse))
        # Angular: hinges turn their axes parallel, fixed joints hold the rest relative rotation.
        kind = joints.kind[s]
        turn = np.zeros_like(gap)
        hinge = kind == JointKind.HINGE
        if np.any(hinge):
            n1 = np.einsum("kij,kj->ki", rot_a[hinge], joints.axis_a[s][hinge])
            n2 = np.einsum("kij,kj->ki", rot_b[hinge], joints.axis_b[s][hinge])
            n1 = n1 + quat.cross(S[a[hinge], 3:], n1)
            n2 = n2 + quat.cross(S[b[hinge], 3:], n2)
            turn[hinge] = quat.cross(n1, n2)  # rotating A by this (or B by minus it) aligns them
        fixed = kind == JointKind.FIXED
        if np.any(fixed):
            now = quat.multiply(quat.exp_rotation(S[a[fixed], 3:]), q[a[fixed]])
            now_b = quat.multiply(quat.exp_rotation(S[b[fixed], 3:]), q[b[fixed]])
            target_b = quat.multiply(now, joints.rest_relative[s][fixed])
            turn[fixed] = -quat.log_rotation(quat.multiply(target_b, quat.conjugate(now_b)))
        if np.any(hinge | fixed):
            sel = np.flatnonzero(hinge | fixed)
            ang_mass = ia[sel] + ib[sel]
            ang = np.linalg.solve(ang_mass + 1e-12 * np.eye(3), turn[sel][..., None])[..., 0]
            S[a[sel], 3:] += np.einsum("kij,kj->ki", ia[sel], ang)
            S[b[sel], 3:] -= np.einsum("kij,kj->ki", ib[sel], ang)
