"""The take-back of the turn a cloth's chained sticks give it: its angular momentum kept.

Sticks pull their two ends equally and oppositely along one line, so they cannot turn a cloth:
moved along their directions at the substep's start (SHAKE), the angular momentum a Verlet step
carries (sum m x* x x / h, x* the start) is kept exactly. A cloth's crossing rows, columns and
diagonals are solved as chains along their directions now (along the start directions a 33 x 33
curtain's crossing chains blew up at 5 substeps), and a taut chain's moves are filtered across
it, so their lever arms from the start do not cancel: a free 21 x 21 cloth spinning at 2 rad/s
without air kept 93% of its angular momentum over 5 s (15 x 15 at 10 rad/s: 46%), and a flag
pinned along its pole in still air turned round it without end (0.37 rad/s).

So each substep, per cloth, the angular impulse of its stick solve's moves about the substep's
start positions (sum m r x dx, plus the share of its sticks' impulses that fell on its pinned
vertices, less what its soft pins' goals moved) is measured and undone by one small turn of its
free vertices about their centre: dx = theta x (x* - c), theta = -I*^-1 L (I* the inertia about
c at the start), which moves no centre of mass and changes no stick's length but by theta^2.
Soft bodies and pressurised surfaces are taken back over their whole iteration, their shape's
and volume's pulls with their sticks, unless more than one pin holds them (their pins take a
share of those pulls that no stick carries to them; at one pin momentum balance counts it
exactly; taken back so, a soft body pinned at its base swayed more with its Damping than
without). Left out, a 0.4 m balloon blown to 1.2 times its volume spun up by itself in still air
(2.6 times its angular momentum in 3 s), one hanging from its pin turned round it without end,
and a 0.4 m soft cube at 6 Hz spinning at 4 rad/s in space kept 88% over 3 s (edges strained
past SHAKE_STRAIN move along their directions now, and the volume and shape projections act at
the positions now).
"""

from __future__ import annotations

import numpy as np

# Particles (or pin sticks) a block: each block's sums are added in order, on a core of its own
# (the same bits on any number of cores), and the blocks' sums in order. The Verlet step, the
# last substep's turn and the sums at the start are made a block at a time, while its particles
# are in the core's cache: 250,000 particles, called in a loop, 0.92 ms a substep against
# 0.35-0.58 for the step alone (in blocks of 8192, too big for the cache: 1.06-1.8); within the
# large cloth's frame, where the other kernels have the cache, about 2 ms against 0.6.
TURN_BLOCK = 2048


class TurnTakeBack:
    """The take-back for the surfaces ``groups`` ((start, stop) particle ranges, in order) of a
    model, in the backend's kernels: ``integrate`` instead of the Verlet step (the last
    substep's turn made, the step, the sums at the new start), ``goals_moved`` after each goal
    projection of the iterations, ``finish`` after them (the turn to take back: made by the next
    ``integrate``, or by ``flush``, which the frame's last substep calls before its contacts)."""

    def __init__(self, model, kernels, groups: list[tuple[int, int]], stick_i, stick_j, stick_w_i, stick_w_j):
        self.kernels = kernels
        w = model.inverse_masses
        self.mass = np.where(w > 0.0, 1.0 / np.where(w > 0.0, w, 1.0), 0.0)
        n = model.particle_count
        # Blocks over every particle (those of no group: group -1), so that the Verlet step runs
        # in them too.
        lo, hi, of = [], [], []
        first, at = [], 0
        for g, (start, stop) in enumerate(list(groups) + [(n, n)]):
            for a in range(at, start, TURN_BLOCK):
                lo.append(a), hi.append(min(a + TURN_BLOCK, start)), of.append(-1)
            if g == len(groups):
                break
            first.append(start + int(np.flatnonzero(w[start:stop] > 0.0)[0]))
            for a in range(start, stop, TURN_BLOCK):
                lo.append(a), hi.append(min(a + TURN_BLOCK, stop)), of.append(g)
            at = stop
        self.count = len(groups)
        self.block_lo = np.array(lo, np.int64)
        self.block_hi = np.array(hi, np.int64)
        self.block_group = np.array(of, np.int64)
        self.first = np.array(first, np.int64)  # each group's reference particle
        self.group_of = np.full(n, -1, np.int64)
        for g, (start, stop) in enumerate(groups):
            self.group_of[start:stop] = g
        self.pinned = np.zeros(self.count, bool)  # which groups have a pinned vertex
        self.pinned[self.group_of[(w == 0.0) & (self.group_of >= 0)]] = True
        # The sticks (in the kernels' order) from a pinned vertex to a free one of a group (the
        # edges at the pins, a cloth's tethers), by group: the impulse each pin took,
        # sign * lam * the direction i -> j, acts at the pin.
        wi, wj = np.asarray(stick_w_i), np.asarray(stick_w_j)
        si, sj = np.asarray(stick_i), np.asarray(stick_j)
        pinned_i, pinned_j = (wi == 0.0) & (wj > 0.0), (wj == 0.0) & (wi > 0.0)
        pin = np.flatnonzero(pinned_i | pinned_j)
        group = self.group_of[np.where(pinned_i, sj, si)[pin]]
        pin, group = pin[group >= 0], group[group >= 0]
        order = np.argsort(group, kind="stable")
        pin, group = pin[order], group[order]
        self.pin_stick = pin.astype(np.int64)
        self.pin_i, self.pin_j = si[pin].astype(np.int64), sj[pin].astype(np.int64)
        self.pin_at = np.where(pinned_i[pin], si[pin], sj[pin]).astype(np.int64)
        self.pin_sign = np.where(pinned_i[pin], -1.0, 1.0)
        offsets = np.searchsorted(group, np.arange(self.count + 1))
        chunks = [a for g in range(self.count) for a in range(offsets[g], offsets[g + 1], TURN_BLOCK)]
        self.chunk_lo = np.array(chunks, np.int64)
        self.chunk_group = group[self.chunk_lo].astype(np.int64)
        self.chunk_hi = np.minimum(self.chunk_lo + TURN_BLOCK, offsets[self.chunk_group + 1]).astype(np.int64)
        self._partial = np.zeros((len(chunks), 10))
        self._before = np.zeros((len(self.block_lo), 16))
        self._after = np.zeros((len(self.block_lo), 16))
        self._pins = np.zeros((self.count, 10))
        self._goals = np.zeros((self.count, 6))  # what goals moved: angular, then linear impulse
        self.ref = np.zeros((self.count, 3))
        self.theta = np.zeros((self.count, 3))  # the turn to take back, about centre, not yet made
        self.centre = np.zeros((self.count, 3))

    def integrate(self, x, x_prev, movable, accel, decay, h, drag_w, air_velocity) -> None:
        """The Verlet step (backend ``verlet_integrate``) after the last substep's turn, with the
        sums at the new start."""
        self.kernels.verlet_turn(x, x_prev, movable, accel, decay, h, drag_w, air_velocity, self.mass, self.theta,
                                 self.centre, self.first, self.ref, self.block_lo, self.block_hi, self.block_group,
                                 self._before)
        self._goals[:] = 0.0

    def goals_moved(self, index: np.ndarray, before: np.ndarray, x: np.ndarray, x_start: np.ndarray) -> None:
        """Leave out what soft pins' goals moved (particles ``index``, from ``before``): their pull
        is from outside the cloth."""
        g = self.group_of[index]
        on = g >= 0
        if not np.any(on):
            return
        idx = index[on]
        r = x_start[idx] - self.ref[g[on]]
        move = self.mass[idx][:, None] * (x[idx] - before[on])
        self.leave_out(g[on], np.cross(r, move), move)

    def leave_out(self, group: np.ndarray, angular: np.ndarray, linear: np.ndarray) -> None:
        """Leave these impulses (per row: its group, (3,) angular about the group's reference,
        (3,) linear) out of what is taken back this substep: pushes from outside the cloth (a
        soft pin's goal; with their signs turned, a pin's share of a hinge's push is counted in)."""
        np.add.at(self._goals, group, np.hstack([angular, linear]))

    def finish(self, x: np.ndarray, x_start: np.ndarray, lam: np.ndarray) -> None:
        """After the substep's iterations: the turn to take back (made by the next ``integrate``).
        lam: the sticks' multipliers, which start the substep at 0."""
        self.kernels.turn_finish(x, x_start, self.mass, lam, self.pin_stick, self.pin_i, self.pin_j,
                                 self.pin_at, self.pin_sign, self.chunk_lo, self.chunk_hi, self.chunk_group, self.ref,
                                 self._goals, self.block_lo, self.block_hi, self.block_group, self._before,
                                 self._after, self._partial, self._pins, self.theta, self.centre)

    def flush(self, x: np.ndarray, x_start: np.ndarray) -> None:
        """Make the turn not yet made (in a frame's last substep: what is keyed includes it)."""
        self.kernels.turn_back(x, x_start, self.mass, self.theta, self.centre, self.block_lo, self.block_hi,
                               self.block_group)
        self.theta[:] = 0.0

    def forget(self) -> None:
        """Drop the turn not yet made (the frame was rolled back)."""
        self.theta[:] = 0.0
