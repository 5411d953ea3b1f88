"""Self-collision of cloth: its vertices against its own non-adjacent triangles, and its edges
against its own edges; and of every such cloth (or soft body) with every other one.

Every substep, after the constraint iterations and again after the contacts with colliders (the
ground pushing a pile of layers squeezes them through each other otherwise), each vertex of a
surface with ``self_collision`` on is kept ``self_distance`` away from that surface's triangles,
except the ones it is part of or next to in the mesh: the triangles of the vertex itself and of
its edge neighbours, and any triangle closer than the self distance to it at rest (a fine mesh
whose edges are shorter than the distance: those could never be held that far apart without
stretching).

Continuous: which side of a triangle the vertex must end the substep on is the side it was on
at the start (``x_prev``), unless it passed the triangle's plane beside the triangle, so a
vertex that moved further than the distance in one substep (a falling layer onto another) is
put back on its own side rather than pushed on through. The candidate pairs come from the boxes
of a substep's motion and are kept while no vertex has moved half a skin since (a Verlet list),
so nothing can come within the distance unseen, however fast the frame; a cloth at rest finds
them once.

Edge-edge: two edges that share no end (and were at least the distance apart at rest, and, if
inner neighbours across a triangle, ``RING_APART`` distances) are kept the distance apart on the
side of each other they started the substep on, along their common normal, unless one passed the
other's line round an end rather than through it; so two strips of cloth crossing like sticks,
where no vertex ever comes near a triangle of the other, cannot pass through each other either.
Their candidate pairs are found in the same grid of the triangles' boxes (a triangle's box holds
its edges'), kept by the same Verlet list, and pushed in the same Gauss-Seidel passes (the edge
pairs first in each pass, then the vertex-triangle ones).

The kernels are ``backend.self_contact.find_pairs``, ``find_edge_pairs`` (both at once:
``find_all_pairs``, one grid for the two) and ``project`` (see the numpy reference).
"""

from __future__ import annotations

import numpy as np

# Gauss-Seidel passes over the pairs per substep: the second (over the pairs the first pushed)
# settles the vertices held between two layers of a pile, which the first leaves pushed by
# whichever pair came last.
PASSES = 2
# The pairs are kept over several substeps (a Verlet list): those within the distance plus
# a skin (in self distances) when found. Until some vertex has moved half the skin since (beyond
# what all share), no other pair can have come within the distance, nor passed through. The
# thicker the skin, the fewer the searches (a falling fold searched every substep at 0.25, every
# second or third at 0.75) but the more pairs kept: the skin is the thickest of SKINS that keeps
# no more than REST_CANDIDATES pairs a vertex on the cloth at rest, its reach grown by SQUEEZE
# (a fine mesh, whose next neighbours lie within a thick skin, gets a thin one).
SKINS = (0.75, 0.5, 0.25)
REST_CANDIDATES = 0.5
SQUEEZE = 1.2
# Edges kept apart from edges too (False only to measure what that costs, or what it prevents).
EDGE_EDGE = True
# Pairs closer than this many self distances at rest are never held apart (they could not be
# without stretching the cloth).
REST_APART = 1.0
# Two inner edges (each of two triangles or more) across a triangle from each other (an end p of
# one is the corner opposite the other in one of its triangles) closer than this many self
# distances at rest are never held apart either: the triangle holds p apart from the other edge,
# and the first edge's other end is held off it by the vertex-triangle pairs with the other
# edge's second triangle; while a thick skin (SKINS) would keep every such pair of a fine mesh
# as a candidate. Edges on the border (the long sides of a strip one quad wide, which nothing
# else keeps from folding through each other) and those further apart are held as any pair.
RING_APART = SQUEEZE * (1.0 + SKINS[0])


def point_triangle_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(k,) m: the distance of each point p (k, 3) from its triangle (a, b, c), nearest point
    (inside, or on an edge)."""
    e1, e2, q = b - a, c - a, p - a
    n = np.cross(e1, e2)
    nn = np.einsum("ij,ij->i", n, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        wb = np.einsum("ij,ij->i", q, np.cross(e2, n)) / nn
        wc = np.einsum("ij,ij->i", q, np.cross(n, e1)) / nn
        inside = (wb >= 0) & (wc >= 0) & (wb + wc <= 1)
        best = np.where(inside, np.abs(np.einsum("ij,ij->i", q, n)) / np.sqrt(nn), np.inf)
        for s, e in ((a, b), (b, c), (c, a)):
            d = e - s
            f = np.clip(np.einsum("ij,ij->i", p - s, d) / np.einsum("ij,ij->i", d, d), 0.0, 1.0)
            best = np.minimum(best, np.linalg.norm(p - (s + np.nan_to_num(f)[:, None] * d), axis=1))
    return best


def _csr(owner: np.ndarray, tris: np.ndarray, nv: int, nt: int) -> tuple[np.ndarray, np.ndarray]:
    keys = np.unique(owner * nt + tris)
    owner, tris = keys // nt, keys % nt
    start = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=nv))]).astype(np.int64)
    return start, tris.astype(np.int64)


def near_triangles(triangles: np.ndarray, vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per vertex (of ``vertices``, sorted particle indices) the triangles of the vertex and of its
    edge neighbours. CSR: (start (v + 1,), triangles ascending)."""
    local = np.searchsorted(vertices, triangles)  # (t, 3) into vertices
    nv, nt = len(vertices), len(triangles)
    edges = np.concatenate([local[:, [0, 1]], local[:, [1, 2]], local[:, [2, 0]]])
    edges = np.concatenate([edges, edges[:, ::-1], np.stack([np.arange(nv)] * 2, axis=1)])
    edges = np.unique(edges, axis=0)  # (vertex, itself or a neighbour)
    # Triangles of each vertex: CSR by vertex.
    corner_v = local.ravel()
    corner_t = np.repeat(np.arange(nt, dtype=np.int64), 3)
    order = np.argsort(corner_v, kind="stable")
    inc_t = corner_t[order]
    inc_start = np.concatenate([[0], np.cumsum(np.bincount(corner_v, minlength=nv))])
    counts = inc_start[edges[:, 1] + 1] - inc_start[edges[:, 1]]
    owner = np.repeat(edges[:, 0], counts)
    first = np.repeat(inc_start[edges[:, 1]], counts)
    offset = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    return _csr(owner, inc_t[first + offset], nv, nt)


def across_a_triangle(triangles: np.ndarray, edges: np.ndarray, tri_edges: np.ndarray, ea: np.ndarray,
                      eb: np.ndarray) -> np.ndarray:
    """(k,) bool: whether edges ea and eb (into ``edges``; sharing no end) are neighbours across a
    triangle: an end of one is the corner of a triangle of the other opposite it."""
    # Each edge's opposite corners (one a triangle; two on a manifold's inner edges), CSR.
    opposite = np.concatenate([triangles[:, 2], triangles[:, 0], triangles[:, 1]])  # of (0, 1), (1, 2), (2, 0)
    owner = np.concatenate([tri_edges[:, 0], tri_edges[:, 1], tri_edges[:, 2]])
    order = np.argsort(owner, kind="stable")
    opposite = opposite[order]
    start = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=len(edges)))])
    out = np.zeros(len(ea), bool)
    for one, other in ((ea, eb), (eb, ea)):
        counts = start[other + 1] - start[other]
        pair = np.repeat(np.arange(len(one)), counts)
        offset = np.arange(len(pair)) - np.repeat(np.cumsum(counts) - counts, counts)
        corner = opposite[np.repeat(start[other], counts) + offset]
        hit = (corner == edges[one[pair], 0]) | (corner == edges[one[pair], 1])
        out[pair[hit]] = True
    return out


def unique_edges(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The edges of the triangles (e, 2) (each once, lower particle first, in ascending order) and
    each triangle's three edges (t, 3) into them."""
    pairs = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    pairs = np.sort(pairs, axis=1)
    edges, inverse = np.unique(pairs, axis=0, return_inverse=True)
    nt = len(triangles)
    tri_edges = np.stack([inverse[:nt], inverse[nt:2 * nt], inverse[2 * nt:]], axis=1)
    return np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2), \
        np.ascontiguousarray(tri_edges, dtype=np.int64).reshape(-1, 3)


class SelfContacts:
    """The self-collision of every surface with ``self_collision`` on (see ``Model.surfaces``).

    edge_edge: whether edges are kept apart from edges too (default ``EDGE_EDGE``)."""

    def __init__(self, model, backend, edge_edge: bool | None = None) -> None:
        self.model = model
        self.kernels = backend.self_contact
        s = model.surfaces
        on = s.self_collision[s.surface] if len(s.triangles) else np.zeros(0, bool)
        self.triangles = np.ascontiguousarray(s.triangles[on], dtype=np.int64)
        self.vertices = np.unique(self.triangles).astype(np.int64)
        # Surfaces with self-collision on collide with each other too (two cloths, a soft body
        # dropped in a hammock): one pool, held apart by the largest of their distances. (Each
        # on its own, a sheet dropped on another ended in its plane, and a jelly fell through a
        # hammock.) The kernels' "surface" is then the pool: 0 for every item.
        self.tri_surface = np.zeros(len(self.triangles), np.int64)
        self.vert_surface = np.zeros(len(self.vertices), np.int64)
        on_surfaces = np.flatnonzero(np.asarray(s.self_collision, bool))
        distance = np.array([float(np.max(np.asarray(s.self_distance, dtype=np.float64)[on_surfaces]))
                             if len(on_surfaces) else 0.0])
        self.distance = distance
        self.reference = None  # the positions the pairs were found at
        self.friction = np.ascontiguousarray(model.friction, dtype=np.float64)
        # The triangles each vertex never collides with: its own and its neighbours', and those
        # within the distance of it at rest (found as a substep's pairs would be, standing still).
        start, tris = near_triangles(self.triangles, self.vertices)
        self.near_start, self.near_tris = start, tris
        rest = np.ascontiguousarray(model.rest_positions, dtype=np.float64)
        apart = REST_APART * distance
        pv, pt = self.kernels.find_pairs(rest, rest, self.triangles, self.tri_surface, self.vertices,
                                         self.vert_surface, apart, start, tris)
        if len(pv):
            t = self.triangles[pt]
            close = point_triangle_distance(rest[self.vertices[pv]], rest[t[:, 0]], rest[t[:, 1]], rest[t[:, 2]]) \
                < apart[self.vert_surface[pv]]
            owner = np.concatenate([np.repeat(np.arange(len(self.vertices)), np.diff(start)), pv[close]])
            self.near_start, self.near_tris = _csr(owner, np.concatenate([tris, pt[close]]), len(self.vertices),
                                                   len(self.triangles))
        self.pair_v = np.zeros(0, np.int64)
        self.pair_t = np.zeros(0, np.int64)
        # Edge-edge: the edges of those triangles; an edge never collides with one sharing an end
        # (the kernels skip those) nor with one closer than the distance to it at rest.
        if EDGE_EDGE if edge_edge is None else edge_edge:
            self.edges, self.tri_edges = unique_edges(self.triangles)
        else:
            self.edges, self.tri_edges = np.zeros((0, 2), np.int64), np.zeros((len(self.triangles), 3), np.int64)
        self.edge_surface = np.zeros(len(self.edges), np.int64)
        ne = len(self.edges)
        self.near_edge_start = np.zeros(ne + 1, np.int64)
        self.near_edges = np.zeros(0, np.int64)
        if ne:
            # At rest (x = x_prev) the kernel's pairs are exactly those within its reach: those
            # within the distance, and the neighbours across a triangle within RING_APART.
            ea, eb = self.kernels.find_edge_pairs(rest, rest, self.triangles, self.tri_edges, self.edges,
                                                  self.edge_surface, apart, self.near_edge_start, self.near_edges)
            ra, rb = self.kernels.find_edge_pairs(rest, rest, self.triangles, self.tri_edges, self.edges,
                                                  self.edge_surface, RING_APART * distance, self.near_edge_start,
                                                  self.near_edges)
            inner = np.bincount(self.tri_edges.ravel(), minlength=ne) >= 2
            ring = inner[ra] & inner[rb] & across_a_triangle(self.triangles, self.edges, self.tri_edges, ra, rb)
            ea, eb = np.concatenate([ea, ra[ring]]), np.concatenate([eb, rb[ring]])
            self.near_edge_start, self.near_edges = _csr(np.concatenate([ea, eb]), np.concatenate([eb, ea]), ne, ne)
        self.pair_a = np.zeros(0, np.int64)
        self.pair_b = np.zeros(0, np.int64)
        self.pair_ed = np.zeros(0, np.float64)
        self.pair_d = np.zeros(0, np.float64)
        self.skin = self._choose_skin(rest)
        self.reach = distance + self.skin

    def _choose_skin(self, rest: np.ndarray) -> np.ndarray:
        """The skin (m, per surface): the thickest of SKINS whose reach, grown by SQUEEZE, finds
        no more than REST_CANDIDATES pairs a vertex on the cloth at rest."""
        for factor in SKINS[:-1]:
            reach = SQUEEZE * (1.0 + factor) * self.distance
            if len(self.edges):
                pv, _, pa, _ = self.kernels.find_all_pairs(
                    rest, rest, self.triangles, self.tri_surface, self.vertices, self.vert_surface, self.tri_edges,
                    self.edges, self.edge_surface, reach, self.near_start, self.near_tris, self.near_edge_start,
                    self.near_edges)
                found = len(pv) + len(pa)
            else:
                found = len(self.kernels.find_pairs(rest, rest, self.triangles, self.tri_surface, self.vertices,
                                                    self.vert_surface, reach, self.near_start, self.near_tris)[0])
            if found <= REST_CANDIDATES * len(self.vertices):
                return factor * self.distance
        return SKINS[-1] * self.distance

    def begin_frame(self, positions: np.ndarray, previous_positions: np.ndarray, frame_time: float,
                    substeps: int) -> None:
        """Once per frame, before its substeps. Nothing to guess: the pairs are found again in
        the substep in which some vertex has moved too far for them (``solve``), which a
        frame's guess at the motion could not promise."""

    def find_pairs(self, x: np.ndarray, x_prev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The candidate (vertex, triangle) pairs of a substep from x_prev to x: pair_v indexes
        ``vertices``, pair_t ``triangles``."""
        return self.kernels.find_pairs(x, x_prev, self.triangles, self.tri_surface, self.vertices,
                                       self.vert_surface, self.reach, self.near_start, self.near_tris)

    def find_edge_pairs(self, x: np.ndarray, x_prev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The candidate (edge, edge) pairs of a substep from x_prev to x, into ``edges``, the
        first below the second."""
        return self.kernels.find_edge_pairs(x, x_prev, self.triangles, self.tri_edges, self.edges, self.edge_surface,
                                            self.reach, self.near_edge_start, self.near_edges)

    def solve(self, x: np.ndarray, x_prev: np.ndarray, inverse_masses: np.ndarray) -> None:
        """Once per substep, after the constraint iterations: x_prev holds the positions at the
        start of the substep."""
        if not len(self.triangles):
            return
        if self.reference is None or self.kernels.moved_beyond(x, self.reference, self.vertices,
                                                               0.5 * float(self.skin.min())):
            if len(self.edges):
                # Both kinds in one call (the compiled backend's grids of the boxes).
                self.pair_v, self.pair_t, self.pair_a, self.pair_b = self.kernels.find_all_pairs(
                    x, x_prev, self.triangles, self.tri_surface, self.vertices, self.vert_surface, self.tri_edges,
                    self.edges, self.edge_surface, self.reach, self.near_start, self.near_tris,
                    self.near_edge_start, self.near_edges)
                self.pair_ed = self.distance[self.edge_surface[self.pair_a]]
            else:
                self.pair_v, self.pair_t = self.find_pairs(x, x_prev)
            self.pair_d = self.distance[self.vert_surface[self.pair_v]]
            self.reference = x.copy()
        if len(self.pair_v) or len(self.pair_a):
            self.kernels.project(x, x_prev, inverse_masses, self.friction, self.triangles, self.vertices, self.pair_v,
                                 self.pair_t, self.pair_d, self.edges, self.pair_a, self.pair_b, self.pair_ed, PASSES)
