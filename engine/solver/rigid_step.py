"""The rigid-body part of a solver step: per-frame broad phase, per-substep integration,
contacts, position and velocity solves, and cloth particles touching bodies.

``Solver`` owns one ``RigidStepper`` and calls it at fixed points of each substep, so bodies,
cloth and constraints share one loop.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..bodies.rigid import BodyMode
from ..collision.sweep import Sweeper
from ..constraints.joints import KINDS, bounce_limits, joint_layout, redundant_mechanisms
from ..constraints.motors import apply_motor_forces, drive_limits, motor_speeds
from ..constraints.springs import update_springs
from ..forces import fields as forces
from ..geometry import quaternions as quat
from ..geometry.kinds import BOX, HULL, MESH
from ..geometry import reproducible
from ..geometry.reproducible import matmul, psd_lstsq
from ..model import BodyState, Model
from ..vehicles.control import VehicleState, drive_vehicles
from .sleeping import Sleep

MARGIN = 5e-3
# A body starting deeper than this fraction of its thickness inside another is warned about.
OVERLAP = 0.02
# A cloth or soft body vertex starting more than this nearer to a collider than its Thickness (m),
# or this far inside it, is warned about (``surfaces_starting_inside``): the first substep moves it
# out at once.
SURFACE_JUMP = 0.01
SURFACE_INSIDE = 2e-3
# Two boxes or hulls whose edges' directions make more crossings than this are tried for a
# starting overlap along their faces' normals alone (``_convex_overlaps``).
EDGE_CROSSINGS = 4096
# A body that started inside something counts as pushed out once no contact of its is deeper than
# this fraction of its thickness (or 1 mm) at a substep's start (``keep_starting_motion``).
SETTLED = 0.005
# Boxes and hulls that start inside each other are moved apart (``RigidStepper._move_apart``) in at
# most this many sweeps over their pairs, until no pair overlaps by more than APART_LEFT of the
# thinner one's thickness.
APART_SWEEPS = 200
APART_LEFT = 1e-6
# Gauss-Seidel sweeps over a pair's contacts in each contact pass: two hold a stack of boxes
# dropped onto each other (one let it topple).
CONTACT_SWEEPS = 2
# The least push, m, after which a particle is asked again for contacts (``_answer_again``).
FAR_PUSH = 1e-3
# The most passes of struck contacts an impact is carried on through bodies that touch, per
# substep (``RigidStepper._propagate_impacts``): a cradle of n touching balls in any order needs
# at most n - 1; a ball held between two walls at e = 1 would otherwise never stop.
IMPACT_PASSES = 16
# A pile's contact passes: as many as its stack is deep (bodies resting on one another from the
# ground or a static body up: a ten-row pyramid is 10 deep), from the Contact Iterations setting
# up to STACK_PASSES times it. The passes do not converge a tall stack loaded from rest: a column
# of ten 0.2 m boxes placed on the ground sank 2.8 mm in its first frame at 4 passes (1.1 at 8)
# and rested 1 mm down. Given the extra passes only while a stack builds up (3 frames, or 24
# with fewer and fewer), it sank again once they stopped, to 3 mm. They cost the 1,000 boxes
# falling into stacks of ten 65% more awake (with sleeping, as much as before).
STACK_PASSES = 2
# A body that bears one more than LOAD_RATIO times heavier (the heavier resting on it, a level
# further from the ground or a static body in its stack) is made as heavy as a LOAD_RATIO-th of
# it in the contact passes (``_weighted_for_heavy_loads``; mass scaling for stacking, as in
# Mueller et al.'s position based dynamics): the passes share a contact's push by the inverse
# masses, so a light box under a heavy one took nearly all of it and the heavy one sank in (a
# 1 kg box under 100 kg: 12 cm, and the slab tipped onto the ground; under 1,000 kg it ended
# inside the slab on the ground). 30 times heavier it sank 2 mm and slid 3-11 mm sideways as it
# settled when resting off the box's centre; at 15, 1.3 mm and 2.5-5 mm. (At 5, 0.3 mm and 1 mm,
# but a 40 kg ball rolling over 3 kg bricks is then weighed too, and a knocked-down wall's pile,
# awake, kept a brick jittering at 2 mm/s: see the README's Not yet on awake piles.)
LOAD_RATIO = 15.0
# ... while the two move at less than LOAD_SPEED (m/s) relative to each other at the substep's
# start: a load at rest, not a collision (the car example's chassis, 4 m/s into a crate a
# hundredth of its mass, was deflected by the weighed crate and no longer turned where it steered).
LOAD_SPEED = 0.5
# ... through contacts whose normal is within 60 degrees of straight up (a car pushing a crate
# ahead of it is not borne by it).
LOAD_UPRIGHT = 0.5
# Connectors push along their rows at the substep's start (SHAKE, see ``solve_joints``) only in a
# mechanism whose bodies turn less in the substep than this (rad) over the ratio of its heaviest
# body's mass to its lightest's. Pushed along the rows of the start, a body's correction misses
# where its anchor has turned to by about the turn, and the mechanism's solve magnifies the miss
# by its mass ratio: a wrecking ball on a chain of light links (10 to 400 times their mass, 2 to
# 12 links, released level) gained energy until it flew apart, stopping the bake within 0.5-6 s.
# Along the rows of the poses now the solve converges, with the damping SHAKE's rows take away
# (docs/connectors.md: such a ball on two links keeps about a third of its energy after 8 s),
# which only such mechanisms, while they turn fast, pay.
SHAKE_TURN = 0.5
# Restitution passes per strike of a colour of contacts: the pair solve's damping leaves 0.5% of
# a target speed per pass, which over a cradle of five was 2% of the speed (two passes: 0.003%).
STRIKE_PASSES = 2
# Sequential-impulse passes over the bouncing contacts with friction (``_bounce_friction``).
BOUNCE_FRICTION_PASSES = 6
BOUNCE_FRICTION_MOST = 64


class BounceRows:
    """Contact rows (n contacts) at the corrected poses, with their tangents (``contact_rows``)."""

    def __init__(self, n: int):
        self.J = np.zeros((n, 3, 12))
        self.M = np.zeros((n, 3, 12))
        self.base = np.zeros((n, 3))
        self.wn = np.zeros(n)
        self.wt = np.zeros((n, 3))


class ContactBuffers:
    """The contacts of one substep, in preallocated arrays grown as needed (c contacts).

    ints (c, 4): body A (owns the point), body B (the world is B), the key of (point, target) that
    keeps a fixed point's friction anchor from one substep to the next (-1: none), and whether the
    point is a fixed point of A; floats (c, 3): friction, restitution, depth; local_a (c, 3) the
    contact point on A in A's frame; local_b (c, 3) the surface point on B in B's frame (world
    coordinates for the world); normal (c, 3), from B towards A; then the rows (see the kernels).
    """

    def __init__(self, capacity: int = 0, chunks: int = 0):
        # chunks: how many chunks of pairs the backend finds contacts in on several cores; the
        # others than the first write into ``spare`` (``out``'s arrays, one per such chunk).
        self.chunks = chunks
        self.grow(capacity)

    def grow(self, capacity: int) -> None:
        c = max(int(capacity), 16)
        self.capacity = c
        self.ints = np.zeros((c, 4), np.int64)
        self.floats = np.zeros((c, 3))
        self.local_a = np.zeros((c, 3))
        self.local_b = np.zeros((c, 3))
        self.normal = np.zeros((c, 3))
        k = max(self.chunks - 1, 0)
        self.spare = (np.zeros((k, c, 4), np.int64), np.zeros((k, c, 3)), np.zeros((k, c, 3)), np.zeros((k, c, 3)),
                      np.zeros((k, c, 3))) if k else None
        self.anchor = np.zeros((c, 3))
        self.J = np.zeros((c, 3, 12))
        self.M = np.zeros((c, 3, 12))
        self.base = np.zeros((c, 3))
        self.wn = np.zeros(c)
        self.wt = np.zeros((c, 3))
        self.lam = np.zeros(c)
        self.lam_t = np.zeros((c, 2))
        self.stuck = np.zeros(c, np.int64)
        self.vJ = np.zeros((c, 3, 12))
        self.vM = np.zeros((c, 3, 12))
        self.vbase = np.zeros((c, 3))
        self.vwn = np.zeros(c)
        self.vwt = np.zeros((c, 3))
        # At the substep's start (``prepare_contacts``): normal speed, separation, and the relative
        # normal acceleration, for the moment of impact within the substep.
        self.speed_before = np.zeros(c)
        self.gap_start = np.zeros(c)
        self.accel_n = np.zeros(c)
        # The compiled solves' scratch: each pair's rows and block factor, kept over a substep's
        # passes (see ``solve_contact_positions``); factored -1: none yet.
        self.rows_a = np.zeros((3 * c, 12))
        self.factors = np.zeros((c, 12, 12))
        self.factored = np.full(c, -1, np.int64)

    @property
    def out(self) -> tuple:
        return self.ints, self.floats, self.local_a, self.local_b, self.normal


class RigidStepper:
    def __init__(self, model: Model, h: float, frame: float, gravity: np.ndarray, bounce_speed: float,
                 velocity_iterations: int, backend, sleeping: tuple = (False, 0.0, 1.0)):
        bodies = model.bodies
        self.backend = backend
        self.model, self.bodies, self.h, self.frame = model, bodies, h, frame
        count = bodies.count
        self.count = count
        self.dynamic = np.zeros(count + 1, bool)
        self.dynamic[:count] = bodies.mode != BodyMode.KINEMATIC
        self.kinematic_mask = np.zeros(count + 1, bool)
        self.kinematic_mask[:count] = bodies.mode == BodyMode.KINEMATIC
        self.kinematic = np.flatnonzero(bodies.mode == BodyMode.KINEMATIC)
        self.solid = np.flatnonzero(bodies.mode != BodyMode.GHOST)  # bodies that collide
        self.inv_mass = np.append(bodies.inverse_mass, 0.0)
        self.inv_inertia = np.vstack([bodies.inverse_inertia, np.zeros((1, 3))])
        self.inertia = np.vstack([bodies.inertia, np.ones((1, 3))])
        self.accel = np.zeros((count + 1, 3))
        self.accel[:count] = gravity
        self.lin_decay = np.append(reproducible.exp(-bodies.linear_damping * h), 1.0)
        self.ang_decay = np.append(reproducible.exp(-bodies.angular_damping * h), 1.0)
        self.point_start = np.searchsorted(bodies.point_body, np.arange(count + 1)).astype(np.int64)
        self.points = np.ascontiguousarray(bodies.point_local)
        self.point_radius = np.ascontiguousarray(bodies.point_radius)
        self.point_material = bodies.point_material.astype(np.int64)
        self.body_shape = bodies.shape_index.astype(np.int64)
        self.body_friction = np.append(bodies.friction, 0.0)
        self.body_restitution = np.append(bodies.restitution, 0.0)
        self.bound = np.append(bodies.bound_radius, 0.0)
        shapes = model.shapes
        self.geo = shapes.kernel_arrays()
        # Deforming meshes (``TriangleMesh.deformation``): their vertices and normals are this
        # stepper's own copies, rewritten each substep, and their grids are rebuilt per frame.
        self.deforming = np.flatnonzero(shapes.mesh_deforming)
        if len(self.deforming):
            geo = list(self.geo)
            geo[13], geo[18], geo[20] = shapes.vertices.copy(), shapes.vertices.copy(), shapes.face_normals.copy()
            geo[21] = np.zeros(len(shapes.meshes))
            self.geo = tuple(geo)
        self.grid_span = (np.inf, -np.inf)  # the times the deforming meshes' grids cover
        self.world_shapes = np.flatnonzero(shapes.owner < 0)
        self.bounce_speed = bounce_speed
        self.velocity_iterations = velocity_iterations
        self.buffers = ContactBuffers(chunks=backend.contacts.find_chunks())
        self.contact_count = 0
        self.stack_depth = 0  # the frame's deepest stack (``contact_passes``)
        self.depth_due = True  # to be measured on the frame's first substep's contacts
        self.levels: np.ndarray | None = None  # (B+1,) each body's level in its stack (``_stack_depth``)
        self.may_weigh = False  # (``begin_frame``)
        self.pairs = np.zeros((0, 3), np.int64)
        self.pair_first = np.zeros(1, np.int64)
        self.frame_order = np.zeros(0, np.int64)
        self.pair_order = np.zeros(0, np.int64)
        self.colour_bounds = np.zeros(1, np.int64)
        self.particle_candidates = np.zeros((0, 2), np.int64)
        self.particles_meet_dynamic = False
        # The contacts that stuck in the last substep, sorted by key, and the slip they were left
        # with (B's frame), which their next anchors take back.
        self.anchor_keys = np.zeros(0, np.int64)
        # Body -> how it started inside another or a collider (``starting_overlaps``), for the
        # energy guard's message: pushing such a body out is what throws it.
        self.started_inside: dict[int, str] = {}
        self.unsettled: set[int] = set()  # of those, the ones still being pushed out (``unsettle``)
        # Of those, pairs of boxes or hulls (a < b), moved apart the least way out (``_move_apart``).
        self.started_pairs: set[tuple[int, int]] = set()
        self.anchor_residual = np.zeros((0, 3))
        self.key_stride = count + 1 + shapes.count
        self.steer = np.zeros(model.joints.count)
        self.joint_impulses = np.zeros((model.joints.count, 6))
        self.joint_layout = joint_layout(model.joints, self.dynamic)
        # The joints whose translation rows push along their start-of-substep directions (SHAKE,
        # ``constraints.joints.solve_joints``): all but those of loops and repeated connectors.
        rest_x = np.vstack([bodies.rest_position, np.zeros((1, 3))])
        rest_q = np.vstack([bodies.rest_orientation, [[1.0, 0.0, 0.0, 0.0]]])
        redundant = redundant_mechanisms(model.joints, self.joint_layout, rest_x, rest_q, self.inv_mass,
                                         self.inv_inertia)
        mech = self.joint_layout.mechanism
        # (Not a Wheel Suspension: its wheel turns about its own centre, the pivot, which the
        # rows of the poses now take nothing from, and a car steered through the start rows
        # turned 8 degrees where the example's test wants more than 10.) A Fixed connector too:
        # its bodies turn together, and the lever arms of its rows turn with the swing of what
        # it welds (a bob welded to a hinged rod, 60 degrees, lost 8 of them in 12 s at 10
        # substeps, 14 at 5). (Not a Box connector, which also locks the turn: along its start
        # rows a small body on one, in a random scene, was pushed 0.14 mm into the ground.)
        turns = ((model.joints.swing_mode != 0) | (model.joints.twist_mode != 0)
                 | (model.joints.kind == KINDS.index("fixed"))) \
            & (model.joints.kind != KINDS.index("wheel_suspension"))
        self.joint_from_start = turns & np.where(mech >= 0, ~redundant[np.maximum(mech, 0)] if len(redundant) else True,
                                                 False)
        # The cosine of half the turn a mechanism's bodies may make in a substep for its joints to
        # push along their rows at the start (``SHAKE_TURN``; from Python's math: the same bits on
        # every numpy).
        inv = np.where(self.joint_layout.bodies >= 0, self.inv_mass[np.maximum(self.joint_layout.bodies, 0)], 0.0)
        heaviest = np.where(inv > 0.0, inv, np.inf).min(axis=1) if inv.size else np.zeros(0)  # (inverse masses)
        lightest = inv.max(axis=1) if inv.size else np.zeros(0)
        self.shake_cos = np.array([math.cos(0.5 * SHAKE_TURN * float(h) / float(lo)) if lo > 0.0 else 1.0
                                   for h, lo in zip(heaviest, lightest)])
        # The mechanisms with such joints, which a last pass along Newton's rows finishes (the
        # others keep the passes they had: a weld fighting contacts gets no last word).
        with_start = np.zeros(len(self.joint_layout.rows) + 1, bool)
        with_start[mech[self.joint_from_start]] = True
        self.polish = with_start[np.where(mech >= 0, mech, len(with_start) - 1)]
        self.limit_hits = np.zeros((model.joints.count, 6))
        # Speculative contacts: sample points this close to a surface (m) join the substep's
        # solve, which projects them only if the solve itself moves them into the surface; without
        # them a corner just outside is free to be rotated deep in by the other contacts'
        # corrections. Never more than a twentieth of the body, so small bodies keep theirs.
        self.margin = np.append(np.minimum(MARGIN, 0.05 * bodies.bound_radius), 0.0)
        # What a substep can resolve of each motor (see ``constraints.motors.drive_limits``).
        self.drive_step, self.drive_speed = drive_limits(model.motors, bodies, h)
        # Continuous collision for bodies faster than their contacts can take back (``collision.sweep``).
        self.sweeper = Sweeper(model, backend.sweep)
        self.sweeper.geo = self.geo  # (the same table, deforming meshes and all)
        self.motors = model.motors  # as they are in this substep (animated efforts, brakes)
        self.gravity = float(np.linalg.norm(gravity))
        self.up = -np.asarray(gravity, dtype=np.float64) / max(self.gravity, 1e-300)  # (0 without gravity)
        # Particles against dynamic bodies (``collide_particles``, two ways): whether this
        # substep's have pushed any body, and the bodies they pushed in this frame (what feeds
        # them from outside the bodies, for the energy guard's bookkeeping).
        self.shared_contacts = False
        self.fed_by_particles = np.zeros(0, np.int64)
        # The particles the last collide_particles answered (the solver's second self-collision
        # pass holds them: SUPPORTED_WEIGHT).
        self.touched_particles = np.zeros(0, np.int64)
        # Whether any spring can break or yield (``update_springs``): with every limit infinite
        # (a car's suspension) no comparison can pass, so the check is skipped.
        sp = model.springs
        self.springs_yield = bool(sp.count) and bool(np.any(sp.linear & (
            np.isfinite(sp.break_stretch) | np.isfinite(sp.break_compression) | np.isfinite(sp.elastic_stretch)
            | np.isfinite(sp.elastic_compression))))
        # Sleeping (``solver.sleeping``): a sleeping body is a static one for the frame, so the
        # masks and inverse masses here are the model's with the sleepers taken out.
        enabled, speed, time = sleeping
        self.sleep = Sleep(model, speed, time, frame, enabled, bool(len(self.deforming)))
        self.frame_start: tuple[np.ndarray, np.ndarray] | None = None  # (set by begin_frame)
        self.base_dynamic = self.dynamic.copy()
        self.base_inv_mass = self.inv_mass.copy()
        self.base_inv_inertia = self.inv_inertia.copy()
        self.joints_awake = np.ones(model.joints.count, bool)
        self.near_particles = np.zeros(0, np.int64)  # bodies cloth can reach this frame: they stay awake
        self.springs_awake = np.ones(sp.count, bool)

    # -- state --------------------------------------------------------------------------------

    def initial_state(self) -> BodyState:
        b, m = self.bodies, self.model
        state = BodyState(b.rest_position, b.rest_orientation, b.initial_velocity, b.initial_angular_velocity)
        state.joint_broken_at = np.full(m.joints.count, np.nan)
        state.spring_rest = np.array(m.springs.rest, dtype=np.float64)
        state.spring_broken_at = np.full(m.springs.count, np.nan)
        state.vehicles = VehicleState(len(m.vehicles))
        return state

    def starting_overlaps(self, bodies: BodyState) -> list[str]:
        """Bodies that start inside the ground, a collider or another body (deeper than
        ``OVERLAP`` of the thinner one's thickness, and at least 2 mm) as warnings naming both
        and the depth: the first substeps push them out, which can throw them (a car whose
        wheels start in a bump flips)."""
        x, q, _, _ = bodies.arrays()
        empty = np.zeros((0, 3))
        self.begin_frame(bodies, empty, np.zeros(0), np.zeros(0))
        if not len(self.pairs):
            return []
        count = self._contacts_at_rest(x, q, np.zeros_like(self.margin))
        buf = self.buffers  # (after: it may have grown them)
        pair_of = np.repeat(np.arange(len(self.pairs)), np.diff(self.pair_first))[:count]
        depth = buf.floats[:count, 2]
        thickness = np.append(self.bodies.thickness, np.inf)
        deepest = {}
        for c in np.flatnonzero(depth > 0.0):
            a, b, shape = (int(v) for v in self.pairs[pair_of[c]])
            limit = max(OVERLAP * min(thickness[a], thickness[b]), 2e-3)
            key = (min(a, b), max(a, b), shape if b == self.count else -1)
            if depth[c] > limit and depth[c] > deepest.get(key, 0.0):
                deepest[key] = float(depth[c])
        touching = {(int(min(a, b)), int(max(a, b))) for a, b, _ in self.pairs[pair_of[np.flatnonzero(depth > 0.0)]]}
        for (a, b), d in self._convex_overlaps(x, q, touching).items():
            if d > max(OVERLAP * min(thickness[a], thickness[b]), 2e-3) and d > deepest.get((a, b, -1), 0.0):
                deepest[(a, b, -1)] = d
        for (a, shape), d in self._mesh_overlaps(x, q).items():
            if d > max(OVERLAP * thickness[a], 2e-3) and d > deepest.get((a, self.count, shape), 0.0):
                deepest[(a, self.count, shape)] = d
        names = self.bodies.names
        out = []
        for (a, b, shape), d in sorted(deepest.items()):
            if b < self.count and not self.dynamic[a] and self.dynamic[b]:
                a, b = b, a  # (the one that moves starts inside the one that does not)
            other = (f"'{self.model.shapes.names[shape] or f'collider {shape}'}'" if b == self.count
                     else f"rigid body '{names[b]}'")
            out.append(f"rigid body '{names[a]}' starts {_length(d)} inside {other}: the first substeps push it out, "
                       "which can throw it, or leave it stuck in it (move it out, or up onto what it stands on)")
            for body in (a, b) if b < self.count else (a,):
                self.started_inside.setdefault(body, f"'{names[a]}' started {_length(d)} inside {other}")
            if b < self.count and self._convex(a) and self._convex(b):
                self.started_pairs.add((min(a, b), max(a, b)))
        return out

    def surfaces_starting_inside(self, bodies: BodyState, positions: np.ndarray, radii: np.ndarray,
                                 movable: np.ndarray) -> list[str]:
        """Cloths and soft bodies that start inside a collider or a body, or nearer to one than
        their Thickness by more than ``SURFACE_JUMP``, as warnings naming both and the distance
        (the deepest vertex's): the first substep moves those vertices out at once, a jump the
        render shows (a cloth of 10 cm Thickness modelled 1 cm over a table leapt 9 cm on the
        first frame). A cloth modelled touching the table moves out by its Thickness (5 mm by
        default): no message."""
        surfaces = self.model.surfaces
        if not surfaces.count or not len(positions):
            return []
        x, q, _, _ = bodies.arrays()
        owned = np.zeros(len(positions), bool)
        for start, stop in zip(surfaces.start, surfaces.stop):
            owned[start:stop] = True
        cand = self._particle_candidates(x, self.bodies.bound_radius, positions, radii, movable * owned)
        if not len(cand):
            return []
        n = len(cand)
        k, shape = np.empty(n, np.int64), np.empty(n, np.int64)
        corr, depth, surface = np.empty((n, 3)), np.empty(n), np.empty((n, 3))
        found = self.backend.contacts.particle_contacts(self.geo, x, q, x, q, positions, positions, radii, cand,
                                                        len(self.geo[0]), k, corr, depth, surface, shape)
        which = np.searchsorted(surfaces.stop, k[:found], side="right")
        deepest: dict[tuple[int, int], tuple[float, float]] = {}  # (surface, shape) -> (depth, inside)
        for c in range(found):
            d, r = float(depth[c]), float(radii[k[c]])
            inside = d - r  # how far past the collider's surface (negative: outside, within the Thickness)
            if (d > SURFACE_JUMP or inside > SURFACE_INSIDE) and d > deepest.get((which[c], shape[c]), (0.0, 0.0))[0]:
                deepest[(int(which[c]), int(shape[c]))] = (d, inside)
        out = []
        for (s, sh), (d, inside) in sorted(deepest.items()):
            owner = int(self.geo[4][sh])
            other = f"rigid body '{self.bodies.names[owner]}'" if owner >= 0 \
                else f"'{self.model.shapes.names[sh] or f'collider {sh}'}'"
            # (the builder's label: "cloth 'Flag'", "soft body 'Blob'")
            name = surfaces.names[s] if s < len(surfaces.names) and surfaces.names[s] else "a cloth"
            if inside > SURFACE_INSIDE:
                out.append(f"{name} starts {_length(inside)} inside {other}: the first substep moves its vertices "
                           f"out of it at once, a jump, or leaves them on the wrong side (move it out)")
            else:
                gap = max(-inside, 0.0)
                at = f"touching {other}" if gap < 1e-4 else f"{_length(gap)} from {other}"
                out.append(f"{name} starts {at}, within its Thickness of "
                           f"{_length(d - inside)}: the first substep moves it {_length(d)} out at once, a jump "
                           "(move it away, or lower its Thickness)")
        return out

    def _contacts_at_rest(self, x, q, margin) -> int:
        """The contacts of the broad phase's pairs at poses x, q taken as the substep's start too
        (nothing moved), into the buffers (grown as needed); how many."""
        buf = self.buffers
        while True:
            count = self.backend.contacts.find_contacts(
                self.geo, x, q, x, q, self.pairs, self.points, self.point_start, self.point_radius, self.point_material,
                self.body_shape, self.body_friction, self.body_restitution, self.bound, margin, self.count,
                self.key_stride, buf.out, self.pair_first)
            if count <= buf.capacity:
                return count
            buf.grow(2 * count)

    def unsettle(self, bodies: BodyState) -> None:
        """Before the first frame: the bodies that start inside another body or the ground
        (``starting_overlaps``) keep the motion they were given while they are pushed out
        (``keep_starting_motion``), within that frame (a body held inside another by a connector
        stays inside: from the second frame on it moves as it is pushed)."""
        self._move_apart(bodies)
        inside = np.fromiter(self.started_inside, np.int64)
        self.unsettled = set(int(b) for b in inside[self.dynamic[inside]])
        _, _, v, w = bodies.arrays()
        self.starting_motion = v.copy(), w.copy()

    def _move_apart(self, bodies: BodyState) -> None:
        """Before the first frame: boxes and hulls that start inside each other
        (``started_pairs``) are moved apart along the least way out (the separating axis of
        least overlap; ``_separation``), without turning and without velocity, a pair at a time
        until none overlaps (or APART_SWEEPS). A body resting on the ground or on a body that does
        not move stays, and the other moves; between two that move, the push is shared by their
        inverse masses. Pushed out by their contacts instead, crates of one width, one placed 5 cm
        into the other and 30 cm to the side, stayed inside each other (their corners lie on each
        other's side planes, 0 mm from them), and pushed at their corners a column of crates sunk
        into each other rocked at 0.3 m/s after."""
        if not self.started_pairs:
            return
        x, q, _, _ = bodies.arrays()
        held = self._held(bodies)
        weight = np.where(self.dynamic[:self.count], self.inv_mass[:self.count], 0.0)
        for _ in range(APART_SWEEPS):
            moved = False
            for a, b in sorted(self.started_pairs):
                found = self._separation(a, b, x, q)
                if found is None or found[0] <= APART_LEFT * min(self.bodies.thickness[a], self.bodies.thickness[b]):
                    continue
                depth, axis = found
                wa, wb = (0.0 if body in held else weight[body] for body in (a, b))
                if wa + wb == 0.0:  # (both held: share it as if neither were)
                    wa, wb = weight[a], weight[b]
                if wa + wb == 0.0:
                    continue
                x[a] += axis * (depth * wa / (wa + wb))
                x[b] -= axis * (depth * wb / (wa + wb))
                moved = True
            if not moved:
                break

    def _held(self, bodies: BodyState) -> set:
        """The bodies touching (within the margins) the ground, a collider or a body that does
        not move."""
        x, q, _, _ = bodies.arrays()
        self.begin_frame(bodies, np.zeros((0, 3)), np.zeros(0), np.zeros(0))
        count = self._contacts_at_rest(x, q, self.margin)  # (first: it may grow the buffers)
        ints = self.buffers.ints[:count]
        still = np.append(~self.dynamic[:self.count], True)  # (the world does not move)
        return ({int(a) for a, b in ints[:, :2] if still[b]} | {int(b) for a, b in ints[:, :2] if still[a]}) \
            - {int(k) for k in np.flatnonzero(still[:self.count])}

    def keep_starting_motion(self, bodies: BodyState) -> None:
        """After a substep: the velocities of the bodies still being pushed out of where they
        started (a contact of theirs deeper than SETTLED at the substep's start) back to what
        they were given, so the push moves them without throwing them; a body that is out is
        left to move from then on. (A box placed a quarter of its height into the ground and
        tilted 3 degrees was thrown at 0.3-1 m/s, a cylinder sunk a third stopped the bake.)"""
        count = self.contact_count
        deepest = np.zeros(self.count + 1)
        if count:
            ints = self.buffers.ints[:count]
            depth = -self.gap_start[:count]
            np.maximum.at(deepest, ints[:, 0], depth)
            np.maximum.at(deepest, ints[:, 1], depth)
        _, _, v, w = bodies.arrays()
        for body in sorted(self.unsettled):
            if deepest[body] > max(SETTLED * self.bodies.thickness[body], 1e-3):
                v[body], w[body] = self.starting_motion[0][body], self.starting_motion[1][body]
            else:
                self.unsettled.discard(body)

    def _convex_overlaps(self, x, q, touching: set) -> dict:
        """How deep each pair of boxes or hulls (bodies of the broad phase's pairs) overlaps, by
        separating axes (``_separation``): {(a, b): m} for a < b. The contacts measure a corner's
        depth to the nearest face of the other, which for boxes or hulls sunk into each other can
        be a side face: two crates of one size, one placed 15% into the other, gave contacts no
        deeper than 1 mm, and no warning; nor did a crate sunk 15 cm into a thin ground plate,
        none of whose corners is inside the other. Where edge crossings are too many to try (two
        hulls of hundreds of faces) the faces' normals alone can find an overlap where there is
        none, so then only a pair in ``touching`` (a corner of one inside the other) counts."""
        out: dict = {}
        for a, b, _ in self.pairs:
            if b >= self.count or not self._convex(a) or not self._convex(b):
                continue
            found = self._separation(int(a), int(b), x, q, (min(a, b), max(a, b)) in touching)
            if found is not None and found[0] > 0.0:
                out[(int(min(a, b)), int(max(a, b)))] = found[0]
        return out

    def _convex(self, body: int) -> bool:
        """Whether the body is one box or one hull (not a compound, not round)."""
        shape = int(self.body_shape[body]) if body < self.count else -1
        return shape >= 0 and self.model.shapes.kind[shape] in (BOX, HULL)

    def _separation(self, a: int, b: int, x, q, touching: bool = True):
        """(depth, axis) of two boxes or hulls by separating axes (both shapes' face normals and
        the crossings of their edges' directions): the least way a must move along the unit
        axis to be clear of b (depth <= 0: apart). None where the edge crossings are too many to
        try (``EDGE_CROSSINGS``) and the pair is not ``touching``."""
        (va, na, ea), (vb, nb, eb) = (self._convex_in_world(body, int(self.body_shape[body]), x, q) for body in (a, b))
        axes = [na, nb]
        if len(ea) * len(eb) <= EDGE_CROSSINGS:
            cross = np.cross(ea[:, None, :], eb[None, :, :]).reshape(-1, 3)
            length = np.linalg.norm(cross, axis=1)
            keep = length > 1e-6  # (parallel edges: their faces' normals are in already)
            axes.append(cross[keep] / length[keep, None])
        elif not touching:
            return None
        n = np.concatenate(axes)
        pa, pb = va @ n.T, vb @ n.T
        plus, minus = pb.max(axis=0) - pa.min(axis=0), pa.max(axis=0) - pb.min(axis=0)  # a along +n, -n
        k = int(np.argmin(np.minimum(plus, minus)))
        return float(min(plus[k], minus[k])), n[k] * (1.0 if plus[k] <= minus[k] else -1.0)

    def _mesh_overlaps(self, x, q) -> dict:
        """How deep each box or hull crosses the triangles of a static mesh (a ground, a table
        made a Collider with Shape Mesh or a Rigid Body with Dynamic Off): {(body, shape): m},
        over the triangles near it that it crosses (by separating axes), the most it reaches
        through one's plane (the least of the two ways). Behind a
        mesh's faces only its margin counts as inside, so a crate placed 20 cm into a floor had
        no corner inside it, fell through it, and was not named."""
        shapes = self.model.shapes
        out: dict = {}
        for a, b, s in self.pairs:
            if b != self.count or shapes.kind[s] != MESH or self.body_shape[a] < 0 \
                    or shapes.kind[self.body_shape[a]] not in (BOX, HULL):
                continue
            vb, nb, eb = self._convex_in_world(int(a), int(self.body_shape[a]), x, q)
            m = shapes.mesh[s]
            turn = quat.to_matrix(shapes.rotation[s][None])[0]
            tri = shapes.triangles[shapes.mesh_tri_start[m]:shapes.mesh_tri_start[m + 1]]
            corners = shapes.position[s] + shapes.vertices[tri] @ turn.T  # (T, 3, 3)
            near = np.all(corners.max(axis=1) >= vb.min(axis=0), axis=1) & np.all(corners.min(axis=1) <= vb.max(axis=0),
                                                                                axis=1)
            c = corners[near]
            if not len(c):
                continue
            edges = np.stack([c[:, 1] - c[:, 0], c[:, 2] - c[:, 1], c[:, 0] - c[:, 2]], axis=1)  # (T, 3, 3)
            axes = np.concatenate([np.cross(edges[:, 0], edges[:, 1])[:, None, :],
                                   np.broadcast_to(nb, (len(c),) + nb.shape),
                                   np.cross(eb[None, :, None, :], edges[:, None, :, :]).reshape(len(c), -1, 3)], axis=1)
            length = np.linalg.norm(axes, axis=2)
            usable = length > 1e-9 * max(float(np.abs(c).max()), 1.0)
            axes = axes / np.where(usable, length, 1.0)[..., None]
            body = np.einsum("vi,tki->tkv", vb, axes)
            face = np.einsum("tji,tki->tkj", c, axes)
            overlap = np.minimum(body.max(axis=2) - face.min(axis=2), face.max(axis=2) - body.min(axis=2))
            # A triangle it crosses (no axis separates them) counts by how far the body reaches
            # through the triangle's plane (the least either way; its first axis): separating
            # from one triangle of a floor sideways is no way out of the floor.
            crossed = np.where(usable, overlap, np.inf).min(axis=1) > 0.0
            if crossed.any():
                out[(int(a), int(s))] = float(overlap[crossed, 0].max())
        return out

    def _convex_in_world(self, body: int, shape: int, x, q) -> tuple:
        """A box's or hull's vertices (v, 3), face normals (f, 3) and edge directions (e, 3),
        unique up to sign, in the world."""
        shapes = self.model.shapes
        turn = quat.to_matrix(q[body][None])[0] @ quat.to_matrix(shapes.rotation[shape][None])[0]
        centre = x[body] + quat.to_matrix(q[body][None])[0] @ shapes.position[shape]
        if shapes.kind[shape] == BOX:
            half = shapes.params[shape][:3]
            corners = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], float) * half
            return centre + corners @ turn.T, turn.T.copy(), turn.T.copy()
        # A hull: its vertices are the body's sample points (the shape's frame is the body's).
        local = self.points[self.point_start[body]:self.point_start[body + 1]]
        first, count = shapes.hull[shape]
        planes = shapes.hull_planes[first:first + count]
        # Two faces meet in an edge where two of the hull's vertices lie on both (the vertices
        # are pulled in by SAMPLE_INSET, a thousandth of their distance from the centre).
        on = np.abs(local @ planes[:, :3].T - planes[:, 3]) < 3e-3 * np.linalg.norm(local, axis=1).max()
        shared = on.T.astype(np.int64) @ on.astype(np.int64)
        i, j = np.nonzero(np.triu(shared >= 2, 1))
        edges = np.cross(planes[i, :3], planes[j, :3])
        length = np.linalg.norm(edges, axis=1)
        edges = edges[length > 1e-6] / length[length > 1e-6, None]
        # One of each direction (a box-like hull's 12 edges are 3 directions).
        lead = edges[np.arange(len(edges)), np.argmax(np.abs(edges), axis=1)]
        edges = edges * np.where(lead < 0, -1.0, 1.0)[:, None]
        _, unique = np.unique(np.round(edges, 6), axis=0, return_index=True)
        edges = edges[np.sort(unique)]
        return centre + local @ turn.T, planes[:, :3] @ turn.T, edges @ turn.T

    # -- per frame ----------------------------------------------------------------------------

    def begin_frame(self, bodies: BodyState, particles: np.ndarray, radii: np.ndarray, movable: np.ndarray,
                    time: float | None = None) -> None:
        """Broad phase for the coming frame, with bounding spheres grown by one frame of motion:
        which pairs of bodies and which bodies and world shapes can touch (coloured once here, so
        that pairs of a colour share no moving body; each substep solves those that touch in that
        order, in waves: ``_order_touching``), and which particles can touch which shapes.
        Sleeping groups that something moving can reach wake first (``solver.sleeping``); time:
        the frame's start, s (for the animated bodies' motion ahead)."""
        b = self.bodies
        x, q, v, w = bodies.arrays()
        with np.errstate(invalid="ignore"):  # a plane's bound is infinite
            reach = b.bound_radius + (np.linalg.norm(v[:-1], axis=1) + np.linalg.norm(w[:-1], axis=1)
                                      * np.where(np.isfinite(b.bound_radius), b.bound_radius, 0.0)) \
                * self.frame * 1.5 + 0.01 * np.where(np.isfinite(b.bound_radius), b.bound_radius, 0.0) + 1e-3
        solid = self.solid
        pairs = self.backend.contacts.sweep_and_prune(x[solid], reach[solid]) if len(solid) \
            else np.zeros((0, 2), np.int64)
        pairs = solid[pairs] if len(pairs) else pairs
        self.particle_candidates = self._particle_candidates(x, reach, particles, radii, movable)
        # The bodies movable particles can reach this frame.
        owners = self.geo[4][self.particle_candidates[:, 1]] if len(self.particle_candidates) \
            else np.zeros(0, np.int64)
        self.near_particles = owners[owners >= 0]
        if not self.sleep.active and bodies.asleep.any():
            bodies.wake_all()  # (sleeping turned off for a state that had sleepers)
            self._sleep_masks(bodies)
        if self.sleep.active:
            self.sleep.wake(bodies, pairs, time, self.near_particles)
            self._sleep_masks(bodies)
            # (where each body starts the frame: its speed over the frame, ``Sleep.settle``)
            self.frame_start = (x[:self.count].copy(), q[:self.count].copy())
        if len(pairs):
            pairs = pairs[self.dynamic[pairs[:, 0]] | self.dynamic[pairs[:, 1]]]
        j = self.model.joints
        ignoring = j.ignore_collisions & np.isnan(bodies.joint_broken_at)
        if len(pairs) and np.any(ignoring):
            # Bodies joined by an intact connector with Ignore Collisions do not collide.
            a, c = j.a[ignoring], j.b[ignoring]
            jointed = np.minimum(a, c) * (self.count + 1) + np.maximum(a, c)
            keys = pairs[:, 0] * (self.count + 1) + pairs[:, 1]
            pairs = pairs[~np.isin(keys, jointed)]
        # A body whose shape has no sample points (a cylinder) meets the others through their
        # points and its own supports: its pairs put it first, so its supports are tested.
        body_pairs = np.zeros((0, 3), np.int64)
        if len(pairs):
            first_has_shape = self.body_shape[pairs[:, 0]] >= 0
            body_pairs = np.stack([pairs[:, 0], pairs[:, 1], self.body_shape[pairs[:, 1]]], axis=1)
            body_pairs = body_pairs[first_has_shape | (self.body_shape[pairs[:, 1]] >= 0)]
        world_pairs = []
        moving = solid[self.dynamic[solid]]
        geo_owner = self.geo[4]
        for s in self.world_shapes:
            world_pairs.append(np.stack([moving, np.full(len(moving), self.count), np.full(len(moving), s)], axis=1))
        all_pairs = np.concatenate([body_pairs] + world_pairs) if world_pairs else body_pairs
        self.pairs = all_pairs.astype(np.int64)
        # Whether two bodies of masses more than LOAD_RATIO apart may touch this frame (else the
        # passes need no weighing: ``_weighted_for_heavy_loads``, skipped for the frame).
        a, c = self.pairs[:, 0], self.pairs[:, 1]
        im = self.inv_mass
        self.may_weigh = bool(np.any(self.dynamic[a] & self.dynamic[c]
                                     & ((im[a] > LOAD_RATIO * im[c]) | (im[c] > LOAD_RATIO * im[a]))))
        self.frame_order = self.backend.rigid.colour_pairs(self.pairs[:, :2], self.dynamic)[0]
        # (each substep, the pairs that touch in this order, in waves: ``_order_touching``)
        self.pair_order, self.colour_bounds = np.zeros(0, np.int64), np.zeros(1, np.int64)
        self.pair_first = np.zeros(len(self.pairs) + 1, np.int64)
        self.sweeper.begin_frame(self.pairs)
        self.depth_due = True
        del geo_owner
        self.fed_by_particles = np.zeros(0, np.int64)
        # Whether a dynamic body can meet particles this frame (then the solver repeats the
        # cloth's sticks and these contacts a few rounds a substep: ``solver.COUPLING_ROUNDS``).
        owners = self.near_particles
        self.particles_meet_dynamic = bool(np.any(self.dynamic[owners] & (self.inv_mass[owners] > 0)))

    def _sleep_masks(self, bodies: BodyState) -> None:
        """The frame's dynamic mask, inverse masses and inertias with the sleeping bodies static,
        and which connectors and springs join an awake body (the others rest with them)."""
        asleep = np.append(bodies.asleep, False)
        self.dynamic[:] = self.base_dynamic & ~asleep
        self.inv_mass[:] = np.where(asleep, 0.0, self.base_inv_mass)
        self.inv_inertia[:] = np.where(asleep[:, None], 0.0, self.base_inv_inertia)
        j, sp = self.model.joints, self.model.springs
        self.joints_awake = ~(asleep[j.a] | asleep[j.b])
        self.springs_awake = ~(asleep[sp.a] | asleep[sp.b])

    def end_frame(self, bodies: BodyState) -> None:
        """Groups of bodies quiet long enough fall asleep (``solver.sleeping``)."""
        if not self.sleep.active or self.frame_start is None:
            return
        buf = self.buffers
        contact_pairs = buf.ints[:self.contact_count, :2]
        self.sleep.settle(bodies, contact_pairs, self.near_particles, self.frame_start)

    def _stack_depth(self, pairs: np.ndarray, most: int) -> int:
        """How many bodies deep the deepest stack is that ``pairs`` (touching bodies; the world is
        ``count``) make, from what does not move up; counted up to ``most``."""
        if not len(pairs) or most <= 0:
            return 0
        a, b = pairs[:, 0], pairs[:, 1]
        depth = np.where(self.dynamic, most + 1, 0)
        for _ in range(most):
            reached = depth.copy()
            np.minimum.at(reached, a, depth[b] + 1)
            np.minimum.at(reached, b, depth[a] + 1)
            if np.array_equal(reached, depth):
                break
            depth = reached
        self.levels = depth
        held = depth[self.dynamic]
        held = held[held <= most]
        return int(held.max()) if len(held) else 0

    def contact_passes(self, contact_iterations: int) -> int:
        """This substep's contact passes: the setting's, or as many as the deepest stack is deep,
        up to STACK_PASSES times the setting, the depth measured on the frame's first substep's
        contacts."""
        most = int(STACK_PASSES * contact_iterations)
        if self.depth_due:
            self.stack_depth = self._stack_depth(self.buffers.ints[:self.contact_count, :2], most)
            self.depth_due = False
        return int(min(max(contact_iterations, self.stack_depth), most))

    def _intact_joints(self, bodies: BodyState) -> np.ndarray:
        """The connectors to solve: intact, and not between sleeping bodies."""
        return np.isnan(bodies.joint_broken_at) & self.joints_awake

    def _particle_candidates(self, x, reach, particles, radii, movable) -> np.ndarray:
        """(particle, shape) pairs, sorted by particle: every movable particle against every world
        shape, and against the shapes of the solid bodies near it."""
        free = np.flatnonzero(movable > 0)
        if not len(particles) or not len(free):
            return np.zeros((0, 2), np.int64)
        out = [np.stack([free, np.full(len(free), s)], axis=1) for s in self.world_shapes]
        for k in self.solid:  # bodies are few next to particles; each test is vectorised
            if self.body_shape[k] < 0:
                continue
            d = np.linalg.norm(particles[free] - x[k], axis=1)
            near = free[d <= reach[k] + radii[free] + 0.05]
            if len(near):
                out.append(np.stack([near, np.full(len(near), self.body_shape[k])], axis=1))
        if not out:
            return np.zeros((0, 2), np.int64)
        cand = np.concatenate(out)
        return cand[np.lexsort((cand[:, 1], cand[:, 0]))].astype(np.int64)

    # -- per substep --------------------------------------------------------------------------

    def deform_meshes(self, t0: float, t1: float) -> None:
        """The deforming meshes' vertices one substep ago (t0) and now (t1), and their normals now;
        their grids rebuilt when [t0, t1] leaves the span they cover (once a frame: over the
        frame ahead, every sample the deformation has in it)."""
        from ..geometry.shapes import face_normals, mesh_grid, pack_grids

        shapes = self.model.shapes
        geo = self.geo
        vs, ts = shapes.mesh_vertex_start, shapes.mesh_tri_start
        lo, hi = self.grid_span
        if t0 < lo - 1e-9 or t1 > hi + 1e-9:
            end = t0 + max(self.frame, t1 - t0)
            grids = []
            for m, tm in enumerate(shapes.meshes):
                if tm.deformation is None:
                    grids.append((tm.cell_keys, tm.cell_starts, tm.cell_triangles, ts[m]))
                    continue
                rate = tm.deformation.rate
                inside = np.arange(int(np.floor(t0 * rate)) + 1, int(np.ceil(end * rate)))
                inside = inside[(inside > 0) & (inside < len(tm.deformation.values))]
                samples = np.concatenate([tm.vertices_at(t0)[None], tm.vertices_at(end)[None],
                                          tm.deformation.values[inside]])
                grids.append(mesh_grid(samples, tm.triangles, tm.margin, tm.cell) + (ts[m],))
            geo = list(geo)
            geo[8], geo[9], geo[10], geo[11] = pack_grids(grids)
            self.geo = geo = tuple(geo)
            self.sweeper.geo = geo
            self.grid_span = (t0, end)
        for m in self.deforming:
            tm = shapes.meshes[m]
            a, b = vs[m], vs[m + 1]
            geo[18][a:b] = tm.vertices_at(t0)
            geo[13][a:b] = tm.vertices_at(t1)
            step = geo[13][a:b] - geo[18][a:b]
            geo[21][m] = float(np.sqrt(np.max(np.einsum("ij,ij->i", step, step), initial=0.0)))
            face_normals(geo[12][ts[m]:ts[m + 1]], geo[13], out=geo[20][ts[m]:ts[m + 1]])

    def integrate(self, bodies: BodyState, t1: float):
        x, q, v, w = bodies.arrays()
        self.t1 = t1
        if len(self.deforming):
            self.deform_meshes(t1 - self.h, t1)
        self.x_prev, self.q_prev = x.copy(), q.copy()
        self.v_before, self.w_before = v.copy(), w.copy()
        self.momentum = np.zeros_like(w)
        if not self.count:
            # Colliders only (a tablecloth on a table): no body to move, push or pull; the glue
            # below cost the tablecloth bench half a millisecond a frame.
            return
        if len(self.kinematic):
            x[self.kinematic], q[self.kinematic] = forces.animated_poses(self.bodies, self.kinematic, t1)
        self.apply_forces(bodies, t1)
        self.backend.rigid.integrate_bodies(x, q, v, w, self.momentum, self.inertia, self.inv_inertia, self.dynamic,
                                            self.accel, self.h, self.lin_decay, self.ang_decay)
        # Free motion that would carry a body deep into (or through) what it hits is taken back
        # to the moment of impact before the contacts are found (see ``collision.sweep``).
        self.sweeper.run(self.x_prev, self.q_prev, x, q, self.inv_mass)

    def apply_forces(self, bodies: BodyState, t1: float) -> None:
        """Force fields, springs and motors' forces: velocity changes over this substep."""
        x, q, v, w = bodies.arrays()
        b = self.bodies
        # Body drag acts in still air too, and a follow pull needs no field.
        if self.model.forces.count or np.any(b.drag > 0.0) or np.any(b.follow_position > 0.0) \
                or np.any(b.follow_rotation > 0.0):
            # air_velocity: SolverSettings.air_velocity, set by the Solver that owns this stepper.
            forces.apply_to_bodies(self.model.forces, b, t1, self.h, x, q, v, w, self.inv_mass,
                                   self.inv_inertia, getattr(self, "air_velocity", None), self.accel)
        self._connector_forces(bodies, t1)

    def _connector_forces(self, bodies: BodyState, t1: float) -> None:
        x, q, v, w = bodies.arrays()
        model = self.model
        if model.springs.count:
            active = np.isnan(bodies.spring_broken_at) & self.springs_awake
            self.backend.springs.apply_springs(model.springs, x, q, v, w, self.inv_mass, self.inv_inertia, self.h,
                                               bodies.spring_rest, active, self.accel)
        if model.joints.count:
            self.joint_impulses[...] = 0.0
            self.limit_hits[...] = 0.0
            if model.joints.steered:
                self.steer = model.joints.steering_at(t1)
        if model.motors.count:
            self.motors = model.motors.at(t1)
        if model.vehicles:
            # The drivers set steering, drive torques, brakes and grip for this substep.
            effort = np.array(self.motors.effort)
            drive_vehicles(model.vehicles, bodies.vehicles, t1, self.h, self.gravity, x, q, v, w, self.inv_mass,
                           self.inv_inertia, self.steer, effort, self.body_friction, self.backend.vehicles)
            self.motors = replace(self.motors, effort=effort)
        if model.motors.count:
            motors = self.motors
            apply_motor_forces(motors, x, q, v, w, self.inv_mass, self.inv_inertia, self.h, t1, self.drive_step,
                               self.drive_speed)
            self.motor_speeds = motor_speeds(motors, x, q, self.inv_mass, self.inv_inertia, t1, self.drive_speed)
            self.motor_lam = np.zeros(model.motors.count)

    def find_contacts(self, bodies: BodyState, t1: float) -> None:
        """This substep's contacts (features against shapes, at the poses after integration), their
        friction anchors and rows, and what the restitution pass needs of the substep's start."""
        x, q, _, _ = bodies.arrays()
        k = self.backend.contacts
        buf = self.buffers
        while True:
            count = k.find_contacts(self.geo, x, q, self.x_prev, self.q_prev, self.pairs, self.points,
                                    self.point_start, self.point_radius, self.point_material, self.body_shape,
                                    self.body_friction, self.body_restitution, self.bound, self.margin, self.count,
                                    self.key_stride, buf.out, self.pair_first, buf.spare)
            if count <= buf.capacity:
                break
            buf.grow(2 * count)
        self.contact_count = count
        self.S = np.zeros((len(x), 6))  # [dx, dth]: each body's correction in this substep
        self._order_touching()
        if not count:
            return
        # Friction anchors in B's frame: where A's contact point was at this substep's start (a
        # rolling sphere or wheel meets B at a new point of its own each substep), less the slip a
        # contact that stuck in the last substep still had at its end. So the solver's residual is
        # taken back instead of left to creep: a box resting on a slope stays, and so does a car
        # parked on its wheels; for a fixed corner this is exactly the anchor it stuck to.
        # For a round surface (a ball, a wheel: it meets B at a new point of its own as it rolls)
        # the anchor takes A's motion over the substep to first order (its centre's travel and
        # its turn's velocity at the contact, phi x rho): the material point's own start lies on
        # a cycloid behind that by r (theta - sin theta), which friction held as slip, and a
        # wheel turning theta = 0.16 rad a substep (13 m/s at 1/240 s) was braked past its grip.
        # For a fixed point of A (a corner, a hull's vertex: ``ints[:, 3]``) it is exactly where
        # that point was: to first order it was off by about phi x (phi x rho), which for a top
        # spinning on its tip (omega h = 0.4 rad, nodding at a few rad/s) pulled the tip sideways
        # every substep, and a 5 cm cone precessed 4.4 times too fast and lost a fifth of its
        # spin in 2 s.
        # Then the rows, and for restitution the normal speed at the substep's start, the
        # separation then and the relative normal acceleration (the moment of impact within the
        # substep). One kernel (``rigid.prepare_contacts``): as numpy glue this was a fifth of
        # the car example's time.
        self.backend.rigid.prepare_contacts(
            x, q, self.x_prev, self.q_prev, self.inv_mass, self.inv_inertia, self.v_before, self.w_before, self.accel,
            self.dynamic, buf.ints, buf.local_a, buf.local_b, buf.normal, count, self.anchor_keys,
            self.anchor_residual, buf.anchor, buf.J, buf.M, buf.base, buf.wn, buf.wt, buf.lam, buf.lam_t, buf.stuck,
            buf.factored, buf.speed_before, buf.gap_start, buf.accel_n)
        self.speed_before = buf.speed_before[:count]
        self.gap_start = buf.gap_start[:count]
        self.accel_n = buf.accel_n[:count]

    def _order_touching(self) -> None:
        """The order the substep's solves take the pairs in: the frame's colouring (``begin_frame``)
        less the pairs without contacts, regrouped into waves (``rigid.order_waves``) that solve
        them in exactly that order's sequence with fewer groups: the position and restitution
        passes give the same numbers (the impact passes of ``_propagate_impacts`` strike a wave at
        a time, where they struck a colour at a time; free and hanging cradles, a knocked wall
        and 216 boxes gave the same bits over 30-72 frames). The frame's
        candidate pairs (all within a frame's reach) are mostly apart: 1,000 boxes in stacks had
        8,560 candidates in 19 colours and 1,000 touching pairs, in 2 waves; each group is a
        start of the threads in every pass, and an empty pair a step of every loop."""
        order = self.frame_order
        order = order[self.pair_first[order + 1] > self.pair_first[order]]
        self.pair_order, self.colour_bounds = self.backend.rigid.order_waves(order, self.pairs[:, :2], self.dynamic)

    def solve_positions(self, bodies: BodyState, passes: int = 1) -> None:
        """``passes`` rounds of the position solve: contacts, motors, then connectors, each round
        (one kernel call for all of them: ``rigid.solve_position_passes``)."""
        x, q, _, _ = bodies.arrays()
        contacts = motors = joints = None
        if self.contact_count:
            buf = self.buffers
            contacts = (buf.ints, buf.J, buf.M, buf.base, buf.wn, buf.wt, buf.floats[:, 0], self.pair_first,
                        self.pair_order, self.colour_bounds, buf.lam, buf.lam_t, buf.stuck, self.S, CONTACT_SWEEPS, q,
                        self.inv_mass, self.inv_inertia, buf.rows_a, buf.factors, buf.factored)
        if self.model.motors.count:
            motors = (self.motors, x, q, self.x_prev, self.q_prev, self.S, self.inv_mass, self.inv_inertia, self.h,
                      self.motor_speeds, self.motor_lam, self.drive_step)
        if self.model.joints.count:
            joints = (self.model.joints, self.joint_layout, x, q, self.S, self.inv_mass, self.inv_inertia,
                      self._intact_joints(bodies), self.steer, self.joint_impulses, self.limit_hits, self.x_prev,
                      self.q_prev, self._from_start(q))
        if contacts and self.may_weigh and self.levels is not None:
            contacts = self._weighted_for_heavy_loads(contacts)
        if passes > 0 and (contacts or motors or joints):
            self.backend.rigid.solve_position_passes(passes, contacts, motors, joints)

    def _from_start(self, q) -> np.ndarray:
        """The joints that push along their rows at the substep's start in this substep: those
        that may (``joint_from_start``) in mechanisms whose bodies turn slowly enough for their
        mass ratio (``SHAKE_TURN``), by the predicted poses ``q`` against the substep's start."""
        mech, bodies = self.joint_layout.mechanism, self.joint_layout.bodies
        if not len(bodies) or not self.joint_from_start.any():
            return self.joint_from_start
        p = self.q_prev
        # |cos| of half each body's turn, summed in order (the same bits on every numpy)
        cos = np.abs(q[:, 0] * p[:, 0] + q[:, 1] * p[:, 1] + q[:, 2] * p[:, 2] + q[:, 3] * p[:, 3])
        slowest = np.where(bodies >= 0, cos[np.maximum(bodies, 0)], 1.0).min(axis=1)
        calm = slowest >= self.shake_cos
        return self.joint_from_start & np.where(mech >= 0, calm[np.maximum(mech, 0)], False)

    def _weighted_for_heavy_loads(self, contacts: tuple) -> tuple:
        """The contact passes' arguments with each body that bears one more than LOAD_RATIO
        times heavier (resting on it from a level nearer the ground, ``levels``) made as heavy
        as a LOAD_RATIO-th of it for the passes: its inverse mass and inertia, and its halves
        of its contacts' corrections (``M``, ``wn``, ``wt``), scaled down alike. The restitution
        and everything after the passes use the true masses."""
        count = self.contact_count
        buf = self.buffers
        a, b = buf.ints[:count, 0], buf.ints[:count, 1]
        level, inv_mass = self.levels, self.inv_mass
        upper_is_a = level[a] > level[b]
        upper, lower = np.where(upper_is_a, a, b), np.where(upper_is_a, b, a)
        relative = self.v_before[upper] - self.v_before[lower]
        slow = np.einsum("ci,ci->c", relative, relative) < LOAD_SPEED ** 2
        # Bearing: the contact holds the upper body up (its normal, towards it, against gravity).
        bearing = (buf.normal[:count] @ self.up) * np.where(upper_is_a, 1.0, -1.0) > LOAD_UPRIGHT
        gated = np.flatnonzero(self.dynamic[a] & self.dynamic[b] & (level[a] != level[b])
                               & (inv_mass[lower] > LOAD_RATIO * inv_mass[upper]) & slow & bearing)
        if not len(gated):
            return contacts
        # Each bearing body's scale: the least over the bodies it bears (the heaviest sets it).
        scale = np.ones(len(inv_mass))
        np.minimum.at(scale, lower[gated], LOAD_RATIO * inv_mass[upper[gated]] / inv_mass[lower[gated]])
        M, wn, wt = buf.M.copy(), buf.wn.copy(), buf.wt.copy()
        touched = np.flatnonzero((scale[a] < 1.0) | (scale[b] < 1.0))
        M[touched, :, :6] *= scale[a[touched], None, None]
        M[touched, :, 6:] *= scale[b[touched], None, None]
        J = buf.J
        wn[touched] = np.einsum("ck,ck->c", J[touched, 0], M[touched, 0])
        wt[touched, 0] = np.einsum("ck,ck->c", J[touched, 1], M[touched, 1])
        wt[touched, 1] = np.einsum("ck,ck->c", J[touched, 1], M[touched, 2])
        wt[touched, 2] = np.einsum("ck,ck->c", J[touched, 2], M[touched, 2])
        args = list(contacts)
        args[2], args[4], args[5] = M, wn, wt
        args[16], args[17] = inv_mass * scale, self.inv_inertia * scale[:, None]
        return tuple(args)

    def finish_substep(self, bodies: BodyState) -> None:
        """Apply the substep's corrections, take velocities from the poses, then restitution."""
        x, q, v, w = bodies.arrays()
        h = self.h
        k = self.backend.rigid
        count = self.contact_count
        buf = self.buffers
        shared = self.shared_contacts
        if self.model.joints.count and self.polish.any():
            # The passes push the joints along their rows at the substep's start (SHAKE, see
            # ``constraints.joints.solve_joints``), which converges more slowly than Newton: one
            # pass along the rows of the poses now takes what is left (a swinging chain of 20
            # hinged links was 1.4 mm apart at its joints without it).
            self.backend.joints.solve_joints(self.model.joints, self.joint_layout, x, q, self.S, self.inv_mass,
                                             self.inv_inertia, self._intact_joints(bodies) & self.polish,
                                             self.steer, self.joint_impulses)
        if count or self.model.joints.count or self.model.motors.count or shared:
            k.apply_corrections(x, q, self.S, self.momentum, self.inertia, self.dynamic, h)
        if shared:
            # The particles' velocity-only share (see ``collide_particles``): angular into the
            # momentum the spin is taken from, linear onto the velocity from the poses.
            self.momentum += self.particle_dL
        if count:
            # Static friction held these in the last pass: the slip they still have (B's frame)
            # carries over to their next anchor.
            self.anchor_keys, self.anchor_residual = k.stuck_anchors(x, q, buf.ints, buf.local_a, buf.anchor,
                                                                     buf.stuck, buf.lam, count)
        else:
            self.anchor_keys = np.zeros(0, np.int64)
        k.velocities(x, q, v, w, self.x_prev, self.q_prev, self.momentum, self.inv_inertia, self.dynamic,
                     self.kinematic_mask, h)
        if shared:
            v += self.particle_dv
            self.particle_dv[...] = 0.0
            self.particle_dL[...] = 0.0
            self.shared_contacts = False
        if count:
            self._restitution(x, q, v, w)
        self._connectors(bodies, self.t1)

    def _connectors(self, bodies: BodyState, t1: float) -> None:
        """Connectors past their breaking force or torque break, springs give way or break, and
        motors drive their bodies, at the end of the substep."""
        x, q, v, w = bodies.arrays()
        model, h = self.model, self.h
        j = model.joints
        if j.count:
            force = np.linalg.norm(self.joint_impulses[:, :3], axis=1) / (h * h)
            torque = np.linalg.norm(self.joint_impulses[:, 3:], axis=1) / (h * h)
            snap = np.isnan(bodies.joint_broken_at) & ((force > j.break_force) | (torque > j.break_torque))
            bodies.joint_broken_at[snap] = t1
            bounce_limits(j, self.joint_layout, x, q, v, w, self.v_before, self.w_before, self.inv_mass,
                          self.inv_inertia, self.steer, self._intact_joints(bodies), self.limit_hits,
                          self.bounce_speed)
        if self.springs_yield:
            active = np.isnan(bodies.spring_broken_at)
            update_springs(model.springs, x, q, bodies.spring_rest, active, bodies.spring_broken_at, t1)

    def _restitution(self, x, q, v, w) -> None:
        h = self.h
        count = self.contact_count
        buf = self.buffers
        c = slice(0, count)
        # Normal rows at the corrected poses (lever arms from the centres), so velocity impulses
        # conserve momentum.
        self.backend.rigid.contact_rows(x, q, x, self.inv_mass, self.inv_inertia, buf.ints, buf.local_a, buf.local_b,
                                        buf.normal, buf.anchor, count, False, buf.vJ, buf.vM, buf.vbase, buf.vwn,
                                        buf.vwt)
        restitution = buf.floats[c, 1]
        # Which contacts the solve takes and the speed each leaves with (one kernel:
        # ``rigid.restitution_targets``):
        # - contacts of a bouncing pair that would touch within the next substep bounce with it:
        #   the corners of a face landing flat make one impact, not a sequence of corner impacts
        #   that sets the body rocking (and a hair of tilt would decide which corner goes first);
        # - bouncing contacts leave at e times the speed they hit with, at the moment of impact
        #   within the substep (found from the gap at its start under constant acceleration, as
        #   for particles), so e = 1 keeps the energy; resting ones at zero normal speed, which
        #   takes away the outward speed that projecting a penetration out would add;
        # - the normal velocity at the substep's start: v was the mean over the last substep,
        #   half a substep of acceleration behind (from the gaps' change it would be off by the
        #   corners' centripetal travel in a substep, which for a spinning body is several
        #   percent);
        # - the body ends the substep at the surface leaving at that speed (a particle is also
        #   carried on by the rest of the substep; a body is not, which delays it by up to a
        #   substep per bounce but keeps the energy). v is the mean velocity over a substep, the
        #   speed at its end less half a substep of acceleration.
        bounce, touching, soon, target, solved = self.backend.rigid.restitution_targets(
            buf.lam[c], restitution, self.speed_before, self.gap_start, self.accel_n, buf.vbase[c, 0],
            self.pair_first, self.bounce_speed, h, buf.capacity)
        if not np.any(solved):
            return
        chain = self._propagate_impacts(q, solved, target, restitution)
        # Gauss-Seidel carries a change along a chain one pair per pass: a chain of impacts takes
        # its length in passes more (5 touching balls: the last left at 0.96 of the speed in 8).
        iterations = self.velocity_iterations + 2 * chain
        vw = np.hstack([v, w])
        before = vw.copy()
        self._bounce_friction(x, q, vw, bounce & touching, target)
        self.backend.rigid.solve_contact_restitution(buf.ints, buf.vJ, buf.vM, buf.vwn, solved, target,
                                                     self.pair_first, self.pair_order, self.colour_bounds, vw,
                                                     iterations, q, self.inv_mass, self.inv_inertia,
                                                     buf.rows_a, buf.factors, buf.factored)
        # The normal targets are Newton's (e times the speed of approach at each contact), which
        # after a friction strike that turned the body can ask more than the impact had: a 1 m
        # box tumbling onto a corner (e = 1, friction 0.5) left with 1.45 times its energy. An
        # impact never adds energy: each bouncing pair is held to what it had (``_no_energy_gained``).
        struck = bounce & touching & (buf.floats[c, 0] > 0.0)
        if np.any(struck):
            pair_of = np.repeat(np.arange(len(self.pairs)), np.diff(self.pair_first))[:count]
            for p in np.unique(pair_of[struck]):
                a, b = buf.ints[self.pair_first[p], 0], buf.ints[self.pair_first[p], 1]
                self._no_energy_gained(a, b, (before[a], before[b]), vw, x, q)
        v[...], w[...] = vw[:, :3], vw[:, 3:]

    def _bounce_friction(self, x, q, vw, bouncing, target) -> None:
        """Friction at a bounce. The substep's position solve meets an impact at the moment of
        impact (``collision.sweep`` takes the body back to it), so it pushes little and its
        friction, held within mu times that push, little too; the restitution solve after it
        pushes along the normals only, and the push at a tilted box's corner set the corner
        sliding and the box turning the wrong way: an e = 1 cube landing on an edge (10 degrees,
        friction 0.5) kept 84% of its energy, where the sticking impact of rigid-body theory
        keeps 99.8%. Here the bouncing contacts with friction are struck (sequential impulses,
        their normal speeds to their targets, their slip to zero within mu times their whole
        push, the substep's and this one's); the normal solve that follows finishes the normals.
        In place on vw (B+1, 6)."""
        buf = self.buffers
        count = self.contact_count
        c_all = np.flatnonzero(bouncing[:count] & (buf.floats[:count, 0] > 0.0))
        if not len(c_all) or len(c_all) > BOUNCE_FRICTION_MOST:
            return
        rows = BounceRows(len(c_all))
        ints = buf.ints[c_all]
        self.backend.rigid.contact_rows(x, q, x, self.inv_mass, self.inv_inertia, ints, buf.local_a[c_all],
                                        buf.local_b[c_all], buf.normal[c_all], buf.anchor[c_all], len(c_all), True,
                                        rows.J, rows.M, rows.base, rows.wn, rows.wt)
        h = self.h
        mu = buf.floats[c_all, 0]
        pushed = buf.lam[c_all] / h  # the substep's impulses so far
        slid = buf.lam_t[c_all] / h
        world = len(vw) - 1
        pair_of = np.repeat(np.arange(len(self.pairs)), np.diff(self.pair_first))[c_all]
        for p in np.unique(pair_of):
            ks = np.flatnonzero(pair_of == p)
            a, b = ints[ks[0], 0], ints[ks[0], 1]
            old = (vw[a].copy(), vw[b].copy())
            self._strike_pair(a, b, ks, c_all, ints, rows, vw, target, mu, pushed, slid, world)
            self._no_energy_gained(a, b, old, vw, x, q)

    def _strike_pair(self, a, b, ks, c_all, ints, rows, vw, target, mu, pushed, slid, world) -> None:
        """The bounce friction of one pair (see ``_bounce_friction``; ints: the rows of ``c_all``),
        in place on vw."""
        # The pair's rows in its bodies' order (a contact of the pair may own B's point).
        J = rows.J[ks].copy()
        M = rows.M[ks].copy()
        swap = ints[ks, 0] != a
        J[swap] = np.concatenate([J[swap][..., 6:], J[swap][..., :6]], axis=-1)
        M[swap] = np.concatenate([M[swap][..., 6:], M[swap][..., :6]], axis=-1)
        J, M = J.reshape(-1, 12), M.reshape(-1, 12)
        rel = matmul(J, np.concatenate([vw[a], vw[b]]))  # (not @ nor np.linalg: see ``reproducible``)
        want = -rel
        want[0::3] += target[c_all[ks]]
        # The impulse formula for all of them held (least squares: a face's corners repeat
        # each other's rows, and share alike)...
        step = psd_lstsq(matmul(J, M.T), want, rcond=1e-10).reshape(-1, 3)
        sticks = np.all(step[:, 0] >= 0.0) and np.all(
            np.hypot(*(slid[ks] + step[:, 1:]).T) <= mu[ks] * (pushed[ks] + step[:, 0]) * (1.0 + 1e-9))
        if sticks:
            change = matmul(step.ravel(), M)
            vw[a] += change[:6]
            vw[b] += change[6:]
            vw[world] = 0.0
            return
        # ... or, where that would take more than the cone allows, one contact after another
        # (normal, then the slip within the cone of its whole push).
        normal = np.zeros(len(ks))
        tangent = np.zeros((len(ks), 2))
        for _ in range(BOUNCE_FRICTION_PASSES):
            for i, k in enumerate(ks):
                Jk, Mk = J[3 * i:3 * i + 3], M[3 * i:3 * i + 3]
                vel = np.concatenate([vw[a], vw[b]])
                rel = matmul(Jk, vel)
                dn = max((target[c_all[k]] - rel[0]) / rows.wn[k], -normal[i])
                normal[i] += dn
                change = dn * Mk[0]
                rel = rel + matmul(change, Jk.T)
                w0, w1, w2 = rows.wt[k]
                det = w0 * w2 - w1 * w1
                if det > 0.0:
                    d1 = -(w2 * rel[1] - w1 * rel[2]) / det
                    d2 = -(w0 * rel[2] - w1 * rel[1]) / det
                    s1, s2 = slid[k, 0] + tangent[i, 0] + d1, slid[k, 1] + tangent[i, 1] + d2
                    length = math.hypot(s1, s2)
                    limit = mu[k] * (pushed[k] + normal[i])
                    if length > limit:
                        s1, s2 = s1 * limit / length, s2 * limit / length
                    d1, d2 = s1 - slid[k, 0] - tangent[i, 0], s2 - slid[k, 1] - tangent[i, 1]
                    tangent[i] += (d1, d2)
                    change = change + d1 * Mk[1] + d2 * Mk[2]
                vw[a] += change[:6]
                vw[b] += change[6:]
                vw[world] = 0.0

    def _kinetic_energy(self, body: int, vw_body, q_body) -> float:
        """½ m |v|² + ½ ω·I ω of one body (its principal inertia, turned by q), in Python floats
        summed in order (the same bits on every numpy)."""
        m = 1.0 / self.inv_mass[body]
        v0, v1, v2 = (float(t) for t in vw_body[:3])
        w_body = quat.rotate(quat.conjugate(np.asarray(q_body)[None]), np.asarray(vw_body[3:])[None])[0]
        i0, i1, i2 = (float(t) for t in self.inertia[body])
        u0, u1, u2 = (float(t) for t in w_body)
        return 0.5 * m * (v0 * v0 + v1 * v1 + v2 * v2) + 0.5 * (i0 * u0 * u0 + i1 * u1 * u1 + i2 * u2 * u2)

    def _no_energy_gained(self, a: int, b: int, old, vw, x, q) -> None:
        """The bounce friction of a pair is an impact: it may keep the pair's energy (e = 1 without
        slip) but never add to it. Held as a sticking impact can be (a body landing on a corner
        while it tumbles: held to the surface's speed at that corner, its turn sped up and a 0.2 m
        box gained a quarter of its energy in one bounce), the pair's change is scaled back to
        where the bodies' energy (kinetic at the substep's end, v being the mean over it, and the
        work of their accelerations, gravity and fields, from their positions at its start to
        now) is what they had at the substep's start. A pair with a kinematic body (its animation
        may drive it) is left as it is. In place on vw."""
        dyn = [k for k in (a, b) if self.dynamic[k] and self.inv_mass[k] > 0.0]
        if not dyn or any(self.kinematic_mask[k] for k in (a, b)):
            return
        half = 0.5 * self.h
        # f(s) = energy(old + s change) - energy(start): c0 + c1 s + c2 s^2 over the dynamic bodies.
        c0 = c1 = c2 = 0.0
        for k in dyn:
            before, d = (old[0], vw[a] - old[0]) if k == a else (old[1], vw[b] - old[1])
            acc = np.asarray([float(t) for t in self.accel[k]] + [0.0, 0.0, 0.0])
            end = before + half * acc  # at the substep's end
            k0 = self._kinetic_energy(k, end, q[k])
            k1 = self._kinetic_energy(k, end + d, q[k])
            km = self._kinetic_energy(k, end - d, q[k])
            start = np.concatenate([self.v_before[k], self.w_before[k]]) + half * acc
            m = 1.0 / self.inv_mass[k]
            work = m * sum(float(acc[i]) * (float(x[k, i]) - float(self.x_prev[k, i])) for i in range(3))
            # (KE is quadratic in s: its coefficients from its values at s = -1, 0, 1.)
            c0 += k0 - self._kinetic_energy(k, start, self.q_prev[k]) - work
            c1 += 0.5 * (k1 - km)
            c2 += 0.5 * (k1 + km) - k0
        slack = 1e-9 * max(abs(c0), abs(c1), abs(c2), 1e-300)
        if c0 + c1 + c2 <= slack:
            return  # no energy gained
        if c0 >= 0.0:
            s = 0.0  # already at (or past) the start's energy: this pair's strike adds nothing
        elif c2 > 0.0:
            s = (-c1 + math.sqrt(max(c1 * c1 - 4.0 * c2 * c0, 0.0))) / (2.0 * c2)
        else:
            s = -c0 / c1 if c1 > 0.0 else 1.0
        s = min(max(s, 0.0), 1.0)
        vw[a] = old[0] + s * (vw[a] - old[0])
        vw[b] = old[1] + s * (vw[b] - old[1])
        vw[len(vw) - 1] = 0.0

    def _propagate_impacts(self, q, solved, target, restitution) -> int:
        """Impacts carried on through bodies that touch (a Newton's cradle): the targets of the
        restitution solve as a sequence of pairwise impacts makes them.

        The one solve of all contacts at once treats a touching row as one block: the ball that
        hits the first of five touching ones bounces off the block, which moves off together
        (the last left at 0.49 of the speed, the middle ones at up to 0.38). Here the contacts
        are struck one after another, from the substep's starting velocities: those approaching
        faster than ``bounce_speed`` leave at e times that (pass 1: the impacts of the substep);
        what that sends on into a contact that did not approach before (newly loaded) is an
        impact of its own in the next pass, and so on until no contact approaches. Colours are
        struck one at a time (their pairs share no moving body), each with the speeds as the
        colours before it left them. A contact struck only after the first pass leaves at the
        speed the sequence leaves it with; the others' targets change by what the later passes
        changed of their speeds (none without a chain: an impact alone keeps its target).
        Contacts of restitution 0 take no part (they hold as before), nor do resting ones (no
        contact approaches faster than ``bounce_speed`` in a pile at rest). In place on target
        and solved; returns how many bodies a chain of impacts moved (0: none).
        """
        count = self.contact_count
        buf = self.buffers
        c = slice(0, count)
        a, b = buf.ints[c, 0], buf.ints[c, 1]
        rows = buf.vJ[c, 0]

        def speeds(vel):
            return np.einsum("ci,ci->c", rows[:, :6], vel[a]) + np.einsum("ci,ci->c", rows[:, 6:], vel[b])

        elastic = restitution > 0.0
        if not np.any(elastic & solved[c]):
            return 0  # nothing bounces (restitution 0, the default): no impact to carry on
        vw = np.hstack([self.v_before, self.w_before])
        start = speeds(vw)
        approaching = solved[c] & elastic & (start < -self.bounce_speed)  # the substep's own impacts
        if not np.any(approaching):
            return 0
        # A contact approaching at the start that the substep's solve leaves alone (it is not
        # touching yet) is the next substep's; one that a strike makes approach may be any that
        # was found (within the margins) and would close within a substep at that speed.
        candidate = elastic & (solved[c] | (start >= -self.bounce_speed))
        gap = buf.vbase[c, 0]
        h = self.h
        k = self.backend.rigid
        pair_of = np.repeat(np.arange(len(self.pairs)), np.diff(self.pair_first))[:count]
        colour_of_pair = np.empty(len(self.pairs), np.int64)
        for colour in range(len(self.colour_bounds) - 1):
            colour_of_pair[self.pair_order[self.colour_bounds[colour]:self.colour_bounds[colour + 1]]] = colour
        colour = colour_of_pair[pair_of]
        loaded = np.zeros(count, bool)  # struck, not having approached at the start: newly loaded
        hit = np.zeros(count, bool)
        after_own = start.copy()  # each contact's speed just after it was first struck (else its start)
        chosen = np.zeros(buf.capacity, bool)
        goal = np.zeros(buf.capacity)
        for _ in range(IMPACT_PASSES):
            any_struck = False
            for col in np.unique(colour[candidate]):
                u = speeds(vw)
                impact = candidate & (colour == col) & (u < -self.bounce_speed) & (solved[c] | (gap + u * h <= 0.0))
                if not np.any(impact):
                    continue
                any_struck = True
                chosen[...] = False
                chosen[c] = impact
                goal[c] = np.where(impact, -restitution * u, 0.0)
                pairs = self.pair_order[self.colour_bounds[col]:self.colour_bounds[col + 1]]
                k.solve_contact_restitution(buf.ints, buf.vJ, buf.vM, buf.vwn, chosen, goal, self.pair_first, pairs,
                                            np.array([0, len(pairs)], np.int64), vw, STRIKE_PASSES, q, self.inv_mass,
                                            self.inv_inertia, buf.rows_a, buf.factors, buf.factored)
                first = impact & ~hit
                after_own = np.where(first, speeds(vw), after_own)
                hit |= impact
                loaded |= impact & ~approaching
            if not any_struck:
                break
        if not np.any(loaded):
            return 0  # no chain: every impact stays as the solve of the substep has it
        end = speeds(vw)
        target[c] = np.where(loaded, np.maximum(end, 0.0),
                             np.where(solved[c], np.maximum(target[c] + end - after_own, 0.0), target[c]))
        solved[c] |= loaded
        moved = np.zeros(len(vw), bool)
        moved[a[hit]] = moved[b[hit]] = True
        return int(np.count_nonzero(moved & self.dynamic))

    def collide_particles(self, bodies: BodyState, px, pp, accel, friction, restitution, radii,
                          inverse_masses=None, only=None) -> None:
        """Particles against every shape (the world's and the bodies'). The deepest contact of
        each particle is answered. Static shapes and kinematic bodies are moving colliders of
        infinite mass (one way); with the particles' ``inverse_masses`` (n,) a dynamic body is
        pushed back (two ways, ``contacts.share_particle_contacts``): a heavy cloth pushes a light
        box, a box on a pinned sheet sags it and bounces on it. only: (n,) bool, the particles
        to answer (the others are left as they are), or None for all."""
        cand = self.particle_candidates
        if only is not None and len(cand):
            cand = np.ascontiguousarray(cand[only[cand[:, 0]]])
        self.touched_particles = np.zeros(0, np.int64)
        if not len(cand):
            return
        x, q, _, _ = bodies.arrays()
        owners = self.geo[4][cand[:, 1]]
        touchable = owners[owners >= 0]
        two_way = inverse_masses is not None and bool(np.any(self.dynamic[touchable] & (self.inv_mass[touchable] > 0)))
        # Against a dynamic body the particles meet it where this substep's corrections have put
        # it so far (as its velocity will see it), not where free motion took it.
        xc, qc = self._corrected_poses(x, q) if two_way else (x, q)
        n = len(cand)
        k = np.empty(n, np.int64)
        corr, depth, surface = np.empty((n, 3)), np.empty(n), np.empty((n, 3))
        shape = np.empty(n, np.int64)
        # pp: where the particles were at the substep's start, from which they are swept.
        found = self.backend.contacts.particle_contacts(self.geo, xc, qc, self.x_prev, self.q_prev, px, pp, radii,
                                                        cand, len(self.geo[0]), k, corr, depth, surface, shape)
        if not found:
            return
        start = pp.copy()  # (the responses below move pp: Verlet's velocity)
        k, corr, depth, surface, shape = k[:found], corr[:found], depth[:found], surface[:found], shape[:found]
        self.touched_particles = k
        mu = np.sqrt(friction[k] * self.geo[16][shape])
        e = np.sqrt(restitution[k] * self.geo[17][shape])
        owner = self.geo[4][shape]
        shared = np.zeros(found, bool)
        if two_way:
            safe = np.maximum(owner, 0)
            shared = (owner >= 0) & self.dynamic[safe] & (self.inv_mass[safe] > 0)
        if not np.any(shared):
            self.backend.particles.respond_to_contacts(px, pp, k, corr, depth, surface,
                                                       np.ascontiguousarray(accel[k]), mu, e, self.h,
                                                       self.bounce_speed)
            self._answer_again(k, depth, cand, xc, qc, px, pp, start, accel, friction, restitution, radii, two_way)
            return
        one = ~shared
        if np.any(one):
            self.backend.particles.respond_to_contacts(px, pp, k[one], corr[one], depth[one], surface[one],
                                                       np.ascontiguousarray(accel[k[one]]), mu[one], e[one], self.h,
                                                       self.bounce_speed)
            self._answer_again(k[one], depth[one], cand, xc, qc, px, pp, start, accel, friction, restitution, radii,
                               two_way)
        c = np.flatnonzero(shared)
        body = np.ascontiguousarray(owner[c])
        # Mass splitting (see the kernel): each contact takes its body as many times heavier as
        # the body has contacts here. Gauss-Seidel in particle order instead lets the first
        # particles of a face take the whole push (the box tips towards the others and rocks),
        # and independent full shares (plain Jacobi) throw a light body as many times too far.
        share = np.bincount(body, minlength=self.count + 1).astype(np.float64)[body]
        # The bounce's moment of impact takes the acceleration relative to the body's.
        rel_accel = np.ascontiguousarray(accel[k[c]] - self.accel[body])
        if not hasattr(self, "particle_dv"):
            self.particle_dv = np.zeros((self.count + 1, 3))
            self.particle_dL = np.zeros((self.count + 1, 3))
        self.backend.contacts.share_particle_contacts(
            px, pp, np.ascontiguousarray(k[c]), np.ascontiguousarray(corr[c]), np.ascontiguousarray(depth[c]),
            np.ascontiguousarray(surface[c]), rel_accel, np.ascontiguousarray(mu[c]), np.ascontiguousarray(e[c]),
            self.h, self.bounce_speed, np.ascontiguousarray(inverse_masses[k[c]]),
            np.ascontiguousarray(radii[k[c]]), body, np.ascontiguousarray(xc[body]), q, self.inv_mass,
            self.inv_inertia, share, self.S, self.particle_dv, self.particle_dL)
        self.shared_contacts = True
        self.fed_by_particles = np.union1d(self.fed_by_particles, body)

    def _answer_again(self, answered, depth, cand, xc, qc, px, pp, start, accel, friction, restitution, radii,
                      two_way) -> None:
        """The particles just pushed far (over a quarter of their radius) by a static or kinematic
        shape, asked once more, still swept from where they started: the deepest contact taken out
        of one part of a mesh made of overlapping parts (a table top and a leg box reaching into
        it) can leave the particle in another. A tablecloth at 5 substeps had vertices pushed out
        of a leg sideways and left 8.6 mm inside the top above it. (Only those pushed far: cloth
        resting on a table sinks g h^2 a substep, and asking all of it again cost the tablecloth
        bench 47%; and at least FAR_PUSH, or every push of a point particle would count.)"""
        far = answered[depth > np.maximum(0.25 * radii[answered], FAR_PUSH)]
        if not len(far):
            return
        marked = np.zeros(len(px), bool)
        marked[far] = True
        again = cand[marked[cand[:, 0]]]
        if two_way:  # (the dynamic bodies' shares are settled once, in collide_particles)
            owners = self.geo[4][again[:, 1]]
            safe = np.maximum(owners, 0)
            again = again[~((owners >= 0) & self.dynamic[safe] & (self.inv_mass[safe] > 0))]
        n = len(again)
        if not n:
            return
        k = np.empty(n, np.int64)
        corr, depth, surface = np.empty((n, 3)), np.empty(n), np.empty((n, 3))
        shape = np.empty(n, np.int64)
        found = self.backend.contacts.particle_contacts(self.geo, xc, qc, self.x_prev, self.q_prev, px, start, radii,
                                                        again, len(self.geo[0]), k, corr, depth, surface, shape)
        if not found:
            return
        k, corr, depth, surface, shape = k[:found], corr[:found], depth[:found], surface[:found], shape[:found]
        mu = np.sqrt(friction[k] * self.geo[16][shape])
        e = np.sqrt(restitution[k] * self.geo[17][shape])
        self.backend.particles.respond_to_contacts(px, pp, k, corr, depth, surface, np.ascontiguousarray(accel[k]),
                                                   mu, e, self.h, self.bounce_speed)

    def _corrected_poses(self, x, q):
        """The poses (B + 1, 3), (B + 1, 4) the dynamic bodies would have with this substep's
        corrections so far (S) applied, as ``apply_corrections`` will apply them."""
        d = np.flatnonzero(self.dynamic)
        xc, qc = x.copy(), q.copy()
        if len(d) and np.any(self.S[d] != 0.0):
            xc[d] += self.S[d, :3]
            qc[d] = _normalize(quat.multiply(quat.exp_rotation(self.S[d, 3:]), q[d]))
        return xc, qc


def _normalize(q):
    return q / np.sqrt(q[:, 0] * q[:, 0] + q[:, 1] * q[:, 1] + q[:, 2] * q[:, 2] + q[:, 3] * q[:, 3])[:, None]


def _length(metres: float) -> str:
    # (by the figure shown: 0.00999... m is "1.0 cm", not "10.0 mm")
    return f"{metres * 100:.1f} cm" if round(metres * 1000, 1) >= 10.0 else f"{metres * 1000:.1f} mm"
