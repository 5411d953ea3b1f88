"""The solver: substeps of Verlet integration, constraint projection and contacts.

Per substep (Macklin et al. 2019, *Small Steps*: many substeps, few iterations):
forces -> Verlet -> ``iterations`` x (stick colours, goals) -> contacts. Sticks move their ends
along their directions at the substep's start (SHAKE), which keeps the energy of a swing.
Constraint stiffness is XPBD compliance, so a stiffness means the same at any substep count.
"""

from __future__ import annotations

import math

import numpy as np

from ..checks import FLOAT32_MAX
from ..constraints.motors import drive_warnings
from ..constraints.springs import spring_warnings
from ..errors import JakobsenError
from ..forces import fields as forces
from ..geometry import quaternions as quat
from ..model import Model, State, StickKind
from .. import backend as backends
from .energy import EnergyGuard
from ..vehicles.vehicle import vehicle_warnings
from ..bodies.rigid import spin_warnings
from ..collision.self_contact import SelfContacts
from ..particles.bending import fold_vectors, hinge_frames
from ..particles.chains import SHAKE
from ..particles.surface_solve import SurfaceSolver
from .rigid_step import RigidStepper
from .settings import SolverSettings
from .turn import TurnTakeBack

# A cloth whose edges are shorter than this many times the distance gravity (and the settings'
# wind) moves it in one substep stretches like rubber however many sweeps: refused (a 1 mm cloth
# of 0.125 mm edges at 240 Hz stretched 70 %; at twice its edges, 25 %). The substeps suggested
# give edges of EDGE_ADVISED times that (under 10 %).
EDGE_SUBSTEPS = 2.0
EDGE_ADVISED = 8.0
# Refused only when this share of its edges or more are that short; fewer (an imported or scanned
# mesh's slivers, vertices a hair apart) are warned of. A 1 m curtain of 33 x 33 with 5 edges of
# 0.3 mm (and the slivers round them), let fall from level, was refused by its shortest edge; it
# swings and comes to rest as the same curtain without them (0.19-0.22 m/s after 4 s, the same
# lowest point), those edges stretching by up to 0.25 mm (5 edges of 0.03 mm: to 0.2 mm).
SHORT_EDGE_SHARE = 0.1
# Rounds of (the cloth's sticks, its contacts) after a substep's contacts while a dynamic body can
# meet particles. One contact pass pushes the particles out of a heavy body's way (its share of
# each correction is the particle's mass over its own) and the sheet's sticks answer only on the
# next substep, so a 1 kg box went through a 0.2 kg/m^2 sheet at 10 substeps; solved together a
# few rounds, the sheet holds it (8 rounds: a 5 kg box on that sheet; see test_cloth_bodies).
COUPLING_ROUNDS = 8
# Rounds of (the volumes, their surfaces' rigid sticks, the contacts) after a substep's contacts
# while a pressurised surface (a soft body, a cushion) touches something. The volume is kept in the iterations, then the
# contacts take back what the substep pushed into the ground, and with it the volume: a jelly
# landing hard lost 3.5% (0.1 m cube dropped 0.5 m) to 10.6% (0.05 m) in the substep it landed.
# Each round restores the volume over the whole surface and pushes what that puts into the
# ground out again, leaving the part of the deficit the touching vertices carry (a cube on a
# face: about a sixth), so a few rounds end it.
VOLUME_CONTACT_ROUNDS = 4
# In the self-collision pass after a substep's contacts, a particle that a contact answered (on
# the ground, a collider, a body) weighs 1 / SUPPORTED_WEIGHT times its mass: what holds it
# holds it there too, and the layer above gives way. With its own mass, that pass pushed the
# bottom layer of a pile into the ground, where the substep ended: a 20 x 20 sheet dropped
# upright onto the ground ended frames 3.1 mm inside its 5 mm thickness, and at 2 mm thickness
# 30 x 30 and 25 x 25 sheets ended frames 1.8 and 0.8 mm under the ground (the lowest vertex of
# every frame now 0.89 of the thickness above it or more). (0.1: 1.3 of the 2 mm; 0: pairs of
# held particles were not answered at all.)
SUPPORTED_WEIGHT = 0.01
# Iterations "auto": iterate until an iteration moves no particle by more than AUTO_TOLERANCE
# times the shortest stick, at most AUTO_ITERATIONS times a substep. (Made when sticks were
# swept a colour at a time: one sweep left a soft 21 x 21 curtain at 5 N sagging 40, 14 and 7.8
# mm at 5, 10 and 20 substeps, auto 6.7, 6.6, 6.6. Solved as chains, one iteration gives 6.80,
# 6.70, 6.64 mm; what is left is the Gauss-Seidel between rows, columns and diagonals.)
AUTO_TOLERANCE = 1e-4
AUTO_ITERATIONS = 32
# At most this many sticks of a surface tear one after another in a substep (see _substep).
TEAR_ROUNDS = 64
# A chained level of this many groups or more (a triangulated cloth's rows, columns and
# diagonals; any irregular mesh) is solved group by group back and forth (symmetric
# Gauss-Seidel: _symmetric). Forward only, three crossing groups kept a curtain shaking with no
# end: a triangulated 65 x 65 one at the default 10 substeps, 1,000 N and bending 0.01 at 0.74
# m/s after 2 s, with Silk's settings at 0.04; back and forth, both hang still. With two groups
# (a quad grid's rows and columns) forward only hung still in all those cases, and back and
# forth shook one of them, so two stay forward. Soft stretch with soft bending on a fine mesh
# (65 x 65 triangles, 5 N, 0.003: 0.08 m/s, 1.3 forward) still shook until the chains'
# transverse filter (backend particles._filter_transverse); an irregular mesh whose inner
# vertices are moved up to 0.3 of an edge still moves (0.5-0.7 m/s at 10 substeps, 2.2 before
# the filter); two iterations a substep settle it.
SYMMETRIC_GROUPS = 3
# The global solve (SolverSettings.global_solve; backend particles.solve_sticks): conjugate
# gradients on the linearised XPBD system of the stretch sticks, until the largest residual is
# GLOBAL_REDUCTION of the first (or GLOBAL_FLOOR times the shortest stick), at most
# GLOBAL_ITERATIONS. Warm-started from the last substep's multipliers, its rest is the exact XPBD
# rest (C + alpha lambda = 0), so the sag no longer depends on the substep: a 33 x 33 curtain
# at 5 N per unit strain sags 4.22 / 4.16 / 4.16 mm at 5 / 10 / 20 substeps (sweeps alone: 89,
# 26, 8.9), at 1e4 N 3.06 um at all three, 65 x 65 at 1e4 N 1.53 um. A warm start needs a
# converged solve: capped at 8 iterations it blew up. Other equal sticks (shear) take part
# only when soft at this substep (compliance / h^2 >= GLOBAL_SOFT times w_i + w_j): stiff
# shear diagonals make the system redundant (self-stresses that cost nothing), and their
# multipliers, warm or cold, blew a swinging sheet up; they stay with the sweeps.
GLOBAL_REDUCTION = 1e-2
GLOBAL_FLOOR = 1e-7
GLOBAL_ITERATIONS = 100
GLOBAL_SOFT = 1e-2


def substep_warnings(model: Model, settings: SolverSettings) -> list[str]:
    """What the settings' substep cannot resolve of the model as set, and what the solver holds
    it to (motors: ``constraints.motors.drive_limits``; springs: ``resolvable_stiffness``)."""
    settings.validate()
    return drive_warnings(model.motors, model.bodies, settings.substep, settings.substeps) \
        + spring_warnings(model.springs, model.bodies, settings.substep, settings.substeps) \
        + vehicle_warnings(model.vehicles, settings.substep, settings.substeps) \
        + spin_warnings(model.bodies, settings.substep, settings.substeps) \
        + rope_warnings(model, settings) + short_edge_warnings(model, settings)


# A rope (a chain of sticks touching no other: particles.chains SHAKE) solved whole carries its
# weight to its pin in one pass, and moves each link back towards its line by about
# g h^2 L / l^2 of how far it is off it (L the rope's length, l a link's): beyond about one half
# that overshot, and ropes shook sideways without end (1 m of 128 links at 10 substeps, 2.8:
# 8-33 m/s). The chains' transverse filter (backend numpy particles.TRANSVERSE_SLACK) holds them
# now, up to a point: 1 m ropes hung straight and nudged by 0.1 mm, after 2 s at 8/s damping,
# 0.003 m/s or less up to 4.4 (80 links at 5 substeps; 128 at 10: 2.8, 0.0007), 0.02-0.03 at 6.8
# (200 at 10, 400 at 20); at 11 and beyond they shake or blow up (128 at 5: 0.03; 256 at 10 and
# 400 at 10: non-finite within a second). Warned above ROPE_GAIN.
ROPE_GAIN = 5.0


def rope_warnings(model: Model, settings: SolverSettings) -> list[str]:
    """A warning for each object with a rope too long for its links at the settings' substep
    (see ROPE_GAIN), naming the substeps it needs."""
    s = model.sticks
    lone = np.flatnonzero(((s.chain_flags & SHAKE) != 0) & (np.diff(s.chain_offsets) >= 2))
    if not len(lone):
        return []
    g = float(np.linalg.norm(np.asarray(settings.gravity) + np.asarray(settings.wind_acceleration)))
    h = settings.substep
    rest = s.rest[s.chain_sticks]
    starts = s.chain_offsets[lone]
    length = np.add.reduceat(rest, s.chain_offsets[:-1])[lone]
    link = np.minimum.reduceat(rest, s.chain_offsets[:-1])[lone]
    gain = g * h * h * length / np.maximum(link, 1e-12) ** 2
    out, named = [], set()
    for k in np.flatnonzero(gain > ROPE_GAIN):
        first = int(s.i[s.chain_sticks[starts[k]]])
        where = next((name for name, a, b in model.labels if a <= first < b), "particles")
        if where in named:
            continue
        named.add(where)
        need = int(math.ceil(settings.substeps * math.sqrt(gain[k] / ROPE_GAIN)))
        links = int(s.chain_offsets[lone[k] + 1] - starts[k])
        out.append(f"{where}: a rope of {links} links of {link[k]:.3g} m, {length[k]:.3g} m long, can shake sideways "
                   f"or blow up where it hangs at {settings.substeps} substeps per frame (its sideways waves outrun "
                   "the substep); "
                   f"use at least {need} substeps, or fewer, longer links")
    return out


def _short_edges(model: Model, settings: SolverSettings):
    """Per object with equal sticks: (name, its edge at SHORT_EDGE_SHARE, its shortest, how many
    are shorter than EDGE_SUBSTEPS times the fall, how many it has, the fall in a substep, m)."""
    s = model.sticks
    if not s.count:
        return
    h = settings.substep
    fall = float(np.linalg.norm(np.asarray(settings.gravity) + np.asarray(settings.wind_acceleration))) * h * h
    for where, start, stop in model.labels:
        rest = s.rest[(s.i >= start) & (s.i < stop) & (s.kind == 0)]
        if len(rest):
            share = float(np.sort(rest)[int(SHORT_EDGE_SHARE * (len(rest) - 1))])
            yield where, share, float(rest.min()), int(np.count_nonzero(rest < fall * EDGE_SUBSTEPS)), len(rest), fall


def check_resolution(model: Model, settings: SolverSettings) -> None:
    """Raise JakobsenError for a cloth the settings' substep cannot resolve (SHORT_EDGE_SHARE of
    its edges or more shorter than ``EDGE_SUBSTEPS`` times what gravity moves it in a substep)."""
    for where, edge, _, _, _, fall in _short_edges(model, settings):
        if fall * EDGE_SUBSTEPS > edge:
            need = int(math.ceil(settings.substeps * math.sqrt(fall * EDGE_ADVISED / edge)))
            raise JakobsenError(
                f"{where}: it is too small (or too finely divided) for {settings.substeps} substeps per frame: "
                f"{SHORT_EDGE_SHARE:.0%} or more of its edges are {edge:.3g} m or shorter, less than "
                f"{EDGE_SUBSTEPS:g} times how far gravity moves it in one substep ({fall:.3g} m), and it would "
                f"stretch like rubber; use at least {need} substeps, or fewer, larger faces")


def short_edge_warnings(model: Model, settings: SolverSettings) -> list[str]:
    """A warning for each object with a few edges too short for the substep (fewer than
    SHORT_EDGE_SHARE of them: check_resolution refuses more)."""
    out = []
    for where, edge, shortest, short, count, fall in _short_edges(model, settings):
        if short and fall * EDGE_SUBSTEPS <= edge:
            out.append(f"{where}: {short} of its {count} edges are shorter than {EDGE_SUBSTEPS:g} times how far "
                       f"gravity moves it in a substep ({fall:.3g} m; the shortest {shortest:.3g} m) and may "
                       "stretch by a few times that; Merge by Distance removes them, more substeps resolve them")
    return out


def _first_out_of_float32(arrays) -> int | None:
    """The first row (of the arrays side by side, each (k, m)) with a value not finite or beyond
    single precision's range, or None. Checked first by two reductions an array: the row by row
    test's temporaries took 10 ms a frame over 250,000 particles, so it only names the row."""
    if all(not len(a) or (a.max() <= FLOAT32_MAX and a.min() >= -FLOAT32_MAX) for a in arrays):  # NaN: False
        return None
    return int(np.flatnonzero(~(np.abs(np.hstack(arrays)) <= FLOAT32_MAX).all(axis=1))[0])


def _symmetric(passes: list) -> list:
    """The passes with each chained level of SYMMETRIC_GROUPS groups or more solved back and
    forth (see SYMMETRIC_GROUPS): its groups last to first, then first to last, so its last
    group is still solved last; each sweep of it so."""
    out = []
    for first, end, sweeps, g0, g1 in passes:
        if g1 - g0 < SYMMETRIC_GROUPS:
            out.append([first, end, sweeps, g0, g1])
            continue
        order = list(range(g1 - 1, g0 - 1, -1)) + list(range(g0 + 1, g1))
        out += [[first, end, 1, g, g + 1] for _ in range(sweeps) for g in order]
    return out


class Solver:
    """Steps a ``State`` of a ``Model`` one frame at a time."""

    def __init__(self, model: Model, settings: SolverSettings | None = None):
        settings = settings or SolverSettings()
        settings.validate()
        check_resolution(model, settings)
        self.model = model
        self.settings = settings
        # What the substep cannot resolve and is held to (see ``substep_warnings``).
        self.warnings = substep_warnings(model, settings)
        h = self.h = settings.substep
        inv_mass = model.inverse_masses
        self._movable = (inv_mass > 0).astype(np.float64)
        self._gravity = np.asarray(settings.gravity, dtype=np.float64)
        self._base_accel = self._gravity + np.asarray(settings.wind_acceleration, dtype=np.float64)
        self._accel: np.ndarray | None = None  # the substep's accelerations (see ``_substep``)
        self._frame_accel = np.zeros((0, 3))  # and the frame's (``_begin_accelerations``)
        self._in_frame = False  # step_frame is stepping: _frame_accel is this frame's
        self._last_substep = False  # and this is its last substep
        self._base_rows = np.zeros((0, 3))
        self._air_rows = np.zeros((0, 3))  # self._air per particle, made once (see ``_substep``)
        self._air = np.asarray(settings.air_velocity, dtype=np.float64)
        self._decay = math.exp(-settings.damping * h)
        self._drag_w = model.drag * inv_mass if np.any(model.drag > 0) else np.zeros(0)
        self._fields = model.forces if model.forces.count else None  # wind, drag, attractors
        self.backend = backends.select(settings.backend)
        self.kernels = self.backend.particles
        s = model.sticks
        self._global = bool(settings.global_solve) and bool(s.count)
        # The order the kernels take the sticks in: the model's (its chained levels in chain
        # order), or for the global solve, which sweeps every level a colour at a time, the
        # colour order (the surfaces' rests and kinds, in the model's order, are gathered).
        self._order = np.ascontiguousarray(s.colour_order) if self._global else None
        self._stick_i, self._stick_j = (s.i, s.j) if self._order is None else (s.i[self._order], s.j[self._order])
        # The sticks' per-stick constants, and the passes: runs of colours of one level (first
        # colour, end colour, sweeps), each swept `sweeps` times per iteration.
        self._stick_w = (np.ascontiguousarray(inv_mass[self._stick_i]), np.ascontiguousarray(inv_mass[self._stick_j]))
        self._stick_alpha = self._in_order(s.compliance) / (h * h)
        self._stick_rest = self._in_order(s.rest)
        self._stick_kind = self._in_order(s.kind).astype(np.int8)
        passes = []
        for c in range(s.colour_count):
            key = (int(s.colour_priority[c]), int(s.colour_sweeps[c]), *s.colour_groups[c].tolist())
            if c and key == (int(s.colour_priority[c - 1]), int(s.colour_sweeps[c - 1]),
                             *s.colour_groups[c - 1].tolist()):
                passes[-1][1] = c + 1
            else:
                groups = (0, 0) if settings.global_solve else key[2:]
                passes.append([c, c + 1, key[1], *groups])
        # (first colour, end colour, sweeps, first chain group, end group): a level with chain
        # groups (a cloth's stretch and shear, ropes: particles.chains) is solved chain by
        # chain instead. The global solve keeps the colour sweeps it was tested with (followed by
        # the chains, three of its curtains no longer sagged alike within 3%).
        self._passes = np.array(_symmetric(passes), dtype=np.int64).reshape(-1, 5)
        self._chains = (s.chain_sticks, s.chain_flip, s.chain_offsets, s.chain_flags, s.group_offsets)
        self._lam = np.zeros(s.count)
        # Which sticks the global solve takes (see GLOBAL_SOFT): the stretch family (and ropes and
        # chains), and any other equal stick soft enough at this substep.
        stretch = np.repeat(s.colour_priority == 0, np.diff(s.colour_offsets)) if s.count else np.zeros(0, bool)
        self._global_family = stretch | (self._stick_alpha >= GLOBAL_SOFT * (self._stick_w[0] + self._stick_w[1]))
        self._global_floor = GLOBAL_FLOOR * float(s.rest.min()) if s.count else 0.0
        self.global_iterations = 0  # the last substep's conjugate-gradient iterations
        # Iterations "auto" (see AUTO_TOLERANCE): how far an iteration may move a particle, m, and
        # still be the last; 0 = a fixed number of iterations.
        auto = isinstance(settings.iterations, str)  # "auto" (validated)
        self._auto_move = AUTO_TOLERANCE * float(s.rest.min()) if auto and s.count else 0.0
        self._iterations = (AUTO_ITERATIONS if s.count else 1) if auto else settings.iterations
        # The cloths' bending hinges (``particles.bending``): their vertices' inverse masses and
        # compliances at this substep; ``_hinge_on`` 0 where a hinge's edge has torn.
        hg = model.hinges
        self._hinge_w = np.ascontiguousarray(inv_mass[hg.index]) if hg.count else np.zeros((0, 6))
        self._hinge_alpha = hg.compliance / (h * h)
        self._hinge_on = np.ones(hg.count, np.int8)
        self._hinge_lam = np.zeros((hg.count, 3))
        self._hinge_factors = None  # the backend's prepare_hinges, made at the first pass
        self._hinge_target = np.zeros((hg.count, 3))  # see _hinge_targets
        self._hinge_curved: np.ndarray | None = None
        self._hinge_v_start = np.zeros((0, 3))  # the curved hinges' fold vectors at the substep's start
        self._hinge_pin_entries: tuple | None = None  # (hinge, weight, pinned vertex, turn group)
        g = model.goals
        self._goal_w = inv_mass[g.index]
        self._goal_alpha = g.compliance / (h * h)
        self._goal_lam = np.zeros((len(g.index), 3))
        # Where the goals pull: their targets at the last frame's end and in this substep (they
        # move with ``step_frame``'s pinned_positions).
        self._goal_target = self._goal_now = np.array(g.target, dtype=np.float64)
        # Restitution only for contacts arriving faster than gravity alone makes in two substeps,
        # so resting contacts do not buzz.
        self._bounce_speed = max(2.0 * float(np.linalg.norm(self._gravity)) * h, 1e-4)
        self._rigid = RigidStepper(model, h, 1.0 / settings.frame_rate, self._gravity, self._bounce_speed,
                                   settings.velocity_iterations, self.backend,
                                   (settings.sleeping, settings.sleep_speed, settings.sleep_time)) \
            if model.bodies.count or model.shapes.count else None
        if self._rigid:
            self._rigid.air_velocity = self._air  # the still air that body drag and winds act against
        if self._rigid and model.bodies.count:
            self.warnings += self._rigid.starting_overlaps(self._rigid.initial_state())
        if self._rigid and model.surfaces.count:
            self.warnings += self._rigid.surfaces_starting_inside(self._rigid.initial_state(), model.rest_positions,
                                                                  model.radii, self._movable)
        # Pressure, soft bodies, plasticity, tearing (``particles.surface_solve``).
        surfaces = SurfaceSolver(model, h, self.backend)
        self._surfaces = surfaces if surfaces.active else None
        # Cloth folding onto itself (``collision.self_contact``).
        self._self_contacts = SelfContacts(model, self.backend) if np.any(model.surfaces.self_collision) else None
        self._volume_sticks: np.ndarray | None = None  # (m,) the sticks of pressurised surfaces, made when first needed
        self._guard = EnergyGuard(model, settings) if self._rigid and model.bodies.count and settings.energy_guard \
            else None
        self._turn = self._turn_take_back(model)

    def _turn_take_back(self, model: Model) -> TurnTakeBack | None:
        """The take-back of the turn of the surfaces whose sticks are solved as crossing chains,
        and of soft bodies (``solver.turn``), but those that keep a volume or a shape and are held
        by more than one pin; None if there are none. A pressurised surface's volume pull and a
        soft body's shape are taken back with the sticks: left out, a 0.4 m balloon blown to 1.2
        times its volume in still air spun up by itself, from rest too (its angular momentum 2.6
        times in 3 s at 10 substeps, 4.7 at 20), one hanging from a single pin turned round it
        without end, and a 0.4 m soft cube spinning in space kept 80-93% of its angular momentum
        over 3 s. A single pin's share of those pulls is counted as the sticks' share is, from
        momentum balance, which is exact at one pin; at more (a soft body pinned along its base)
        the share each takes is not known, and taken back so, such a body swayed more with its
        Damping than without."""
        s, surf = model.sticks, model.surfaces
        # (The global solve sweeps every stick a colour at a time, along the start directions: no
        # turn to take back.)
        if not s.count or not surf.count or self._global:
            return None
        crossing = np.repeat((s.chain_flags & SHAKE) == 0, np.diff(s.chain_offsets))
        chained = np.zeros(model.particle_count, bool)
        chained[s.i[s.chain_sticks[crossing]]] = True
        chained[s.j[s.chain_sticks[crossing]]] = True
        w = model.inverse_masses
        pins = np.array([np.count_nonzero(w[a:b] == 0.0) for a, b in zip(surf.start, surf.stop)], np.int64)
        soft = np.isfinite(surf.shape_compliance)
        kept = (soft | (surf.pressure > 0.0)) & (pins > 1)
        groups = [(int(a), int(b)) for a, b, k, f in zip(surf.start, surf.stop, kept, soft)
                  if not k and (f or np.any(chained[a:b])) and np.any(w[a:b] > 0.0)]
        if not groups:
            return None
        return TurnTakeBack(model, self.kernels, groups, self._stick_i, self._stick_j, *self._stick_w)

    # -- state ----------------------------------------------------------------------------------

    def make_state(self) -> State:
        """The state at time 0: rest positions, moving with the model's initial velocities."""
        x = np.array(self.model.rest_positions)
        state = State(x, x.copy(), bodies=self._rigid.initial_state() if self._rigid else None)
        if self._surfaces:
            state.surfaces = self._surfaces.initial_state()
        self.set_velocities(state, self.model.initial_velocities)
        return state

    def set_velocities(self, state: State, velocities) -> None:
        """Give particles velocities (n, 3) m/s.

        The previous position is set to x - v h + a h^2 / 2, which makes free flight under
        constant acceleration exact at every substep.
        """
        v = np.asarray(velocities, dtype=np.float64)
        if v.shape != state.positions.shape or not np.all(np.isfinite(v)):
            raise JakobsenError(f"velocities must be a finite array of shape {state.positions.shape}")
        h = self.h
        accel = (self._base_accel + state.external_accelerations) * self._movable[:, None]
        state.previous_positions[...] = state.positions - v * h + 0.5 * accel * h * h
        state.previous_positions[self._movable == 0] = state.positions[self._movable == 0]

    def velocities(self, state: State) -> np.ndarray:
        """Velocities (n, 3) m/s: the mean over the last substep, (x - x*) / h.

        In free flight under constant acceleration a the velocity at ``state.time`` is this
        plus a h / 2; at rest on a surface it is zero.
        """
        return (state.positions - state.previous_positions) / self.h

    def body_poses(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """Each body's pose relative to its rest pose: translation (B, 3) m and rotation (B, 4).

        A point p of body k at rest is at rotate(rotation[k], p) + translation[k] now; that is the
        transform to key on the object (its rest matrix_world pre-multiplied by it).
        """
        b = self.model.bodies
        rotation = quat.multiply(state.bodies.orientation, quat.conjugate(b.rest_orientation))
        rotation *= np.where(rotation[:, :1] < 0, -1.0, 1.0)
        translation = state.bodies.position - quat.rotate(rotation, b.rest_position)
        return translation, rotation

    def broken_connectors(self, state: State) -> list[tuple[str, float]]:
        """(name, time s) of every connector and spring that has broken, in the order they broke."""
        m, b = self.model, state.bodies
        out = [(m.joints.names[k], float(t)) for k, t in enumerate(b.joint_broken_at) if np.isfinite(t)]
        out += [(m.springs.names[k], float(t)) for k, t in enumerate(b.spring_broken_at) if np.isfinite(t)]
        return sorted(out, key=lambda item: item[1])

    def torn_sticks(self, state: State, *, with_times: bool = False):
        """(k, 2) the particle pairs of the sticks that have torn (``add_cloth(tear_factor=...)``),
        in stick order: a torn cloth's edges among them are where its mesh splits; with_times:
        also (k,) the time each tore, s."""
        if not self._surfaces or state.surfaces is None:
            pairs, times = np.zeros((0, 2), np.int64), np.zeros(0)
        else:
            pairs, times = self._surfaces.torn(state.surfaces)
        return (pairs, times) if with_times else pairs

    def body_cluster_positions(self, state: State) -> np.ndarray:
        """Positions (B, 4, 3) m of the four particles of each body's Jakobsen cluster."""
        rot = quat.to_matrix(state.bodies.orientation)
        return state.bodies.position[:, None, :] + np.einsum("bij,bkj->bki", rot, self.model.bodies.cluster)

    # -- stepping -------------------------------------------------------------------------------

    def step_frame(self, state: State, pinned_positions=None) -> None:
        """Advance ``state`` by one frame (``substeps`` substeps), in place.

        pinned_positions: optional (n, 3) m, where the pinned particles (inverse mass 0) are at
        the end of the frame; they move there in a straight line over the substeps. The partly
        pinned ones (the goals: a pin weight between 0 and 1) are pulled towards theirs, which
        move there the same way from where the last frame's call put them (their rest positions
        before the first): a cape's painted pin gradient rides on the character.
        Raises ``JakobsenError`` and leaves ``state`` untouched if the frame would produce
        non-finite positions.
        """
        x0, p0, t0 = state.positions.copy(), state.previous_positions.copy(), state.time
        mutable = list(state.bodies.arrays() + state.bodies.extras()) + (
            state.surfaces.arrays() if state.surfaces else [])
        bodies0 = [a.copy() for a in mutable]
        # The global solve's warm start, rolled back with the state (without it the multipliers
        # are cleared every substep: nothing to roll back).
        lam0 = self._lam.copy() if self._global else None
        pins = None
        if pinned_positions is not None:
            target = np.asarray(pinned_positions, dtype=np.float64)
            if target.shape != x0.shape:
                raise JakobsenError(f"pinned_positions must have shape {x0.shape}, got {target.shape}")
            pins = np.flatnonzero(self._movable == 0)
            if not np.all(np.isfinite(target[pins])):
                raise JakobsenError("pinned_positions contains non-finite values for pinned particles")
            pin_start, pin_end = x0[pins], target[pins]
            goal_end = target[self.model.goals.index]
            if not np.all(np.isfinite(goal_end)):
                raise JakobsenError("pinned_positions contains non-finite values for partly pinned particles")
        try:
            with np.errstate(all="ignore"):
                if self._self_contacts:
                    self._self_contacts.begin_frame(state.positions, state.previous_positions,
                                                    1.0 / self.settings.frame_rate, self.settings.substeps)
                if self._rigid:
                    if t0 == 0.0 and self._rigid.started_inside:  # (a bake from the start)
                        self._rigid.unsettle(state.bodies)
                    self._rigid.begin_frame(state.bodies, state.positions, self.model.radii, self._movable,
                                            state.time)
                    if self._guard:
                        self._guard.begin(state, self._rigid)
                self._begin_accelerations(state)
                self._in_frame = True
                for k in range(self.settings.substeps):
                    self._last_substep = k == self.settings.substeps - 1
                    if pins is not None:
                        f = (k + 1) / self.settings.substeps
                        state.positions[pins] = pin_start + (pin_end - pin_start) * f
                        before = k / self.settings.substeps
                        state.previous_positions[pins] = pin_start + (pin_end - pin_start) * before
                        self._goal_now = self._goal_target + (goal_end - self._goal_target) * f
                    self._substep(state)
                    if self._rigid and self._rigid.unsettled:
                        self._rigid.keep_starting_motion(state.bodies)
                self._in_frame = False
                if self._rigid:
                    self._rigid.unsettled.clear()  # (the first frame's pushes out only: see ``unsettle``)
                    self._rigid.end_frame(state.bodies)
            # Finite in float64 is not enough: Blender keeps single precision, where 1e39 is inf.
            bad = _first_out_of_float32((state.positions, state.previous_positions))
            if bad is not None:
                raise JakobsenError(
                    f"the step at t = {t0:.4f} s would make {self.model.label_of(bad)} non-finite "
                    "(or beyond the single-precision range Blender stores, 3.4e38; an unstable setting: try "
                    "more substeps, less stiffness or smaller forces); the state was left as it was")
            bad = _first_out_of_float32(state.bodies.arrays())
            if bad is not None:
                raise JakobsenError(
                    f"the step at t = {t0:.4f} s would make rigid body '{self.model.bodies.names[bad]}' "
                    "non-finite (or beyond the single-precision range Blender stores, 3.4e38; an unstable "
                    "setting: try more substeps or smaller forces); the state was left as it was")
            if self._guard:
                self._guard.check(state, t0, self._rigid)
            if pins is not None:
                self._goal_target = self._goal_now = goal_end
        except BaseException:
            self._goal_now = self._goal_target
            self._in_frame = False
            if self._turn:
                self._turn.forget()
            state.positions[...], state.previous_positions[...], state.time = x0, p0, t0
            for now, before in zip(mutable, bodies0):
                now[...] = before
            if lam0 is not None:
                self._lam[...] = lam0
            raise

    def _in_order(self, per_stick: np.ndarray) -> np.ndarray:
        """A per-stick array (the model's order) in the order the kernels take the sticks."""
        return per_stick if self._order is None else per_stick[self._order]

    def _begin_accelerations(self, state: State) -> np.ndarray:
        """The frame's accelerations per particle (gravity, the settings' wind, the state's
        external ones), as the kernels take them: into buffers kept from frame to frame, made
        once a frame (an (n, 3) array plus a 3-vector broadcast, into a new array, took 1.9 ms a
        substep at 250,000 particles; two arrays of one shape added in place, 0.35, once a frame)."""
        x = state.positions
        if self._accel is None or self._accel.shape != x.shape:
            self._accel = np.empty_like(x)
            self._frame_accel = np.empty_like(x)
            self._base_rows = np.ascontiguousarray(np.broadcast_to(self._base_accel, x.shape))
        return np.add(state.external_accelerations, self._base_rows, out=self._frame_accel)

    def _hinge_targets(self, x_start: np.ndarray, surface_state) -> None:
        """The fold vector each hinge curved at rest is held to this substep: as long as at rest
        (its rest's length), along its fold vector at the substep's start; fixed for the
        substep, each hinge's constraint is linear and its projection exact, and the force it
        makes is along the fold (a spring on |v|, which stores what it is given). A hinge folded
        less than half its rest takes the rest's direction in its frame instead
        (``bending.local_folds``), so that it bends back the way it was made. (Held to the rest
        turned with its frame, the constraint's force follows the frame: a stiff half cylinder
        held by one edge flapped and fell, 0.23 m off its shape in 2 s.)"""
        hg = self.model.hinges
        rest = hg.rest if surface_state is None or not len(surface_state.hinge_rest) else surface_state.hinge_rest
        if self._hinge_curved is None or (surface_state is not None and len(surface_state.hinge_rest)):
            self._hinge_curved = np.flatnonzero(np.any(rest != 0.0, axis=1))
        c = self._hinge_curved
        if not len(c):
            return
        size = np.linalg.norm(rest[c], axis=1)
        v = self._hinge_v_start = fold_vectors(x_start, hg.index[c], hg.weight[c])
        now = np.linalg.norm(v, axis=1)
        target = v * (size / np.maximum(now, 1e-300))[:, None]
        flat = now < 0.5 * size
        if np.any(flat):
            f = c[flat]
            target[flat] = np.einsum("kij,ki->kj", hinge_frames(x_start, hg.index[f], hg.across[f]), rest[f])
        self._hinge_target[c] = target

    def _project_hinges(self, x: np.ndarray) -> None:
        """One pass of the bending hinges' chains (backend ``project_hinges``)."""
        hg = self.model.hinges
        if self._hinge_factors is None:  # (the chains' matrices: again when an edge tears)
            self._hinge_factors = self.kernels.prepare_hinges(self._hinge_alpha, self._hinge_on, hg.coupling,
                                                              hg.chain_hinges, hg.chain_offsets, hg.group_offsets)
        self.kernels.project_hinges(x, hg.index, hg.weight, self._hinge_w, self._hinge_target, self._hinge_alpha,
                                    self._hinge_on, self._hinge_lam, hg.chain_hinges, hg.coupling, hg.chain_offsets,
                                    hg.group_offsets, 0, hg.group_count, self._hinge_factors)

    def _hinge_pin_shares(self, x_start: np.ndarray) -> None:
        """What the hinges pushed on pinned vertices, given to a cloth's turn take-back as a pin
        share (as the sticks' at the pins are): a clamped edge's bending moment comes from
        outside the cloth and is kept (taken back, it let a strip clamped level sag)."""
        turn, at = self._turn, self._hinge_pin_entries
        if at is None:
            hg = self.model.hinges
            h, col = np.nonzero((self._hinge_w == 0.0) & (hg.weight != 0.0))
            p = hg.index[h, col]
            group = turn.group_of[p]
            keep = group >= 0
            at = self._hinge_pin_entries = (h[keep], hg.weight[h[keep], col[keep]], p[keep], group[keep])
        h, k, p, group = at
        if len(h):
            push = k[:, None] * self._hinge_lam[h]
            r = x_start[p] - turn.ref[group]
            # (a pin's share is counted in: left out with its sign turned)
            turn.leave_out(group, -np.cross(r, push), -push)
        c = self._hinge_curved
        if c is not None and len(c):
            # A hinge's forces, sum K_i lam at x_i, turn what they act on by v x lam about any point:
            # nothing while lam lies along v. A curved hinge's target turns with its fold, so its
            # lam need not. On a pinned surface that turn is left out here (taken back, a stiff
            # half cylinder held by one edge was turned against its pins each substep and flapped,
            # 0.28 m off its shape); on a free one it is taken back with the rest (left out, a
            # soft cube spinning in space lost 2-5% of its angular momentum in 3 s).
            hg = self.model.hinges
            group = turn.group_of[hg.index[c, 0]]
            on = (group >= 0) & turn.pinned[np.maximum(group, 0)]
            turned = np.cross(self._hinge_v_start[on], self._hinge_lam[c[on]])
            turn.leave_out(group[on], turned, np.zeros_like(turned))

    def _substep(self, state: State) -> None:
        h = self.h
        x, xp = state.positions, state.previous_positions
        kernels = self.kernels
        # The frame's accelerations (step_frame made them; a substep stepped on its own makes
        # them); the force fields' pulls are added below, into another buffer.
        accel = self._frame_accel if self._in_frame else self._begin_accelerations(state)
        air = self._air
        if self._fields is not None and len(x):
            # Winds only reach particles through their drag; attractors pull regardless.
            wind, pull = forces.particle_air_and_acceleration(self._fields, state.time, x,
                                                              with_air=len(self._drag_w) > 0, backend=self.backend)
            air = air if wind is None else air + wind
            if pull is not None:
                accel = np.add(accel, pull, out=self._accel)
            forces.drag_particles(self._fields, h, x, xp, self.model.inverse_masses, backend=self.backend)
        if len(self._drag_w):
            if air is self._air:  # the settings' still air (no wind field): its rows are made once
                if self._air_rows.shape != x.shape:
                    self._air_rows = np.ascontiguousarray(np.broadcast_to(air, x.shape))
                air = self._air_rows
            else:
                air = np.ascontiguousarray(np.broadcast_to(air, x.shape))
        turn = self._turn
        if turn:
            # The same step, after the last substep's turn taken back (``solver.turn``).
            turn.integrate(x, xp, self._movable, accel, self._decay, h, self._drag_w,
                           air if len(self._drag_w) else accel)
        else:
            kernels.verlet_integrate(x, xp, self._movable, accel, self._decay, h, self._drag_w,
                                     air if len(self._drag_w) else accel)
        state.time += h
        rigid = self._rigid
        if rigid:
            rigid.integrate(state.bodies, state.time)
            rigid.find_contacts(state.bodies, state.time)
        x_start = xp  # the positions at the substep's start (Verlet moved them there)
        self._goal_lam[:] = 0.0
        g = self.model.goals
        surfaces, surface_state = self._surfaces, state.surfaces
        s = self.model.sticks
        si, sj = self._stick_i, self._stick_j
        rest, kind = self._stick_rest, self._stick_kind
        if surfaces:
            surfaces.begin_substep()
            if surfaces.mutable_sticks:  # rests that yield, sticks that tear
                rest, kind = self._in_order(surface_state.stick_rest), self._in_order(surface_state.stick_kind)
        if self._global and len(self._passes):
            # The equal sticks solved together first (see GLOBAL_REDUCTION), from the last
            # substep's multipliers; the sweeps then finish what the linearisation left.
            self.global_iterations = kernels.solve_sticks(
                x, x_start, si, sj, self._stick_w[0], self._stick_w[1], rest, self._stick_alpha,
                (kind == 0) & self._global_family, self._lam, s.colour_offsets, GLOBAL_REDUCTION,
                self._global_floor, GLOBAL_ITERATIONS)
        else:
            self._lam[:] = 0.0
        hinges = self.model.hinges
        if hinges.count:
            self._hinge_lam[:] = 0.0
            self._hinge_targets(x_start, surface_state)
            if surfaces and len(surfaces.tear):
                edge = hinges.edge_stick
                on = np.where(edge >= 0, surface_state.stick_kind[np.maximum(edge, 0)] != StickKind.BROKEN,
                              True).astype(np.int8)
                if not np.array_equal(on, self._hinge_on):
                    self._hinge_on, self._hinge_factors = on, None
        auto = self._auto_move
        for _ in range(self._iterations):
            if auto:
                before = x.copy()
            if rigid:
                rigid.solve_positions(state.bodies, rigid.contact_passes(self.settings.contact_iterations))
            if hinges.count:
                self._project_hinges(x)
            if len(self._passes):
                # Each stick along its direction at the substep's start (SHAKE: see project_sticks),
                # so a swinging or spinning stick keeps its speed.
                kernels.project_sticks(x, si, sj, self._stick_w[0], self._stick_w[1], rest, self._stick_alpha,
                                       kind, self._lam, s.colour_offsets, self._passes,
                                       self.settings.sqrt_approximation, x_start, self._chains)
            if len(g.index):
                pulled = x[g.index] if turn else None
                kernels.project_goals(x, g.index, self._goal_now, self._goal_w, self._goal_alpha, self._goal_lam)
                if turn:
                    turn.goals_moved(g.index, pulled, x, x_start)
            if surfaces:
                surfaces.project(x, surface_state)
            if auto and float(np.max(np.abs(x - before), initial=0.0)) <= auto:
                break
        if turn:
            if hinges.count:
                self._hinge_pin_shares(x_start)
            turn.finish(x, x_start, self._lam)
            if self._last_substep or not self._in_frame:
                # The frame's last turn is made now, before the contacts, so the frame ends with
                # them (made after, it moved a draped vertex 2 nm into a sphere's skin). The
                # others are made with the next Verlet step, a pass over the vertices less.
                turn.flush(x, x_start)
        if surfaces:
            surfaces.keep_corners(x, xp, surface_state)
        if self._self_contacts:
            self._self_contacts.solve(x, xp, self.model.inverse_masses)
        if rigid:
            if len(x):
                rigid.collide_particles(state.bodies, x, xp, accel, self.model.friction, self.model.restitution,
                                        self.model.radii, self.model.inverse_masses)
                if surfaces:  # where the colliders hold the soft bodies (their next fits stand there)
                    surfaces.note_contacts(rigid.touched_particles, x, surface_state)
                # (Along the directions now: these rounds are a contact solve with the bodies, and
                # along the starting directions a 1 kg box went through the sheet.)
                for _ in range(COUPLING_ROUNDS if rigid.particles_meet_dynamic and len(self._passes) else 0):
                    kernels.project_sticks(x, si, sj, self._stick_w[0], self._stick_w[1], rest, self._stick_alpha,
                                           kind, self._lam, s.colour_offsets, self._passes,
                                           self.settings.sqrt_approximation, None, self._chains)
                    rigid.collide_particles(state.bodies, x, xp, accel, self.model.friction,
                                            self.model.restitution, self.model.radii, self.model.inverse_masses)
                if surfaces and surfaces.touches_pressurised(rigid.touched_particles):
                    # The rigid sticks are kept in these rounds, the compliant ones left to the next
                    # substep as the forces they are (kept too, a soft 0.1 m jelly dropped 0.5 m
                    # squashed 2% where it squashes 12%): with rigid edges the volume alone pushed
                    # a landing cube's corner, held by its friction, in through its faces (a 0.5 m
                    # jelly ended with a corner folded in 10 cm). Only the pressurised surfaces'
                    # sticks: another cloth in the scene is not solved again for them.
                    if self._volume_sticks is None:
                        on = surfaces.pressurised_particle
                        self._volume_sticks = on[si] & on[sj]
                    rigid_kind = np.where((self._stick_alpha > 0.0) | ~self._volume_sticks, np.int8(StickKind.BROKEN),
                                          kind).astype(kind.dtype)
                    touched = rigid.touched_particles
                    for _ in range(VOLUME_CONTACT_ROUNDS):
                        if not surfaces.restore_volumes(x, surface_state):
                            break
                        kernels.project_sticks(x, si, sj, self._stick_w[0], self._stick_w[1], rest, self._stick_alpha,
                                               rigid_kind, self._lam, s.colour_offsets, self._passes,
                                               self.settings.sqrt_approximation, None, self._chains)
                        # (their particles alone: a cloth elsewhere in the scene is not met again,
                        # which doubled a 4,900-vertex cloth's time beside a 98-vertex jelly)
                        rigid.collide_particles(state.bodies, x, xp, accel, self.model.friction,
                                                self.model.restitution, self.model.radii, self.model.inverse_masses,
                                                only=surfaces.pressurised_particle)
                    # (what the others touch is still touched: the self-contacts hold it below)
                    rigid.touched_particles = np.union1d(touched, rigid.touched_particles)
            if self._self_contacts:
                # Again after the contacts: the ground or a collider pushing a pile of layers
                # squeezed them through each other (a sheet dropped upright onto the ground ended
                # 0.76 of the distance apart with 32 crossings at 40 x 40; 1.0 and 7 with this).
                # The particles a contact holds are held here too (SUPPORTED_WEIGHT): the layer
                # above gives way, not the one on the ground.
                w = self.model.inverse_masses
                touched = rigid.touched_particles
                if len(touched):
                    w = np.array(w)
                    w[touched] *= SUPPORTED_WEIGHT
                self._self_contacts.solve(x, xp, w)
            rigid.finish_substep(state.bodies)
        if surfaces:
            # Sticks beyond their tear factor break one a surface at a time, the cloth relaxed
            # between (see SurfaceSolver.tear_beyond), up to TEAR_ROUNDS a substep; then any
            # still beyond break together (end_substep), so none outlasts the substep. (These
            # relaxations come after the contacts: a tearing cloth pressed on a collider can be
            # moved into it by them until the next substep's contacts.)
            for _ in range(TEAR_ROUNDS if len(surfaces.tear) else 0):
                if not surfaces.tear_beyond(x, surface_state, state.time):
                    break
                if self._order is not None:
                    rest, kind = self._in_order(surface_state.stick_rest), self._in_order(surface_state.stick_kind)
                kernels.project_sticks(x, si, sj, self._stick_w[0], self._stick_w[1], rest, self._stick_alpha,
                                       kind, self._lam, s.colour_offsets, self._passes,
                                       self.settings.sqrt_approximation, None, self._chains)
            surfaces.end_substep(x, surface_state, state.time)
            surfaces.damp_jiggle(x, xp)
