"""The solver: substeps of Verlet integration, constraint projection and contacts.

Per substep (Macklin et al. 2019, *Small Steps*: many substeps, few iterations):
forces -> Verlet -> ``iterations`` x (stick colours, goals) -> contacts.
Constraint stiffness is XPBD compliance, so a stiffness means the same at any substep count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import forces, kernels
from .checks import FLOAT32_MAX, MAX_ACCELERATION, MAX_SPEED, check_vector
from .energy import EnergyGuard
from . import quaternions as quat
from .errors import JakobsenError
from .model import Model, State
from .motors import drive_warnings
from .rigid_solver import RigidStepper


@dataclass(frozen=True, kw_only=True)
class SolverSettings:
    """How the solver steps.

    frame_rate: frames per second of the animation; substeps: solver steps per frame;
    iterations: constraint sweeps per substep; gravity: (3,) m/s^2; damping: 1/s, the fraction
    of velocity lost per second is 1 - exp(-damping); air_velocity: (3,) m/s, the wind that drag
    acts relative to; wind_acceleration: (3,) m/s^2 added to every movable particle;
    sqrt_approximation: Jakobsen's first-order square root in the stick projection;
    velocity_iterations: rigid contact restitution passes per substep; contact_iterations: rigid
    contact projection passes per iteration. Both are Gauss-Seidel between pairs of bodies, the
    contacts of one pair solved together, so one pass already bounces a lone box straight and
    holds it still on a slope; bodies that touch several others need more (the stack of ten
    boxes is tested with the four of each here). energy_guard: stop a frame in which bodies
    that nothing drives gained energy (see ``engine.energy``) with a JakobsenError.
    """

    frame_rate: float = 24.0
    substeps: int = 10
    iterations: int = 1
    gravity: tuple = (0.0, 0.0, -9.81)
    damping: float = 0.0
    air_velocity: tuple = (0.0, 0.0, 0.0)
    wind_acceleration: tuple = (0.0, 0.0, 0.0)
    sqrt_approximation: bool = False
    velocity_iterations: int = 4
    contact_iterations: int = 4
    energy_guard: bool = True

    def validate(self) -> None:
        for name in ("substeps", "iterations", "velocity_iterations", "contact_iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise JakobsenError(f"solver settings: {name} must be a whole number >= 1, got {value!r}")
            if value > 10_000:
                raise JakobsenError(f"solver settings: {name} = {value} is absurd (at most 10000)")
        if not (math.isfinite(self.frame_rate) and 0.0 < self.frame_rate <= 100_000.0):
            raise JakobsenError(f"solver settings: frame_rate must be a positive number of frames per second, got {self.frame_rate}")
        if not (math.isfinite(self.damping) and 0.0 <= self.damping <= 1e6):
            raise JakobsenError(f"solver settings: damping must be >= 0 and at most 1e6 (1/s), got {self.damping}")
        # Finite in float64 is not enough: 3e38 m/s^2 of gravity overflows to inf in the single
        # precision Blender keeps, and anything near it is no physics anyway.
        for name, limit, unit in (("gravity", MAX_ACCELERATION, "m/s^2"), ("air_velocity", MAX_SPEED, "m/s"),
                                  ("wind_acceleration", MAX_ACCELERATION, "m/s^2")):
            check_vector(getattr(self, name), name, "solver settings", limit=limit, unit=unit)
        if not isinstance(self.energy_guard, (bool, np.bool_)):
            raise JakobsenError(f"solver settings: energy_guard must be True or False, got {self.energy_guard!r}")

    @property
    def substep(self) -> float:
        """Substep length h, s."""
        return 1.0 / (self.frame_rate * self.substeps)


# A cloth whose edges are shorter than this many times the distance gravity (and the settings'
# wind) moves it in one substep stretches like rubber however many sweeps: refused.
EDGE_SUBSTEPS = 2.0


def substep_warnings(model: Model, settings: SolverSettings) -> list[str]:
    """What the settings' substep cannot resolve of the model as set, and what the solver holds
    it to (motors: see ``engine.motors.drive_limits``)."""
    settings.validate()
    return drive_warnings(model.motors, model.bodies, settings.substep, settings.substeps)


def check_resolution(model: Model, settings: SolverSettings) -> None:
    """Raise JakobsenError for a cloth the settings' substep cannot resolve (its edges shorter
    than ``EDGE_SUBSTEPS`` times what gravity moves it in a substep)."""
    s = model.sticks
    if not s.count:
        return
    h = settings.substep
    fall = float(np.linalg.norm(np.asarray(settings.gravity) + np.asarray(settings.wind_acceleration))) * h * h
    for where, start, stop in model.labels:
        inside = (s.i >= start) & (s.i < stop) & (s.kind == 0)
        if not np.any(inside):
            continue
        edge = float(s.rest[inside].min())
        if fall * EDGE_SUBSTEPS > edge:
            need = int(math.ceil(settings.substeps * math.sqrt(fall * EDGE_SUBSTEPS / edge)))
            raise JakobsenError(
                f"{where}: it is too small (or too finely divided) for {settings.substeps} substeps per frame: its "
                f"shortest edge, {edge:.3g} m, is less than {EDGE_SUBSTEPS:g} times how far gravity moves it in one "
                f"substep ({fall:.3g} m), and it would stretch like rubber; use at least {need} substeps, or "
                "fewer, larger faces")


def _in_float32(a: np.ndarray) -> np.ndarray:
    """Rows (k,) of a (k, m) whose values are all finite and within single precision's range."""
    return (np.abs(a) <= FLOAT32_MAX).all(axis=1)  # NaN compares False


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
        self._air = np.asarray(settings.air_velocity, dtype=np.float64)
        self._decay = math.exp(-settings.damping * h)
        self._drag_w = model.drag * inv_mass if np.any(model.drag > 0) else None
        self._fields = model.forces if model.forces.count else None  # wind, drag, attractors
        s = model.sticks
        # Passes: runs of colours of one level, each swept `sweeps` times per iteration.
        self._passes: list[tuple[list[kernels.StickBatch], int]] = []
        for c in range(s.colour_count):
            a, b = s.colour_offsets[c], s.colour_offsets[c + 1]
            batch = kernels.StickBatch(s.i[a:b], s.j[a:b], inv_mass, s.rest[a:b], s.compliance[a:b],
                                       s.kind[a:b], h, a, b)
            key = (int(s.colour_priority[c]), int(s.colour_sweeps[c]))
            if c and key == (int(s.colour_priority[c - 1]), int(s.colour_sweeps[c - 1])):
                self._passes[-1][0].append(batch)
            else:
                self._passes.append(([batch], key[1]))
        self._lam = np.zeros(s.count)
        g = model.goals
        self._goal_w = inv_mass[g.index]
        self._goal_alpha = g.compliance / (h * h)
        self._goal_lam = np.zeros((len(g.index), 3))
        # Restitution only for contacts arriving faster than gravity alone makes in two substeps,
        # so resting contacts do not buzz.
        self._bounce_speed = max(2.0 * float(np.linalg.norm(self._gravity)) * h, 1e-4)
        self._rigid = RigidStepper(model, h, 1.0 / settings.frame_rate, self._gravity, self._bounce_speed,
                                   settings.velocity_iterations) if model.bodies.count else None
        if self._rigid:
            self._rigid.air_velocity = self._air  # the still air that body drag and winds act against
        self._guard = EnergyGuard(model, settings) if self._rigid and settings.energy_guard else None

    # -- state ----------------------------------------------------------------------------------

    def make_state(self) -> State:
        """The state at time 0: rest positions, moving with the model's initial velocities."""
        x = np.array(self.model.rest_positions)
        state = State(x, x.copy(), bodies=self._rigid.initial_state() if self._rigid else None)
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

    def body_cluster_positions(self, state: State) -> np.ndarray:
        """Positions (B, 4, 3) m of the four particles of each body's Jakobsen cluster."""
        rot = quat.to_matrix(state.bodies.orientation)
        return state.bodies.position[:, None, :] + np.einsum("bij,bkj->bki", rot, self.model.bodies.cluster)

    # -- stepping -------------------------------------------------------------------------------

    def step_frame(self, state: State, pinned_positions=None) -> None:
        """Advance ``state`` by one frame (``substeps`` substeps), in place.

        pinned_positions: optional (n, 3) m, where the pinned particles (inverse mass 0) are at
        the end of the frame; they move there in a straight line over the substeps.
        Raises ``JakobsenError`` and leaves ``state`` untouched if the frame would produce
        non-finite positions.
        """
        x0, p0, t0 = state.positions.copy(), state.previous_positions.copy(), state.time
        bodies0 = [a.copy() for a in state.bodies.arrays() + state.bodies.extras()]
        pins = None
        if pinned_positions is not None:
            target = np.asarray(pinned_positions, dtype=np.float64)
            if target.shape != x0.shape:
                raise JakobsenError(f"pinned_positions must have shape {x0.shape}, got {target.shape}")
            pins = np.flatnonzero(self._movable == 0)
            if not np.all(np.isfinite(target[pins])):
                raise JakobsenError("pinned_positions contains non-finite values for pinned particles")
            pin_start, pin_end = x0[pins], target[pins]
        try:
            with np.errstate(all="ignore"):
                if self._rigid:
                    self._rigid.begin_frame(state.bodies, state.positions, self.model.radii, self._movable)
                    if self._guard:
                        self._guard.begin(state, self._rigid)
                for k in range(self.settings.substeps):
                    if pins is not None:
                        f = (k + 1) / self.settings.substeps
                        state.positions[pins] = pin_start + (pin_end - pin_start) * f
                        state.previous_positions[pins] = pin_start + (pin_end - pin_start) * (k / self.settings.substeps)
                    self._substep(state)
            # Finite in float64 is not enough: Blender keeps single precision, where 1e39 is inf.
            finite = _in_float32(np.hstack([state.positions, state.previous_positions]))
            if not finite.all():
                bad = int(np.flatnonzero(~finite)[0])
                raise JakobsenError(
                    f"the step at t = {t0:.4f} s would make {self.model.label_of(bad)} non-finite "
                    "(or beyond the single-precision range Blender stores, 3.4e38; an unstable setting: try "
                    "more substeps, less stiffness or smaller forces); the state was left as it was")
            finite = _in_float32(np.hstack(state.bodies.arrays()))
            if not finite.all():
                bad = int(np.flatnonzero(~finite)[0])
                raise JakobsenError(
                    f"the step at t = {t0:.4f} s would make rigid body '{self.model.bodies.names[bad]}' "
                    "non-finite (or beyond the single-precision range Blender stores, 3.4e38; an unstable "
                    "setting: try more substeps or smaller forces); the state was left as it was")
            if self._guard:
                self._guard.check(state, t0)
        except BaseException:
            state.positions[...], state.previous_positions[...], state.time = x0, p0, t0
            for now, before in zip(state.bodies.arrays() + state.bodies.extras(), bodies0):
                now[...] = before
            raise

    def _substep(self, state: State) -> None:
        h = self.h
        x, xp = state.positions, state.previous_positions
        accel = self._base_accel + state.external_accelerations
        air = self._air
        if self._fields is not None and len(x):
            # Winds only reach particles through their drag; attractors pull regardless.
            wind, pull = forces.particle_air_and_acceleration(self._fields, state.time, x,
                                                              with_air=self._drag_w is not None)
            air = air if wind is None else air + wind
            accel = accel if pull is None else accel + pull
            forces.drag_particles(self._fields, h, x, xp, self.model.inverse_masses)
        kernels.verlet_integrate(x, xp, self._movable, accel, self._decay, h, self._drag_w, air)
        t_start = state.time
        state.time += h
        rigid = self._rigid
        if rigid:
            rigid.integrate(state.bodies, state.time)
            rigid.find_contacts(state.bodies, state.time)
        self._lam[:] = 0.0
        self._goal_lam[:] = 0.0
        g = self.model.goals
        for _ in range(self.settings.iterations):
            if rigid:
                for _ in range(self.settings.contact_iterations):
                    rigid.solve_positions(state.bodies)
            if self._passes:
                axes = np.ascontiguousarray(x.T)
                for batches, sweeps in self._passes:
                    for _ in range(sweeps):
                        kernels.project_sticks(axes, batches, self._lam, self.settings.sqrt_approximation)
                x[...] = axes.T
            if len(g.index):
                kernels.project_goals(x, g.index, g.target, self._goal_w, self._goal_alpha, self._goal_lam)
        self._collide(x, xp, accel, t_start, state.time)
        if rigid:
            if len(x):
                rigid.collide_particles(state.bodies, x, xp, accel, self.model.friction, self.model.restitution,
                                        self.model.radii)
            rigid.finish_substep(state.bodies)

    def _collide(self, x, xp, accel, t0, t1) -> None:
        model = self.model
        for collider in model.colliders:
            m1 = collider.pose(t1)
            r1, o1 = m1[:3, :3], m1[:3, 3]
            q = (x - o1) @ r1
            corr_local, depth = collider.penetration(q, model.radii)
            hit = (depth > 0.0) & (self._movable > 0)
            if not np.any(hit):
                continue
            k = np.flatnonzero(hit)
            corr = corr_local[k] @ r1.T
            if collider.motion is None:
                surface = np.zeros_like(corr)
            else:
                m0 = collider.pose(t0)
                # Where the surface point now under the particle was one substep ago.
                surface = x[k] - ((q[k] @ m0[:3, :3].T) + m0[:3, 3])
            mu = np.sqrt(model.friction[k] * collider.friction)
            e = np.sqrt(model.restitution[k] * collider.restitution)
            accel_k = np.broadcast_to(accel, x.shape)[k]
            kernels.respond_to_contacts(x, xp, k, corr, depth[k], surface, accel_k, mu, e, self.h, self._bounce_speed)
