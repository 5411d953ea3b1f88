"""ModelBuilder: collects particles, sticks, cloth and colliders in lists, checks them, and
``finalize()``s them into an immutable ``Model`` (colouring the sticks once, there)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bodies.rigid import BodyHandle, BodySpec, collider_body, finalize_bodies, make_body
from .geometry.shapes import ShapeTable
from .constraints.joints import check_joint, finalize_joints, starts_outside
from .constraints import kinds as connector_kinds
from .checks import FLOAT32_MAX, MAX_ANGULAR_SPEED, MAX_COORDINATE, MAX_SPEED, check_range
from .constraints.motors import MODES, check_motor, finalize_motors
from .constraints.springs import check_spring, finalize_springs
from .errors import JakobsenError
from .forces.fields import check_force, finalize_forces
from .geometry.graph import connected_components, nearest_source
from .geometry.reproducible import matmul, symmetric_eigen3
from .geometry.shapes import ColliderShape
from .model import Goals, Hinges, Model, StickKind, Sticks, _frozen, empty_hinges
from .particles.bending import HINGE_BAND, hinge_chains, hinge_stencils
from .particles.chains import stick_chains
from .particles.cloth import cloth_pairs, crookedness, flatten_faces, unique_keys, vertex_areas
from .particles.surfaces import enclosed_volume, fan_triangles, is_closed, join_surfaces, pressure_compliance

_KINDS = {"equal": StickKind.EQUAL, "min": StickKind.MIN, "max": StickKind.MAX}
# Sticks of this priority and below (a cloth's stretch 0 and shear -1; ropes 0), added chained,
# are solved as chains (particles.chains); a cloth's bend (-2) is added unchained (see add_cloth),
# and tethers (1) stay colour by colour: each is a chain of one anyway.
CHAIN_PRIORITY = 0
# A soft body's stretch and shear stiffness when none is given, N per unit strain (the add-on's
# Soft Body sets the same): its shape and its volume hold it, and its edges only keep its mesh
# even. Rigid edges make a shell of it: a 0.3 m cube at 8 Hz dropped 1 m onto a corner kept the
# corner folded in by a third of its size (its edges at their lengths either way, far stiffer
# than the shape's pull on one vertex); with these it is back in its shape within 1.5%. (A light
# one can still come to rest on the corner it lands on, flattened: README, Not yet.)
SOFT_BODY_EDGES = 1.0
# Mean angle (degrees, ``particles.cloth.crookedness``) beyond which a triangle mesh's stretch is
# solved twice an iteration (see add_cloth). 65 x 65 triangulated grids: 1.4, and 8.6 with each
# quad split along either diagonal at random (both still with one pass); inner vertices moved up
# to 0.1 of an edge 7.2, 0.15 10.1 (still), 0.2 12.6 and 0.3 15.9 (fluttering; 19.0 with the
# diagonals at random, 1.06 m/s after 2 s).
CROOKED_DEGREES = 10.0


@dataclass(frozen=True)
class ClothHandle:
    """Where a cloth's vertices live in the model: particles ``start:start + count``."""

    name: str
    start: int
    count: int

    @property
    def slice(self) -> slice:
        return slice(self.start, self.start + self.count)


def _finite_array(values, shape_tail, what, where, *, limit=FLOAT32_MAX, unit=""):
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1 + len(shape_tail) or a.shape[1:] != tuple(shape_tail):
        raise JakobsenError(f"{where}: {what} must have shape (k, {', '.join(map(str, shape_tail))}), got {a.shape}")
    bad = np.flatnonzero(~np.all(np.isfinite(a.reshape(len(a), -1)), axis=1))
    if len(bad):
        raise JakobsenError(f"{where}: {what} {bad[0]} is not finite ({a[bad[0]].tolist()})")
    check_range(a, what, where, limit=limit, unit=unit)
    return a


def _per_item(value, count, what, where, *, low=0.0, high=math.inf, low_open=False):
    try:
        a = np.broadcast_to(np.asarray(value, dtype=np.float64), (count,)).copy()
    except (TypeError, ValueError):
        # Not a number (None, a string) or a list of the wrong length: numpy's own message names
        # neither the setting nor the object.
        wanted = "a number" if count == 1 else f"a number or one number per item ({count})"
        raise JakobsenError(f"{where}: {what} must be {wanted}, got {value!r}") from None
    bad = ~np.isfinite(a) if high < math.inf else np.isnan(a)
    bad |= (a <= low) if low_open else (a < low)
    bad |= a > high
    # Infinite may mean rigid; a finite value beyond single precision is inf in Blender.
    bad |= np.isfinite(a) & (np.abs(a) > FLOAT32_MAX)
    if np.any(bad):
        k = int(np.flatnonzero(bad)[0])
        bound = f"> {low}" if low_open else f">= {low}"
        if high < math.inf:
            bound += f" and <= {high}"
        raise JakobsenError(f"{where}: {what} must be {bound}, got {a[k]} (item {k})")
    return a


def stiffness_to_compliance(stiffness: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """Material stiffness (N per unit strain) -> XPBD compliance (m/N) of a stick of length ``rest``.

    A stick of rest length L made of a material of stiffness k (N) has spring constant k / L,
    so a row of sticks stretches the same whatever the mesh resolution. Infinite means rigid.
    """
    with np.errstate(divide="ignore"):
        return np.where(np.isinf(stiffness), 0.0, rest / stiffness)


class ModelBuilder:
    """Collects the scene; ``finalize()`` returns the ``Model``.

    Every ``add_*`` checks its input and raises ``JakobsenError`` naming the object and index.
    """

    def __init__(self, *, track_rate: float = 240.0, track_duration: float = 60.0) -> None:
        """track_rate (samples/s) and track_duration (s): how finely and how far ahead motions,
        steering angles and motor targets given as functions of time are sampled into tracks
        when the model is finalized (after the duration the last sample holds; give an
        ``engine.Track`` to control that yourself)."""
        for what, value in (("track_rate", track_rate), ("track_duration", track_duration)):
            if not (math.isfinite(value) and value > 0.0):
                raise JakobsenError(f"model builder: {what} must be a positive number, got {value!r}")
        self.track_rate, self.track_duration = float(track_rate), float(track_duration)
        self._pos: list[np.ndarray] = []
        self._vel: list[np.ndarray] = []
        self._inv_mass: list[np.ndarray] = []
        self._radius: list[np.ndarray] = []
        self._friction: list[np.ndarray] = []
        self._restitution: list[np.ndarray] = []
        self._drag: list[np.ndarray] = []
        self._sticks: list[tuple] = []  # (i, j, rest, compliance, kind)
        self._goals: list[tuple] = []  # (index, target, compliance)
        self._hinges: list[dict] = []  # per cloth: ``particles.bending.hinge_stencils``, indices global, + compliance
        self._surfaces: list[dict] = []  # per cloth: ``particles.surfaces.join_surfaces`` records
        # (a cloth's particle indices, its edges and face diagonals (k, 2) in those, where)
        self._tether_groups: list[tuple[np.ndarray, np.ndarray, str]] = []
        self._colliders: list[ColliderShape] = []
        self._bodies: list[BodySpec] = []
        self._joints: list[dict] = []
        self._springs: list[dict] = []
        self._motors: list[dict] = []
        self._vehicles: list = []
        self._forces: list[dict] = []
        self._labels: list[tuple[str, int, int]] = []
        self._names: set[str] = set()
        self.particle_count = 0
        self.warnings: list[str] = []

    # -- particles ----------------------------------------------------------------------------

    def add_particles(self, positions, *, masses=1.0, radius=0.0, velocities=None,
                      friction=0.5, restitution=0.0, drag=0.0, name: str = "") -> np.ndarray:
        """Add k particles; returns their indices (k,).

        positions: (k, 3) m; masses: kg, scalar or (k,), 0 pins a particle in place;
        radius: m; velocities: (k, 3) m/s; friction, restitution: contact settings
        (combined with a collider's by geometric mean); drag: kg/m (force -drag*|v|*v).
        """
        where = self._where("particles", name)
        pos = _finite_array(positions, (3,), "position", where, limit=MAX_COORDINATE, unit="m")
        k = len(pos)
        vel = np.zeros((k, 3)) if velocities is None else _finite_array(velocities, (3,), "velocity", where,
                                                                         limit=MAX_SPEED, unit="m/s")
        if len(vel) != k:
            raise JakobsenError(f"{where}: {len(vel)} velocities for {k} positions")
        mass = _per_item(masses, k, "mass", where)
        if np.any(np.isinf(mass)):
            raise JakobsenError(f"{where}: mass must be finite (use 0 to pin a particle)")
        inv = np.divide(1.0, mass, out=np.zeros(k), where=mass > 0)
        start = self.particle_count
        self._pos.append(pos)
        self._vel.append(vel)
        self._inv_mass.append(inv)
        self._radius.append(_per_item(radius, k, "radius", where, high=1e6))
        self._friction.append(_per_item(friction, k, "friction", where, high=1e3))
        self._restitution.append(_per_item(restitution, k, "restitution", where, high=1.0))
        self._drag.append(_per_item(drag, k, "drag", where, high=1e9))
        self._labels.append((where, start, start + k))
        self.particle_count += k
        return np.arange(start, start + k)

    # -- sticks -------------------------------------------------------------------------------

    def add_sticks(self, i, j, *, rest=None, stiffness=math.inf, kind="equal", priority: int = 0,
                   sweeps: int = 1, name: str = "", chained: bool = True) -> None:
        """Add distance constraints between particles i (m,) and j (m,).

        rest: (m,) m, default the current distance; stiffness: N per unit strain, inf = rigid;
        kind: "equal", "min" (at least rest) or "max" (at most rest); priority: sticks of higher
        priority are projected later in each sweep, so they end each sweep closest to satisfied;
        sweeps: how many times these sticks are relaxed per solver iteration (more is stiffer
        for fast motion, for about one extra sweep of these sticks' cost each); chained: sticks of
        priority CHAIN_PRIORITY or below are solved as chains (``particles.chains``), unless
        False (a colour at a time).
        """
        where = self._where("sticks", name)
        i = np.atleast_1d(np.asarray(i, dtype=np.int64))
        j = np.atleast_1d(np.asarray(j, dtype=np.int64))
        if i.shape != j.shape or i.ndim != 1:
            raise JakobsenError(f"{where}: i and j must be equal-length index lists, got {i.shape} and {j.shape}")
        for side, idx in (("i", i), ("j", j)):
            bad = np.flatnonzero((idx < 0) | (idx >= self.particle_count))
            if len(bad):
                raise JakobsenError(
                    f"{where}: stick {bad[0]} refers to particle {idx[bad[0]]} ({side}), "
                    f"but there are {self.particle_count} particles")
        self_loop = np.flatnonzero(i == j)
        if len(self_loop):
            raise JakobsenError(f"{where}: stick {self_loop[0]} joins particle {i[self_loop[0]]} to itself")
        pos = self._positions()
        if rest is None:
            rest = np.linalg.norm(pos[j] - pos[i], axis=1)
        rest = _per_item(rest, len(i), "rest length", where, high=1e9)
        zero = np.flatnonzero(rest <= 1e-9)
        if len(zero):
            raise JakobsenError(
                f"{where}: stick {zero[0]} between particles {i[zero[0]]} and {j[zero[0]]} has zero length; "
                "a stick needs a direction (use a goal or merge the particles)")
        if kind not in _KINDS:
            raise JakobsenError(f"{where}: kind must be one of {sorted(_KINDS)}, got {kind!r}")
        stiffness = _per_item(stiffness, len(i), "stiffness", where, low_open=True)
        if isinstance(sweeps, bool) or not isinstance(sweeps, (int, np.integer)) or not 1 <= sweeps <= 100:
            raise JakobsenError(f"{where}: sweeps must be a whole number from 1 to 100, got {sweeps!r}")
        self._sticks.append((i, j, rest, stiffness_to_compliance(stiffness, rest),
                             np.full(len(i), _KINDS[kind], dtype=np.int8), where,
                             (int(priority), int(sweeps), int(bool(chained)))))

    # -- cloth --------------------------------------------------------------------------------

    def add_cloth(self, vertices, faces, *, name: str = "cloth", density=0.2, thickness=0.005,
                  stretch_stiffness=None, shear_stiffness=None, bend_stiffness=5e-5,
                  stretch_sweeps=None, pin_weights=None, pin_stiffness=1000.0, friction=0.5, restitution=0.0,
                  drag=0.6, long_range_attachments=True, self_collision=False, self_distance=None,
                  pressure=0.0, pressure_stiffness=math.inf, shape_stiffness=0.0, shape_damping=0.1,
                  plastic_limit=math.inf, plastic_rate=math.inf, tear_factor=math.inf) -> ClothHandle:
        """Cloth from a polygon mesh.

        vertices: (n, 3) m; faces: sequence of vertex-index sequences (or an (f, k) array);
        density: kg/m^2; thickness: m, the particle radius for collisions;
        stretch/shear_stiffness: N per unit strain (inf = rigid); bend_stiffness: N m, the moment
        a unit of curvature takes per unit of width (a plate's E t^3 / 12; ``particles.bending``):
        cotton about 5e-5, denim 1e-3, leather 1e-2 (inf = rigid); stretch defaults to rigid for
        a cloth and to SOFT_BODY_EDGES for a soft body (shape_stiffness > 0), as the add-on's Soft
        Body sets them, and shear to the stretch; stretch_sweeps: how many
        times the stretch sticks are solved per iteration (after shear and bend), default 1 for
        a cloth (each time every row and column of sticks is solved exactly along its length:
        ``particles.chains``; one carries a cloth's weight to its pins), 2 for a mesh of
        triangles whose edges zigzag (CROOKED_DEGREES), and 3 for a soft body
        (its sticks are swept a colour at a time);
        pin_weights: (n,) in [0, 1], 1 pins a vertex, between 0 and 1 pulls it to its rest
        position with pin_stiffness * weight (N/m); drag: kg/m^3 (force -drag*area*|v - v_air|*(v - v_air));
        0.6, about air on cloth as the add-on's Air Drag, lets a Wind field blow a new cloth (0: none);
        long_range_attachments: keep each free vertex within its rest distance of the nearest
        pinned vertex (Kim et al. 2012); only applied when stretching is rigid.
        self_collision: keep the cloth's non-adjacent parts self_distance m apart (default twice
        the thickness) when it folds onto itself.
        pressure: the volume a closed cloth keeps, as a ratio of its rest volume (0 = none; 1.2 a
        balloon blown up by a fifth), held with pressure_stiffness N/m^2 of pressure per unit of
        volume strain (inf = exactly).
        shape_stiffness: N/m per kg (1/s^2; 0 = none): a soft body, every vertex pulled towards
        the rest shape matched to where the body is now (Mueller et al. 2005), so it squashes,
        jiggles and recovers; sqrt(shape_stiffness) / (2 pi) is about its jiggle frequency, Hz.
        shape_damping: how fast that jiggle dies, as a ratio of critical damping (1 = it springs
        back without overshooting; below about pi f / (frame rate x substeps) the substeps' own
        damping is what it gets); only the motion relative to the body's own translation and spin
        (a pinned body's: its pins') is damped, so a falling or spinning soft body keeps its momentum.
        plastic_limit: the strain beyond which a stick's rest length (and a soft body's rest
        shape) changes: a dent that stays (inf = elastic); plastic_rate: 1/s, how fast (inf = at
        once). tear_factor: stretch and shear sticks break beyond this times their rest length.
        """
        try:  # (a soft body's messages name it so; a bad value is refused below, naming a cloth)
            soft = float(np.ravel(np.asarray(shape_stiffness, dtype=float))[0]) > 0.0
        except (TypeError, ValueError, IndexError):
            soft = False
        where = self._where("soft body" if soft else "cloth", name)
        soft_body = float(_per_item(shape_stiffness, 1, "shape stiffness", where)[0]) > 0.0
        if shear_stiffness is None:
            # Given a stretch and no shear, the diagonals stretch as the edges do (an even sheet,
            # as Vellum's cloth stretches every edge alike). Left rigid under soft edges, their
            # unconverged solve set the sag: a curtain at 100 N hung 0.54, 0.41 and 0.33 mm at 5, 10
            # and 20 substeps, and one at 0.5 N buckled.
            shear_stiffness = stretch_stiffness
        if stretch_stiffness is None:
            stretch_stiffness = SOFT_BODY_EDGES if soft_body else math.inf
        if shear_stiffness is None:
            shear_stiffness = SOFT_BODY_EDGES if soft_body else math.inf
        verts = _finite_array(vertices, (3,), "vertex", where, limit=MAX_COORDINATE, unit="m")
        corners, starts = flatten_faces(faces, len(verts), where)
        areas = vertex_areas(verts, corners, starts)
        density = float(_per_item(density, 1, "density", where, low_open=True, high=1e6)[0])
        loose = areas <= 0.0
        if np.any(loose):
            self.warnings.append(f"{where}: {int(loose.sum())} vertices belong to no face of non-zero area; "
                                 "they get the mass of the lightest vertex")
        mass = areas * density
        floor = mass[~loose].min() if np.any(~loose) else density * 1e-4
        mass[loose] = floor
        weights = np.zeros(len(verts)) if pin_weights is None else _per_item(
            pin_weights, len(verts), "pin weight", where, high=1.0)
        pinned = weights >= 1.0 - 1e-6
        mass[pinned] = 0.0
        idx = self.add_particles(verts, masses=mass, radius=thickness, friction=friction,
                                 restitution=restitution, drag=np.asarray(drag) * areas, name=name)
        self._labels[-1] = (where, int(idx[0]), int(idx[0]) + len(idx))
        start = int(idx[0])
        pairs = cloth_pairs(corners, starts)
        # A soft body keeps its shape by its own solve (shape matching); its edges are swept a
        # colour at a time, three times, as before the chains. Chained, a door struck by a ram
        # sprang back stiffer (a 33 mm dent keeping 12 mm, against 40 and 26, and the ram slid
        # back against it), and with one pass a jelly cube kept shaking 22% of its size out of
        # shape after it landed. One pass of the chains carries a cloth's weight to its pins.
        chained = not soft_body
        if stretch_sweeps is None:
            stretch_sweeps = 1 if chained else 3
            # A mesh of triangles whose edges zigzag through its vertices (an irregular or
            # imported mesh) gets its stretch solved twice: its rows, columns and diagonals are
            # three crooked chains through every vertex, and one pass of them can leave an edge
            # fluttering in the cloth's own plane (a 65 x 65 curtain, triangulated, inner
            # vertices moved up to 0.2-0.3 of an edge: its free side at 0.13-0.67 m/s after 2 s
            # at 1,000 N, still at 2e-5 with two; quads moved as far, and triangulated grids,
            # hang still with one).
            triangles = np.count_nonzero(np.diff(np.append(starts, len(corners))) == 3)
            if chained and 2 * triangles >= len(starts) and crookedness(verts, pairs["stretch"]) > CROOKED_DEGREES:
                stretch_sweeps = 2
        # Stretch last in each sweep: it is what the eye reads as rubbery cloth. Bending is not
        # sticks: hinges across the edges, solved in chains before both (``particles.bending``).
        for family, stiffness, priority, sweeps, chain in (("stretch", stretch_stiffness, 0, stretch_sweeps, chained),
                                                           ("shear", shear_stiffness, -1, 1, chained)):
            p = pairs[family]
            rest = np.linalg.norm(verts[p[:, 1]] - verts[p[:, 0]], axis=1)
            degenerate = rest <= 1e-9
            if np.any(degenerate):
                self.warnings.append(f"{where}: {int(degenerate.sum())} {family} pairs join coincident "
                                     "vertices and were left out")
                p, rest = p[~degenerate], rest[~degenerate]
            if len(p):
                self.add_sticks(p[:, 0] + start, p[:, 1] + start, rest=rest, stiffness=stiffness,
                                priority=priority, sweeps=sweeps, name=f"{name} {family}", chained=chain)
        bend = float(_per_item(bend_stiffness, 1, "bending stiffness", where, low_open=True)[0])
        self._add_hinges(verts, corners, starts, start, ~pinned, bend)
        soft = (weights > 0.0) & ~pinned
        if np.any(soft):
            pin_stiffness = float(_per_item(pin_stiffness, 1, "pin stiffness", where, low_open=True)[0])
            g = np.flatnonzero(soft)
            self._goals.append((g + start, verts[g], 1.0 / (pin_stiffness * weights[g])))
        # No tethers on a cloth that tears: they would hold a torn-off piece to the pins.
        if long_range_attachments and math.isinf(float(stretch_stiffness)) and np.any(pinned) \
                and math.isinf(float(tear_factor)):
            self._tether_groups.append((idx, np.concatenate([pairs[f] for f in ("stretch", "shear")]), where))
        self._surfaces.append(self._surface_record(where, verts, corners, starts, start, thickness,
                                                   self_collision, self_distance, pressure, pressure_stiffness,
                                                   shape_stiffness, shape_damping, plastic_limit, plastic_rate,
                                                   tear_factor))
        return ClothHandle(name=name, start=start, count=len(verts))

    def _add_hinges(self, verts, corners, starts, start, movable, bend) -> None:
        """A cloth's bending hinges in chains (``particles.bending``), kept for ``finalize``."""
        hinges = hinge_stencils(verts, corners, starts)
        used = (hinges["weight"] != 0.0) | (hinges["across"] != 0.0)
        moving = np.any(movable[hinges["index"]] & used, axis=1)  # (all pinned: nothing to move)
        hinges = {k: v[moving] for k, v in hinges.items()}
        if not len(hinges["rest"]):
            return
        chain_hinges, offsets, group = hinge_chains(hinges, corners, starts, verts, movable)
        self._hinges.append({
            "index": hinges["index"] + start, "weight": hinges["weight"], "across": hinges["across"],
            "rest": hinges["rest"], "lever": hinges["lever"], "edge": hinges["edge"] + start,
            "compliance": (1.0 / (bend * hinges["per_stiffness"]) if math.isfinite(bend)
                           else np.zeros(len(hinges["rest"]))),
            "chain_hinges": chain_hinges, "chain_lengths": np.diff(offsets), "chain_group": group})

    def _surface_record(self, where, verts, corners, starts, start, thickness, self_collision, self_distance,
                        pressure, pressure_stiffness, shape_stiffness, shape_damping, plastic_limit,
                        plastic_rate, tear_factor) -> dict:
        """A cloth's whole-surface settings, checked (see ``particles.surfaces.Surfaces``)."""
        def one(value, what, **limits):
            return float(_per_item(value, 1, what, where, **limits)[0])

        thickness = float(np.max(thickness)) if np.size(thickness) else 0.0
        self_distance = one(2.0 * thickness if self_distance is None else self_distance, "self-collision distance",
                            low_open=bool(self_collision), high=1e3)
        pressure = one(pressure, "pressure (target volume ratio)", high=1e3)
        pressure_stiffness = one(pressure_stiffness, "pressure stiffness", low_open=True)
        shape_stiffness = one(shape_stiffness, "shape stiffness")
        shape_damping = one(shape_damping, "shape damping", high=1e3)
        plastic_limit = one(plastic_limit, "plastic limit", low_open=True)
        plastic_rate = one(plastic_rate, "plastic rate", low_open=True)
        tear_factor = one(tear_factor, "tear factor", low=1.0, low_open=True)
        triangles = fan_triangles(corners, starts)
        closed = is_closed(corners, starts)
        volume = enclosed_volume(verts, triangles) if closed else 0.0
        if pressure > 0.0 and not closed:
            raise JakobsenError(f"{where}: pressure needs a closed mesh (every edge shared by two faces); this one "
                                "has holes or loose edges (fill them, or set pressure to 0)")
        if pressure > 0.0 and abs(volume) <= 1e-12:
            raise JakobsenError(f"{where}: pressure needs a mesh that encloses a volume; this one encloses none")
        if closed and volume < 0.0:
            self.warnings.append(f"{where}: its faces point inwards (Recalculate Outside in Edit Mode); "
                                 "pressure still pushes outwards")
        return dict(name=where, triangles=triangles + start, start=start, stop=start + len(verts),
                    self_collision=bool(self_collision), self_distance=self_distance, pressure=pressure,
                    pressure_compliance=pressure_compliance(pressure_stiffness, abs(volume) * max(pressure, 1e-9)),
                    rest_volume=volume, closed=closed,
                    shape_compliance=1.0 / shape_stiffness if shape_stiffness > 0.0 else math.inf,
                    shape_damping=shape_damping,
                    plastic_limit=plastic_limit, plastic_rate=plastic_rate, tear_factor=tear_factor)

    # -- rigid bodies -------------------------------------------------------------------------

    def add_rigid_body(self, vertices, faces, *, name: str = "", mass=None, density=1000.0,
                       shape="automatic", shape_frame=None, friction=0.5, restitution=0.0, mode="dynamic",
                       motion=None, velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0),
                       linear_damping=0.0, angular_damping=0.0, drag=0.0, follow_position=0.0,
                       follow_rotation=0.0) -> BodyHandle:
        """A rigid body from a mesh in world space at rest.

        vertices: (n, 3) m; faces: polygons; mass: kg, or None to use density (kg/m^3) times the
        volume of the closed mesh (an open mesh uses its convex hull); shape: "automatic" (the
        convex hull), "convex_hull", "box", "sphere", "capsule", "cylinder" (primitives fit the
        mesh's bounds in ``shape_frame``, a 3x3 or 4x4 whose axes are the object's, default the
        principal axes); friction, restitution: combined per contact by geometric mean;
        mode: "dynamic", "kinematic" (follows ``motion(t) -> 4x4``, the transform from the rest
        pose to the pose at t; pushes dynamic bodies and is not pushed back) or "ghost" (moves,
        collides with nothing); velocity: (3,) m/s and angular_velocity: (3,) rad/s at the start;
        linear_damping, angular_damping: 1/s; drag: kg/m, quadratic drag against the air (wind
        fields and ``SolverSettings.air_velocity``), F = -drag |v - v_air| (v - v_air);
        follow_position, follow_rotation: 1/s (Cinema 4D's Follow Position / Rotation), critically
        damped pulls of a dynamic or ghost body towards the pose ``motion(t)`` gives it (its rest
        pose if it has no motion); 0 leaves a dynamic body free of its motion.
        """
        name = name or f"body {len(self._bodies)}"
        if any(b.name == name for b in self._bodies):
            raise JakobsenError(f"rigid body '{name}': a body of that name exists already")
        spec = make_body(vertices, faces, name=name, mass=mass, density=density, shape=shape,
                         shape_frame=shape_frame, friction=friction, restitution=restitution, mode=mode,
                         motion=motion, velocity=velocity, angular_velocity=angular_velocity,
                         linear_damping=linear_damping, angular_damping=angular_damping, drag=drag,
                         follow_position=follow_position, follow_rotation=follow_rotation, warnings=self.warnings)
        self._bodies.append(spec)
        return BodyHandle(name=name, index=len(self._bodies) - 1)

    def add_joint(self, kind: str, body_a: BodyHandle | None, body_b: BodyHandle | None, pivot, *,
                  axis=(0.0, 0.0, 1.0), frame=None, name: str = "", **settings) -> int:
        """A connector between two bodies, or a body and the world (None), at a world ``pivot`` (3,).

        kind: "fixed", "hinge", "ball_socket", "cardan", "ragdoll", "slider", "twist_slider",
        "planar", "box" or "wheel_suspension" (see ``engine.joints`` for what each allows).
        frame: 3x3 (or 4x4) world rotation whose columns are the joint's X, Y, Z axes at rest, or
        ``axis`` alone (its Z: the hinge, slider and twist axis; the wheel's suspension and
        steering axis, its axle being X; the planar connector's normal).
        settings: angle_limits (lower, upper) rad (hinge, twist slider); distance_limits
        (lower, upper) m along Z (slider, twist slider); cone_angle rad (ragdoll, cardan);
        twist_limits (lower, upper) rad (ragdoll); box_limits ((x, y, z) lower, (x, y, z) upper)
        m (box); suspension_limits (lower, upper) m along Z and steering rad, a number or a
        function of time (wheel suspension; its spring: ``add_suspension``-style keywords
        suspension_rest m, suspension_stiffness N/m, suspension_damping N s/m);
        limit_bounce 0..1; breaking_force N, breaking_torque N m (default unbreakable);
        ignore_collisions (default True). Returns the joint's index.
        """
        name = name or f"connector {len(self._joints)}"
        if kind in connector_kinds.CONNECTOR_SETTINGS:
            # The table of which kind takes which setting (the add-on's mapping and panel read it
            # too): a setting the kind does not have would be ignored, so it is refused instead.
            foreign = [k for k in settings if k not in connector_kinds.settings_of(kind)]
            if foreign:
                takes = ", ".join(connector_kinds.settings_of(kind))
                raise JakobsenError(f"connector '{name}': a {kind.replace('_', ' ')} connector has no "
                                    f"{', '.join(foreign)} (it takes {takes})")
        index = [self._body_index(h) for h in (body_a, body_b)]
        spring = {k: settings.pop(k) for k in ("suspension_rest", "suspension_stiffness", "suspension_damping")
                  if k in settings}
        spec = check_joint(kind, index[0], index[1], pivot, name, len(self._bodies), axis=axis, frame=frame,
                           **settings)
        self._joints.append(spec)
        outside = starts_outside(spec)
        if outside:
            self.warnings.append(outside)
        if kind == "wheel_suspension":
            # The suspension's spring acts along the frame's Z between the pivots.
            self._springs.append(check_spring(
                index[0], index[1], spec["pivot"], spec["pivot"], name, len(self._bodies), kind="linear",
                rest_length=spring.get("suspension_rest", 0.0), stiffness=spring.get("suspension_stiffness", 0.0),
                damping=spring.get("suspension_damping", 0.0), axis=spec["frame"][:, 2]))
        return len(self._joints) - 1

    def add_spring(self, body_a: BodyHandle | None, body_b: BodyHandle | None, anchor_a, anchor_b=None, *,
                   name: str = "", **settings) -> int:
        """A spring between anchor_a (3,) on body A and anchor_b (3,) on body B (world points at
        rest; None for a body means the world; anchor_b defaults to anchor_a).

        settings: kind "linear" | "angular" | "both"; rest_length m (default: the distance now);
        stiffness N/m, damping N s/m; angular_stiffness N m/rad, angular_damping N m s/rad (about
        the rest relative rotation); elastic_limits (compression, stretch) m: beyond them the rest
        length gives way (plastic); break_stretch, break_compression m: the spring breaks when
        longer than rest + break_stretch or shorter than rest - break_compression.
        """
        name = name or f"spring {len(self._springs)}"
        index = [self._body_index(h) for h in (body_a, body_b)]
        self._springs.append(check_spring(index[0], index[1], anchor_a, anchor_a if anchor_b is None else anchor_b,
                                          name, len(self._bodies), **settings))
        return len(self._springs) - 1

    def add_motor(self, body: BodyHandle, reference: BodyHandle | None, axis, *, name: str = "", **settings) -> int:
        """A motor turning (or pushing) ``body`` about (along) the world ``axis`` (3,), relative to
        ``reference`` (another body, or None: the world); the reaction acts on the reference.

        settings: kind "angular" | "linear"; mode "speed" (reach ``target`` rad/s or m/s using at
        most ``torque`` N m / ``force`` N), "force" (apply ``torque`` / ``force`` constantly) or
        "servo" (reach and hold the ``target`` angle rad / position m from the rest pose, using at
        most ``torque`` / ``force``); target: a number or a function of time.
        """
        name = name or f"motor {len(self._motors)}"
        spec = check_motor(self._body_index(body), self._body_index(reference), axis, name, len(self._bodies),
                           **settings)
        target = spec["target"]
        if MODES[spec["mode"]] == "speed" and not callable(target):
            # Beyond these no substep resolves anything (a body at 1e5 m/s crosses 400 m of the
            # scene per substep of 1/240 s); what one substep can resolve is checked against the
            # solver's settings (``finalize(settings)``, ``Solver.warnings``).
            limit, unit = (MAX_SPEED, "m/s") if spec["linear"] else (MAX_ANGULAR_SPEED, "rad/s")
            if abs(target) > limit:
                spec["target"] = math.copysign(limit, target)
                self.warnings.append(f"motor '{name}': its target speed of {target:g} {unit} is absurd; it is "
                                     f"held to {spec['target']:g} {unit}")
        elif MODES[spec["mode"]] == "servo" and not callable(target) and spec["linear"] \
                and abs(target) > MAX_COORDINATE:
            raise JakobsenError(f"motor '{name}': its target position {target:g} m is absurd "
                                f"(at most {MAX_COORDINATE:g} m)")
        self._motors.append(spec)
        return len(self._motors) - 1

    def joint_index(self, name: str) -> int:
        """The index of the connector called ``name``."""
        for k, spec in enumerate(self._joints):
            if spec["name"] == name:
                return k
        raise JakobsenError(f"there is no connector '{name}'")

    # -- vehicles -----------------------------------------------------------------------------

    def add_vehicle(self, chassis: BodyHandle, wheel_joints, *, name: str = "", forward, **settings) -> int:
        """A vehicle: ``chassis`` on the wheels that the Wheel Suspension connectors ``wheel_joints``
        (indices from ``add_joint``; each with the chassis as body A and its wheel as body B) hold.

        forward: (3,) world direction of the chassis' front at rest; up (3,), default +Z.
        settings: drive "rear" | "front" | "all" | "none"; differential "open" | "locked";
        target_speed m/s, throttle 0..1, motor_torque N m (the most at the driven wheels in all),
        steering rad (positive turns left), brake and handbrake 0..1 (numbers or Tracks);
        max_steering rad; ackermann bool; traction_control bool (default on: a driven wheel's
        torque is held so it spins at most a tenth faster than the ground); brake_torque N m per wheel;
        rolling_resistance (a fraction of the weight); initial_speed m/s; wheel_friction (the wheels' friction);
        suspension {"front": {...}, "rear": {...}}
        with rest m (the spring is free there), travel m (the wheel moves up from rest by at
        most this), stiffness N/m, damping N s/m, anti_roll N/m (replacing the connectors' own);
        wheel_radii (W,) m (default: from the wheels' shapes); path (P, 3) world points to follow,
        path_speed (P,) factors of the target speed, path_cyclic; look_ahead s,
        max_lateral_acceleration m/s^2, steering_response s, drift 0..1.
        Returns the vehicle's index. See ``engine.vehicles``.
        """
        from .vehicles.vehicle import make_vehicle

        name = name or f"vehicle {len(self._vehicles)}"
        self._vehicles.append(make_vehicle(self, self._body_index(chassis), wheel_joints, name=name,
                                           forward=forward, **settings))
        return len(self._vehicles) - 1

    @staticmethod
    def _body_index(handle) -> int | None:
        if handle is None:
            return None
        return handle.index if isinstance(handle, BodyHandle) else int(handle)

    # -- force fields -------------------------------------------------------------------------

    def add_force(self, kind: str, *, name: str = "", **settings) -> int:
        """A force field acting on particles and bodies (see ``engine.forces``); returns its index."""
        name = name or f"force {len(self._forces)}"
        self._forces.append(check_force(kind, name, **settings))
        return len(self._forces) - 1

    # -- colliders ----------------------------------------------------------------------------

    def add_collider(self, collider: ColliderShape) -> int:
        """Add a static or moving collider; returns its index."""
        if not isinstance(collider, ColliderShape):
            raise JakobsenError(f"add_collider takes a collider shape (Plane, Box, ...), got {type(collider).__name__}")
        where = f"collider {len(self._colliders)} ({collider.name or type(collider).__name__})"
        collider.validate(where)
        self._colliders.append(collider)
        return len(self._colliders) - 1

    # -- finalize -----------------------------------------------------------------------------

    def finalize(self, settings=None) -> Model:
        """Check everything together, add tethers, colour the sticks; returns the Model.

        settings: the ``SolverSettings`` the model will be solved with, if known; then what their
        substep cannot resolve (motors and springs held to what it can) is added to ``warnings``
        too (the Solver raises for what it cannot simulate at all, and lists the same in its
        ``warnings``).
        """
        if self.particle_count == 0 and not self._bodies:
            raise JakobsenError("the model has no particles and no rigid bodies")
        pos = self._positions()
        inv_mass = np.concatenate(self._inv_mass) if self._inv_mass else np.zeros(0)
        self._add_tethers(pos, inv_mass)
        sticks = self._finalize_sticks(inv_mass, pos)
        hinges = self._finalize_hinges(inv_mass, sticks)
        goals = (Goals(*(np.concatenate(c) for c in zip(*self._goals))) if self._goals
                 else Goals(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0)))
        # One table of shapes: the static colliders' (owned by the world), then every body's; a
        # moving collider becomes a kinematic body that follows its motion.
        table = ShapeTable()
        moving = []
        for collider in self._colliders:
            if collider.motion is None:
                table.add_collider(collider)
            else:
                moving.append(collider_body(collider, len(moving)))
        specs = self._bodies + moving
        bodies = finalize_bodies(specs, table, self.track_rate, self.track_duration)

        def joined(parts):
            return np.concatenate(parts) if parts else np.zeros(0)

        model = Model(
            rest_positions=_frozen(pos),
            initial_velocities=_frozen(joined(self._vel).reshape(-1, 3)),
            inverse_masses=_frozen(inv_mass),
            radii=_frozen(joined(self._radius)),
            friction=_frozen(joined(self._friction)),
            restitution=_frozen(joined(self._restitution)),
            drag=_frozen(joined(self._drag)),
            sticks=sticks,
            surfaces=join_surfaces(self._surfaces),
            hinges=hinges,
            goals=Goals(_frozen(goals.index), _frozen(goals.target), _frozen(goals.compliance)),
            colliders=tuple(self._colliders),
            # (a mesh reaches at least a quarter beyond the thickest particle's radius)
            shapes=table.finalize(1.25 * float(np.max(joined(self._radius), initial=0.0))),
            labels=tuple(self._labels),
            bodies=bodies,
            joints=finalize_joints(self._joints, bodies, bodies.count),
            springs=finalize_springs(self._springs, bodies, bodies.count),
            motors=finalize_motors(self._motors, bodies, bodies.count),
            forces=finalize_forces(self._forces),
            vehicles=tuple(self._vehicles),
        )
        if settings is not None:
            from .solver.solver import substep_warnings

            self.warnings.extend(w for w in substep_warnings(model, settings) if w not in self.warnings)
        return model

    def _finalize_hinges(self, inv_mass, sticks: Sticks) -> Hinges:
        """The cloths' hinge chains together, their groups in order (a cloth's group 0 with the
        others' group 0: no cloth shares a vertex)."""
        if not self._hinges:
            return empty_hinges()
        per_hinge = ("index", "weight", "across", "rest", "compliance", "lever", "edge")
        parts = {k: np.concatenate([h[k] for h in self._hinges]) for k in per_hinge}
        first = np.cumsum([0] + [len(h["rest"]) for h in self._hinges])
        positions = np.concatenate([h["chain_hinges"] + f for h, f in zip(self._hinges, first)])
        lengths = np.concatenate([h["chain_lengths"] for h in self._hinges])
        key = np.concatenate([h["chain_group"] for h in self._hinges])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        by = np.argsort(key, kind="stable")
        order = np.concatenate([np.arange(starts[c], starts[c] + lengths[c]) for c in by]).astype(np.int64)
        chain_hinges = positions[order]
        lengths, key = lengths[by], key[by]
        chain_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        group_offsets = np.searchsorted(key, np.arange(int(key.max(initial=-1)) + 2)).astype(np.int64)
        index, weight = parts["index"], parts["weight"]
        # What the chains' banded solve needs of the constant weights, for each place of a
        # chain: its hinge's sum of w K^2, and of w K K' over the vertices it shares with each of
        # the next HINGE_BAND hinges of the chain.
        w = inv_mass[index]
        chain_of = np.repeat(np.arange(len(lengths)), lengths)
        h = chain_hinges
        coupling = np.zeros((len(h), HINGE_BAND + 1))
        coupling[:, 0] = (w[h] * weight[h] * weight[h]).sum(axis=1)
        for step in range(1, HINGE_BAND + 1):
            a = np.arange(len(h) - step)
            a = a[chain_of[a] == chain_of[a + step]]
            ha, hb = h[a], h[a + step]
            same = index[ha][:, :, None] == index[hb][:, None, :]
            coupling[a, step] = np.einsum("kpq,kp,kp,kq->k", same, w[ha], weight[ha], weight[hb])
        # As far along as any hinge shares a vertex (a grid of quads: the next two): the solve's
        # band, no wider (its substitution runs over the whole band at every place).
        reach = np.flatnonzero(np.any(coupling[:, 1:] != 0.0, axis=0))
        coupling = np.ascontiguousarray(coupling[:, :int(reach[-1]) + 2 if len(reach) else 1])
        # The stick along each hinge's edge (an equal one: those are what tear).
        edge_stick = np.full(len(index), -1, np.int64)
        if sticks.count:
            n = max(len(inv_mass), 1)
            equal = np.flatnonzero(sticks.kind == StickKind.EQUAL)
            keys = np.minimum(sticks.i[equal], sticks.j[equal]) * n + np.maximum(sticks.i[equal], sticks.j[equal])
            by_key = np.argsort(keys, kind="stable")
            e = parts["edge"]
            want = np.minimum(e[:, 0], e[:, 1]) * n + np.maximum(e[:, 0], e[:, 1])
            at = np.minimum(np.searchsorted(keys[by_key], want), max(len(by_key) - 1, 0))
            found = (keys[by_key][at] == want) if len(by_key) else np.zeros(len(want), bool)
            edge_stick[found] = equal[by_key[at[found]]]
        return Hinges(*(_frozen(a) for a in (index, weight, parts["across"], parts["rest"], parts["compliance"],
                                             parts["lever"], edge_stick, chain_hinges, coupling, chain_offsets,
                                             group_offsets)))

    def _finalize_sticks(self, inv_mass, pos) -> Sticks:
        if not self._sticks:
            empty_i = np.zeros(0, np.int64)
            return Sticks(empty_i, empty_i, np.zeros(0), np.zeros(0), np.zeros(0, np.int8), np.zeros(1, np.int64),
                          empty_i, empty_i, empty_i, np.zeros(0, np.int8), np.zeros(1, np.int64),
                          np.zeros(0, np.int8), np.zeros(1, np.int64), np.zeros((0, 2), np.int64), empty_i)
        i, j, rest, compliance, kind = (np.concatenate([s[k] for s in self._sticks]) for k in range(5))
        sizes = [len(s[0]) for s in self._sticks]
        group = np.repeat(np.arange(len(self._sticks)), sizes)
        level = np.repeat(np.array([s[6] for s in self._sticks], dtype=np.int64).reshape(-1, 3), sizes, axis=0)
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        order = np.lexsort((hi, lo))
        dup = np.flatnonzero((lo[order][1:] == lo[order][:-1]) & (hi[order][1:] == hi[order][:-1]))
        if len(dup):
            a, b = order[dup[0]], order[dup[0] + 1]
            raise JakobsenError(
                f"duplicate stick between particles {lo[a]} and {hi[a]} "
                f"(in {self._sticks[group[a]][5]} and {self._sticks[group[b]][5]}); each pair may be joined once")
        movable = (inv_mass[i] > 0) | (inv_mass[j] > 0)
        i, j, rest, compliance, kind = i[movable], j[movable], rest[movable], compliance[movable], kind[movable]
        level = level[movable]
        # Colour each (priority, sweeps) level on its own; levels run in order of priority.
        colour = np.zeros(len(i), np.int64)
        colour_level = []
        # (The keys from the few groups: np.unique over every stick's row took a second.)
        for key in np.unique(np.array([s[6] for s in self._sticks], dtype=np.int64).reshape(-1, 3), axis=0):
            sel = np.flatnonzero(np.all(level == key, axis=1))
            if not len(sel):  # (every stick of the level joins two pinned particles)
                continue
            c = colour_sticks(i[sel], j[sel], inv_mass > 0)
            colour[sel] = c + len(colour_level)
            colour_level += [key] * (int(c.max()) + 1)
        # Colour by colour; within a colour by the lower particle index, so a sweep walks the
        # particles in memory order (a third faster compiled; the order within a colour changes
        # nothing, since its sticks share no particle that moves).
        order = np.lexsort((np.minimum(i, j), colour))
        offsets = np.searchsorted(colour[order], np.arange(len(colour_level) + 1))
        levels = np.array(colour_level, dtype=np.int64).reshape(-1, 3)
        i, j, rest, compliance, kind = (a[order] for a in (i, j, rest, compliance, kind))
        # The stretch level (priority 0) as chains (particles.chains), each level's groups apart.
        chain_parts, flip_parts, flag_parts, chain_counts, group_counts = [], [], [], [], []
        colour_groups = np.zeros((len(levels), 2), np.int64)
        # A chained level's sticks are stored in chain order: its chains then read their sticks
        # from memory in order (a 250,000-vertex cloth's chain pass took 22 ms instead of 53 with
        # its sticks in colour order). colour_order keeps the colours for the global solve.
        colour_order = np.arange(len(i))
        for key in np.unique(levels, axis=0):
            if key[0] > CHAIN_PRIORITY or not key[2]:
                continue
            colours = np.flatnonzero(np.all(levels == key, axis=1))
            sel = np.arange(offsets[colours[0]], offsets[colours[-1] + 1])
            cs, cf, co, shake, go = stick_chains(i[sel], j[sel], pos, inv_mass > 0)
            first = sum(len(g) for g in group_counts)
            colour_groups[colours] = (first, first + len(go) - 1)
            for a in (i, j, rest, compliance, kind):
                a[sel] = a[sel[cs]]
            colour_order[sel[cs]] = sel  # where each stick of the colour order went
            chain_parts.append(sel)
            flip_parts.append(cf)
            flag_parts.append(shake)
            chain_counts.append(np.diff(co))
            group_counts.append(np.diff(go))
        chain_sticks = np.concatenate(chain_parts) if chain_parts else np.zeros(0, np.int64)
        chain_flip = np.concatenate(flip_parts) if flip_parts else np.zeros(0, np.int8)
        chain_flags = np.concatenate(flag_parts) if flag_parts else np.zeros(0, np.int8)
        chain_offsets = np.concatenate([[0], np.cumsum(np.concatenate(chain_counts))]) if chain_counts else np.zeros(1)
        group_offsets = np.concatenate([[0], np.cumsum(np.concatenate(group_counts))]) if group_counts else np.zeros(1)
        return Sticks(*(_frozen(a) for a in (i, j, rest, compliance, kind)), _frozen(offsets.astype(np.int64)),
                      _frozen(levels[:, 0]), _frozen(levels[:, 1]), _frozen(chain_sticks.astype(np.int64)),
                      _frozen(chain_flip.astype(np.int8)), _frozen(chain_offsets.astype(np.int64)),
                      _frozen(chain_flags.astype(np.int8)), _frozen(group_offsets.astype(np.int64)),
                      _frozen(colour_groups), _frozen(colour_order))

    def _add_tethers(self, pos, inv_mass) -> None:
        """Long-range attachments as "at most" sticks from each free particle to its nearest pin.

        All of a cloth's tethers share no free particle, so they make one colour; they run after
        the cloth's own sticks (priority 1). Pairs already joined by a stick are left out.
        Each vertex is held to a pin of its own piece of the mesh: a mesh of several pieces (a
        garment's panels, a flag and a loose ribbon, a mesh an import split along its UV seams)
        had its unpinned pieces held up in the air by tethers to another piece's pins. A flat
        piece's tethers are as long as the straight line to the nearest pin; a curved piece's
        (a flag modelled with waves, a cape modelled draped) as the shortest way to a pin along
        its edges and face diagonals, which the straight line cuts short: a wavy flag of 2 m,
        2.18 m along its waves, was held at 2 m and could never straighten in the wind.
        """
        # Each joined pair as one integer (a Python set of pairs took 2 s at 250,000 vertices).
        base = len(pos) + 1
        ends = [(np.asarray(s[0], np.int64), np.asarray(s[1], np.int64)) for s in self._sticks]
        joined = unique_keys(np.concatenate([np.minimum(a, b) * base + np.maximum(a, b) for a, b in ends]
                                            or [np.zeros(0, np.int64)]))
        for group, edges, where in self._tether_groups:
            local = pos[group]
            pinned = inv_mass[group] == 0
            piece = connected_components(len(group), edges)
            free = ~pinned & np.isin(piece, piece[pinned])  # only the pieces with a pin are tethered
            if not np.any(pinned) or not np.any(free):
                continue
            pins, free = np.flatnonzero(pinned), np.flatnonzero(free)
            anchor, rest = _nearest_pins(local, pins, free, piece)
            curved = _curved_pieces(local, piece, piece[pins])
            along = np.isin(piece[free], curved)
            if np.any(along):
                lengths = np.linalg.norm(local[edges[:, 1]] - local[edges[:, 0]], axis=1)
                distance, source = nearest_source(len(group), edges, lengths, pins[np.isin(piece[pins], curved)])
                anchor[along], rest[along] = source[free[along]], distance[free[along]]
            free, anchor = group[free], group[anchor]
            key = np.minimum(free, anchor) * base + np.maximum(free, anchor)
            at = np.searchsorted(joined, key)  # (np.isin took 1.4 s on these)
            keep = np.ones(len(key), bool)
            inside = at < len(joined)
            keep[inside] = joined[at[inside]] != key[inside]
            if np.any(keep):
                self.add_sticks(free[keep], anchor[keep], rest=rest[keep], kind="max", priority=1,
                                name=f"{where} tethers")

    # -- helpers ------------------------------------------------------------------------------

    def _positions(self) -> np.ndarray:
        return np.concatenate(self._pos) if self._pos else np.zeros((0, 3))

    def _where(self, kind: str, name: str) -> str:
        return f"{kind} '{name}'" if name else f"{kind} #{len(self._labels)}"


def colour_sticks(i: np.ndarray, j: np.ndarray, movable: np.ndarray) -> np.ndarray:
    """Greedy colouring (m,): no movable particle appears twice in one colour.

    Particles that cannot move (pinned) never conflict, since a projection never writes them.
    Colours are kept in a bitmask per particle; a stick takes the lowest colour free at both ends.
    """
    used = [0] * len(movable)
    mov = movable.tolist()
    colour = np.empty(len(i), dtype=np.int64)
    for k, (a, b) in enumerate(zip(i.tolist(), j.tolist())):
        taken = (used[a] if mov[a] else 0) | (used[b] if mov[b] else 0)
        c = (~taken & (taken + 1)).bit_length() - 1
        colour[k] = c
        bit = 1 << c
        used[a] |= bit
        used[b] |= bit
    return colour


# A piece of cloth is flat when no vertex is further than this share of its size off its plane.
FLAT = 1e-3


def _nearest_pins(pos, pins, free, piece) -> tuple[np.ndarray, np.ndarray]:
    """For each free vertex, the nearest pin of its own piece in a straight line, and how far."""
    anchor = np.empty(len(free), np.int64)
    for chunk in range(0, len(free), 4096):  # bounded memory: chunk x pins distances
        f = free[chunk:chunk + 4096]
        d = np.einsum("ijk,ijk->ij", *(2 * [pos[f, None, :] - pos[None, pins, :]]))
        d[piece[f, None] != piece[None, pins]] = np.inf
        anchor[chunk:chunk + 4096] = pins[np.argmin(d, axis=1)]
    rest = np.linalg.norm(pos[anchor] - pos[free], axis=1)
    return anchor, rest


def _curved_pieces(pos, piece, labels) -> np.ndarray:
    """Which of the pieces ``labels`` are not flat (``FLAT``): the smallest spread about their
    best plane (Jacobi's eigenvalues, the same bits on every numpy) against their size."""
    curved = []
    for label in np.unique(labels):
        p = pos[piece == label]
        p = p - p.mean(axis=0)
        _, axes = symmetric_eigen3(matmul(p.T, p))
        off = np.abs(p @ axes[:, 0]).max()
        if off > FLAT * max(float(np.ptp(p, axis=0).max()), 1e-12):
            curved.append(label)
    return np.asarray(curved, dtype=np.int64)
