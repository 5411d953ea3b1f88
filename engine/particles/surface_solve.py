"""What the surfaces add to the substep: pressure (a closed cloth keeps a volume), shape matching
(a soft body keeps its shape), plasticity (rests that yield) and tearing (sticks that break).

Per iteration, after the sticks: each pressurised surface is projected once to its target volume
(one XPBD constraint per surface, ``backend.surfaces.project_volumes``), then each soft body's
vertices are pulled towards its rest shape matched to where it is now (Mueller, Heidelberger,
Teschner and Gross 2005, *Meshless Deformations Based on Shape Matching*: the best rotation of
the rest shape about the current centre of mass, found here by the iteration of Mueller, Bender,
Chentanez and Macklin 2016, *A Robust Method to Extract the Rotational Part of Deformations*,
warm-started from the last substep's, so it never flips) as XPBD goals with a compliance per unit
mass: every vertex of a soft body then feels the same restoring acceleration per metre, and the
body jiggles at about sqrt(stiffness) / (2 pi) Hz whatever its mesh.

After the substep: a stick strained beyond its surface's plastic limit takes part of the excess
into its rest length (and a soft body's vertex moved beyond the limit from its matched shape
takes it into the rest shape: a dent that stays, the node-and-beam way of BeamNG's soft bodies);
a stick stretched beyond its surface's tear factor breaks (``StickKind.BROKEN``).

Why not tetrahedra: shape matching needs no interior mesh (an artist's closed mesh is enough),
cannot invert, and with the volume constraint keeps both shape and volume; its cost is a 3x3 sum
per soft body per iteration. Its surface can: a corner pushed through the plane of its
neighbours is held there by its edges (``keep_corners`` reflects it back each substep).
"""

from __future__ import annotations

import math

import numpy as np

from .bending import local_folds, yield_angle

from ..geometry import quaternions as quat
from ..geometry import reproducible
from ..model import StickKind
from .surfaces import enclosed_volume

# After the contacts, the pressurised surfaces are projected again (``restore_volumes``) while one
# is off its volume by more than this share of it (its compliant constraint's residual: a soft
# pressure rests off its target by its give, and that is not counted).
RESTORE_TOLERANCE = 1e-3
# Rounds of the rotation iteration per projection (warm-started: one or two suffice at rest).
ROTATION_ROUNDS = 8
# A soft body's vertex that stands above the plane of its ring of neighbours by more than this
# share of the ring's radius in the rest shape (a cube's corners and edges: 0.48-1) is a corner:
# it is kept from passing through that plane (``keep_corners``). Not a ball's vertices (0.06-0.3:
# a tenth took most of them), whose rings flatten and pass them where the body is stretched: a
# ball of 6 x 6 faces a side hanging from one pin had its upper vertices put back over and over,
# a jiggle of 30 mm/s for good.
CORNER_HEIGHT = 0.35
# How many times its whole body a pinned vertex weighs when a soft body's jiggle is told from its
# rigid motion (``SurfaceSolver.damp_jiggle``).
PIN_WEIGHT = 1e3
# The vertices of a soft body that a collider holds (``SurfaceSolver.note_contacts``) are held to
# their goals, together, with SUPPORT_STIFFNESS times the whole body's mass per substep (shared by
# mass: kappa = m s / h^2 with s = SUPPORT_STIFFNESS x the body's mass over theirs; the others with
# s = k h^2, about 0.01 at 4 Hz and 240 substeps a second), and weigh what that makes them weigh
# in the fit of the rest shape (``_fit_weights``): the matched shape then stands where the ground
# holds it, and the rest of the body hangs from it by its own stiffness, sagging about g / k.
# Fitted by mass alone about the centre of mass, the goals pulled with no net force, so the few
# vertices on the ground held the body's whole weight with their own small share of the
# stiffness: a 0.5 m ball at 6 Hz resting on the ground sagged 72 mm, ten times
# g / (2 pi 6 Hz)^2 = 6.9 mm, and a 0.5 m cube at 4 Hz had its bottom face pushed in 42 mm
# (14.6% and 12.2% of their size off their rest shape).
SUPPORT_STIFFNESS = 1.0
# Only as far as it is near its goal: by exp(-(d / reach)^2), d its distance from its goal and
# reach this share of the body's size. A vertex held far from its goal (a side pushed onto the
# ground as the body squashes on landing) made as stiff was snapped to its goal within a substep,
# at up to 20 m/s, and threw the body off the ground.
SUPPORT_REACH = 0.02
# A vertex's support moves from what it was towards what the last contacts say by 1 - this a
# substep (up and down).
SUPPORT_KEEP = 0.5


class SurfaceState:
    """The part of a ``State`` that the surfaces change, all arrays (rolled back with the rest
    when a frame fails): stick_rest (m,) m and stick_kind (m,) (empty unless a surface is plastic
    or tears); stick_broken_at (m,) s, when each stick tore (NaN while whole; empty unless a
    surface tears); shape_rest (k, 3) m, each soft body's rest shape about its centre of mass;
    shape_rotation (b, 4) the last matched rotation of each soft body; volume_target (S,) m^3;
    shape_support (k,) in [0, 1], how far each soft body's vertex a collider held in the last
    substep is held as the body's support (``SurfaceSolver.note_contacts``; 0: not held);
    popped (S,) bool: a pressurised surface torn open, which holds no pressure from then on;
    hinge_rest (k, 3) m, the bending hinges' rests in their frames (empty unless a surface is
    plastic)."""

    def __init__(self, stick_rest, stick_kind, stick_broken_at, shape_rest, shape_rotation, volume_target,
                 shape_support=None, popped=None, hinge_rest=None):
        self.stick_rest = stick_rest
        self.stick_kind = stick_kind
        self.stick_broken_at = stick_broken_at
        self.shape_rest = shape_rest
        self.shape_rotation = shape_rotation
        self.volume_target = volume_target
        self.shape_support = np.zeros(len(shape_rest)) if shape_support is None else shape_support
        self.popped = np.zeros(len(volume_target), bool) if popped is None else popped
        self.hinge_rest = np.zeros(0) if hinge_rest is None else hinge_rest

    def __setstate__(self, values: dict) -> None:
        # (a state pickled before surfaces could pop, or had hinges: none has)
        self.__dict__.update(values)
        self.__dict__.setdefault("popped", np.zeros(len(self.volume_target), bool))
        self.__dict__.setdefault("hinge_rest", np.zeros(0))

    def arrays(self) -> list[np.ndarray]:
        return [self.stick_rest, self.stick_kind, self.stick_broken_at, self.shape_rest, self.shape_rotation,
                self.volume_target, self.shape_support, self.popped, self.hinge_rest]


class SurfaceSolver:
    """Pressure, shape matching, plasticity and tearing of a model's surfaces at substep h."""

    def __init__(self, model, h: float, backend) -> None:
        surf, sticks = model.surfaces, model.sticks
        self.model, self.h, self.kernels = model, h, backend
        self.surf = surf
        inv_mass = model.inverse_masses
        self.pressure_which = np.flatnonzero(surf.pressure > 0.0).astype(np.int64)
        self.tri_offsets = np.searchsorted(surf.surface, np.arange(surf.count + 1)).astype(np.int64)
        self.volume_alpha = surf.pressure_compliance / (h * h)
        self.volume_lam = np.zeros(surf.count)
        self.grad = np.zeros((model.particle_count, 3)) if len(self.pressure_which) else np.zeros((0, 3))
        self.pressurised_particle = np.zeros(model.particle_count, bool)
        for s in self.pressure_which:
            self.pressurised_particle[surf.start[s]:surf.stop[s]] = True
        # Soft bodies: their particles, masses (a pinned vertex weighs as much as the body's mean)
        # and goal compliances.
        self.soft = np.flatnonzero(np.isfinite(surf.shape_compliance)).astype(np.int64)
        self.soft_index = [np.arange(surf.start[s], surf.stop[s]) for s in self.soft]
        self.soft_offsets = np.concatenate([[0], np.cumsum([len(i) for i in self.soft_index])]).astype(np.int64)
        masses = []
        for idx in self.soft_index:
            w = inv_mass[idx]
            m = np.where(w > 0.0, 1.0 / np.where(w > 0.0, w, 1.0), 0.0)
            m[w == 0.0] = m[w > 0.0].mean() if np.any(w > 0.0) else 1.0
            masses.append(m)
        self.soft_mass = masses
        self.goal_index = np.concatenate(self.soft_index).astype(np.int64) if len(self.soft) else np.zeros(0, np.int64)
        # Each particle's place among the goals (-1: of no soft body), for ``note_contacts``.
        self.goal_of = np.full(model.particle_count, -1, np.int64)
        self.goal_of[self.goal_index] = np.arange(len(self.goal_index))
        self.goal_w = inv_mass[self.goal_index]
        self.goal_alpha = (np.concatenate([np.full(len(i), surf.shape_compliance[s]) / m
                                           for s, i, m in zip(self.soft, self.soft_index, masses)]) / (h * h)
                           if len(self.soft) else np.zeros(0))
        # A pinned vertex does not move (w = 0); with a shape held exactly (compliance 0) its goal
        # would be 0 / 0, so it gets any compliance.
        self.goal_alpha = np.where(self.goal_w > 0.0, self.goal_alpha, 1.0)
        self.goal_lam = np.zeros((len(self.goal_index), 3))
        self.goal_target = np.zeros((len(self.goal_index), 3))
        # The share of each soft body's jiggle (velocity relative to its own translation and spin)
        # taken per substep: a damped spring of ratio zeta loses it at 2 zeta omega per second.
        # The goals' implicit (XPBD) solve already damps at a ratio of about omega h / 2 (measured:
        # 0.021 at 400 N/m per kg and 20 substeps), so only the rest is added and the setting is
        # the ratio the body shows.
        def taken(s):
            if float(surf.shape_compliance[s]) <= 0.0:  # held exactly (infinite stiffness): no jiggle
                return 0.0
            omega = math.sqrt(1.0 / float(surf.shape_compliance[s]))
            added = max(float(surf.shape_damping[s]) - 0.5 * omega * h, 0.0)
            return -math.expm1(-2.0 * added * omega * h)

        self.jiggle_taken = np.array([taken(s) for s in self.soft])
        rest = model.rest_positions
        self.soft_size = np.array([_size(rest[i], m) for i, m in zip(self.soft_index, masses)])
        # Sticks whose rest can change (a plastic surface) or that can break (one that tears).
        owner = _surface_of(sticks.i, surf)
        equal = sticks.kind == StickKind.EQUAL
        known = owner >= 0
        def per_stick(values):  # a surface's setting for each of its sticks; inf for sticks of no surface
            if not surf.count:
                return np.full(len(owner), math.inf)
            return np.where(known, values[np.maximum(owner, 0)], math.inf)

        limit, factor, rate = per_stick(surf.plastic_limit), per_stick(surf.tear_factor), per_stick(surf.plastic_rate)
        self.plastic = np.flatnonzero(equal & np.isfinite(limit)).astype(np.int64)
        self.plastic_limit = limit[self.plastic]
        self.plastic_keep = np.minimum(rate[self.plastic] * h, 1.0)  # the excess taken per substep
        self.tear = np.flatnonzero(equal & np.isfinite(factor)).astype(np.int64)
        self.tear_length = sticks.rest[self.tear] * factor[self.tear]
        self.tear_surface = owner[self.tear]
        self.mutable_sticks = bool(len(self.plastic) or len(self.tear))
        # Hinges of plastic surfaces: a fold beyond the yield angle (``bending.yield_angle``)
        # takes a new rest, as the sticks' lengths do.
        hg = model.hinges
        hinge_owner = _surface_of(hg.index[:, 0], surf) if hg.count else np.zeros(0, np.int64)
        hinge_limit = np.where(hinge_owner >= 0, surf.plastic_limit[np.maximum(hinge_owner, 0)], math.inf) \
            if surf.count and hg.count else np.full(hg.count, math.inf)
        self.plastic_hinges = np.flatnonzero(np.isfinite(hinge_limit)).astype(np.int64)
        self.hinge_yield = np.array([yield_angle(a) for a in hinge_limit[self.plastic_hinges]]) \
            * hg.lever[self.plastic_hinges]  # as a change of |v|, m
        self.hinge_keep = np.minimum(surf.plastic_rate[hinge_owner[self.plastic_hinges]] * h, 1.0) \
            if len(self.plastic_hinges) else np.zeros(0)
        self.soft_plastic = np.isfinite(surf.plastic_limit[self.soft]) if len(self.soft) else np.zeros(0, bool)
        self._rings(model)

    def _rings(self, model) -> None:
        """The soft bodies' corners (``keep_corners``) and their rings: the edges opposite each in
        its triangles (p -> q, in the faces' winding) and its neighbours. Only the vertices that
        are corners in the rest shape are kept (a cube of 20 x 20 faces: 236 of its 2,402; all of
        them, 2 ms a substep)."""
        surf = self.surf
        tri = surf.triangles[np.isin(surf.surface, self.soft)] if len(self.soft) else np.zeros((0, 3), np.int64)
        vertex = np.concatenate([tri[:, 0], tri[:, 1], tri[:, 2]])
        p = np.concatenate([tri[:, 1], tri[:, 2], tri[:, 0]])
        q = np.concatenate([tri[:, 2], tri[:, 0], tri[:, 1]])
        self._ring_arrays(model, vertex, p, q)
        on = self._corners(model.rest_positions)[self.ring_local]
        self._ring_arrays(model, vertex[on], p[on], q[on])

    def _ring_arrays(self, model, vertex: np.ndarray, p: np.ndarray, q: np.ndarray) -> None:
        surf = self.surf
        self.corner_vertex, local = np.unique(vertex, return_inverse=True)
        self.ring_local, self.ring_p, self.ring_q = local.astype(np.int64), p.astype(np.int64), q.astype(np.int64)
        nbr = np.unique(np.stack([np.concatenate([local, local]), np.concatenate([p, q])], axis=1), axis=0) \
            if len(local) else np.zeros((0, 2), np.int64)
        self.nbr_local, self.nbr = nbr[:, 0].astype(np.int64), nbr[:, 1].astype(np.int64)
        self.nbr_count = np.bincount(self.nbr_local, minlength=len(self.corner_vertex)).astype(float)
        # Outward: the faces' winding times the sign of the volume they enclose.
        owner = _surface_of(self.corner_vertex, surf)
        self.corner_sign = np.sign(surf.rest_volume[owner]) if len(owner) else np.zeros(0)
        self.corner_sign[self.corner_sign == 0.0] = 1.0
        local_of = np.full(model.particle_count, -1, np.int64)
        local_of[self.corner_vertex] = np.arange(len(self.corner_vertex))
        self.nbr_local_of_nbr = local_of[self.nbr]

    def _corners(self, rest: np.ndarray) -> np.ndarray:
        """(ring vertices,) which are corners of the rest shape ``rest`` (``CORNER_HEIGHT``)."""
        height, radius, _, _ = self._ring_heights(rest)
        return (height > CORNER_HEIGHT * radius) & (self.nbr_count >= 3)

    def _ring_heights(self, pos: np.ndarray):
        """For each ring's vertex: its height above its ring's plane (m, outward positive), the
        ring's mean radius, the ring's centre and its unit normal (the ring's area vector, which does
        not depend on where the vertex itself is, so it still points out when the vertex is through)."""
        count = len(self.corner_vertex)
        k = np.maximum(self.nbr_count, 1.0)
        centre = _sums(self.nbr_local, pos[self.nbr], count) / k[:, None]
        c = centre[self.ring_local]
        area = _sums(self.ring_local, np.cross(pos[self.ring_p] - c, pos[self.ring_q] - c), count)
        length = np.linalg.norm(area, axis=1)
        normal = area * (self.corner_sign / np.maximum(length, 1e-300))[:, None]
        height = ((pos[self.corner_vertex] - centre) * normal).sum(axis=1)
        radius = np.bincount(self.nbr_local, np.linalg.norm(pos[self.nbr] - centre[self.nbr_local], axis=1),
                             minlength=count) / k
        return height, radius, centre, normal

    def keep_corners(self, x: np.ndarray, xp: np.ndarray, state: SurfaceState) -> None:
        """A soft body's corner (``CORNER_HEIGHT``) through the plane of its neighbours, alone (none
        of its neighbours through too), is reflected back across that plane, x and xp alike (no
        speed made), and its speed inwards relative to its ring taken away. Why: a corner through
        its ring is the mirror image of where it belongs, every edge to it at its rest length
        again, so the edges hold it there against the shape's pull, which acts on the corner's own
        small mass: a 0.2 m cube of 8 x 8 faces a side at 10 Hz dropped onto a corner kept it
        folded in, 16% of its size. Reflected, its edges keep their lengths. (Put only onto the
        plane, where its edges are at their shortest, it was pushed back through every substep
        and the body ended further out of shape. A crease of several vertices through together,
        as a floppy body's edge folds, is the body's own shape and left alone.)"""
        corners = self.nbr_count >= 3
        if np.any(self.soft_plastic):
            # A plastic body's corners are those of its rest shape now: a corner dented for good
            # is not put back.
            rest = np.array(self.model.rest_positions)
            rest[self.goal_index] = state.shape_rest
            corners = self._corners(rest)
        if not np.any(corners):
            return
        height, _, _, normal = self._ring_heights(x)
        through = corners & (height < 0.0)
        if not np.any(through):
            return
        near = self.nbr_local_of_nbr >= 0
        crowded = np.bincount(self.nbr_local[near], through[self.nbr_local_of_nbr[near]],
                              minlength=len(through)) > 0.0
        alone = np.flatnonzero(through & ~crowded & (self.model.inverse_masses[self.corner_vertex] > 0.0))
        if not len(alone):
            return
        step = -2.0 * height[alone, None] * normal[alone]
        idx = self.corner_vertex[alone]
        # Its speed inwards relative to its ring taken away too: kept, it carried the corner back
        # through every substep, reflected again and again (a 0.2 m cube of 12 x 12 faces a side
        # at 4 Hz resting on the ground had an edge vertex doing so at 3 m/s for good).
        move = x - xp
        ring_move = _sums(self.nbr_local, move[self.nbr], len(self.corner_vertex))[alone] \
            / np.maximum(self.nbr_count[alone], 1.0)[:, None]
        inwards = np.minimum(((move[idx] - ring_move) * normal[alone]).sum(axis=1), 0.0)
        x[idx] += step
        xp[idx] += step + inwards[:, None] * normal[alone]

    @property
    def active(self) -> bool:
        return bool(len(self.pressure_which) or len(self.soft) or self.mutable_sticks or len(self.plastic_hinges))

    def initial_state(self) -> SurfaceState:
        m, surf = self.model, self.surf
        rest = m.rest_positions
        shape = [rest[i] - _centre(rest[i], w) for i, w in zip(self.soft_index, self.soft_mass)]
        return SurfaceState(
            stick_rest=np.array(m.sticks.rest) if self.mutable_sticks else np.zeros(0),
            stick_kind=np.array(m.sticks.kind, dtype=np.int8) if self.mutable_sticks else np.zeros(0, np.int8),
            stick_broken_at=np.full(m.sticks.count, np.nan) if len(self.tear) else np.zeros(0),
            shape_rest=np.concatenate(shape) if shape else np.zeros((0, 3)),
            shape_rotation=np.tile([1.0, 0.0, 0.0, 0.0], (len(self.soft), 1)),
            volume_target=surf.pressure * surf.rest_volume,
            shape_support=np.zeros(len(self.goal_index)), popped=np.zeros(surf.count, bool),
            hinge_rest=np.array(m.hinges.rest) if len(self.plastic_hinges) else np.zeros(0))

    def begin_substep(self) -> None:
        self.volume_lam[:] = 0.0
        self.goal_lam[:] = 0.0

    def project(self, x: np.ndarray, state: SurfaceState) -> None:
        """One iteration: volumes, then shapes."""
        surf = self.surf
        which = self._holding_pressure(state)
        if len(which):
            self.kernels.surfaces.project_volumes(x, self.model.inverse_masses, surf.triangles, self.tri_offsets,
                                                  surf.start, surf.stop, which, state.volume_target,
                                                  self.volume_alpha, self.volume_lam, self.grad)
        if len(self.soft):
            for k, idx in enumerate(self.soft_index):
                a, b = self.soft_offsets[k], self.soft_offsets[k + 1]
                centre, rot = self._match(x[idx], k, state)
                self.goal_target[a:b] = centre + state.shape_rest[a:b] @ rot.T
            alpha = self.goal_alpha
            if np.any(state.shape_support > 0.0):
                alpha = self.goal_alpha / self._goal_boost(state)
            self.kernels.particles.project_goals(x, self.goal_index, self.goal_target, self.goal_w, alpha,
                                                 self.goal_lam)

    def note_contacts(self, touched: np.ndarray, x: np.ndarray, state: SurfaceState) -> None:
        """The particles ``touched`` (indices) that a collider held this substep, at ``x``: the
        soft bodies' among them are held to their goals as stiffly as SUPPORT_STIFFNESS says in
        the next substep, and weigh as much in the fit of the rest shape (``_match``), as far as
        they are near their goals (SUPPORT_REACH). Why: fitted by mass about the centre of mass,
        the goals pull with no net force, so a body's weight on the ground is held up by its
        vertices on the ground alone, each with its own share of the stiffness, and they are
        pushed in by about (the body's mass over theirs) times g / k. Fitted where the ground
        holds it, the matched shape stands on the ground as a skeleton would and every other
        vertex hangs from it by its own stiffness per kg: the body sags g / k, a mass on a
        spring of its frequency."""
        if not len(self.soft):
            return
        support = state.shape_support
        # Each vertex's support moves towards what this substep's contacts say by 1 - SUPPORT_KEEP
        # a substep, up and down: dropped at once, a vertex at the edge of a ball's footprint,
        # lifted 0.1 mm by its goal's pull, was held and let go every other substep and jittered
        # at up to 2 m/s; taken at once, a 0.1 m cube landing at 10 m/s lost 1.7% of its volume.
        target = np.zeros(len(support))
        k = self.goal_of[touched] if len(touched) else np.zeros(0, np.int64)
        k = k[k >= 0]
        if not len(k):
            support *= SUPPORT_KEEP
            support[support < 1e-3] = 0.0
            return
        body = np.searchsorted(self.soft_offsets, k, side="right") - 1
        # (Not a plastic body's: a ram pressing a door holds the dent's vertices, the shape stood
        # on them, the dent was no strain and sprang back: 3 mm left of the example's 11 mm.)
        keep = ~self.soft_plastic[body]
        k, body = k[keep], body[keep]
        if not len(k):
            support *= SUPPORT_KEEP
            support[support < 1e-3] = 0.0
            return
        reach = SUPPORT_REACH * self.soft_size[body]
        pos = x[self.goal_index[k]]
        d = self.goal_target[k] - pos
        d2 = (d * d).sum(axis=1)
        # A vertex whose goal is further out from the body's centre than it is (pushed in by the
        # collider: its goal is in the collider) holds the body up however far out it is: let go, a
        # ball settling on the ground stood on a ring of its vertices 3 cm up its side, its
        # bottom pushed in, where the lowest swing of its jiggle had left that ring near its goal.
        # (Only its goal's distance across that direction counts then: a goal to one side pulled
        # the vertex along the ground, at up to 0.3 m/s on a ball's footprint, for good.)
        centre = np.array([_centre(x[self.soft_index[b]], self.soft_mass[b]) for b in range(len(self.soft))])
        radial = pos - centre[body]
        radial /= np.maximum(np.linalg.norm(radial, axis=1), 1e-300)[:, None]
        out = np.maximum((radial * d).sum(axis=1), 0.0)
        d2 = d2 - out * out
        target[k] = np.exp(-d2 / np.maximum(reach * reach, 1e-300))
        support += (target - support) * (1.0 - SUPPORT_KEEP)
        support[support < 1e-3] = 0.0

    def _holding_pressure(self, state: SurfaceState) -> np.ndarray:
        """The pressurised surfaces not torn open (``tear_beyond``)."""
        return self.pressure_which[~state.popped[self.pressure_which]]

    def touches_pressurised(self, touched: np.ndarray) -> bool:
        """Whether any of the particles ``touched`` (indices) belongs to a pressurised surface."""
        if not len(self.pressure_which) or not len(touched):
            return False
        return bool(np.any(self.pressurised_particle[touched]))

    def restore_volumes(self, x: np.ndarray, state: SurfaceState) -> bool:
        """The pressurised surfaces off their volumes by more than RESTORE_TOLERANCE projected
        again, continuing the substep's multipliers (the same compliant constraint, one more
        solve), each only by what its residual exceeds the tolerance; False when none was off
        (nothing moved)."""
        surf = self.surf
        targets = np.array(state.volume_target, dtype=np.float64)
        off = []
        for s in self._holding_pressure(state):
            tri = surf.triangles[self.tri_offsets[s]:self.tri_offsets[s + 1]]
            target = float(state.volume_target[s])
            # The compliant constraint's residual (what its projection would still move).
            residual = target - enclosed_volume(x, tri) - float(self.volume_alpha[s] * self.volume_lam[s])
            allowed = RESTORE_TOLERANCE * abs(target)
            if abs(residual) > allowed:
                off.append(s)
                # Only the part beyond the tolerance: restored whole, a body resting at the
                # tolerance's edge was restored every other substep, a jiggle that never died.
                targets[s] = target - math.copysign(allowed, residual)
        if off:
            self.kernels.surfaces.project_volumes(x, self.model.inverse_masses, surf.triangles, self.tri_offsets,
                                                  surf.start, surf.stop, np.array(off, dtype=np.int64), targets,
                                                  self.volume_alpha, self.volume_lam, self.grad)
        return bool(off)

    def _goal_boost(self, state: SurfaceState) -> np.ndarray:
        """(goals,) how many times stiffer than its mass alone gives each soft body's vertex is held
        to its goal (``_stiffness``)."""
        boost = np.ones(len(self.goal_index))
        for k in range(len(self.soft)):
            a, b = self.soft_offsets[k], self.soft_offsets[k + 1]
            held = state.shape_support[a:b]
            if np.any(held > 0.0) and float(self.surf.shape_compliance[self.soft[k]]) > 0.0:
                base = self._substep_stiffness(k)
                boost[a:b] = self._stiffness(k, held) / base
        return boost

    def _substep_stiffness(self, k: int) -> float:
        """k h^2 of soft body k: how much of its distance from its goal a vertex is moved in a
        substep, over 1 + that (its goal's stiffness per kg times the substep squared)."""
        return self.h * self.h / float(self.surf.shape_compliance[self.soft[k]])

    def _stiffness(self, k: int, held: np.ndarray) -> np.ndarray:
        """(vertices of soft body k,) each vertex's goal stiffness per kg times h^2: k h^2, or for
        those a collider holds near their goals up to SUPPORT_STIFFNESS (``note_contacts``)."""
        base = self._substep_stiffness(k)
        m = self.soft_mass[k]
        # Together as stiff as the whole body's mass per substep, shared by mass: a ball resting on
        # a few vertices holds its weight on them as a cube does on its face.
        share = float(m.sum()) / max(float((m * held).sum()), 1e-300)
        return np.maximum(base, SUPPORT_STIFFNESS * share * held)

    def _fit_weights(self, k: int, state: SurfaceState) -> np.ndarray | None:
        """Soft body k's vertices' weights in the fit of its rest shape when a collider holds some
        of them (``note_contacts``), else None (their masses). Each weighs what it does in the
        substep's implicit solve of the goals: its goal's stiffness kappa = s m / h^2 (s from
        ``_stiffness``) and its mass in series, m s / (1 + s), so that the fit and the goals'
        projection solve the same problem in one iteration (the matched shape moved with the
        held vertices and they with it). Weighed by their stiffnesses alone (tried with 1,000
        bodies' stiffness on the held vertices, before SUPPORT_REACH), the held vertices pinned
        the shape where they were at the iteration's start, and a cube resting on its face rocked
        and was thrown off the ground within a second."""
        a, b = self.soft_offsets[k], self.soft_offsets[k + 1]
        held = state.shape_support[a:b]
        if not np.any(held > 0.0) or float(self.surf.shape_compliance[self.soft[k]]) <= 0.0:
            return None
        s = self._stiffness(k, held)
        return self.soft_mass[k] * (s / (1.0 + s))

    def _match(self, pos: np.ndarray, k: int, state: SurfaceState) -> tuple[np.ndarray, np.ndarray]:
        """The offset (3,) and the rotation (3, 3) that best take soft body k's rest shape (about
        its centre of mass) onto ``pos`` (offset + rest @ rotation.T), each vertex weighing its
        goal's stiffness (its mass, or more where a collider holds it: ``note_contacts``); the
        rotation is kept in ``state`` for the next warm start."""
        a, b = self.soft_offsets[k], self.soft_offsets[k + 1]
        m = self._fit_weights(k, state)
        rest = state.shape_rest[a:b]
        if m is None:
            m = self.soft_mass[k]
            rest_centre = np.zeros(3)
        else:
            rest_centre = _centre(rest, m)
            rest = rest - rest_centre
        centre = _centre(pos, m)
        apq = ((pos - centre) * m[:, None]).T @ rest
        q = state.shape_rotation[k]
        for _ in range(ROTATION_ROUNDS):
            r = quat.to_matrix(q)
            omega = np.cross(r.T, apq.T).sum(axis=0) / (abs(float(np.einsum("ij,ij->", r, apq))) + 1e-12)
            angle = float(np.linalg.norm(omega))
            if angle < 1e-12:
                break
            q = quat.normalize(quat.multiply(quat.exp_rotation(omega), q))
        state.shape_rotation[k] = q
        rot = quat.to_matrix(q)
        return centre - rot @ rest_centre, rot

    def damp_jiggle(self, x: np.ndarray, xp: np.ndarray) -> None:
        """Each soft body's velocities (Verlet's x - xp over h) drawn towards the rigid motion that
        carries the same momentum and angular momentum (Mueller et al. 2007, *Position Based
        Dynamics*, 3.5) by ``jiggle_taken``, in place on xp: the jiggle dies at the body's Damping
        while its fall and spin go on. Pinned vertices keep theirs (their track moves them), and
        weigh PIN_WEIGHT times the body in the fit: the rigid motion of a pinned body is its
        pins' (a jelly pinned at its base sways, and the sway is the jiggle to damp; measured
        0.03 of critical at a setting of 0.1 with the pins weighed as the others), while about
        one pin or a line of them it may still swing freely."""
        h = self.h
        w = self.model.inverse_masses
        for k, idx in enumerate(self.soft_index):
            taken = float(self.jiggle_taken[k])
            if taken <= 0.0:
                continue
            pinned = w[idx] == 0.0
            m = self.soft_mass[k]
            if np.any(pinned):
                m = np.where(pinned, PIN_WEIGHT * float(m.sum()), m)
            centre = _centre(x[idx], m)
            r = x[idx] - centre
            v = (x[idx] - xp[idx]) / h
            mass = m.sum()
            v_mean = (v * m[:, None]).sum(axis=0) / mass
            momentum = (np.cross(r, v - v_mean) * m[:, None]).sum(axis=0)
            rr = (r * r).sum(axis=1)
            inertia = np.eye(3) * float((m * rr).sum()) - (r[:, :, None] * r[:, None, :] * m[:, None, None]).sum(axis=0)
            spin = reproducible.psd_lstsq(inertia, momentum)
            dv = v_mean + np.cross(spin, r) - v
            dv[pinned] = 0.0
            xp[idx] -= dv * (taken * h)

    def end_substep(self, x: np.ndarray, state: SurfaceState, time: float) -> None:
        """Plasticity and tearing, from the positions at the end of the substep (at ``time`` s)."""
        s = self.model.sticks
        if len(self.plastic):
            p = self.plastic
            rest = state.stick_rest[p]
            length = np.linalg.norm(x[s.j[p]] - x[s.i[p]], axis=1)
            strain = (length - rest) / rest
            lim = self.plastic_limit
            # The rest at which this length is strained by exactly the limit, approached by the rate.
            target = np.where(strain > lim, length / (1.0 + lim), np.where(strain < -lim, length / (1.0 - lim), rest))
            state.stick_rest[p] = rest + (target - rest) * self.plastic_keep
        if len(self.plastic_hinges):
            # A fold bent beyond the yield angle from its rest takes the excess into its rest (in
            # the hinge's own frame, as the rest is kept).
            hg, p = self.model.hinges, self.plastic_hinges
            now = local_folds(x, hg.index[p], hg.weight[p], hg.across[p])
            rest = state.hinge_rest[p]
            off = now - rest
            dist = np.linalg.norm(off, axis=1)
            over = dist > self.hinge_yield
            scale = np.where(over, (1.0 - self.hinge_yield / np.maximum(dist, 1e-300)) * self.hinge_keep, 0.0)
            state.hinge_rest[p] = rest + off * scale[:, None]
        if len(self.tear):
            self.tear_beyond(x, state, time, most_only=False)
        for k in np.flatnonzero(self.soft_plastic):
            self._yield_shape(x, int(k), state)

    def tear_beyond(self, x: np.ndarray, state: SurfaceState, time: float, most_only: bool = True) -> bool:
        """Break sticks stretched beyond their surface's tear factor (at ``time`` s); returns
        whether any broke. most_only: only each surface's most overstretched one (the solver
        then relaxes the cloth and asks again: a tear runs from where it starts, the strain
        gathering at its tip, as a crack does; all at once, a sheet pulled evenly broke 158
        sticks in one substep, scattered, and stayed in one piece); else all of them."""
        t = self.tear
        if not len(t):
            return False
        s = self.model.sticks
        length = np.linalg.norm(x[s.j[t]] - x[s.i[t]], axis=1)
        ratio = length / self.tear_length
        over = np.flatnonzero((ratio > 1.0) & (state.stick_kind[t] != StickKind.BROKEN))
        if not len(over):
            return False
        if most_only:  # per surface, the largest ratio (the first stick of a tie)
            order = over[np.lexsort((over, -ratio[over], self.tear_surface[over]))]
            first = np.r_[True, self.tear_surface[order[1:]] != self.tear_surface[order[:-1]]]
            over = order[first]
        tore = t[over]
        state.stick_kind[tore] = StickKind.BROKEN
        state.stick_broken_at[tore] = time
        # A balloon or cushion torn open lets its air out: it holds no pressure from then on (it
        # kept it, and a balloon blown to 3 times its volume with 81 sticks torn swelled on to
        # 2.3 x 3.0 x 2.5 m from 0.5 m across).
        state.popped[self.tear_surface[over]] = True
        return True

    def _yield_shape(self, x: np.ndarray, k: int, state: SurfaceState) -> None:
        """A soft body's vertices strained beyond the limit (relative to the body's size) from the
        matched rest shape take the excess into the rest shape. The volume it keeps does not change:
        plastic flow keeps volume (a dented ball of clay bulges elsewhere), and a dented shell's
        volume is no rest of its own."""
        s = int(self.soft[k])
        surf = self.surf
        a, b = self.soft_offsets[k], self.soft_offsets[k + 1]
        idx, m = self.soft_index[k], self.soft_mass[k]
        # From the shape matched as the goals are (standing where a collider holds it, ``_match``),
        # so what yields is how far a vertex is from its goal.
        offset, rot = self._match(x[idx], k, state)
        local = (x[idx] - offset) @ rot
        dev = local - state.shape_rest[a:b]
        dist = np.linalg.norm(dev, axis=1)
        allowed = surf.plastic_limit[s] * self.soft_size[k]
        over = dist > allowed
        if not np.any(over):
            return
        keep = min(surf.plastic_rate[s] * self.h, 1.0)
        scale = np.where(over, (1.0 - allowed / np.maximum(dist, 1e-300)) * keep, 0.0)
        shape = state.shape_rest[a:b] + dev * scale[:, None]
        shape -= _centre(shape, m)
        state.shape_rest[a:b] = shape

    def torn(self, state: SurfaceState) -> tuple[np.ndarray, np.ndarray]:
        """(k, 2) particle pairs of the sticks that have broken, in stick order, and (k,) when, s."""
        if not len(self.tear):
            return np.zeros((0, 2), np.int64), np.zeros(0)
        s = self.model.sticks
        broken = self.tear[state.stick_kind[self.tear] == StickKind.BROKEN]
        return np.stack([s.i[broken], s.j[broken]], axis=1), state.stick_broken_at[broken]


def _sums(group: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """(count, 3): the rows of values (n, 3) summed by group (n,) (in order: the same bits every run)."""
    return np.stack([np.bincount(group, values[:, c], minlength=count) for c in range(3)], axis=1)


def _centre(pos: np.ndarray, mass: np.ndarray) -> np.ndarray:
    return (pos * mass[:, None]).sum(axis=0) / mass.sum()


def _size(pos: np.ndarray, mass: np.ndarray) -> float:
    """A soft body's size, m: its largest distance from its centre of mass."""
    return float(np.linalg.norm(pos - _centre(pos, mass), axis=1).max()) if len(pos) else 0.0


def _surface_of(i: np.ndarray, surf) -> np.ndarray:
    """(m,) the surface each particle i belongs to (a stick's first end, a corner; -1: none)."""
    if not surf.count or not len(i):
        return np.full(len(i), -1, np.int64)
    k = np.searchsorted(surf.start, i, side="right") - 1
    inside = (k >= 0) & (i < surf.stop[np.maximum(k, 0)])
    return np.where(inside, k, -1).astype(np.int64)
