"""Sweeps: a rigid body that would move further in one substep than its contacts can take back
must not pass into (or through) what it would hit on the way.

The contact solve works on the poses at the end of a substep: a sample point found inside a
shape is projected out along that shape's normal there. That is right while a substep moves a
body by a fraction of the thinner of the two shapes. A body much faster than that (a thin plate
thrown at the ground at a few substeps, a plate dropped from a height at two substeps) ends the
substep deep inside, or beyond, what it hit: a thin box's top corners are then under the ground
too, an edge driven 10 cm into the ground is levered out by a rotation far outside what the
linearised solve can take, and the frame shows the plate half sunk.

So, for the pairs whose relative motion in a substep exceeds ``CONTACT_DEPTH`` times the thinner
shape's thickness, each sample point is advanced along the substep's motion (conservative
advancement: a step of its clearance divided by a bound on its speed, which can never step past a
surface) to where it first touches. From there on the motion into the surface is taken out of
the body's translation, all but ``CONTACT_DEPTH`` of the thickness, which is left for the contact
solve to project (so the contact has its normal impulse, its friction and its bounce as usual).
Between two bodies the correction is shared by their inverse masses, so momentum is kept; and a
body whose own rotation drove the point in stops turning at the moment of impact for the rest of
the substep (its angular momentum is kept, so it spins on the next), if the motion does take the
point deeper than allowed (sampled over the rest of the substep: a wheel's rim points touch the
ground at the bottom of their turn and rise again, and a wheel stopped there would slip). Slower
motion is left alone, and costs a few array operations per substep.

It runs between the integration and the contact search, on the pairs the frame's broad phase
found, with the shape table's distance routine; finding the fast queries and advancing them is one
kernel (``backend/*/sweep.py`` ``fast_hits``: numpy over all queries at once, numba query by query,
the same arithmetic); applying each body's largest correction is another (``correct_hits``: as
Python over the hits, it was a tenth of the car example's time).

Shapes: B bodies (index B is the world), k queries (point, owner body, target body, shape).
"""

from __future__ import annotations

import math

import numpy as np

from ..bodies.rigid import CONTACT_DEPTH
from ..geometry import kinds

# Conservative advancement steps per query and rounds of corrections per sweep.
SWEEP_ITERATIONS = 16
SWEEP_BISECTIONS = 12
SWEEP_ROUNDS = 3
# A point counts as touching within this fraction of the pair's allowed depth.
SWEEP_TOUCH = 0.05
# After a hit the point's depth is sampled over the rest of the substep, at steps over which it
# closes no more than the depth allowed (so it cannot pass through what it hit between two), at
# most this many: a body is stopped turning only where its motion would drive the point deeper
# than allowed (or that would take more samples).
SWEEP_TURN_SAMPLES = 32
# Rim points per cap of a cylinder (a cylinder has no fixed sample points; its rim is found against
# each shape by the contact kernels, and sampled here for the sweep).
RIM_POINTS = 12


def shape_thickness(shapes) -> np.ndarray:
    """Each shape's smallest extent through its solid part (S,) m (inf: a plane, a box world)."""
    out = np.full(shapes.count, math.inf)
    p = shapes.params
    for k in range(shapes.count):
        kind = int(shapes.kind[k])
        if kind in (kinds.SPHERE, kinds.CAPSULE):
            out[k] = 2.0 * p[k, 0]
        elif kind == kinds.BOX:
            out[k] = 2.0 * p[k, :3].min()
        elif kind == kinds.CYLINDER:
            out[k] = 2.0 * min(p[k, 0], p[k, 1])
        elif kind == kinds.HULL:
            first, count = shapes.hull[k]
            offsets = shapes.hull_planes[first:first + count, 3]
            # Twice the nearest face's distance from the frame's origin (inside the hull).
            out[k] = 2.0 * max(float(offsets.min()), 0.0) if count else math.inf
        elif kind == kinds.MESH:
            out[k] = shapes.mesh_margin[shapes.mesh[k]]
    return np.maximum(out, 1e-300)


def _sweep_points(bodies):
    """Per body, the points the sweep advances (body frame) and their radii: its sample points,
    and for a cylinder points on its two rims. Returns local (P, 3), radius (P,), start (B + 1,)."""
    local, radius, start = [], [], [0]
    angle = np.linspace(0.0, 2.0 * np.pi, RIM_POINTS, endpoint=False)
    for k in range(bodies.count):
        sel = bodies.point_body == k
        pts, rad = bodies.point_local[sel], bodies.point_radius[sel]
        if bodies.shape[k] == kinds.CYLINDER and not len(pts):
            r, hh = bodies.shape_params[k, 0], bodies.shape_params[k, 1]
            rim = np.stack([r * np.cos(angle), r * np.sin(angle), np.zeros(RIM_POINTS)], axis=1)
            rim = np.concatenate([rim + (0, 0, hh), rim - (0, 0, hh)])
            pts = rim @ bodies.shape_rotation[k].T + bodies.shape_offset[k]
            rad = np.zeros(len(pts))
        local.append(pts)
        radius.append(rad)
        start.append(start[-1] + len(pts))
    return (np.concatenate(local) if local else np.zeros((0, 3)),
            np.concatenate(radius) if radius else np.zeros(0), np.array(start, np.int64))


class Sweeper:
    """What the sweep needs of a model, prepared once; ``begin_frame`` with the frame's pairs,
    ``run`` every substep."""

    def __init__(self, model, kernels):
        self.kernels = kernels  # the backend's sweep kernels (relative_motion, fast_hits, correct_hits)
        b = model.bodies
        self.count = b.count
        self.geo = model.shapes.kernel_arrays()
        self.thickness = np.append(np.maximum(b.thickness, 1e-300), math.inf)
        self.shape_thickness = shape_thickness(model.shapes)
        self.body_shape = b.shape_index.astype(np.int64)
        self.local, self.radius, self.start = _sweep_points(b)
        self.bound = np.append(np.where(np.isfinite(b.bound_radius), b.bound_radius, 0.0), 0.0)
        self.arm = np.linalg.norm(self.local, axis=1)
        # Each body's longest arm to a point of its own (for a bound over all of a side's points).
        self.body_arm = np.zeros(b.count + 1)
        owner_of = np.repeat(np.arange(b.count), np.diff(self.start))
        np.maximum.at(self.body_arm, owner_of, self.arm)
        self.queries = np.zeros((0, 4), np.int64)
        self.sides = np.zeros((0, 3), np.int64)
        self.side_first = np.zeros(1, np.int64)

    def begin_frame(self, pairs: np.ndarray) -> None:
        """The queries (point, owner, target, shape) of the frame's pairs (Q, 3) (body a, body b
        or the world, shape of b): a's points against b's shape and, for two bodies, b's points
        against a's shape."""
        world = self.count
        sides = [pairs[:, :3]]
        both = pairs[(pairs[:, 1] < world)]
        if len(both):
            back = np.stack([both[:, 1], both[:, 0], self.body_shape[both[:, 0]]], axis=1)
            sides.append(back[back[:, 2] >= 0])
        sides = np.concatenate(sides) if len(pairs) else np.zeros((0, 3), np.int64)
        if not len(sides):
            self.queries = np.zeros((0, 4), np.int64)
            self.sides, self.side_first = np.zeros((0, 3), np.int64), np.zeros(1, np.int64)
            return
        counts = self.start[sides[:, 0] + 1] - self.start[sides[:, 0]]
        # A side's queries are contiguous: side k's are side_first[k]:side_first[k + 1].
        self.sides = sides.astype(np.int64)
        self.side_first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        side = np.repeat(np.arange(len(sides)), counts)
        point = np.repeat(self.start[sides[:, 0]], counts) + np.arange(counts.sum()) \
            - np.repeat(np.cumsum(counts) - counts, counts)
        self.queries = np.stack([point, sides[side, 0], sides[side, 1], sides[side, 2]], axis=1).astype(np.int64)

    def run(self, x0, q0, x1, q1, inv_mass) -> bool:
        """Take back, in place on the end poses x1 (B+1, 3) and q1 (B+1, 4), the motion from the
        start poses x0, q0 that would drive a sample point into a shape further than the contacts
        can take back (``CONTACT_DEPTH`` of the thinner shape). inv_mass (B+1,) shares the
        correction between two bodies. Returns whether anything was changed."""
        if not len(self.queries):
            return False
        changed = False
        for _ in range(SWEEP_ROUNDS):
            dx, phi = self.kernels.relative_motion(x0, q0, x1, q1)
            hits = self.kernels.fast_hits(
                self.geo, x0, q0, dx, phi, self.sides, self.side_first, self.queries, self.local, self.radius,
                self.arm, self.body_arm, self.thickness, self.shape_thickness, self.bound, self.count, CONTACT_DEPTH,
                SWEEP_ITERATIONS, SWEEP_BISECTIONS, SWEEP_TOUCH, SWEEP_TURN_SAMPLES)
            # (f, side, p, xo, xt, n, allow, depth, deepest) of each hit; each body takes the one
            # that needs the largest correction, the others wait for the next round, which sees
            # the motion corrected.
            if not len(hits[0]) or not self.kernels.correct_hits(*hits, self.sides, x0, q0, x1, q1, dx, phi,
                                                                 inv_mass, self.bound, self.count):
                break
            changed = True
        return changed
