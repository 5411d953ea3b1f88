"""Contacts of rigid bodies: broad phase once per frame, narrow phase every substep.

Every body carries sample points (box corners, a sphere's centre with its radius, capsule and
cylinder points, hull vertices) at fixed places in its frame: Jakobsen's embedded contact points.
A contact is a sample point of one body inside another body's shape or a collider. The broad
phase (sweep and prune on bounding spheres grown by the motion of one frame) keeps the cost near
linear in the number of bodies; the narrow phase asks each candidate's signed distance.

Shapes: B bodies, k queries, c contacts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..bodies.rigid import RigidBodies, ShapeKind


@dataclass
class Contacts:
    """Active contacts of one substep; body index B (one past the last) is the static world.

    a, b: (c,) bodies (A owns the sample point, B is pushed the other way); local_a: (c, 3) the
    contact point on A in A's frame; local_b: (c, 3) the point on B's surface in B's frame (world
    coordinates when b is the world); normal: (c, 3) world, from B towards A; friction,
    restitution: (c,) combined; key: (c,) which sample point on which target (for friction anchors).
    """

    a: np.ndarray
    b: np.ndarray
    local_a: np.ndarray
    local_b: np.ndarray
    normal: np.ndarray
    friction: np.ndarray
    restitution: np.ndarray
    key: np.ndarray  # (c,) which sample point touches what, the same from substep to substep

    @property
    def count(self) -> int:
        return len(self.a)

    def take(self, order: np.ndarray) -> "Contacts":
        """These contacts in the given order (c,)."""
        return Contacts(*(getattr(self, f)[order] for f in
                          ("a", "b", "local_a", "local_b", "normal", "friction", "restitution", "key")))

    @staticmethod
    def concatenate(parts: list["Contacts"]) -> "Contacts":
        if not parts:
            z = np.zeros(0, np.int64)
            return Contacts(z, z, np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0), z)
        return Contacts(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                          ("a", "b", "local_a", "local_b", "normal", "friction", "restitution", "key")))


def sweep_and_prune(centre: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Pairs (p, 2), i < j, of spheres (centre (B, 3), radius (B,)) that overlap."""
    lo = centre[:, 0] - radius
    order = np.argsort(lo, kind="stable")
    lo_sorted = lo[order]
    hi_sorted = (centre[:, 0] + radius)[order]
    end = np.searchsorted(lo_sorted, hi_sorted, side="right")
    start = np.arange(len(order)) + 1
    counts = np.maximum(end - start, 0)
    if counts.sum() == 0:
        return np.zeros((0, 2), np.int64)
    first = np.repeat(np.arange(len(order)), counts)
    second = np.repeat(start - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    i, j = order[first], order[second]
    d = centre[i] - centre[j]
    close = np.einsum("ij,ij->i", d, d) <= (radius[i] + radius[j]) ** 2
    pairs = np.stack([np.minimum(i, j), np.maximum(i, j)], axis=1)[close]
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def shape_penetration(bodies: RigidBodies, target: np.ndarray, q: np.ndarray, r: np.ndarray,
                      prefer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed penetration of points q (k, 3) (target's body frame, radius r (k,)) into the targets' shapes.

    Returns the outward normal (k, 3) in the body frame and depth (k,) m (> 0 means contact).
    prefer: (k, 3) body-frame direction from the target towards the point's body; where a point
    is about equally deep below two faces (a box corner on a box edge), the face facing that way
    wins, which keeps resting stacks from being pushed sideways.
    """
    rot = bodies.shape_rotation[target]
    qs = np.einsum("kji,kj->ki", rot, q - bodies.shape_offset[target])  # into the shape frame
    ps = np.einsum("kji,kj->ki", rot, prefer)
    params = bodies.shape_params[target]
    kind = bodies.shape[target]
    n = np.zeros_like(q)
    depth = np.full(len(q), -np.inf)
    for shape in np.unique(kind):
        s = np.flatnonzero(kind == shape)
        fn = _SDF[int(shape)]
        ns, ds = fn(qs[s], r[s], params[s], ps[s], bodies.hull_normals[target[s]], bodies.hull_offsets[target[s]])
        n[s], depth[s] = ns, ds
    return np.einsum("kij,kj->ki", rot, n), depth


def _unit(v, fallback):
    length = np.linalg.norm(v, axis=1)
    out = np.tile(fallback, (len(v), 1)).astype(float)
    ok = length > 1e-12
    out[ok] = v[ok] / length[ok, None]
    return out, length


def _sphere(q, r, p, prefer, hn, ho):
    n, length = _unit(q, np.array([0.0, 0.0, 1.0]))
    return n, p[:, 0] + r - length


def _capsule(q, r, p, prefer, hn, ho):
    axis = np.zeros_like(q)
    axis[:, 2] = np.clip(q[:, 2], -p[:, 1], p[:, 1])
    n, length = _unit(q - axis, np.array([1.0, 0.0, 0.0]))
    return n, p[:, 0] + r - length


def _pick_face(score, prefer_score, tolerance):
    """Index of the face with the highest score, ties within tolerance going to the preferred one."""
    best = score.max(axis=1, keepdims=True)
    near = score >= best - tolerance[:, None]
    return np.argmax(np.where(near, prefer_score, -np.inf), axis=1)


EDGE_SNAP = 0.02  # relative to the smallest half extent


def _box(q, r, p, prefer, hn, ho):
    he = p[:, :3]
    a = np.abs(q) - he
    outside = np.any(a > 0.0, axis=1)
    n = np.zeros_like(q)
    depth = np.empty(len(q))
    if np.any(outside):
        qo, ao, ho = q[outside], a[outside], he[outside]
        no, dist = _unit(qo - np.clip(qo, -ho, ho), np.array([0.0, 0.0, 1.0]))
        do = r[outside] - dist
        # A point a hair beyond an edge (an aligned box's corner on this box's edge) has a
        # closest-point normal that swings with every micrometre it moves; take the plane of the
        # face it is beyond that faces the point's body instead, as inside points do.
        edge = (dist < EDGE_SNAP * ho.min(axis=1)) & (np.count_nonzero(ao > 0.0, axis=1) > 1)
        if np.any(edge):
            ae, he_e = ao[edge], ho[edge]
            sign = np.where(qo[edge] >= 0.0, 1.0, -1.0)
            k = np.argmax(np.where(ae > 0.0, prefer[outside][edge] * sign / he_e, -np.inf), axis=1)
            rows = np.arange(len(ae))
            ne = np.zeros_like(ae)
            ne[rows, k] = sign[rows, k]
            no[edge], do[edge] = ne, r[outside][edge] - ae[rows, k]
        n[outside], depth[outside] = no, do
    inside = ~outside
    if np.any(inside):
        qi, ai, hi = q[inside], a[inside], he[inside]
        sign = np.where(qi >= 0.0, 1.0, -1.0)
        k = _pick_face(ai, prefer[inside] * sign / hi, 0.25 * hi.min(axis=1))
        rows = np.arange(len(qi))
        ni = np.zeros_like(qi)
        ni[rows, k] = sign[rows, k]
        n[inside], depth[inside] = ni, r[inside] - ai[rows, k]
    return n, depth


def _cylinder(q, r, p, prefer, hn, ho):
    radius, half = p[:, 0], p[:, 1]
    radial = np.linalg.norm(q[:, :2], axis=1)
    side = radial - radius
    cap = np.abs(q[:, 2]) - half
    rad_dir = np.zeros_like(q)
    ok = radial > 1e-12
    rad_dir[ok, :2] = q[ok, :2] / radial[ok, None]
    rad_dir[~ok, 0] = 1.0
    axial = np.zeros_like(q)
    axial[:, 2] = np.where(q[:, 2] >= 0.0, 1.0, -1.0)
    rim = (side > 0) & (cap > 0)
    use_side = _pick_face(np.stack([side, cap], axis=1),
                          np.stack([np.einsum("ij,ij->i", prefer, rad_dir) / radius,
                                    np.einsum("ij,ij->i", prefer, axial) / half], axis=1),
                          0.02 * np.minimum(radius, half)) == 0
    n = np.where(use_side[:, None], rad_dir, axial)
    dist = np.where(use_side, side, cap)
    if np.any(rim):
        v = rad_dir[rim] * side[rim, None] + axial[rim] * cap[rim, None]
        dist[rim] = np.linalg.norm(v, axis=1)
        n[rim] = v / dist[rim, None]
    return n, r - dist


def _hull(q, r, p, prefer, hn, ho):
    dist = np.einsum("kfj,kj->kf", hn, q) - ho
    size = np.sqrt(np.maximum(np.einsum("kf->k", np.where(np.isfinite(ho), ho * ho, 0.0))
                              / np.maximum(np.isfinite(ho).sum(axis=1), 1), 1e-24))
    k = _pick_face(dist, np.einsum("kfj,kj->kf", hn, prefer), 0.02 * size)
    rows = np.arange(len(q))
    return hn[rows, k], r - dist[rows, k]


_SDF = {ShapeKind.SPHERE: _sphere, ShapeKind.BOX: _box, ShapeKind.CAPSULE: _capsule,
        ShapeKind.CYLINDER: _cylinder, ShapeKind.CONVEX_HULL: _hull}
