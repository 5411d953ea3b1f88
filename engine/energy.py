"""Energy bookkeeping: what the bodies and particles hold, what may feed them, and the guard that
stops a step which made energy from nothing.

Energy here is kinetic (linear and rotational) plus gravitational potential, -m g . x, plus what
springs store (1/2 k stretch^2, 1/2 k angle^2). Contacts, friction, connectors, damping and drag
only ever take energy away; restitution at most keeps it. So a group of bodies that only touch
each other, the static world and static colliders (an *island*), with no motor, force field,
follow pull, kinematic body or moving collider acting on it (its *sources*), must not end a frame
with more energy than it started with, give or take what the integrators' rounding and the
substep's discretisation allow. One that does is the solver failing (a contact or connector it
could not resolve at this substep), and continuing would show nonsense: ``EnergyGuard`` raises
``JakobsenError`` instead, naming the body that gained the most, the frame and the remedy, and
``Solver.step_frame`` leaves the state as it was.

Everything that knows about energy is in this module, so that a new solver backend (compiled
kernels) keeps the same definition and the same guard.

Shapes: B bodies, n particles, S springs.
"""

from __future__ import annotations

import math

import numpy as np

from . import quaternions as quat
from .errors import JakobsenError
from .rigid import BodyMode

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


def spring_energies(model, bodies, h=None) -> np.ndarray:
    """Energy (S,) J stored in each intact spring (linear and angular), at the current rest
    lengths.

    h: the substep, s. A spring too stiff for it is integrated implicitly (engine.springs), which
    makes it act as one of stiffness 1 / (h^2 w) (w its bodies' inverse mass); its stretch is then
    the substep's rounding (a 1e9 N/m spring holding a 1 kg weight is 0.1 mm out at 240 Hz, 1e9 / 2
    of its square is 15 J of nothing), so with h the stiffness counted is held to that."""
    from .springs import spring_lengths

    s = model.springs
    if not s.count:
        return np.zeros(0)
    x, q = bodies.x, bodies.q
    _, _, _, length = spring_lengths(s, x, q)
    k, k_turn = s.stiffness, s.angular_stiffness
    if h is not None:
        b = model.bodies
        inv_mass = np.append(b.inverse_mass, 0.0)
        inv_inertia = np.append(b.inverse_inertia.max(axis=1) if b.count else np.zeros(0), 0.0)
        k = np.minimum(k, 1.0 / np.maximum(h * h * (inv_mass[s.a] + inv_mass[s.b]), 1e-300))
        k_turn = np.minimum(k_turn, 1.0 / np.maximum(h * h * (inv_inertia[s.a] + inv_inertia[s.b]), 1e-300))
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


def islands(count: int, pairs) -> np.ndarray:
    """Island label (count,) of each body, joining the pairs (k, 2) of body indices (indices
    outside 0..count-1 stand for the world and join nothing)."""
    parent = np.arange(count)

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in pairs:
        if 0 <= a < count and 0 <= b < count:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(i) for i in range(count)], np.int64)


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
        if fields.of_kind("attractor"):
            sourced[:] = True
        winds = bool(fields.of_kind("wind")) or bool(np.any(np.asarray(settings.air_velocity) != 0.0))
        if winds:
            sourced |= b.drag > 0.0
        m = model.motors
        for end in (m.a, m.b):
            inside = end[end < count]
            sourced[inside] = True
        self.sourced = sourced
        # Bonds that always join bodies into one island: connectors, springs, motors.
        self.bonds = np.concatenate([np.stack([model.joints.a, model.joints.b], axis=1),
                                     np.stack([model.springs.a, model.springs.b], axis=1),
                                     np.stack([m.a, m.b], axis=1)]).astype(np.int64).reshape(-1, 2)
        # Each body's energy scale: its weight times its size, and (for when there is no
        # gravity) the kinetic energy of moving by a hundredth of its size in a frame.
        size = np.maximum(b.bound_radius, 0.0)
        self.weight = b.mass * size * (float(np.linalg.norm(self.gravity)) + 1e-4 * size * settings.frame_rate ** 2)
        self.start = None

    def begin(self, state, rigid) -> None:
        """Record the frame's starting energies and islands. rigid: the solver's RigidStepper,
        after its broad phase (``begin_frame``)."""
        model = self.model
        count = model.bodies.count
        pairs = [self.bonds]
        if len(rigid.queries):
            pairs.append(rigid.queries[:, 1:])
        label = islands(count, np.concatenate(pairs))
        sourced = self.sourced.copy()
        for collider, near in zip(model.colliders, rigid.collider_bodies):
            if collider.motion is not None:
                sourced[near] = True
        # A source anywhere in an island feeds all of it (through its contacts and connectors).
        fed = np.zeros(count, bool)
        np.logical_or.at(fed, label, sourced)
        self.start = (label, fed[label], self.energy(state), kinetic_energies(model, state.bodies))

    def energy(self, state) -> np.ndarray:
        """Energy (B,) J per body, its springs' energy shared between their two ends."""
        model = self.model
        e = body_energies(model, state.bodies, self.gravity)
        springs = spring_energies(model, state.bodies, self.settings.substep)
        if len(springs):
            count = model.bodies.count
            s = model.springs
            share = springs / np.where((s.a < count) & (s.b < count), 2.0, 1.0)
            for end in (s.a, s.b):
                inside = end < count
                np.add.at(e, end[inside], share[inside])
        return e

    def check(self, state, t0: float) -> None:
        """Raise JakobsenError if an island without a source ends the frame that started at
        t0 s with more energy than ``GUARD_GROWTH`` of its scale above what it started with."""
        if self.start is None:
            return
        label, fed, e0, k0 = self.start
        self.start = None
        e1 = self.energy(state)
        free = ~fed
        if not np.any(free):
            return
        count = len(label)
        gain = np.zeros(count)
        scale = np.zeros(count)
        np.add.at(gain, label[free], (e1 - e0)[free])
        np.add.at(scale, label[free], (k0 + self.weight)[free])
        bad = np.flatnonzero((gain > GUARD_GROWTH * scale + 1e-300) & np.isfinite(gain))
        if not len(bad):
            return
        worst = bad[np.argmax(gain[bad] / np.maximum(scale[bad], 1e-300))]
        members = np.flatnonzero(label == worst)
        body = members[np.argmax((e1 - e0)[members])]
        names = self.model.bodies.names
        s = self.settings
        frame = int(round(t0 * s.frame_rate)) + 1
        others = f" (and {len(members) - 1} bodies touching or joined to it)" if len(members) > 1 else ""
        raise JakobsenError(
            f"rigid body '{names[body]}'{others} gained {gain[worst]:.3g} J from nothing in frame {frame} "
            f"(t = {t0:.4f} s): no motor, force, spring or moving body drives it, so its contacts or "
            f"connectors failed to resolve its motion at {s.substeps} substeps per frame; use more substeps "
            f"(try {max(2 * s.substeps, s.substeps + 10)}), or look for connectors that fight each other or "
            "the contacts (a light body wedged between a heavy one and the ground: closer masses, or "
            "Ignore Collisions); the state was left as it was")


def total_energy(model, state, gravity, h, particle_acceleration=None) -> float:
    """Energy J of everything that moves: bodies (kinetic, potential), springs, and particles
    (with Verlet's velocity over a substep h, in a constant acceleration ``particle_acceleration``,
    gravity by default). For tests and diagnostics."""
    e = float(body_energies(model, state.bodies, gravity).sum()) + float(spring_energies(model, state.bodies, h).sum())
    if model.particle_count:
        acc = gravity if particle_acceleration is None else particle_acceleration
        e += float(particle_energies(model, state.positions, state.previous_positions, h, acc).sum())
    return e if math.isfinite(e) else math.inf
