"""The immutable model (what the scene is) and the state (where it is now).

Shapes in the docstrings: n particles, m sticks, g goals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from .bodies.rigid import RigidBodies, empty_bodies
from .constraints.joints import Joints, empty_joints
from .constraints.motors import Motors, empty_motors
from .constraints.springs import Springs, empty_springs
from .forces.fields import Forces, empty_forces
from .geometry.shapes import ColliderShape, Shapes, empty_shapes
from .particles.surfaces import Surfaces, empty_surfaces


class StickKind(IntEnum):
    """How a stick constrains the distance |x_j - x_i| against its rest length L."""

    EQUAL = 0  # |d| == L
    MIN = 1  # |d| >= L (pushes apart only): particle collisions, struts
    MAX = 2  # |d| <= L (pulls together only): ropes, tethers, limits
    BROKEN = 3  # torn (``Surfaces.tear_factor``): holds nothing any more


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class Sticks:
    """Distance constraints, sorted by level and colour.

    i, j: (m,) int64 particle indices; rest: (m,) metres; compliance: (m,) m/N (0 = rigid);
    kind: (m,) int8 ``StickKind``; colour_offsets: (c + 1,) so that colour k is the sticks
    ``colour_order[colour_offsets[k]:colour_offsets[k + 1]]`` and no particle that can move
    appears twice within one colour; colour_priority, colour_sweeps: (c,) the level each colour
    belongs to. Consecutive colours of one level are swept together, ``colour_sweeps`` times per
    iteration. A level swept by colour is stored in colour order (``colour_order`` is the
    identity there, and its colour k is the slice ``colour_offsets[k]:colour_offsets[k + 1]``).

    The stretch levels (priority 0 and below, added chained: a cloth's stretch and shear, ropes) are
    solved as chains instead (``particles.chains``), and stored in chain order: chain k is the
    sticks ``chain_sticks[chain_offsets[k]:chain_offsets[k + 1]]`` in path order (``chain_flip``
    1 where a stick runs j -> i along it; ``chain_flags``: SHAKE, DAMPED); colour c's level is
    solved as the chain groups ``colour_groups[c, 0]:colour_groups[c, 1]`` (empty: swept by
    colour), group g being the chains ``group_offsets[g]:group_offsets[g + 1]``.
    """

    i: np.ndarray
    j: np.ndarray
    rest: np.ndarray
    compliance: np.ndarray
    kind: np.ndarray
    colour_offsets: np.ndarray
    colour_priority: np.ndarray
    colour_sweeps: np.ndarray
    chain_sticks: np.ndarray
    chain_flip: np.ndarray
    chain_offsets: np.ndarray
    chain_flags: np.ndarray
    group_offsets: np.ndarray
    colour_groups: np.ndarray
    colour_order: np.ndarray

    @property
    def count(self) -> int:
        return len(self.i)

    @property
    def colour_count(self) -> int:
        return len(self.colour_offsets) - 1


@dataclass(frozen=True)
class Hinges:
    """Bending across the edges two faces share (``particles.bending``), in chains.

    index, weight, across: (k, HINGE_WIDTH) the vertices and the constant weights of each
    hinge's fold vector v = sum weight x and of q_B - q_A = sum across x; rest: (k, 3) m, v at
    rest in the hinge's frame (``bending.local_folds``: 0 where flat); compliance: (k,) m/N
    (0 = rigid); lever: (k,) m, so that |v - rest| / lever is about the fold's change in
    radians; edge_stick: (k,) the stick
    along the hinge's edge (-1: none), whose tearing ends the hinge. Chain c is the hinges
    chain_hinges[chain_offsets[c]:chain_offsets[c + 1]] (a hinge of a triangle mesh is in two
    chains: ``bending.hinge_chains``); coupling: (P, HINGE_BAND + 1) for each place of a chain,
    the sums over shared vertices of w K K of its hinge with itself and each of the next
    HINGE_BAND hinges of the chain (0 past the chain's end); group g is the chains group_offsets[g]:group_offsets[g + 1]
    (no movable vertex in two chains of a group).
    """

    index: np.ndarray
    weight: np.ndarray
    across: np.ndarray
    rest: np.ndarray
    compliance: np.ndarray
    lever: np.ndarray
    edge_stick: np.ndarray
    chain_hinges: np.ndarray
    coupling: np.ndarray
    chain_offsets: np.ndarray
    group_offsets: np.ndarray

    @property
    def count(self) -> int:
        return len(self.rest)

    @property
    def group_count(self) -> int:
        return len(self.group_offsets) - 1


def empty_hinges() -> Hinges:
    return Hinges(np.zeros((0, 6), np.int64), np.zeros((0, 6)), np.zeros((0, 6)), np.zeros((0, 3)), np.zeros(0),
                  np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 5)), np.zeros(1, np.int64),
                  np.zeros(1, np.int64))


@dataclass(frozen=True)
class Goals:
    """Soft springs pulling particle ``index`` (g,) towards ``target`` (g, 3) with ``compliance`` (g,) m/N."""

    index: np.ndarray
    target: np.ndarray
    compliance: np.ndarray


@dataclass(frozen=True)
class Model:
    """Everything about the simulated scene that does not change while it runs.

    rest_positions: (n, 3) m, the positions the first state starts from;
    initial_velocities: (n, 3) m/s; inverse_masses: (n,) 1/kg, 0 = pinned;
    radii: (n,) m; friction, restitution: (n,) per-particle contact settings;
    drag: (n,) kg/m, quadratic drag force -drag * |v| * v; colliders: the collider shapes as
    given (a moving one is also a kinematic body among ``bodies``); shapes: every shape the
    particles and bodies collide with, the static colliders' and the bodies' (``Shapes``).
    """

    rest_positions: np.ndarray
    initial_velocities: np.ndarray
    inverse_masses: np.ndarray
    radii: np.ndarray
    friction: np.ndarray
    restitution: np.ndarray
    drag: np.ndarray
    sticks: Sticks
    goals: Goals
    colliders: tuple[ColliderShape, ...]
    shapes: Shapes = field(default_factory=empty_shapes)
    labels: tuple[tuple[str, int, int], ...] = field(default=())
    bodies: RigidBodies = field(default_factory=empty_bodies)
    joints: Joints = field(default_factory=empty_joints)
    forces: Forces = field(default_factory=empty_forces)
    springs: Springs = field(default_factory=empty_springs)
    motors: Motors = field(default_factory=empty_motors)
    vehicles: tuple = ()  # ``vehicles.vehicle.Vehicle``s
    surfaces: Surfaces = field(default_factory=empty_surfaces)  # the cloths' triangles and surface settings
    hinges: Hinges = field(default_factory=empty_hinges)  # the cloths' bending

    @property
    def particle_count(self) -> int:
        return len(self.inverse_masses)

    def label_of(self, particle: int) -> str:
        """Which object a particle came from, for error messages: ``"cloth 'flag' vertex 12"``."""
        for name, start, stop in self.labels:
            if start <= particle < stop:
                return f"{name} vertex {particle - start}"
        return f"particle {particle}"


class BodyState:
    """Rigid body poses and velocities, (B + 1) rows: row B is the static world.

    Use the (B,) views: ``position`` (B, 3) m of each centre of mass, ``orientation`` (B, 4)
    (w, x, y, z) of each body frame, ``velocity`` (B, 3) m/s, ``angular_velocity`` (B, 3) rad/s
    in world axes.
    """

    def __init__(self, position, orientation, velocity, angular_velocity):
        count = len(position)
        self.x = np.zeros((count + 1, 3))
        self.q = np.zeros((count + 1, 4))
        self.q[:, 0] = 1.0
        self.v = np.zeros((count + 1, 3))
        self.w = np.zeros((count + 1, 3))
        self.x[:count], self.q[:count] = position, orientation
        self.v[:count], self.w[:count] = velocity, angular_velocity
        self.joint_broken_at = np.zeros(0)
        self.spring_rest = np.zeros(0)
        self.spring_broken_at = np.zeros(0)
        self._all_awake()

    def _all_awake(self) -> None:
        """Sleeping (``solver.sleeping``): how long each body has been quiet, s; the pose it has
        kept meanwhile; whether it sleeps, and its group's number then. New arrays, all awake."""
        count = len(self.x) - 1
        self.quiet_time = np.zeros(count)
        self.quiet_x = np.array(self.x[:count])
        self.quiet_q = np.array(self.q[:count])
        self.asleep = np.zeros(count, bool)
        self.sleep_group = np.full(count, -1, np.int64)

    def wake_all(self) -> None:
        """Every body awake, its quiet time restarted (``solver.sleeping``): after the state was
        changed from outside the solver (a velocity set, the settings edited). In place: the
        solver's rollback holds these arrays."""
        count = len(self.asleep)
        self.asleep[:], self.sleep_group[:], self.quiet_time[:] = False, -1, 0.0
        self.quiet_x[:], self.quiet_q[:] = self.x[:count], self.q[:count]

    def __setstate__(self, saved: dict) -> None:
        """Unpickled (an add-on checkpoint): one saved before sleeping existed starts all awake."""
        self.__dict__.update(saved)
        if "asleep" not in saved:
            self._all_awake()

    @property
    def position(self) -> np.ndarray:
        return self.x[:-1]

    @property
    def orientation(self) -> np.ndarray:
        return self.q[:-1]

    @property
    def velocity(self) -> np.ndarray:
        return self.v[:-1]

    @property
    def angular_velocity(self) -> np.ndarray:
        return self.w[:-1]

    def arrays(self):
        return self.x, self.q, self.v, self.w

    def extras(self):
        """The connectors' state: ``joint_broken_at`` (J,) s (NaN while intact), ``spring_rest``
        (S,) m (changes when a spring gives way plastically), ``spring_broken_at`` (S,) s; and
        the vehicles' drivers' (``vehicles.control.VehicleState``: speed integral, last speed
        error, steering, path segment, (V,) each); and the sleeping bookkeeping (see ``__init__``)."""
        out = (self.joint_broken_at, self.spring_rest, self.spring_broken_at, self.quiet_time, self.quiet_x,
               self.quiet_q, self.asleep, self.sleep_group)
        drivers = getattr(self, "vehicles", None)
        return out + ((drivers.integral, drivers.error, drivers.steer, drivers.hint) if drivers is not None else ())


class State:
    """What changes from step to step.

    positions: (n, 3) m; previous_positions: (n, 3) m (velocity is implicit in Verlet:
    (positions - previous_positions) / substep); time: s; external_accelerations: (n, 3) m/s^2,
    added to gravity for every particle that can move (set it to push particles around);
    bodies: the rigid bodies' ``BodyState``; surfaces: the surfaces' ``SurfaceState`` (rest lengths
    and shapes that yield, broken sticks, volumes) or None.
    """

    def __init__(self, positions: np.ndarray, previous_positions: np.ndarray, time: float = 0.0,
                 bodies: BodyState | None = None):
        self.positions = np.array(positions, dtype=np.float64)
        self.previous_positions = np.array(previous_positions, dtype=np.float64)
        self.external_accelerations = np.zeros_like(self.positions)
        self.time = float(time)
        self.bodies = bodies if bodies is not None else BodyState(np.zeros((0, 3)), np.zeros((0, 4)),
                                                                  np.zeros((0, 3)), np.zeros((0, 3)))
        # The surfaces' changing part (``particles.surface_solve.SurfaceState``), when the model
        # has pressure, soft bodies, plasticity or tearing.
        self.surfaces = None
