"""Energy bookkeeping: what the bodies and particles hold, what may feed them, and the guard that
stops a step which made energy from nothing.

Energy here is kinetic (linear and rotational) plus gravitational potential, -m g . x, plus what
springs store (1/2 k stretch^2, 1/2 k angle^2). Contacts, friction, connectors, damping and drag
only ever take energy away; restitution at most keeps it. So a group of bodies that only touch
each other, the static world and static colliders (an *island*), with no motor, force field,
follow pull, steered connector, kinematic body or moving collider (a kinematic body too) acting on
it (its *sources*), must not end a frame
with more energy than it started with, give or take what the integrators' rounding and the
substep's discretisation allow. One that does is the solver failing (a contact or connector it
could not resolve at this substep), and continuing would show nonsense: ``EnergyGuard`` raises
``JakobsenError`` instead, naming the body that gained the most, the frame and the remedy, and
``Solver.step_frame`` leaves the state as it was.

Everything that knows about energy is in this module, so that both kernel backends keep the same
definition and the same guard (it reads the state between frames, never inside the kernels).

Shapes: B bodies, n particles, S springs.
"""

from __future__ import annotations

import math

import numpy as np

from ..geometry import quaternions as quat
from ..geometry.graph import connected_components
from ..errors import JakobsenError
from ..bodies.rigid import BodyMode

# A frame may add this fraction of an island's energy scale (its kinetic energy at the frame's
# start plus, per body, its weight times its size) before the guard stops it. Honest motion
# stays far below: a tumbling body's rotational energy drifts by well under a percent a frame,
# resting contacts by much less; the failures it is for multiply the energy in a frame or two.
GUARD_GROWTH = 0.25


def kinetic_energies(model, bodies) -> np.ndarray:
    """Kinetic energy (B,) J of each body, linear and rotational."""
    b = model.bodies
    if not b.count:
        return np.zeros(0)
    rot = quat.to_matrix(bodies.orientation)
    w_body = np.einsum("bji,bj->bi", rot, bodies.angular_velocity)
    v = bodies.velocity
    return 0.5 * b.mass * np.einsum("bi,bi->b", v, v) + 0.5 * np.einsum("bi,bi->b", b.inertia * w_body, w_body)


def body_energies(model, bodies, gravity) -> np.ndarray:
    """Kinetic plus gravitational potential energy (B,) J of each body (0 for kinematic ones,
    whose motion is given)."""
    b = model.bodies
    if not b.count:
        return np.zeros(0)
    potential = -b.mass * (bodies.position @ np.asarray(gravity, dtype=np.float64))
    return np.where(b.mode == BodyMode.KINEMATIC, 0.0, kinetic_energies(model, bodies) + potential)


def spring_stiffnesses(model, h=None):
    """The stiffnesses (S,) N/m and (S,) N m/rad the energy of each spring is counted with.

    h: the substep, s. A spring too stiff for it is integrated implicitly (engine.springs), which
    makes it act as one of stiffness 1 / (h^2 w) (w its bodies' inverse mass); its stretch is then
    the substep's rounding (a 1e9 N/m spring holding a 1 kg weight is 0.1 mm out at 240 Hz, 1e9 / 2
    of its square is 15 J of nothing), so with h the stiffness counted is held to that."""
    from ..constraints.springs import resolvable_stiffness, turn_bound

    s = model.springs
    k, k_turn = s.stiffness, s.angular_stiffness
    if h is not None and s.count:
        b = model.bodies
        inv_mass = np.append(b.inverse_mass, 0.0)
        inv_inertia = np.append(b.inverse_inertia.max(axis=1) if b.count else np.zeros(0), 0.0)
        # What the solver uses (constraints.springs.resolvable_stiffness), bounded by the implicit
        # limit of its translation.
        k = resolvable_stiffness(k, turn_bound(s, np.vstack([b.inverse_inertia, np.zeros((1, 3))])), h)
        k = np.minimum(k, 1.0 / np.maximum(h * h * (inv_mass[s.a] + inv_mass[s.b]), 1e-300))
        k_turn = np.minimum(k_turn, 1.0 / np.maximum(h * h * (inv_inertia[s.a] + inv_inertia[s.b]), 1e-300))
    return k, k_turn


def spring_energies(model, bodies, h=None, stiffness=None) -> np.ndarray:
    """Energy (S,) J stored in each intact spring (linear and angular), at the current rest
    lengths, counted with ``spring_stiffnesses(model, h)`` (or ``stiffness``, what it returned
    for this model: it depends on the model and the substep only)."""
    from ..constraints.springs import spring_lengths

    s = model.springs
    if not s.count:
        return np.zeros(0)
    x, q = bodies.x, bodies.q
    _, _, _, length = spring_lengths(s, x, q)
    k, k_turn = spring_stiffnesses(model, h) if stiffness is None else stiffness
    out = np.where(s.linear, 0.5 * k * (length - bodies.spring_rest) ** 2, 0.0)
    if np.any(s.angular):
        rel = quat.multiply(quat.conjugate(q[s.a]), q[s.b])
        phi = quat.log_rotation(quat.multiply(rel, quat.conjugate(s.rest_relative)))
        out = out + np.where(s.angular, 0.5 * k_turn * np.einsum("ki,ki->k", phi, phi), 0.0)
    return np.where(np.isnan(bodies.spring_broken_at), out, 0.0)


def particle_energies(model, positions, previous_positions, h, acceleration) -> np.ndarray:
    """Kinetic plus potential energy (n,) J of each movable particle (0 for pinned ones), with
    the velocity Verlet keeps, (x - x*) / h, and the potential of a constant acceleration (3,)
    (gravity and the settings' wind acceleration)."""
    inv = model.inverse_masses
    mass = np.divide(1.0, inv, out=np.zeros_like(inv), where=inv > 0)
    v = (positions - previous_positions) / h
    return mass * (0.5 * np.einsum("ij,ij->i", v, v) - positions @ np.asarray(acceleration, dtype=np.float64))


class EnergyGuard:
    """Checks every frame that no island of rigid bodies without a source gained energy.

    ``begin`` at the frame's start (after the broad phase has found which bodies may touch),
    ``check`` at its end; both read the solver's state only.
    """

    def __init__(self, model, settings):
        self.model = model
        self.gravity = np.asarray(settings.gravity, dtype=np.float64)
        self.settings = settings
        b = model.bodies
        count = b.count
        sourced = b.mode == BodyMode.KINEMATIC
        sourced |= (b.follow_position > 0.0) | (b.follow_rotation > 0.0)
        fields = model.forces
        if fields.pushes_bodies:
            sourced[:] = True
        winds = bool(fields.of_kind("wind")) or bool(np.any(np.asarray(settings.air_velocity) != 0.0))
        if winds:
            sourced |= b.drag > 0.0
        m = model.motors
        for end in (m.a, m.b):
            inside = end[end < count]
            sourced[inside] = True
        # A steered connector (a Wheel Suspension whose steering angle is a track or a function of
        # time, or any angle but 0) turns its bodies as its angle says, which is work done on them:
        # a wheel turned by an animated steering angle gains energy from it.
        j = model.joints
        steered = np.array([callable(s) or s != 0.0 for s in j.steering], bool).reshape(-1)
        for end in (j.a[steered], j.b[steered]):
            sourced[end[end < count]] = True
        self.sourced = sourced
        # Bonds that always join bodies into one island: connectors, springs, motors.
        self.bonds = np.concatenate([np.stack([model.joints.a, model.joints.b], axis=1),
                                     np.stack([model.springs.a, model.springs.b], axis=1),
                                     np.stack([m.a, m.b], axis=1)]).astype(np.int64).reshape(-1, 2)
        # Each body's energy scale: its weight times its size, and (for when there is no
        # gravity) the kinetic energy of moving by a hundredth of its size in a frame.
        size = np.maximum(b.bound_radius, 0.0)
        self.weight = b.mass * size * (float(np.linalg.norm(self.gravity)) + 1e-4 * size * settings.frame_rate ** 2)
        # A spring stepped explicitly (symplectic Euler) keeps a nearby energy, not the measured
        # one, which swings by about omega h of it (omega h up to 1, where the step turns
        # implicit): an island with springs may swing that much more before the guard stops it.
        self.swing = np.zeros(count)
        sp = model.springs
        if sp.count and count:
            h = settings.substep
            inv_mass = np.append(b.inverse_mass, 0.0)
            inv_turn = np.append(b.inverse_inertia.max(axis=1), 0.0)
            omega_h = np.maximum(np.sqrt(np.minimum(h * h * sp.stiffness * (inv_mass[sp.a] + inv_mass[sp.b]), 1.0)),
                                 np.sqrt(np.minimum(h * h * sp.angular_stiffness * (inv_turn[sp.a] + inv_turn[sp.b]),
                                                    1.0)))
            for end in (sp.a, sp.b):
                inside = end < count
                np.maximum.at(self.swing, end[inside], omega_h[inside])
        self.spring_stiffness = spring_stiffnesses(model, settings.substep)
        self.start = None

    def begin(self, state, rigid) -> None:
        """Record the frame's starting energies and what may touch. rigid: the solver's
        RigidStepper, after its broad phase (``begin_frame``)."""
        energy, stored = self.energy(state)
        # The scale also counts what the springs hold: an undamped spring's energy swings between
        # kinetic and stored, and a symplectic step's measured total by a fraction of it.
        self.start = (self._contacts(rigid), energy, kinetic_energies(self.model, state.bodies) + stored,
                      state.bodies.position.copy())

    def _contacts(self, rigid):
        """The body pairs (k, 2) the broad phase lets touch (the world's row joins nothing; a
        moving collider is a kinematic body, so a source of what touches it), and the bodies
        that something outside the bodies feeds: those particles pushed this frame (a sheet that
        gives a box back the energy it stored is no energy from nothing)."""
        pairs = rigid.pairs[:, :2] if len(rigid.pairs) else np.zeros((0, 2), np.int64)
        return pairs, rigid.fed_by_particles

    def _islands(self, *contacts):
        """Island label (B,) of each body, whether a source feeds it (B,), and how far its
        springs let the energy swing (B,), for the bonds and the broad phases' ``contacts``."""
        count = self.model.bodies.count
        label = connected_components(count, np.concatenate([self.bonds] + [pairs for pairs, _ in contacts]))
        sourced = self.sourced.copy()
        for _, near in contacts:
            sourced[near] = True
        # A source anywhere in an island feeds all of it (through its contacts and connectors).
        fed = np.zeros(count, bool)
        np.logical_or.at(fed, label, sourced)
        swing = np.zeros(count)
        np.maximum.at(swing, label, self.swing)
        return label, fed[label], swing

    def energy(self, state):
        """Energy (B,) J per body, and the part of it (B,) its springs hold (a spring's shared
        between its two ends)."""
        model = self.model
        e = body_energies(model, state.bodies, self.gravity)
        stored = np.zeros_like(e)
        springs = spring_energies(model, state.bodies, stiffness=self.spring_stiffness)
        if len(springs):
            count = model.bodies.count
            s = model.springs
            share = springs / np.where((s.a < count) & (s.b < count), 2.0, 1.0)
            for end in (s.a, s.b):
                inside = end < count
                np.add.at(stored, end[inside], share[inside])
        return e + stored, stored

    def check(self, state, t0: float, rigid) -> None:
        """Raise JakobsenError if an island without a source ends the frame that started at
        t0 s with more energy than ``GUARD_GROWTH`` of its scale above what it started with.
        rigid: the solver's RigidStepper (whose broad phase a fast body may have redone within
        the frame: what it found then may touch too)."""
        if self.start is None:
            return
        contacts, e0, k0, x0 = self.start
        self.start = None
        first = t0 == 0.0  # (a bake from the start: where ``RigidStepper.unsettle`` acts)
        label, fed, swing = self._islands(contacts, self._contacts(rigid))
        e1 = self.energy(state)[0]
        free = ~fed
        if not np.any(free):
            return
        change = e1 - e0
        if first and rigid.started_inside:
            # A body that starts inside the ground or another body is pushed out in its first
            # substeps, lifted without a throw (a box sunk a quarter of its height into the
            # ground rests on it from the first substep): the height it gains is not counted,
            # what it is thrown with is.
            inside = np.fromiter(rigid.started_inside, np.int64)
            lift = -(state.bodies.position[inside] - x0[inside]) @ self.gravity * self.model.bodies.mass[inside]
            change[inside] -= np.maximum(lift, 0.0)
        count = len(label)
        gain = np.zeros(count)
        scale = np.zeros(count)
        np.add.at(gain, label[free], change[free])
        np.add.at(scale, label[free], (k0 + self.weight)[free])
        bad = np.flatnonzero((gain > (GUARD_GROWTH + swing) * scale + 1e-300) & np.isfinite(gain))
        if not len(bad):
            return
        worst = bad[np.argmax(gain[bad] / np.maximum(scale[bad], 1e-300))]
        members = np.flatnonzero(label == worst)
        body = members[np.argmax((e1 - e0)[members])]
        names = self.model.bodies.names
        s = self.settings
        frame = int(round(t0 * s.frame_rate)) + 1
        others = f" (and {len(members) - 1} bodies touching or joined to it)" if len(members) > 1 else ""
        inside = [rigid.started_inside[int(m)] for m in members if int(m) in rigid.started_inside] if first else []
        if inside:  # (in the first frame the likeliest cause: moving it out is the fix, not more substeps)
            raise JakobsenError(
                f"rigid body '{names[body]}'{others} gained {gain[worst]:.3g} J from nothing in frame {frame} "
                f"(t = {t0:.4f} s): {inside[0]}{' (and more: see the warnings)' if len(inside) > 1 else ''}, and "
                "being pushed out threw it; move it out of what it overlaps, or up onto what it stands on; the "
                "state was left as it was")
        raise JakobsenError(
            f"rigid body '{names[body]}'{others} gained {gain[worst]:.3g} J from nothing in frame {frame} "
            f"(t = {t0:.4f} s): no motor, force field, follow pull or moving body feeds it (what its springs "
            f"hold is counted), so its contacts or connectors failed to resolve its motion at {s.substeps} "
            f"substeps per frame; use more substeps (try {max(2 * s.substeps, s.substeps + 10)}), or look for "
            "connectors that fight each other or the contacts (a light body wedged between a heavy one and "
            "the ground: closer masses, or Ignore Collisions); the state was left as it was")


def total_energy(model, state, gravity, h, particle_acceleration=None) -> float:
    """Energy J of everything that moves: bodies (kinetic, potential), springs, and particles
    (with Verlet's velocity over a substep h, in a constant acceleration ``particle_acceleration``,
    gravity by default). For tests and diagnostics."""
    e = float(body_energies(model, state.bodies, gravity).sum()) + float(spring_energies(model, state.bodies, h).sum())
    if model.particle_count:
        acc = gravity if particle_acceleration is None else particle_acceleration
        e += float(particle_energies(model, state.positions, state.previous_positions, h, acc).sum())
    return e if math.isfinite(e) else math.inf
