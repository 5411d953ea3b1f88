"""Wheels found from geometry, for Create Vehicle: a wheel's hub, axle, radius and width from its
vertices, a mesh split into its wheels, and the layout of a car's wheels (which way is forward,
which axle is the front one, which wheel is on the left). No bpy here: testable without Blender.

Everything is found from the vertices in world space, never from an object's local axes (an
imported wheel's axes are whatever its exporter left).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jakobsen_engine import JakobsenError

UP = np.array([0.0, 0.0, 1.0])

# A chassis-local axis by name (the vehicle's Forward setting) -> (column of the chassis' rotation, sign).
AXES = {'POS_X': (0, 1.0), 'NEG_X': (0, -1.0), 'POS_Y': (1, 1.0), 'NEG_Y': (1, -1.0),
        'POS_Z': (2, 1.0), 'NEG_Z': (2, -1.0)}
# The front by convention, when the wheelbase lies along that chassis-local axis: Blender's front
# view looks at an object's -Y side (and -X for a model lying along X); glTF's front is +Z, which
# is where a Y-up model under its import's rotation Empty has it.
CONVENTIONAL_FRONT = ('NEG_Y', 'NEG_X', 'POS_Z')

# Axles at most this far from parallel belong to one car (the wheels of a steered car, modelled
# straight, are parallel; 15 degrees allows for camber and toe).
PARALLEL_DEGREES = 15.0
# Parts of a mesh whose bounding boxes come this close (relative to the mesh's size) are one wheel.
TOUCH = 1e-6
_BLOCK = 512  # parts compared against all the others at once


@dataclass(frozen=True)
class Wheel:
    """hub: (3,) world centre of the wheel; axle: (3,) unit direction (either sign); radius: the
    largest distance of a vertex from the axle line; width: the extent along the axle."""

    hub: np.ndarray
    axle: np.ndarray
    radius: float
    width: float

    @property
    def volume(self) -> float:
        return float(np.pi * self.radius ** 2 * self.width)


def _distance_from_line(points: np.ndarray, centre: np.ndarray, axis: np.ndarray) -> np.ndarray:
    d = points - centre
    return np.linalg.norm(d - np.outer(d @ axis, axis), axis=1)


def _rim_share(points: np.ndarray, centre: np.ndarray, axis: np.ndarray) -> float:
    """How many vertices lie on the outermost surface round ``axis`` (within 1% of the largest
    distance from it): all of a cylinder's rim vertices about its axle, only a few about any
    other direction."""
    rho = _distance_from_line(points, centre, axis)
    top = rho.max()
    return float(np.count_nonzero(rho >= 0.99 * top)) if top > 0 else 0.0


def _ring_normals(v: np.ndarray, centroid: np.ndarray, seeds: int = 8) -> np.ndarray:
    """More candidate axles, for a wheel whose moments are the same about every axis (a cylinder
    about 1.4 times as wide as its radius with nothing inside its rims): the normals of the planes
    through a vertex and its two nearest neighbours, which on a tyre's tread are the next vertices
    of its ring (the ring's plane is across the axle)."""
    far = np.argsort(-np.linalg.norm(v - centroid, axis=1), kind="stable")
    out = []
    for i in far[::max(1, len(v) // seeds)][:seeds]:
        d = np.linalg.norm(v - v[i], axis=1)
        d[d <= 1e-12 * max(d.max(), 1e-300)] = np.inf  # itself and vertices at the same place
        j, k = np.argsort(d, kind="stable")[:2]
        if not np.isfinite(d[k]):
            continue
        n = np.cross(v[j] - v[i], v[k] - v[i])
        length = np.linalg.norm(n)
        if length > 1e-12 * d[k] ** 2:
            out.append(n / length)
    return np.array(out).reshape(-1, 3)


def _odd_axis(values: np.ndarray, vectors: np.ndarray):
    """The eigenvector whose eigenvalue stands apart from the two others (sorted ascending), and
    how clearly: the gap to the nearer other relative to the spread of the pair."""
    gap_low, gap_high = values[1] - values[0], values[2] - values[1]
    scale = max(values[2], 1e-300)
    if gap_low >= gap_high:
        return vectors[:, 0], (gap_low - gap_high) / scale
    return vectors[:, 2], (gap_high - gap_low) / scale


def _circle_centre(points2: np.ndarray) -> np.ndarray:
    """Centre of the circle fitted to (n, 2) points by least squares (Kasa's fit: exact for points
    on a circle however they are spread round it)."""
    a = np.c_[points2, np.ones(len(points2))]
    b = -(points2 ** 2).sum(axis=1)
    solution, *_ = np.linalg.lstsq(a, b, rcond=None)
    return -0.5 * solution[:2]


def wheel_geometry(vertices, where: str = "the wheel") -> Wheel:
    """The wheel that ``vertices`` (n, 3) world positions of one wheel (tyre, rim, bolts) form.

    The axle is the principal axis (of the vertices' second moments) about which the most vertices
    lie on the outermost surface (a tyre's tread is at one distance from its axle); it is then
    refined on that tread alone, whose moments are those of a ring whatever else the wheel holds.
    The hub is at the centre of the tread's circle and of the wheel's extent along the axle.
    Raises ``JakobsenError`` naming ``where`` for a wheel without volume (one vertex, a line, flat).
    """
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    if len(v) < 4 or not np.all(np.isfinite(v)):
        count = f"only {len(v)} {'vertex' if len(v) == 1 else 'vertices'}" if len(v) else "no vertices"
        raise JakobsenError(f"{where}: it has {count}; a wheel needs a round solid with a width (a cylinder, "
                            "a tyre)")
    size = float(np.ptp(v, axis=0).max())
    centroid = v.mean(axis=0)
    values, vectors = np.linalg.eigh(np.cov((v - centroid).T, bias=True))
    if size <= 0.0 or values[0] <= (1e-6 * size) ** 2:
        raise JakobsenError(f"{where}: it has no volume (its vertices lie in one plane, on a line or at one "
                            "point); a wheel needs a round solid with a width (a cylinder, a tyre)")
    candidates = np.r_[vectors.T, _ring_normals(v, centroid)]
    scores = [_rim_share(v, centroid, a) for a in candidates]
    axle = candidates[int(np.argmax(scores))]

    # Refine on the tread: the vertices farthest from the axle.
    rho = _distance_from_line(v, centroid, axle)
    tread = v[rho >= 0.9 * rho.max()]
    if len(tread) >= 6:
        t_values, t_vectors = np.linalg.eigh(np.cov((tread - tread.mean(axis=0)).T, bias=True))
        refined, clarity = _odd_axis(t_values, t_vectors)
        if clarity > 0.1 and abs(refined @ axle) > 0.98:
            axle = refined
    axle = axle / np.linalg.norm(axle)

    # The hub: the tread circle's centre across the axle (fitted again on the tread as seen from
    # that centre: a valve or a lopsided rim moves the centroid off the axle), the middle of the
    # extent along it.
    u = np.cross(axle, [1.0, 0.0, 0.0] if abs(axle[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    w = np.cross(axle, u)
    flat_all = np.c_[v @ u, v @ w]
    centre2 = np.array([centroid @ u, centroid @ w])
    for share in (0.9, 0.97, 0.97):
        rho2 = np.linalg.norm(flat_all - centre2, axis=1)
        flat = flat_all[rho2 >= share * rho2.max()]
        if len(flat) < 3 or np.ptp(flat, axis=0).min() <= 1e-9 * size:
            break
        centre2 = _circle_centre(flat)
    along = v @ axle
    lo, hi = float(along.min()), float(along.max())
    hub = centre2[0] * u + centre2[1] * w + 0.5 * (lo + hi) * axle
    radius = float(_distance_from_line(v, hub, axle).max())
    width = hi - lo
    if width <= 1e-6 * max(radius, size) or radius <= 1e-6 * size:
        raise JakobsenError(f"{where}: it has no volume (it is flat across its axle); a wheel needs a round "
                            "solid with a width (a cylinder, a tyre)")
    return Wheel(hub=hub, axle=axle, radius=radius, width=float(width))


def covers_circle(vertices, wheel: Wheel, bins: int = 6) -> bool:
    """Whether the vertices farthest from the wheel's axle go all the way round it (each of
    ``bins`` equal sectors holds one): a tyre's do, a box's four corners do not."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3) - wheel.hub
    u = np.cross(wheel.axle, [1.0, 0.0, 0.0] if abs(wheel.axle[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    w = np.cross(wheel.axle, u)
    x, y = v @ u, v @ w
    outer = np.hypot(x, y) >= 0.9 * wheel.radius
    sector = np.floor((np.arctan2(y[outer], x[outer]) + np.pi) / (2 * np.pi) * bins).astype(np.int64) % bins
    return len(np.unique(sector)) == bins


# -- loose parts --------------------------------------------------------------------------------------

def _edges_of(elements, count: int) -> np.ndarray:
    """(m, 2) vertex pairs from edges (an (m, 2) array), faces (an (f, k) array with k >= 3) or a
    list of faces (index sequences of any lengths)."""
    if isinstance(elements, np.ndarray) and elements.ndim == 2:
        arr = elements.astype(np.int64)
        if arr.shape[1] == 2:
            return arr
        return np.stack([arr.ravel(), np.roll(arr, -1, axis=1).ravel()], axis=1)
    faces = [np.asarray(f, dtype=np.int64).ravel() for f in elements]
    if not faces:
        return np.zeros((0, 2), np.int64)
    corners = np.concatenate(faces)
    lengths = np.array([len(f) for f in faces])
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    nxt = np.arange(len(corners)) + 1
    nxt[starts + lengths - 1] = starts
    return np.stack([corners, corners[nxt]], axis=1)


def connected_labels(count: int, pairs: np.ndarray) -> np.ndarray:
    """(count,) label of each element's connected component under ``pairs`` (m, 2): the smallest
    index in the component. A union-find over whole arrays: every root hooks onto the smallest
    root it is joined to, then every element jumps to its root, until no pair joins two roots."""
    parent = np.arange(count, dtype=np.int64)
    if count == 0 or len(pairs) == 0:
        return parent
    a, b = pairs[:, 0], pairs[:, 1]
    while True:
        ra, rb = parent[a], parent[b]
        join = ra != rb
        if not join.any():
            return parent
        lo, hi = np.minimum(ra[join], rb[join]), np.maximum(ra[join], rb[join])
        np.minimum.at(parent, hi, lo)
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped


def group_wheels(vertices, edges_or_faces) -> list[np.ndarray]:
    """The wheels of one mesh: its loose parts (vertices joined by edges or faces), with parts
    whose bounding boxes overlap merged into one (a tyre, its rim and its bolts are one wheel; the
    two wheels at the ends of an axle mesh are two). Returns each wheel's vertex indices, sorted,
    in the order of their smallest index."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    n = len(v)
    if n == 0:
        return []
    labels = connected_labels(n, _edges_of(edges_or_faces, n))
    roots, part = np.unique(labels, return_inverse=True)
    p = len(roots)
    lo = np.full((p, 3), np.inf)
    hi = np.full((p, 3), -np.inf)
    np.minimum.at(lo, part, v)
    np.maximum.at(hi, part, v)
    tol = TOUCH * max(float(np.ptp(v, axis=0).max()), 1e-300)
    pairs = []
    for first in range(0, p, _BLOCK):  # blocks of parts against all: memory stays bounded
        a = slice(first, min(first + _BLOCK, p))
        overlap = np.all((lo[a, None, :] <= hi[None, :, :] + tol) & (lo[None, :, :] <= hi[a, None, :] + tol), axis=2)
        i, j = np.nonzero(overlap)
        i = i + first
        pairs.append(np.stack([i[i < j], j[i < j]], axis=1))
    merged = connected_labels(p, np.concatenate(pairs))[part]
    order = np.argsort(merged, kind="stable")
    bounds = np.flatnonzero(np.diff(merged[order])) + 1
    return [np.sort(g) for g in np.split(order, bounds)]


# -- the layout of a car ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """Where a car's wheels are. lateral: (3,) unit, the car's left (world); forward: (3,) unit,
    its front (world); forward_axis: the chassis-local axis that is ``forward`` (a name of
    ``AXES``); axle_of: (k,) index of each wheel's axle, 0 the frontmost; front: (k,) whether a
    wheel is on the front axle (none when there is one axle: a trailer's); on_left: (k,) whether it
    is on the car's left; up: (3,) unit."""

    lateral: np.ndarray
    forward: np.ndarray
    forward_axis: str
    up: np.ndarray
    axle_of: np.ndarray
    front: np.ndarray
    on_left: np.ndarray

    @property
    def axle_count(self) -> int:
        return int(self.axle_of.max()) + 1 if len(self.axle_of) else 0


def axis_vector(chassis_matrix, axis: str) -> np.ndarray:
    """The world direction (unit) of the chassis-local axis ``axis`` ('NEG_Y', ...)."""
    column, sign = AXES[axis]
    v = np.asarray(chassis_matrix, dtype=np.float64)[:3, column] * sign
    return v / np.linalg.norm(v)


def unparallel_axles(axles, names, degrees: float = PARALLEL_DEGREES) -> list[tuple[str, str, float]]:
    """Pairs of wheels whose axles are more than ``degrees`` from parallel to the first wheel's:
    (first name, other name, angle in degrees)."""
    a = np.asarray(axles, dtype=np.float64)
    cos = np.clip(np.abs(a @ a[0]), 0.0, 1.0)
    angles = np.degrees(np.arccos(cos))
    return [(names[0], names[k], float(angles[k])) for k in range(1, len(a)) if angles[k] > degrees]


def mean_axle(axles) -> np.ndarray:
    """The mean direction of axles given with either sign (the principal direction of them all)."""
    a = np.asarray(axles, dtype=np.float64)
    values, vectors = np.linalg.eigh(a.T @ a)
    m = vectors[:, 2]
    return m / np.linalg.norm(m)


def wheel_layout(hubs, axles, chassis_matrix, *, forward_axis: str | None = None,
                 radii=None, up=UP) -> Layout:
    """The layout of a car from its wheels' hubs (k, 3) and axles (k, 3) in world space and the
    chassis' matrix_world (4, 4).

    The lateral direction is the mean axle; the wheelbase runs across it and across ``up``, and
    the forward axis is the chassis-local axis nearest to it, by convention (``CONVENTIONAL_FRONT``)
    the one that is Blender's (or glTF's) front, unless ``forward_axis`` names one. Wheels whose
    hubs lie within a wheel radius (``radii``, (k,); without them a tenth of the car's size) of
    each other along the wheelbase share an axle.
    """
    hubs = np.asarray(hubs, dtype=np.float64).reshape(-1, 3)
    k = len(hubs)
    m = np.asarray(chassis_matrix, dtype=np.float64)
    up = np.asarray(up, dtype=np.float64) / np.linalg.norm(up)
    lateral = mean_axle(axles)
    wheelbase = np.cross(up, lateral)
    if np.linalg.norm(wheelbase) < 1e-6:  # axles upright: a car on its side; go by the hubs' spread
        d = hubs - hubs.mean(axis=0)
        d -= np.outer(d @ lateral, lateral)
        wheelbase = np.linalg.svd(d)[2][0] if k > 1 else np.cross(lateral, [1.0, 0.0, 0.0])
    wheelbase /= np.linalg.norm(wheelbase)
    if forward_axis is None:
        columns = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
        column = int(np.argmax(np.abs(columns.T @ wheelbase)))
        forward_axis = next(name for name in CONVENTIONAL_FRONT if AXES[name][0] == column)
    forward = axis_vector(m, forward_axis)
    # The car's left, across its forward direction and up (an axle's sign is arbitrary).
    left = np.cross(up, forward)
    if np.linalg.norm(left) < 1e-6:
        left = lateral
    left = left / np.linalg.norm(left)
    if lateral @ left < 0:
        lateral = -lateral
    ahead = hubs @ forward
    order = np.argsort(-ahead, kind="stable")
    if radii is not None and len(radii):
        r = float(np.mean(radii))
    else:  # without radii: a tenth of the car's size
        r = 0.1 * float(np.ptp(hubs, axis=0).max()) if k > 1 else 1.0
    axle_of = np.zeros(k, dtype=np.int64)
    group = 0
    for previous, current in zip(order[:-1], order[1:], strict=True):
        if ahead[previous] - ahead[current] > r:
            group += 1
        axle_of[current] = group
    centre = hubs.mean(axis=0)
    side = (hubs - centre) @ left
    # One axle (a trailer's) is not a front axle: nothing steers it.
    front = (axle_of == 0) & (group > 0)
    return Layout(lateral=lateral, forward=forward, forward_axis=forward_axis, up=up, axle_of=axle_of,
                  front=front, on_left=side > 0)
