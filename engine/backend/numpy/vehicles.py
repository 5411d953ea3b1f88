"""The vehicles' drive, brakes, grip and anti-roll bars for one substep, the numpy reference
(``vehicles/control.py`` decides what the driver asks for and says what each part does;
``backend/numba/vehicles.py`` is the same arithmetic wheel by wheel)."""

from __future__ import annotations

import numpy as np

from ...geometry import quaternions as quat
from .rigid import world_inverse_inertia


def drive_wheels(chassis, wheels, driven, axle, radius, brakes, forward_local, up_local, axle_local, roll_pairs,
                 roll_stiffness, pivot_local, travel_axis_local, mass, wheel_friction, target, available, brake,
                 handbrake, drifting, grip_loss, traction_control, brake_torque, rolling_resistance, integral,
                 last_error, k, h, gravity, response, integral_time, settling, near, near_speed, handbrake_share,
                 slip, slip_speed, x, q, v, w, inv_mass, inv_inertia, effort, friction):
    """One vehicle's wheels for one substep, in place: the drive torques on its driven wheels and
    their reaction on the chassis (w), the speed integral ``integral[k]``, its brake motors'
    efforts ``effort`` (M,), its wheels' ``friction`` (B + 1,) while drifting, and its anti-roll
    bars (v, w).

    chassis: body index; wheels, axle, brakes (W,) ints; driven (W,) bools; radius (W,) m; the
    chassis' forward and up and each wheel's axle, pivot and travel axis in their bodies' frames;
    mass: the car's, kg; target: the speed asked for, m/s; available: the drive torque there is,
    N m; brake, handbrake in [0, 1]; grip_loss: the rear wheels' share of grip lost (drifting);
    last_error: each vehicle's speed error at the last substep (NaN: none), m/s; response,
    integral_time (s), settling, near, near_speed (m/s), handbrake_share, slip and slip_speed
    (m/s): the controller's constants (``vehicles.vehicle`` and ``vehicles.control``)."""
    c = chassis
    n = len(wheels)
    qc = q[c]
    turned = quat.rotate(np.concatenate([np.repeat(qc[None], 2, axis=0), q[wheels]]),
                         np.concatenate([forward_local[None], up_local[None], axle_local]))
    forward, up, axles = turned[0], turned[1], turned[2:]
    speed = float(v[c] @ forward)
    driven_at = np.flatnonzero(driven)
    i_chassis = None
    if len(driven_at) and available > 0.0:
        spin = np.einsum("ki,ki->k", w[wheels] - w[c], axles)  # forward rolling is positive
        both = np.append(wheels, c)
        inertias = world_inverse_inertia(quat.to_matrix(q[both]), inv_inertia[both])
        i_wheel, i_chassis = inertias[:n], inertias[n]
        r = float(np.mean(radius[driven_at]))
        gain = mass * r * r / response
        wheel_error = target / r - float(np.mean(spin[driven_at]))
        # The integral only acts within the torque there is, not while the drive is at its limit
        # (no wind-up while accelerating, held or coasting) or traction control holds a driven
        # wheel back (the grip is the limit), and not while the error still closes by itself
        # (``vehicles.vehicle.SETTLING``).
        error = target - speed
        closing = last_error[k] == last_error[k] and abs(error - last_error[k]) / h * response > settling * abs(error) \
            and abs(error) > near * abs(target) + near_speed
        last_error[k] = error
        held = integral[k]
        if not closing and abs(gain * wheel_error + integral[k]) < available:
            integral[k] = min(max(integral[k] + gain * (target - speed) / r * h / integral_time, -available),
                              available)
        total = min(max(gain * wheel_error + integral[k], -available), available)
        # An open differential: the axles share the torque, and an axle's driven wheels share its part.
        axle_of = axle[driven_at].tolist()
        groups = len(set(axle_of))
        torque = np.zeros(n)
        for member, g in zip(driven_at.tolist(), axle_of):
            torque[member] = total / groups / axle_of.count(g)
        if traction_control:
            # A driven wheel turning more than slip (plus slip_speed at its rim) faster than the
            # ground passes under it has lost its grip: its torque fades out over as much again,
            # so one wheel that lets go does not spin up and take the open differential's torque.
            rolling = quat.cross(axles, up)  # each wheel's own forward
            ground = np.einsum("ki,ki->k", v[wheels], rolling) / radius
            slack = slip * np.abs(ground) + slip_speed / radius
            excess = np.where(torque >= 0.0, spin - ground, ground - spin) - slack
            factor = np.clip(1.0 - excess / slack, 0.0, 1.0)
            if np.any(driven & (factor < 1.0)):
                integral[k] = held  # (the grip is the limit: no wind-up)
            torque *= factor
        impulse = (torque * h)[:, None] * axles  # (W, 3) angular impulses on the wheels
        w[wheels] += np.einsum("kij,kj->ki", i_wheel, impulse)
        w[c] -= i_chassis @ impulse.sum(axis=0)
    else:
        integral[k] = 0.0
        last_error[k] = np.nan
    # Brakes and rolling resistance.
    rear = axle > 0
    load = mass * gravity / n
    effort[brakes] = brake_torque * (brake + np.where(rear, handbrake_share * handbrake, 0.0)) \
        + rolling_resistance * load * radius
    if drifting:
        friction[wheels] = np.where(rear, wheel_friction * (1.0 - grip_loss), wheel_friction)
    # Anti-roll bars.
    if len(roll_pairs):
        pivots = x[c] + quat.rotate(qc[None], pivot_local)
        axes = quat.rotate(qc[None], travel_axis_local)
        travel = np.einsum("ki,ki->k", x[wheels] - pivots, axes)
        if i_chassis is None:
            i_chassis = world_inverse_inertia(quat.to_matrix(qc), inv_inertia[c])
        for (lw, rw), stiffness in zip(roll_pairs, roll_stiffness):
            force = stiffness * (travel[lw] - travel[rw])  # pushes the higher wheel down, the other up
            for m, sign in ((lw, -1.0), (rw, 1.0)):
                p = sign * force * h * axes[m]
                v[wheels[m]] += inv_mass[wheels[m]] * p
                v[c] -= inv_mass[c] * p
                w[c] -= i_chassis @ quat.cross(pivots[m] - x[c], p)
