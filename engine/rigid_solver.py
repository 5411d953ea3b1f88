"""The rigid-body part of a solver step: per-frame broad phase, per-substep integration,
contacts, position and velocity solves, and cloth particles touching bodies.

``Solver`` owns one ``RigidStepper`` and calls it at fixed points of each substep, so bodies,
cloth and constraints share one loop.
"""

from __future__ import annotations

import numpy as np

from . import forces, kernels, kernels_rigid
from . import quaternions as quat
from .model import BodyState, Model
from .rigid import BodyMode, ShapeKind
from .joints import bounce_limits, joint_layout, solve_joints
from .motors import apply_motor_forces, drive_limits, motor_speeds, solve_motor_positions
from .springs import apply_springs, update_springs
from .rigid_contacts import Contacts, shape_penetration, sweep_and_prune
from .sweep import Sweeper


MARGIN = 5e-3
# Sample points farther from a body's centre than its bounding radius times (1 + this) plus their
# radius and the margins are not tested against its shape (the slack covers the corners pulled
# in by SAMPLE_INSET and the face snapping near edges, both within 2% of the shape).
NEAR_SLACK = 0.05


class RigidStepper:
    def __init__(self, model: Model, h: float, frame: float, gravity: np.ndarray, bounce_speed: float,
                 velocity_iterations: int):
        bodies = model.bodies
        self.model, self.bodies, self.h, self.frame = model, bodies, h, frame
        count = bodies.count
        self.count = count
        self.dynamic = np.zeros(count + 1, bool)
        self.dynamic[:count] = bodies.mode != BodyMode.KINEMATIC
        self.kinematic = np.flatnonzero(bodies.mode == BodyMode.KINEMATIC)
        self.solid = np.flatnonzero(bodies.mode != BodyMode.GHOST)  # bodies that collide
        self.inv_mass = np.append(bodies.inverse_mass, 0.0)
        self.inv_inertia = np.vstack([bodies.inverse_inertia, np.zeros((1, 3))])
        self.inertia = np.vstack([bodies.inertia, np.ones((1, 3))])
        self.accel = np.zeros((count + 1, 3))
        self.accel[:count] = gravity
        self.lin_decay = np.append(np.exp(-bodies.linear_damping * h), 1.0)
        self.ang_decay = np.append(np.exp(-bodies.angular_damping * h), 1.0)
        self.point_start = np.searchsorted(bodies.point_body, np.arange(count + 1))
        self.bounce_speed = bounce_speed
        self.velocity_iterations = velocity_iterations
        self.seed_order = np.random.default_rng(12345).permutation(1 << 16)
        self.queries = np.zeros((0, 3), np.int64)  # (point, owner, target) for body pairs
        self.collider_bodies: list[np.ndarray] = []
        self.particle_pairs = np.zeros((0, 2), np.int64)
        self.pair_keys = np.zeros(0, np.int64)  # body pairs in contact, which the colouring is for
        self.pair_colour = np.zeros(0, np.int64)
        # Friction anchors of the contacts that stuck in the last substep, sorted by contact key.
        self.anchor_keys = np.zeros(0, np.int64)
        self.anchor_points = np.zeros((0, 3))
        self.key_stride = count + 1 + len(model.colliders)
        self.steer = np.zeros(model.joints.count)
        self.joint_impulses = np.zeros((model.joints.count, 6))
        self.joint_layout = joint_layout(model.joints, self.dynamic)
        self.limit_hits = np.zeros((model.joints.count, 6))
        # Speculative contacts: sample points this close to a surface (m) join the substep's
        # solve, which projects them only if the solve itself moves them into the surface; without
        # them a corner just outside is free to be rotated deep in by the other contacts' corrections.
        # (Never more than a tenth of the body's size: 5 mm is several times a 1 mm body.)
        self.margin = np.append(np.minimum(MARGIN, 0.1 * bodies.bound_radius), 0.0)
        self.sweeper = Sweeper(model)
        # After the solve, the sweep leaves the bodies held by connectors where the connectors put
        # them (it takes back the other body's motion instead): nothing after it would close a
        # joint it opened.
        self.inv_mass_unjointed = self.inv_mass.copy()
        jointed = self.joint_layout.bodies[self.joint_layout.bodies >= 0]
        self.inv_mass_unjointed[jointed] = 0.0
        self.drive_step, self.drive_speed = drive_limits(model.motors, bodies, h)

    # -- state --------------------------------------------------------------------------------

    def initial_state(self) -> BodyState:
        b, m = self.bodies, self.model
        state = BodyState(b.rest_position, b.rest_orientation, b.initial_velocity, b.initial_angular_velocity)
        state.joint_broken_at = np.full(m.joints.count, np.nan)
        state.spring_rest = np.array(m.springs.rest, dtype=np.float64)
        state.spring_broken_at = np.full(m.springs.count, np.nan)
        return state

    def rest_pose_motion(self, k: int, t: float):
        """Pose (centre, orientation) of kinematic body k at time t from its motion callable."""
        return forces.animated_pose(self.bodies, k, t)

    # -- per frame ----------------------------------------------------------------------------

    def begin_frame(self, bodies: BodyState, particles: np.ndarray, radii: np.ndarray, movable: np.ndarray) -> None:
        """Broad phase for the coming frame: which body pairs, body-collider and particle-body
        pairs can touch, with bounding spheres grown by one frame of motion."""
        b = self.bodies
        x, q, v, w = bodies.arrays()
        reach = b.bound_radius + (np.linalg.norm(v[:-1], axis=1) + np.linalg.norm(w[:-1], axis=1) * b.bound_radius) \
            * self.frame * 1.5 + 0.01 * b.bound_radius + 1e-3
        solid = self.solid
        pairs = sweep_and_prune(x[solid], reach[solid])
        pairs = solid[pairs] if len(pairs) else pairs
        if len(pairs):
            pairs = pairs[self.dynamic[pairs[:, 0]] | self.dynamic[pairs[:, 1]]]
        j = self.model.joints
        ignoring = j.ignore_collisions & np.isnan(bodies.joint_broken_at)
        if len(pairs) and np.any(ignoring):
            # Bodies joined by an intact connector with Ignore Collisions do not collide.
            a, b = j.a[ignoring], j.b[ignoring]
            jointed = np.minimum(a, b) * (self.count + 1) + np.maximum(a, b)
            keys = pairs[:, 0] * (self.count + 1) + pairs[:, 1]
            pairs = pairs[~np.isin(keys, jointed)]
        self.queries = self._point_queries(pairs)
        self.collider_bodies = []
        for collider in self.model.colliders:
            m = collider.pose(0.0) if collider.motion is None else None
            if m is None:
                self.collider_bodies.append(solid[self.dynamic[solid]])
                continue
            local = (x[solid] - m[:3, 3]) @ m[:3, :3]
            _, depth = collider.penetration(local, reach[solid])
            near = solid[(depth > 0.0) & self.dynamic[solid]]
            self.collider_bodies.append(near)
        self.particle_pairs = self._particle_pairs(x, reach, particles, radii, movable)

    def _point_queries(self, pairs: np.ndarray) -> np.ndarray:
        if not len(pairs):
            return np.zeros((0, 3), np.int64)
        owner = np.concatenate([pairs[:, 0], pairs[:, 1]])
        target = np.concatenate([pairs[:, 1], pairs[:, 0]])
        start, stop = self.point_start[owner], self.point_start[owner + 1]
        counts = stop - start
        point = np.repeat(start, counts) + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        return np.stack([point, np.repeat(owner, counts), np.repeat(target, counts)], axis=1)

    def _particle_pairs(self, x, reach, particles, radii, movable) -> np.ndarray:
        if not len(particles) or not len(self.solid):
            return np.zeros((0, 2), np.int64)
        free = np.flatnonzero(movable > 0)
        out = []
        for k in self.solid:  # bodies are few next to particles; each test is vectorised
            d = np.linalg.norm(particles[free] - x[k], axis=1)
            near = free[d <= reach[k] + radii[free] + 0.05]
            if len(near):
                out.append(np.stack([near, np.full(len(near), k)], axis=1))
        return np.concatenate(out) if out else np.zeros((0, 2), np.int64)

    # -- per substep --------------------------------------------------------------------------

    def integrate(self, bodies: BodyState, t1: float):
        x, q, v, w = bodies.arrays()
        self.t1 = t1
        self.x_prev, self.q_prev = x.copy(), q.copy()
        self.v_before, self.w_before = v.copy(), w.copy()
        for k in self.kinematic:
            x[k], q[k] = self.rest_pose_motion(int(k), t1)
        self.momentum = np.zeros_like(w)
        self.apply_forces(bodies, t1)
        kernels_rigid.integrate_bodies(x, q, v, w, self.momentum, self.inertia, self.inv_inertia, self.dynamic,
                                       self.accel, self.h, self.lin_decay, self.ang_decay)
        # Free motion that would carry a body deep into (or through) what it hits is taken back
        # to the moment of impact before the contacts are found (see engine.sweep).
        self.sweep(x, q, self.inv_mass, leave=1.0)

    def sweep(self, x, q, inv_mass, leave: float) -> None:
        """The substep's motion from its start poses to x, q (B+1, ...) swept against the frame's
        colliders and body pairs, in place (see ``engine.sweep``); inv_mass (B+1,) shares the
        corrections (0: the body is not moved)."""
        if len(self.solid):
            self.sweeper.run(self.x_prev, self.q_prev, x, q, self.t1 - self.h, self.h, self.queries,
                             self.collider_bodies, inv_mass, leave)

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
            apply_springs(model.springs, x, q, v, w, self.inv_mass, self.inv_inertia, self.h, bodies.spring_rest,
                          np.isnan(bodies.spring_broken_at))
        if model.motors.count:
            apply_motor_forces(model.motors, x, q, v, w, self.inv_mass, self.inv_inertia, self.h, t1)
            self.motor_speeds = motor_speeds(model.motors, x, q, self.inv_mass, self.inv_inertia, t1, self.drive_speed)
            self.motor_lam = np.zeros(model.motors.count)
        if model.joints.count:
            self.joint_impulses[...] = 0.0
            self.limit_hits[...] = 0.0
            if model.joints.steered:
                self.steer = model.joints.steering_at(t1)

    def find_contacts(self, bodies: BodyState, t1: float) -> None:
        x, q, v, w = bodies.arrays()
        b = self.bodies
        parts = []
        rot = quat.to_matrix(q[:-1])
        # Every sample point in the world once, then only the queries whose point is near the
        # target's bounding sphere go to the (costly) shape test; the others cannot touch it.
        world_point = x[b.point_body] + np.einsum("kij,kj->ki", rot[b.point_body], b.point_local)
        if len(self.queries):
            point, owner, target = self.queries.T
            d = world_point[point] - x[target]
            reach = b.bound_radius[target] * (1.0 + NEAR_SLACK) + b.point_radius[point] \
                + self.margin[owner] + self.margin[target]
            # (A hull's depth is the distance to its farthest face plane, which can reach past
            # its bounding sphere off a sharp vertex: always test those.)
            near = np.flatnonzero((np.einsum("ki,ki->k", d, d) <= reach * reach)
                                  | (b.shape[target] == ShapeKind.CONVEX_HULL))
            point, owner, target = point[near], owner[near], target[near]
            rot_o = rot[owner]
            centre = world_point[point]
            rot_t = rot[target]
            local = np.einsum("kji,kj->ki", rot_t, centre - x[target])
            prefer = np.einsum("kji,kj->ki", rot_t, x[owner] - x[target])
            radius = b.point_radius[point]
            margin = self.margin[owner] + self.margin[target]
            # Inflated by the margin, every sample point near the surface has a positive depth
            # and a well-defined normal; the solve acts only on those that do penetrate.
            normal_b, depth = shape_penetration(b, target, local, radius + margin, prefer)
            hit = depth > 0.0
            depth = depth - margin
            if np.any(hit):
                n_world = np.einsum("kij,kj->ki", rot_t[hit], normal_b[hit])
                surface = centre[hit] - n_world * (radius[hit] - depth[hit])[:, None]
                on_a = centre[hit] - n_world * radius[hit, None]
                parts.append(Contacts(
                    a=owner[hit], b=target[hit],
                    local_a=np.einsum("kji,kj->ki", rot_o[hit], on_a - x[owner[hit]]),
                    local_b=np.einsum("kji,kj->ki", rot_t[hit], surface - x[target[hit]]),
                    normal=n_world,
                    friction=np.sqrt(b.friction[owner[hit]] * b.friction[target[hit]]),
                    restitution=np.sqrt(b.restitution[owner[hit]] * b.restitution[target[hit]]),
                    key=point[hit] * self.key_stride + target[hit]))
        for index, (collider, near) in enumerate(zip(self.model.colliders, self.collider_bodies)):
            if not len(near):
                continue
            start, stop = self.point_start[near], self.point_start[near + 1]
            counts = stop - start
            point = np.repeat(start, counts) + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
            owner = b.point_body[point]
            rot_o = rot[owner]
            centre = world_point[point]
            m = collider.pose(t1)
            radius = b.point_radius[point]
            margin = self.margin[owner]
            corr, depth = collider.penetration((centre - m[:3, 3]) @ m[:3, :3], radius + margin)
            hit = depth > 0.0
            if not np.any(hit):
                continue
            n_world = (corr[hit] / depth[hit, None]) @ m[:3, :3].T
            depth = depth - margin
            surface = centre[hit] - n_world * (radius[hit] - depth[hit])[:, None]
            on_a = centre[hit] - n_world * radius[hit, None]
            parts.append(Contacts(
                a=owner[hit], b=np.full(int(hit.sum()), self.count),
                local_a=np.einsum("kji,kj->ki", rot_o[hit], on_a - x[owner[hit]]),
                local_b=surface, normal=n_world,
                friction=np.sqrt(b.friction[owner[hit]] * collider.friction),
                restitution=np.sqrt(b.restitution[owner[hit]] * collider.restitution),
                key=point[hit] * self.key_stride + self.count + 1 + index))
        contacts = Contacts.concatenate(parts)
        self.S = np.zeros((len(x), 6))  # [dx, dth]: each body's correction in this substep
        self.slices = []
        if contacts.count:
            n1 = self.count + 1
            keys, pair = np.unique(np.minimum(contacts.a, contacts.b) * n1 + np.maximum(contacts.a, contacts.b),
                                   return_inverse=True)
            if not np.array_equal(keys, self.pair_keys):  # the colouring depends on the pairs only
                self.pair_keys = keys
                self.pair_colour = kernels_rigid.colour_contacts(keys // n1, keys % n1, self.dynamic,
                                                                 self.seed_order)
            colour = self.pair_colour
            # Pairs in colour order (each pair a row of the padded blocks), contacts by pair (stable).
            pair_order = np.lexsort((np.arange(len(keys)), colour))
            pair_row = np.empty(len(keys), np.int64)
            pair_row[pair_order] = np.arange(len(keys))
            row = pair_row[pair.ravel()]
            order = np.argsort(row, kind="stable")
            contacts, row = contacts.take(order), row[order]
            first = np.searchsorted(row, row)
            slot = np.arange(len(row)) - first
            self.pair_ab = np.stack([keys[pair_order] // n1, keys[pair_order] % n1], axis=1)
            self.bounds = np.searchsorted(colour[pair_order], np.arange(colour.max() + 2))
            self.row, self.slot, self.width = row, slot, int(slot.max()) + 1
        self.contacts = contacts
        if contacts.count:
            self.anchor = self._anchors(contacts)
            rows = kernels_rigid.contact_rows(x, q, self.x_prev, self.inv_mass, self.inv_inertia, contacts,
                                              self.anchor)
            blocks = kernels_rigid.pair_blocks(rows, self.pair_ab, self.row, self.slot, self.width, self.bounds)
            P, K = blocks.valid.shape
            # Accumulated impulses and friction scale in the padded (pair, slot) layout of the solve.
            self.lam_pair, self.scale_pair, self.lam_t = np.zeros((P, K)), np.ones((P, K)), np.zeros((P, K, 2))
            self.slices = kernels_rigid.colour_slices(blocks, self.lam_pair, self.lam_t, self.scale_pair)
            # Normal speed at the substep's start, for restitution.
            before = np.hstack([self.v_before, self.w_before])
            self.speed_before = np.einsum("ci,ci->c", rows.J[:, 0], before[rows.ab].reshape(-1, 12))
            # Separation at the substep's start and the relative normal acceleration, for the
            # moment of impact within the substep.
            a, b, n = contacts.a, contacts.b, contacts.normal
            p1 = self.x_prev[a] + quat.rotate(self.q_prev[a], contacts.local_a)
            p2 = self.x_prev[b] + quat.rotate(self.q_prev[b], contacts.local_b)
            self.gap_start = np.einsum("ci,ci->c", p1 - p2, n)
            self.accel_n = np.einsum("ci,ci->c", n, self.accel[a] * self.dynamic[a, None]
                                     - self.accel[b] * self.dynamic[b, None])

    def _anchors(self, contacts: Contacts) -> np.ndarray:
        """Friction anchors (c, 3) in B's frame: kept from the last substep for contacts that stuck
        there (so a resting body does not creep), else where A's point was at this substep's start."""
        a, b = contacts.a, contacts.b
        start = self.x_prev[a] + quat.rotate(self.q_prev[a], contacts.local_a)
        anchor = quat.rotate(quat.conjugate(self.q_prev[b]), start - self.x_prev[b])
        if len(self.anchor_keys):
            slot = np.minimum(np.searchsorted(self.anchor_keys, contacts.key), len(self.anchor_keys) - 1)
            kept = self.anchor_keys[slot] == contacts.key
            anchor[kept] = self.anchor_points[slot[kept]]
        return anchor

    def solve_positions(self, bodies: BodyState) -> None:
        x, q, _, _ = bodies.arrays()
        if self.contacts.count:
            kernels_rigid.solve_contact_positions(self.slices, self.S)
        if self.model.motors.count:
            solve_motor_positions(self.model.motors, x, q, self.x_prev, self.q_prev, self.S, self.inv_mass,
                                  self.inv_inertia, self.h, self.motor_speeds, self.motor_lam, self.drive_step)
        if self.model.joints.count:
            solve_joints(self.model.joints, self.joint_layout, x, q, self.S, self.inv_mass, self.inv_inertia,
                         np.isnan(bodies.joint_broken_at), self.steer, self.joint_impulses, self.limit_hits)

    def finish_substep(self, bodies: BodyState) -> None:
        """Apply the substep's corrections, take velocities from the poses, then restitution and friction."""
        x, q, v, w = bodies.arrays()
        h = self.h
        d = np.flatnonzero(self.dynamic[:-1])
        if self.contacts.count:
            self.lam = self.lam_pair[self.row, self.slot]
            self.scale = self.scale_pair[self.row, self.slot]
            # Static friction held these in the last pass (see solve_contact_positions).
            self.stuck = (self.scale >= 1.0) & (self.lam > 0.0)
            order = np.argsort(self.contacts.key[self.stuck])
            self.anchor_keys = self.contacts.key[self.stuck][order]
            self.anchor_points = self.anchor[self.stuck][order]
        else:
            self.anchor_keys = np.zeros(0, np.int64)
        if self.contacts.count or self.model.joints.count or self.model.motors.count:
            dx, dth = self.S[d, :3], self.S[d, 3:]
            x[d] += dx
            rot = quat.to_matrix(q[d])
            # The angular impulses that turned each body by dth: sum r x P = I_world dth.
            self.momentum[d] += np.einsum("kij,kj->ki", rot, self.inertia[d] * np.einsum("kji,kj->ki", rot, dth)) / h
            q[d] = quat.normalize(quat.multiply(quat.exp_rotation(dth), q[d]))
            # The solve's drives and projections too (a motor's drive, a joint to a fast body);
            # no contact solve follows, so nothing is left inside.
            self.sweep(x, q, self.inv_mass_unjointed, leave=0.0)
        moving = np.arange(self.count)
        v[moving] = (x[moving] - self.x_prev[moving]) / h
        # Dynamic bodies: the angular momentum the integrator and the impulses left; kinematic
        # ones: whatever their animation did this substep.
        w[d] = kernels_rigid.world_inverse_inertia_times(quat.to_matrix(q[d]), self.inv_inertia[d], self.momentum[d])
        k = self.kinematic
        w[k] = quat.angular_velocity(q[k], self.q_prev[k], h)
        if self.contacts.count:
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
                          self.inv_inertia, self.steer, np.isnan(bodies.joint_broken_at), self.limit_hits,
                          self.bounce_speed)
        if model.springs.count:
            active = np.isnan(bodies.spring_broken_at)
            update_springs(model.springs, x, q, bodies.spring_rest, active, bodies.spring_broken_at, t1)

    def _restitution(self, x, q, v, w) -> None:
        h = self.h
        # Lever arms and inverse masses at the corrected poses, so velocity impulses conserve momentum.
        rows = kernels_rigid.contact_rows(x, q, x, self.inv_mass, self.inv_inertia, self.contacts)
        touching = self.lam > 0.0
        restitution = self.contacts.restitution
        approaching = (self.speed_before < -self.bounce_speed) & (restitution > 0.0)
        bounce = touching & approaching
        # Contacts of a bouncing pair that would touch within the next substep bounce with it:
        # the corners of a face landing flat make one impact, not a sequence of corner impacts
        # that sets the body rocking (and a hair of tilt would decide which corner goes first).
        hit = np.zeros(len(self.pair_ab), bool)
        hit[self.row[bounce]] = True
        soon = approaching & ~touching & hit[self.row] & (rows.base[:, 0] < -self.speed_before * h)
        bounce |= soon
        # Bouncing contacts leave at e times the speed they hit with, at the moment of impact
        # within the substep (found from the gap at its start under constant acceleration, as for
        # particles), so e = 1 keeps the energy; resting ones at zero normal speed, which takes
        # away the outward speed that projecting a penetration out would add.
        a_n = self.accel_n
        # Normal velocity at the substep's start: v was the mean over the last substep, half a
        # substep of acceleration behind. (From the gaps' change it would be off by the corners'
        # centripetal travel in a substep, which for a spinning body is several percent.)
        v0 = self.speed_before + 0.5 * a_n * h
        z0 = np.maximum(self.gap_start, 0.0)
        tau = np.clip(2.0 * z0 / np.maximum(-v0 + np.sqrt(np.maximum(v0 * v0 - 2.0 * a_n * z0, 0.0)), 1e-15),
                      0.0, h)
        # The body ends the substep at the surface leaving at that speed (a particle is also
        # carried on by the rest of the substep; a body is not, which delays it by up to a
        # substep per bounce but keeps the energy). v is the mean velocity over a substep, the
        # speed at its end less half a substep of acceleration.
        target = np.where(bounce, -restitution * (v0 + a_n * tau) - 0.5 * a_n * h, 0.0)
        vw = np.hstack([v, w])
        blocks = kernels_rigid.pair_blocks(rows, self.pair_ab, self.row, self.slot, self.width, self.bounds)
        kernels_rigid.solve_contact_restitution(blocks, vw, touching | soon, target, self.velocity_iterations)
        v[...], w[...] = vw[:, :3], vw[:, 3:]

    def collide_particles(self, bodies: BodyState, px, pp, accel, friction, restitution, radii) -> None:
        """Cloth particles against bodies, one way: the bodies are moving colliders for them."""
        if not len(self.particle_pairs):
            return
        x, q, _, _ = bodies.arrays()
        b = self.bodies
        k, body = self.particle_pairs.T
        rot = quat.to_matrix(q[body])
        local = np.einsum("kji,kj->ki", rot, px[k] - x[body])
        normal_b, depth = shape_penetration(b, body, local, radii[k], local)
        hit = depth > 0.0
        if not np.any(hit):
            return
        # A particle may touch two bodies; take the deeper contact this substep.
        order = np.lexsort((-depth[hit], k[hit]))
        idx = np.flatnonzero(hit)[order]
        first = np.ones(len(idx), bool)
        first[1:] = k[idx][1:] != k[idx][:-1]
        idx = idx[first]
        kk, bb = k[idx], body[idx]
        n_world = np.einsum("kij,kj->ki", rot[idx], normal_b[idx])
        # How the surface point under each particle moved with its body this substep.
        prev = self.x_prev[bb] + quat.rotate(self.q_prev[bb], local[idx])
        surface = px[kk] - prev
        mu = np.sqrt(friction[kk] * b.friction[bb])
        e = np.sqrt(restitution[kk] * b.restitution[bb])
        kernels.respond_to_contacts(px, pp, kk, n_world * depth[idx, None], depth[idx], surface,
                                    np.broadcast_to(accel, px.shape)[kk], mu, e, self.h, self.bounce_speed)
