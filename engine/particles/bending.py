"""Bending hinges: one per edge shared by two faces, a linear measure of the fold across it.

Until 2026-12-07 a cloth's bending was a stick across each edge (Jakobsen's skip-one distance).
A stick across a flat sheet does not change its length to first order when the sheet folds (it
shortens by about fold^2 / 8), so it cannot hold a fold up: a 0.45 m strip clamped level at one
end hung 474 mm down at Bending 0.05 and 464 mm at rigid bending, and every preset draped alike.

A hinge measures the fold linearly (in the spirit of Bergou et al. 2006, "A quadratic bending
model for inextensible surfaces"): the edge's point where, at rest, the line between the two
faces' far sides crosses it, less that line's point there,

    v = (1 - t) x_u + t x_w - (1 - s) q_A - s q_B,

q_A and q_B the midpoints of each face's two vertices next to the edge (a triangle's far
corner). Flat, v = 0; folded by a small angle theta, |v| = theta h_A h_B / (h_A + h_B) (h the
far sides' distances from the edge), so the hinge resists the first degree of a fold. It is an
XPBD constraint holding v to its rest (zero for a flat sheet; a mesh modelled curved keeps its
curve, held by a spring on |v|: ``Solver._hinge_targets``), its weights K on its (up to) six
vertices constant, so its gradient is K_i whatever the shape: the constraint is linear and its
projection exact. It moves no centre of mass (the weights sum to nothing) and turns nothing
while its multiplier lies along v (sum x_i x K_i lam = v x lam).

Its stiffness comes from a bending stiffness B (N m: moment per unit of curvature, per unit of
width, as a plate's E t^3 / 12): the energy of a fold theta across an edge e is
B theta^2 |e|^2 / (2 A_e), A_e the faces' areas shared out over their edges (half of each
quad's; of each triangle's, TRIANGLE_SHARE, where the discrete shells of Grinspun et al. 2003
take a third), so a sheet's droop under its weight is the plate's, a strip clamped level at one
end drooping q L^4 / 8B at its tip (within 1.5% on quads and equilateral triangles; right
triangles 0.92-1.3 times by their shape).
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry.reproducible import matmul, symmetric_eigen3
from .cloth import _corner_links

# Vertices a hinge can take: the edge's two, and two for each face's far side (a quad's; a
# triangle's far corner is one, and the places left over point at the edge's first end with no
# weight, which changes nothing and shares no particle with another hinge).
HINGE_WIDTH = 6
# A hinge chain's banded solve couples each hinge with this many after it: a grid's row of quads
# shares a vertex over three hinges, a strip of triangles over up to five (a vertex's fan).
HINGE_BAND = 4
# See hinge_stencils: the share of a triangle's area its edges' hinges each stand for, so that a
# clamped strip of triangles bends as the plate (equilateral: 0.99 of its droop; a grid cut
# along diagonals: 1.08, either way).
TRIANGLE_SHARE = 0.9


def hinge_stencils(verts: np.ndarray, corners: np.ndarray, starts: np.ndarray) -> dict[str, np.ndarray]:
    """The hinges of a polygon mesh (local vertex indices).

    Returns index (k, HINGE_WIDTH) int64 and weight (k, HINGE_WIDTH) (the K above; entries of
    one vertex merged); across (k, HINGE_WIDTH): q_B - q_A = sum across x, which with the edge
    gives the hinge's frame; rest (k, 3) m, v at rest in that frame (``local_folds``);
    per_stiffness (k,) 1/m^2: the hinge's stiffness, N/m of fold, for a bending stiffness of
    1 N m; lever (k,) m: h_A h_B / (h_A + h_B), so that a fold's change is about
    |v - rest| / lever radians; edge (k, 2): the edge's two vertices; faces (k, 2) the two
    faces and slots (k, 2) the edge's place in each (its first corner, from the face's first).
    Edges of one face, and folds too thin to measure (a face of no width), get no hinge.
    """
    verts = np.asarray(verts, dtype=np.float64)
    empty = {"index": np.zeros((0, HINGE_WIDTH), np.int64), "weight": np.zeros((0, HINGE_WIDTH)),
             "across": np.zeros((0, HINGE_WIDTH)), "rest": np.zeros((0, 3)), "per_stiffness": np.zeros(0),
             "lever": np.zeros(0), "edge": np.zeros((0, 2), np.int64), "faces": np.zeros((0, 2), np.int64),
             "slots": np.zeros((0, 2), np.int64)}
    if not len(corners):
        return empty
    nxt, prv, face_of, sizes = _corner_links(corners, starts)
    u, w = corners, corners[nxt]
    pu, pw = corners[prv], corners[nxt[nxt]]
    key_lo, key_hi = np.minimum(u, w), np.maximum(u, w)
    order = np.lexsort((face_of, key_hi, key_lo))
    same = (key_lo[order][1:] == key_lo[order][:-1]) & (key_hi[order][1:] == key_hi[order][:-1])
    a, b = order[:-1][same], order[1:][same]
    if not len(a):
        return empty
    # Each face's area (Newell's vector area), shared out over its edges.
    p0 = verts[corners]
    p1 = verts[corners[nxt]]
    vector_area = np.stack([np.bincount(face_of, np.cross(p0, p1)[:, c], minlength=len(starts)) for c in range(3)],
                           axis=1) * 0.5
    # How much of each face's area each of its edges' hinges stands for. A quad's half: each of
    # its two edge directions folds across two of its edges (a quarter each bent a clamped
    # strip twice as stiffly as the plate). A triangle's TRIANGLE_SHARE: a third each (the
    # discrete-shells weight of Grinspun et al. 2003) bent strips of equilateral and of right
    # triangles 2.75 and 2.5 times as stiffly as the plate, folding across edges that do not
    # lie along the bend. (Bergou et al. 2006's cotangent weights with their 3 / (A_A + A_B)
    # bent them 2.7 times as stiffly as these, as much by the triangles' shape.) A larger
    # face's 2 / k.
    share = np.linalg.norm(vector_area, axis=1) * np.where(sizes == 3, TRIANGLE_SHARE, 2.0 / sizes)
    eu, ew = u[a], w[a]
    xu, xw = verts[eu], verts[ew]
    qa = 0.5 * (verts[pu[a]] + verts[pw[a]])
    qb = 0.5 * (verts[pu[b]] + verts[pw[b]])
    e = xw - xu
    e_len2 = np.einsum("ij,ij->i", e, e)
    # The closest points of the edge's line (t) and the segment q_A q_B (s), at rest.
    d = qb - qa
    r = xu - qa
    dd = np.einsum("ij,ij->i", d, d)
    ed = np.einsum("ij,ij->i", e, d)
    er = np.einsum("ij,ij->i", e, r)
    dr = np.einsum("ij,ij->i", d, r)
    den = e_len2 * dd - ed * ed
    ok = (e_len2 > 0.0) & (den > 1e-12 * np.maximum(e_len2 * dd, 1e-300))
    den = np.where(ok, den, 1.0)
    s = np.clip((e_len2 * dr - ed * er) / den, 0.0, 1.0)
    t = (ed * s - er) / np.where(e_len2 > 0.0, e_len2, 1.0)
    # The far sides' distances from the edge's line.
    def height(q):
        rel = q - xu
        along = np.einsum("ij,ij->i", rel, e) / np.where(e_len2 > 0.0, e_len2, 1.0)
        return np.linalg.norm(rel - along[:, None] * e, axis=1)

    ha, hb = height(qa), height(qb)
    size = np.sqrt(e_len2)
    ok &= (ha > 1e-6 * size) & (hb > 1e-6 * size)
    lever = np.where(ok, ha * hb / np.where(ok, ha + hb, 1.0), 1.0)
    area = share[face_of[a]] + share[face_of[b]]
    ok &= area > 0.0
    index = np.stack([eu, ew, pu[a], pw[a], pu[b], pw[b]], axis=1)
    weight = np.stack([1.0 - t, t, -0.5 * (1.0 - s), -0.5 * (1.0 - s), -0.5 * s, -0.5 * s], axis=1)
    half = np.full(len(a), 0.5)
    across = np.stack([0.0 * half, 0.0 * half, -half, -half, half, half], axis=1)  # q_B - q_A
    index, weight, across = index[ok], weight[ok], across[ok]
    # One entry a vertex (a triangle's far corner is both of its side's): the solve sums w K^2
    # over distinct vertices.
    for col in range(1, HINGE_WIDTH):
        for prev in range(col):
            dup = (index[:, col] == index[:, prev]) & ((weight[:, col] != 0.0) | (across[:, col] != 0.0))
            if np.any(dup):
                weight[dup, prev] += weight[dup, col]
                across[dup, prev] += across[dup, col]
                weight[dup, col] = 0.0
                across[dup, col] = 0.0
                index[dup, col] = index[dup, 0]
    rest = local_folds(verts, index, weight, across)
    # (a flat mesh's folds are rounding: exactly 0 lets the solve skip the hinge's frame)
    rest[np.linalg.norm(rest, axis=1) <= 1e-9 * lever[ok]] = 0.0
    per_stiffness = (e_len2[ok] / area[ok]) / (lever[ok] * lever[ok])
    return {"index": index.astype(np.int64), "weight": weight, "across": across, "rest": rest,
            "per_stiffness": per_stiffness, "lever": lever[ok],
            "edge": np.stack([eu[ok], ew[ok]], axis=1).astype(np.int64),
            "faces": np.stack([face_of[a], face_of[b]], axis=1)[ok].astype(np.int64),
            "slots": np.stack([a - starts[face_of[a]], b - starts[face_of[b]]], axis=1)[ok].astype(np.int64)}


def hinge_frames(x: np.ndarray, index: np.ndarray, across: np.ndarray) -> np.ndarray:
    """(k, 3, 3) each hinge's frame, rows: along its edge, across it in the faces' mean plane,
    and their normal (edge x (q_B - q_A)); zero rows where the hinge is folded flat on itself."""
    e = x[index[:, 1]] - x[index[:, 0]]
    d = np.einsum("kc,kcd->kd", across, x[index])
    n = np.cross(e, d)

    def unit(a):
        size = np.linalg.norm(a, axis=1)
        return a / np.where(size > 0.0, size, 1.0)[:, None] * (size > 0.0)[:, None]

    e, n = unit(e), unit(n)
    return np.stack([e, np.cross(n, e), n], axis=1)


def fold_vectors(x: np.ndarray, index: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """(k, 3) each hinge's v = sum weight x, m."""
    return np.einsum("kc,kcd->kd", weight, x[index])


def local_folds(x: np.ndarray, index: np.ndarray, weight: np.ndarray, across: np.ndarray) -> np.ndarray:
    """(k, 3) each hinge's v in its own frame (``hinge_frames``); the last is the fold, m."""
    return np.einsum("kij,kj->ki", hinge_frames(x, index, across), fold_vectors(x, index, weight))




def _links(faces, slots, corners, starts, positions, direction, second: bool = False) -> np.ndarray:
    """link (k, 2): the hinge that continues hinge h through its face on side s (-1: none).

    Through a quad: across to the opposite edge (both pairs; none when second). Through a
    triangle: across the two edges a line along ``direction`` (a unit vector) through its
    centroid crosses, so the chains of a triangle mesh run along it (on a grid cut along
    diagonals, along a row: edge, diagonal, edge, ...)."""
    k = len(faces)
    sizes = np.diff(np.append(starts, len(corners)))
    table = np.full((len(starts), 4), -1, np.int64)  # (face, slot) -> hinge * 2 + side
    small = sizes[faces] <= 4
    for side in (0, 1):
        sel = np.flatnonzero(small[:, side])
        table[faces[sel, side], slots[sel, side]] = sel * 2 + side
    link = np.full((k, 2), -1, np.int64)

    def join(entry_a, entry_b):
        both = (entry_a >= 0) & (entry_b >= 0)
        ea, eb = entry_a[both], entry_b[both]
        link[ea // 2, ea % 2] = eb // 2
        link[eb // 2, eb % 2] = ea // 2

    quads = np.flatnonzero(sizes == 4)
    if not second:
        join(table[quads, 0], table[quads, 2])
        join(table[quads, 1], table[quads, 3])
    tris = np.flatnonzero(sizes == 3)
    if len(tris):
        # The two edges a line along ``direction`` (in the triangle's plane) through its centroid
        # crosses: the corners on either side of that line.
        c = corners[starts[tris][:, None] + np.arange(3)]
        p = positions[c]
        normal = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
        normal /= np.maximum(np.linalg.norm(normal, axis=1), 1e-300)[:, None]
        g = direction[None, :] - (normal @ direction)[:, None] * normal
        centre = p.mean(axis=1)
        side = np.einsum("fkd,fd->fk", np.cross(p - centre[:, None, :], g[:, None, :]), normal) >= 0.0
        # (the corner alone on its side is the one between the two crossed edges: slots k - 1, k)
        alone = np.where(side.sum(axis=1) == 1, np.argmax(side, axis=1), np.argmin(side, axis=1))
        flat = np.linalg.norm(g, axis=1) < 1e-6  # (the triangle faces along the direction: none)
        for n in range(3):
            sel = tris[(alone == n) & ~flat]
            join(table[sel, (n + 2) % 3], table[sel, n])
    return link


def chain_directions(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two directions a triangle mesh's two families of hinge chains run along: its two
    widest spreads (principal axes, the same bits on every numpy), along the rows and columns of
    a rectangle cut into triangles. (Turned from a grid's lines, the chains run in steps: a
    strip of triangles of 2 x 1 cut along diagonals, its chains crossing the edges most across
    a line 17 degrees off its length, hung 7 times lower than the plate.)"""
    p = positions - positions.mean(axis=0)
    _, axes = symmetric_eigen3(matmul(p.T, p))
    return np.ascontiguousarray(axes[:, 2]), np.ascontiguousarray(axes[:, 1])  # (eigenvalues ascending)


def hinge_chains(hinges: dict, corners, starts, positions, movable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hinges cut into chains (``particles.chains`` does the same for sticks): a grid's
    hinges across its columns' edges run along its rows, each row a chain, and the linearised
    system of a chain is banded (a hinge shares vertices with the next few), so it is solved
    exactly at once. Why: a fold's moment is carried from hinge to hinge, and a colour-by-colour
    sweep moves it one hinge a pass; a strip clamped level at one end needed thousands of passes
    to stand (a 4.5 cm strip of 10 hinges at 1e-3 N m: 41 mm down at one pass a substep, 1.2 at
    a thousand, against the plate's 1.0).

    Through a quad a chain runs on across the opposite edge. Through a triangle it crosses the
    two edges a line through its centroid along the mesh's widest spread crosses, and a second
    family of chains those along the next widest (``_links``, ``chain_directions``; a triangle
    mesh's hinges are solved in both). So a grid
    cut into triangles, either way, or a mesh of equilateral triangles, has straight chains
    both ways. (With each triangle's two most nearly parallel edges linked, a triangulated
    grid's diagonals tied, its chains zigzagged and ended within a few hinges, and a strip of
    triangles clamped at one end hung 40 times lower than the plate.)

    Returns chain_hinges (P,) the hinges in chain order (a hinge of a triangle mesh can come
    twice, once in each family), chain_offsets (c + 1,) into it and group_of (c,): the group of
    each chain (chains of one group share no movable vertex; the second family's groups after
    the first's). A chain is cut where a hinge would share a movable vertex with one more than
    HINGE_BAND before it (the banded solve would leave that coupling out)."""
    index, weight, across = hinges["index"], hinges["weight"], hinges["across"]
    k = len(index)
    if not k:
        return np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64)
    used = (weight != 0.0) | (across != 0.0)
    rows = index.tolist()
    live = (movable[index] & used).tolist()
    families = []
    directions = chain_directions(positions)
    for second in (False, True):
        link = _links(hinges["faces"], hinges["slots"], corners, starts, positions, directions[int(second)], second)
        if second and not np.any(link >= 0):
            break
        chains = _walk_chains(link, rows, live)
        if second:
            chains = [c for c in chains if len(c) > 1]
        families.append(chains)
    order: list[int] = []
    lengths: list[int] = []
    groups: list[np.ndarray] = []
    base = 0
    for chains in families:
        group = _group_chains(chains, rows, live)
        # Chains in group order (within a group in the order found: the same every build).
        by = np.argsort(group, kind="stable")
        for c in by.tolist():
            order += chains[c]
            lengths.append(len(chains[c]))
        groups.append(group[by] + base)
        base += int(group.max()) + 1 if len(group) else 0
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return np.array(order, np.int64), offsets, np.concatenate(groups).astype(np.int64)


def _walk_chains(link: np.ndarray, rows, live) -> list[list[int]]:
    """The paths of ``link`` (each hinge on one), cut where a hinge shares a movable vertex with
    one more than HINGE_BAND before it, and loops cut anywhere."""
    k = len(link)
    seen = np.zeros(k, bool)
    chains: list[list[int]] = []

    def walk(first: int) -> None:
        chain: list[int] = []
        first_at: dict[int, int] = {}  # where each movable vertex first came in the chain
        prev, h = -1, first
        while h >= 0 and not seen[h]:
            m = len(chain)
            if any(first_at.get(p, m) < m - HINGE_BAND for p, on in zip(rows[h], live[h]) if on):
                chains.append(chain)
                chain, first_at, m = [], {}, 0
            seen[h] = True
            chain.append(h)
            for p, on in zip(rows[h], live[h]):
                if on:
                    first_at.setdefault(p, m)
            nxt = int(link[h, 0]) if int(link[h, 0]) != prev else int(link[h, 1])
            if int(link[h, 0]) == int(link[h, 1]):  # (a loop of two)
                nxt = -1
            prev, h = h, nxt
        chains.append(chain)

    for h in np.flatnonzero(np.any(link < 0, axis=1)).tolist():
        if not seen[h]:
            walk(h)
    for h in range(k):  # what is left runs in loops (a tube's rows): cut anywhere
        if not seen[h]:
            walk(h)
    return [c for c in chains if c]


def _group_chains(chains: list[list[int]], rows, live) -> np.ndarray:
    """Greedy colouring of chains: no movable vertex in two chains of one group."""
    used: dict[int, int] = {}
    out = np.zeros(len(chains), np.int64)
    for c, chain in enumerate(chains):
        verts = {p for h in chain for p, on in zip(rows[h], live[h]) if on}
        taken = 0
        for p in verts:
            taken |= used.get(p, 0)
        g = (~taken & (taken + 1)).bit_length() - 1
        out[c] = g
        bit = 1 << g
        for p in verts:
            used[p] = used.get(p, 0) | bit
    return out


def yield_angle(limit: float) -> float:
    """The change of a fold (rad) beyond which a plastic surface's hinge takes a new rest: the
    fold that would shorten a stick across the edge by the plastic limit (as the bend sticks
    across edges yielded before the hinges: a limit of 0.05 yields beyond 36 degrees)."""
    return 2.0 * math.acos(max(1.0 - min(float(limit), 2.0), -1.0)) if math.isfinite(limit) else math.inf
