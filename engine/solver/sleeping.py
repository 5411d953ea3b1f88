"""Sleeping: rigid bodies that have come to rest are no longer stepped until something wakes them
(Blender's and Bullet's Deactivation, Jolt's and Rapier's sleeping).

A body is quiet in a frame when every point of it moves slower than ``sleep_speed`` (its centre's
speed plus its spin times its bounding radius) at the frame's end or on average over the frame
(a jitter of a few substeps, micrometres across, is rest) and it has stayed within ``DRIFT`` of the pose
it had when it became quiet (half a millimetre at the defaults, a hundredth of its size for a
small one): a ball on a slope too gentle to see it accelerate still drifts out of that and stays
awake, and so does a box beginning to topple. A group of bodies that touch or are connected (the last
substep's contacts, intact connectors and springs) falls asleep together once all of them have
been quiet for ``sleep_time``. A sleeping body is a static one to everything else: not
integrated, no contacts among sleepers, a wall to awake bodies within the frame.

At each frame's start a sleeping group wakes whole when anything that can push it comes near
(the broad phase's pairs, grown by a frame of motion): an awake body moving faster than the
speed, an animated (kinematic) body that moves within the coming frame, or cloth particles.
What cannot be foreseen that way never sleeps: bodies driven by motors or in a vehicle, steered
or jointed to an animated body, following their animation; and in a scene with force fields or
deforming mesh colliders, no body sleeps.
"""

from __future__ import annotations

import numpy as np

from ..bodies.rigid import BodyMode
from ..forces import fields as forces
from ..geometry import quaternions as quat
from ..geometry.graph import connected_components
from ..model import BodyState, Model

# How far a quiet body may drift from where it became quiet: this fraction of sleep_speed x
# sleep_time (0.5 mm at the defaults), at most a hundredth of the body's bounding radius.
DRIFT = 0.1
DRIFT_OF_SIZE = 0.01


class Sleep:
    """Which bodies sleep (``BodyState.asleep``), decided once a frame (see the module)."""

    def __init__(self, model: Model, speed: float, time: float, frame: float, enabled: bool, deforming: bool):
        b = model.bodies
        count = b.count
        self.count, self.frame, self.speed, self.time = count, frame, float(speed), float(time)
        self.radius = np.where(np.isfinite(b.bound_radius), b.bound_radius, 0.0)
        self.drift = np.minimum(DRIFT * self.speed * self.time, DRIFT_OF_SIZE * self.radius)
        self.dynamic = b.mode != BodyMode.KINEMATIC
        self.kinematic = np.flatnonzero(b.mode == BodyMode.KINEMATIC)
        never = ~self.dynamic | (b.follow_position > 0.0) | (b.follow_rotation > 0.0)
        m = model.motors
        for ends in (m.a, m.b):
            never[ends[ends < count]] = True
        for vehicle in model.vehicles:
            never[vehicle.chassis] = True
            never[np.asarray(vehicle.wheels, dtype=np.int64)] = True
        j, s = model.joints, model.springs
        steered = np.array([callable(v) or np.any(np.asarray(v) != 0.0) for v in j.steering], bool) \
            if j.count else np.zeros(0, bool)
        for ends in (j.a[steered], j.b[steered]):
            never[ends[ends < count]] = True
        # Connected to an animated body: its motion is not a contact the broad phase would see.
        for a, c in ((j.a, j.b), (s.a, s.b)):
            for one, other in ((a, c), (c, a)):
                animated = (other < count) & ~self.dynamic[np.minimum(other, max(count - 1, 0))]
                never[one[animated & (one < count)]] = True
        self.sleepable = ~never
        self.active = bool(enabled) and self.speed > 0.0 and count > 0 and not model.forces.count \
            and not deforming and bool(np.any(self.sleepable))
        self.joints, self.springs, self.model_bodies = j, s, b

    def wake(self, bodies: BodyState, pairs: np.ndarray, time: float | None, near_particles: np.ndarray) -> None:
        """Wake the sleeping groups that something moving can reach in the coming frame. pairs
        (P, 2): the broad phase's pairs of bodies (grown by a frame of motion), sleepers included;
        near_particles: bodies that movable particles can reach."""
        asleep = bodies.asleep
        if not asleep.any():
            return
        count = self.count
        x, q, v, w = bodies.arrays()
        mover = np.zeros(count + 1, bool)
        # Awake bodies faster than the speed, and those that never sleep (a motor's, a vehicle's,
        # a follow pull's: driven, they push however slowly; a pusher at 8 mm/s stalled against
        # a sleeping box).
        mover[:count] = self.dynamic & ~asleep & ((self._speed(v, w) > self.speed) | ~self.sleepable)
        if len(self.kinematic) and time is not None:
            # Animated bodies that move within the coming frame (sampled at its middle and end).
            k = self.kinematic
            for t in (time + 0.5 * self.frame, time + self.frame):
                xk, qk = forces.animated_poses(self.model_bodies, k, t)
                mover[k] |= self._moved(x[k], q[k], xk, qk, k) > 0.0
        reach = np.zeros(count + 1, bool)
        if len(pairs):
            a, b = pairs[:, 0], pairs[:, 1]
            reach[a[mover[b]]] = True
            reach[b[mover[a]]] = True
        reach[near_particles[near_particles < count]] = True
        # Sleepers changed from outside the solver (a velocity set, a pose moved) or no longer
        # allowed to sleep (a motor added when the settings changed): awake, with their groups.
        moved = self._moved(bodies.quiet_x, bodies.quiet_q, x[:count], q[:count], slice(None)) > self.drift
        reach[:count] |= asleep & (np.any(v[:count] != 0.0, axis=1) | np.any(w[:count] != 0.0, axis=1) | moved
                                   | ~self.sleepable)
        woken_groups = np.unique(bodies.sleep_group[reach[:count] & asleep])
        if not len(woken_groups):
            return
        woken = asleep & np.isin(bodies.sleep_group, woken_groups)
        asleep[woken] = False
        bodies.sleep_group[woken] = -1
        bodies.quiet_time[woken] = 0.0
        bodies.quiet_x[woken], bodies.quiet_q[woken] = x[:count][woken], q[:count][woken]

    def settle(self, bodies: BodyState, contact_pairs: np.ndarray, near_particles: np.ndarray,
               start: tuple[np.ndarray, np.ndarray]) -> None:
        """At a frame's end: count each awake body's quiet time and put to sleep the groups that
        have all been quiet long enough. contact_pairs (C, 2): the bodies of the last substep's
        contacts (B: the world); near_particles: bodies that cloth could reach in the frame (they
        would only be woken again); start: (x, q) of the bodies at the frame's start."""
        count = self.count
        x, q, v, w = bodies.arrays()
        asleep = bodies.asleep
        awake = self.sleepable & ~asleep
        awake[near_particles[near_particles < count]] = False
        # Slow at the frame's end, or over the whole frame: a brick held between others in a
        # knocked-down wall kept a cycle of three frames, micrometres across, at a substep speed
        # of 1-2 cm/s (its corners), and its pile never slept. The drift below still wakes
        # anything that gets somewhere. (Not for a body spinning a good part of a turn a frame: it
        # could come round to where it started.)
        over_frame = self._moved(start[0], start[1], x[:count], q[:count], slice(None)) / self.frame
        over_frame[np.linalg.norm(w[:count], axis=1) * self.frame > 0.5] = np.inf
        quiet = awake & (np.minimum(self._speed(v, w), over_frame) <= self.speed) \
            & (self._moved(bodies.quiet_x, bodies.quiet_q, x[:count], q[:count], slice(None)) <= self.drift)
        bodies.quiet_time[:] = np.where(quiet, bodies.quiet_time + self.frame, 0.0)
        restart = ~quiet & ~asleep
        bodies.quiet_x[restart], bodies.quiet_q[restart] = x[:count][restart], q[:count][restart]
        ready = quiet & (bodies.quiet_time >= self.time * (1.0 - 1e-9))
        if not ready.any():
            return
        # Groups among the awake bodies: contacts between two that move (the world and animated
        # bodies join nothing), intact connectors and springs between any two.
        c = contact_pairs[(contact_pairs[:, 0] < count) & (contact_pairs[:, 1] < count)]
        edges = [c[self.dynamic[c[:, 0]] & self.dynamic[c[:, 1]]]]
        j, s = self.joints, self.springs
        if j.count:
            intact = np.isnan(bodies.joint_broken_at)
            edges.append(np.stack([j.a[intact], j.b[intact]], axis=1))
        if s.count:
            intact = np.isnan(bodies.spring_broken_at)
            edges.append(np.stack([s.a[intact], s.b[intact]], axis=1))
        e = np.concatenate(edges).astype(np.int64)
        e = e[(e[:, 0] < count) & (e[:, 1] < count)]
        e = e[~asleep[e[:, 0]] & ~asleep[e[:, 1]]]
        group = connected_components(count, e)
        # A group sleeps when every member is ready (an animated or driven member never is).
        blocked = np.zeros(count, bool)
        members = ~asleep
        blocked[group[members & ~ready]] = True
        falls = members & ready & ~blocked[group]
        if not falls.any():
            return
        asleep[falls] = True
        # (Asleep where it is now: a pose changed from outside is told by any drift from here.)
        bodies.quiet_x[falls], bodies.quiet_q[falls] = x[:count][falls], q[:count][falls]
        bodies.sleep_group[falls] = group[falls]
        v[:count][falls] = 0.0
        w[:count][falls] = 0.0

    def _speed(self, v, w) -> np.ndarray:
        """The fastest any point of each body moves, m/s (B,)."""
        count = self.count
        return np.linalg.norm(v[:count], axis=1) + np.linalg.norm(w[:count], axis=1) * self.radius

    def _moved(self, x0, q0, x1, q1, which) -> np.ndarray:
        """How far any point of each body is from where it was, at most (its centre's travel plus
        its turn times its radius), m."""
        turn = quat.multiply(q1, quat.conjugate(q0))
        angle = 2.0 * np.arctan2(np.linalg.norm(turn[:, 1:], axis=1), np.abs(turn[:, 0]))
        return np.linalg.norm(x1 - x0, axis=1) + angle * self.radius[which]
