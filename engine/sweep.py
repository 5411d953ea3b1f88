"""Sweeps: a rigid body that would move further in one substep than its contacts can take back
must not pass into (or through) what it would hit on the way.

The contact solve works on the poses at the end of a substep: a sample point found inside a
shape is projected out along that shape's normal there. That is right while a substep moves a
body by a fraction of the thinner of the two shapes. A body much faster than that (a thin plate
thrown at the ground at a few substeps, a box pushed by a motor of 1e5 N, anything driven at
1e5 m/s) ends the substep deep inside, or beyond, what it hit: a thin box's top corners are then
under the ground too, so the contacts disagree; a corner deep in another body is pushed out of
the wrong face; an edge driven 20 cm into the ground is levered out by a rotation far outside
what the linearised solve can take; and whatever is pushed out that far leaves at that speed.

So, for the pairs whose relative motion in a substep exceeds ``SWEEP_DEPTH`` times the thinner
shape's thickness, each sample point is advanced along the substep's motion (conservative
advancement: a step of its clearance divided by a bound on its speed, which can never step past a
surface) to where it first touches. From there on the motion into the surface is taken out of
the body's translation, all but ``SWEEP_DEPTH`` of the thickness, which is left for the contact
solve to project (so the contact has its normal impulse, its friction and its bounce as usual).
Between two bodies the correction is shared by their inverse masses, so momentum is kept; and a
body whose own rotation drove the point in stops turning at the moment of impact for the rest of
the substep (its angular momentum is kept, so it spins on the next). Slower motion is left alone.

Shapes: B bodies (index B is the world), k queries.
"""

from __future__ import annotations

import math

import numpy as np

from . import quaternions as quat
from .rigid import ShapeKind
from .rigid_contacts import shape_penetration

# How deep one substep may drive a contact, as a fraction of the thinner shape's thickness.
SWEEP_DEPTH = 0.25
# Conservative advancement steps per query and rounds of corrections per sweep.
SWEEP_ITERATIONS = 16
SWEEP_BISECTIONS = 12
SWEEP_ROUNDS = 3
# A point counts as touching within this fraction of the pair's allowed depth.
SWEEP_TOUCH = 0.05


def body_thickness(bodies) -> np.ndarray:
    """Each body's smallest extent through its collision shape (B,) m."""
    p = bodies.shape_params
    out = np.empty(bodies.count)
    for k in range(bodies.count):
        kind = bodies.shape[k]
        if kind == ShapeKind.SPHERE:
            out[k] = 2.0 * p[k, 0]
        elif kind == ShapeKind.BOX:
            out[k] = 2.0 * p[k, :3].min()
        elif kind == ShapeKind.CAPSULE:
            out[k] = 2.0 * p[k, 0]
        elif kind == ShapeKind.CYLINDER:
            out[k] = 2.0 * min(p[k, 0], p[k, 1])
        else:
            offsets = bodies.hull_offsets[k]
            finite = offsets[np.isfinite(offsets)]
            # Faces' distances from the centre of mass, which is inside: twice the nearest is
            # no more than the thickness across it.
            out[k] = 2.0 * max(float(finite.min()), 0.0) if len(finite) else 2.0 * bodies.bound_radius[k]
    return np.maximum(out, 1e-300)


def _interpolate(x0, q0, dx, phi, f):
    """Poses at fractions f (k,) of the motion (dx, phi) from (x0, q0): (k, 3), (k, 3, 3)."""
    x = x0 + dx * f[:, None]
    q = quat.multiply(quat.exp_rotation(phi * f[:, None]), q0)
    return x, quat.to_matrix(q)


class Sweeper:
    """What the sweep needs of a model, prepared once."""

    def __init__(self, model):
        b = model.bodies
        self.bodies = b
        self.count = b.count
        self.thickness = np.append(body_thickness(b), math.inf)
        self.radius = np.append(b.bound_radius, 0.0)
        self.colliders = model.colliders
        self.collider_thickness = np.array([c.thickness() for c in model.colliders])
        self.point_start = np.searchsorted(b.point_body, np.arange(b.count + 1))

    def run(self, x0, q0, x1, q1, t0: float, h: float, queries: np.ndarray, collider_bodies, inv_mass,
            leave: float = 1.0) -> bool:
        """Take back, in place on the end poses x1 (B+1, 3) and q1 (B+1, 4), the motion from the
        start poses x0, q0 that would drive a sample point into a shape further than the contacts
        can take back. queries: (k, 3) (point, owner, target) body pairs of the frame;
        collider_bodies: per collider the bodies that may touch it; inv_mass (B+1,). t0, h: the
        substep's start and length (moving colliders are interpolated over it). leave: the part
        of the allowed depth (``SWEEP_DEPTH`` of the thinner shape) a contact may be left at: 1
        before the contact solve, which takes it back; 0 after it. Returns whether anything was
        changed."""
        changed = False
        for _ in range(SWEEP_ROUNDS):
            dx = x1 - x0
            phi = quat.log_rotation(quat.multiply(q1, quat.conjugate(q0)))
            phi[-1] = 0.0
            travel = np.linalg.norm(dx, axis=1) + np.linalg.norm(phi, axis=1) * self.radius
            hits = []
            if len(queries):
                hits += self._bodies(x0, q0, dx, phi, travel, queries)
            for index, (collider, near) in enumerate(zip(self.colliders, collider_bodies)):
                if len(near):
                    hits += self._collider(index, collider, near, x0, q0, dx, phi, travel, t0, h)
            if not hits:
                break
            if not self._correct(hits, x0, q0, x1, q1, dx, phi, inv_mass, leave):
                break
            changed = True
        return changed

    # -- conservative advancement -------------------------------------------------------------

    def _advance(self, clearance_at, speed, allow):
        """Fractions f (k,) of the substep's motion at which each query first touches (clearance
        within ``SWEEP_TOUCH * allow``), inf where it does not within the substep.

        clearance_at(f, sel) -> clearance (len(sel),) m of queries sel at fractions f; speed (k,)
        bounds how fast (m per unit f) each query's clearance can shrink. A query still short of
        the surface after ``SWEEP_ITERATIONS`` steps (a point gliding in at a shallow angle, whose
        clearance shrinks much slower than its speed) but inside it at the end of the motion is
        found by bisection between the two."""
        k = len(speed)
        f = np.zeros(k)
        hit = np.full(k, np.inf)
        live = np.arange(k)
        for _ in range(SWEEP_ITERATIONS):
            if not len(live):
                return hit
            c = clearance_at(f[live], live)
            touching = c <= SWEEP_TOUCH * allow[live]
            hit[live[touching]] = f[live[touching]]
            f[live] += np.where(touching, 0.0, c / speed[live])
            live = live[~touching & (f[live] < 1.0)]
        if len(live):
            inside = clearance_at(np.ones(len(live)), live) <= SWEEP_TOUCH * allow[live]
            live = live[inside]
            lo, hi = f[live], np.ones(len(live))
            for _ in range(SWEEP_BISECTIONS):
                mid = 0.5 * (lo + hi)
                touching = clearance_at(mid, live) <= SWEEP_TOUCH * allow[live]
                hi = np.where(touching, mid, hi)
                lo = np.where(touching, lo, mid)
            hit[live] = hi
        return hit

    def _bodies(self, x0, q0, dx, phi, travel, queries):
        b = self.bodies
        point, owner, target = queries.T
        allow = SWEEP_DEPTH * np.minimum(self.thickness[owner], self.thickness[target])
        local = b.point_local[point]
        arm = np.linalg.norm(local, axis=1)
        reach = np.linalg.norm(x0[owner] - x0[target], axis=1) + arm + travel[owner]
        speed = (np.linalg.norm(dx[owner], axis=1) + np.linalg.norm(phi[owner], axis=1) * arm
                 + np.linalg.norm(dx[target], axis=1) + np.linalg.norm(phi[target], axis=1) * reach)
        fast = np.flatnonzero(speed > allow)
        if not len(fast):
            return []
        point, owner, target, local, allow, speed = (a[fast] for a in (point, owner, target, local, allow, speed))
        radius = b.point_radius[point]

        def geometry(f, sel):
            xo, ro = _interpolate(x0[owner[sel]], q0[owner[sel]], dx[owner[sel]], phi[owner[sel]], f)
            xt, rt = _interpolate(x0[target[sel]], q0[target[sel]], dx[target[sel]], phi[target[sel]], f)
            p = xo + np.einsum("kij,kj->ki", ro, local[sel])
            q_local = np.einsum("kji,kj->ki", rt, p - xt)
            prefer = np.einsum("kji,kj->ki", rt, xo - xt)
            normal, depth = shape_penetration(b, target[sel], q_local, radius[sel], prefer)
            return p, xo, xt, np.einsum("kij,kj->ki", rt, normal), depth

        hit = self._advance(lambda f, sel: -geometry(f, sel)[4], speed, allow)
        got = np.flatnonzero(np.isfinite(hit))
        if not len(got):
            return []
        p, xo, xt, n, depth = geometry(hit[got], got)
        return [(float(hit[g]), int(owner[g]), int(target[g]), p[i], xo[i], xt[i], n[i], float(allow[g]),
                 max(float(depth[i]), 0.0), dx[target[g]], phi[target[g]]) for i, g in enumerate(got)]

    def _collider(self, index, collider, near, x0, q0, dx, phi, travel, t0, h):
        b = self.bodies
        start, stop = self.point_start[near], self.point_start[near + 1]
        counts = stop - start
        point = np.repeat(start, counts) + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        owner = b.point_body[point]
        allow = SWEEP_DEPTH * np.minimum(self.thickness[owner], self.collider_thickness[index])
        local = b.point_local[point]
        arm = np.linalg.norm(local, axis=1)
        speed = np.linalg.norm(dx[owner], axis=1) + np.linalg.norm(phi[owner], axis=1) * arm
        m0 = collider.pose(t0)
        moving = collider.motion is not None
        if moving:
            m1 = collider.pose(t0 + h)
            c_dx = m1[:3, 3] - m0[:3, 3]
            c_phi = quat.log_rotation(quat.from_matrix(m1[:3, :3] @ m0[:3, :3].T))
            lever = np.linalg.norm(x0[owner] - m0[:3, 3], axis=1) + arm + travel[owner]
            speed = speed + np.linalg.norm(c_dx) + np.linalg.norm(c_phi) * lever
        fast = np.flatnonzero(speed > allow)
        if not len(fast):
            return []
        point, owner, local, allow, speed = (a[fast] for a in (point, owner, local, allow, speed))
        radius = b.point_radius[point]

        def frames(f):
            if not moving:
                return np.broadcast_to(m0[:3, 3], (len(f), 3)), np.broadcast_to(m0[:3, :3], (len(f), 3, 3))
            r = quat.to_matrix(quat.multiply(quat.exp_rotation(c_phi * f[:, None]),
                                             quat.from_matrix(m0[:3, :3])[None, :]))
            return m0[:3, 3] + c_dx * f[:, None], r

        def geometry(f, sel):
            xo, ro = _interpolate(x0[owner[sel]], q0[owner[sel]], dx[owner[sel]], phi[owner[sel]], f)
            p = xo + np.einsum("kij,kj->ki", ro, local[sel])
            origin, rot = frames(f)
            return p, xo, origin, rot, np.einsum("kji,kj->ki", rot, p - origin)

        def clearance(f, sel):
            return collider.clearance(geometry(f, sel)[4], radius[sel])

        hit = self._advance(clearance, speed, allow)
        got = np.flatnonzero(np.isfinite(hit))
        if not len(got):
            return []
        p, xo, origin, rot, q_local = geometry(hit[got], got)
        # The normal where the point touches: inflated a little, the point is inside.
        inflate = 2.0 * SWEEP_TOUCH * allow[got] + 1e-300
        corr, depth = collider.penetration(q_local, radius[got] + inflate)
        n = np.einsum("kij,kj->ki", rot, corr / np.where(depth > 0.0, depth, 1.0)[:, None])
        world = self.count
        s_dx, s_phi = (c_dx, c_phi) if moving else (np.zeros(3), np.zeros(3))
        return [(float(hit[g]), int(owner[g]), world, p[i], xo[i], origin[i], n[i], float(allow[g]),
                 max(float(depth[i] - inflate[i]), 0.0), s_dx, s_phi) for i, g in enumerate(got) if depth[i] > 0.0]

    # -- corrections --------------------------------------------------------------------------

    def _correct(self, hits, x0, q0, x1, q1, dx, phi, inv_mass, leave) -> bool:
        """Apply, for each body, the hit that needs the largest correction (the others wait for
        the next round, which sees the corrected motion)."""
        world = self.count
        plans = []
        for f, owner, target, p, xo, xt, n, allow, depth, s_dx, s_phi in hits:
            # Rotation a body makes after the impact is dropped when it alone could drive the
            # point in deeper than allowed (a spinning plate's corner); its angular momentum is
            # kept. Otherwise (a rolling wheel, a body already resting on what it touches) it
            # turns on as the solve lets it. Bodies not to be moved (kinematic, or jointed after the
            # solve) keep their motion.
            rest = 1.0 - f
            turn_owner = bool(f > 0.0 and inv_mass[owner] > 0.0
                              and np.linalg.norm(phi[owner]) * self.radius[owner] * rest > allow)
            turn_target = bool(f > 0.0 and inv_mass[target] > 0.0
                               and np.linalg.norm(s_phi) * self.radius[target] * rest > allow)
            # How the point moves relative to the surface under it over the rest of the substep.
            v_point = dx[owner] + (0.0 if turn_owner else quat.cross(phi[owner], p - xo))
            v_surface = s_dx + (0.0 if turn_target else quat.cross(s_phi, p - xt))
            approach = -float(n @ (v_point - v_surface)) * rest
            shift = depth + approach - leave * allow
            if shift > 0.0 or turn_owner or turn_target:
                plans.append((-max(shift, 0.0), f, owner, target, n, shift, turn_owner, turn_target, s_phi))
        done = set()
        changed = False
        for _, f, owner, target, n, shift, turn_owner, turn_target, s_phi in sorted(plans, key=lambda p: p[:4]):
            if owner in done or target in done:
                continue
            done.add(owner)
            if target != world:
                done.add(target)
            if turn_owner:
                q1[owner] = quat.normalize(quat.multiply(quat.exp_rotation(phi[owner] * f), q0[owner]))
                changed = True
            if turn_target:
                q1[target] = quat.normalize(quat.multiply(quat.exp_rotation(s_phi * f), q0[target]))
                changed = True
            w_o, w_t = inv_mass[owner], inv_mass[target]
            if shift > 0.0 and w_o + w_t > 0.0:
                x1[owner] += n * (shift * w_o / (w_o + w_t))
                x1[target] -= n * (shift * w_t / (w_o + w_t))
                changed = True
        return changed
