"""The vehicles' drive, brakes, grip and anti-roll bars for one substep, compiled: the numpy
reference (``backend/numpy/vehicles.py``, which says what each argument is) wheel by wheel, with
the same arithmetic but for the world inverse inertias (applied to a vector here, as matrices
there), so the two agree to rounding. As numpy glue this was a fifth of the car example's time."""

from __future__ import annotations

import numpy as np
from numba import njit

from .vec import cross, dot, get3, get4, inv_inertia_times, rotate, sub

JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**JIT)
def drive_wheels(chassis, wheels, driven, axle, radius, brakes, forward_local, up_local, axle_local, roll_pairs,
                 roll_stiffness, pivot_local, travel_axis_local, mass, wheel_friction, target, available, brake,
                 handbrake, drifting, grip_loss, traction_control, brake_torque, rolling_resistance, integral,
                 last_error, k, h, gravity, response, integral_time, settling, near, near_speed, handbrake_share,
                 slip, slip_speed, x, q, v, w, inv_mass, inv_inertia, effort, friction):
    c = chassis
    n = wheels.shape[0]
    qc = get4(q, c)
    forward = rotate(qc, (forward_local[0], forward_local[1], forward_local[2]))
    up = rotate(qc, (up_local[0], up_local[1], up_local[2]))
    axles = np.empty((n, 3))
    for m in range(n):
        a = rotate(get4(q, wheels[m]), get3(axle_local, m))
        for i in range(3):
            axles[m, i] = a[i]
    speed = dot(get3(v, c), forward)
    count = 0
    radius_sum = 0.0
    for m in range(n):
        if driven[m]:
            count += 1
            radius_sum += radius[m]
    if count and available > 0.0:
        spin = np.empty(n)
        wc = get3(w, c)
        for m in range(n):
            spin[m] = dot(sub(get3(w, wheels[m]), wc), get3(axles, m))
        spin_sum = 0.0
        for m in range(n):
            if driven[m]:
                spin_sum += spin[m]
        r = radius_sum / count
        gain = mass * r * r / response
        wheel_error = target / r - spin_sum / count
        error = target - speed
        closing = last_error[k] == last_error[k] and abs(error - last_error[k]) / h * response > settling * abs(error) \
            and abs(error) > near * abs(target) + near_speed
        last_error[k] = error
        held = integral[k]
        if not closing and abs(gain * wheel_error + integral[k]) < available:
            integral[k] = min(max(integral[k] + gain * (target - speed) / r * h / integral_time, -available),
                              available)
        total = min(max(gain * wheel_error + integral[k], -available), available)
        groups = 0
        for m in range(n):  # the distinct axles among the driven wheels
            if driven[m]:
                first = True
                for e in range(m):
                    if driven[e] and axle[e] == axle[m]:
                        first = False
                if first:
                    groups += 1
        torque = np.zeros(n)
        for m in range(n):
            if driven[m]:
                same = 0
                for e in range(n):
                    if driven[e] and axle[e] == axle[m]:
                        same += 1
                torque[m] = total / groups / same
        if traction_control:
            for m in range(n):
                rolling = cross(get3(axles, m), up)
                ground = dot(get3(v, wheels[m]), rolling) / radius[m]
                slack = slip * abs(ground) + slip_speed / radius[m]
                excess = (spin[m] - ground if torque[m] >= 0.0 else ground - spin[m]) - slack
                factor = min(max(1.0 - excess / slack, 0.0), 1.0)
                if driven[m] and factor < 1.0:
                    integral[k] = held  # (the grip is the limit: no wind-up)
                torque[m] *= factor
        total_impulse = (0.0, 0.0, 0.0)
        for m in range(n):
            s = torque[m] * h
            impulse = (s * axles[m, 0], s * axles[m, 1], s * axles[m, 2])
            total_impulse = (total_impulse[0] + impulse[0], total_impulse[1] + impulse[1],
                             total_impulse[2] + impulse[2])
            b = wheels[m]
            dw = inv_inertia_times(get4(q, b), get3(inv_inertia, b), impulse)
            for i in range(3):
                w[b, i] += dw[i]
        dw = inv_inertia_times(qc, get3(inv_inertia, c), total_impulse)
        for i in range(3):
            w[c, i] -= dw[i]
    else:
        integral[k] = 0.0
        last_error[k] = np.nan
    load = mass * gravity / n
    for m in range(n):
        rear = axle[m] > 0
        effort[brakes[m]] = brake_torque * (brake + (handbrake_share * handbrake if rear else 0.0)) \
            + rolling_resistance * load * radius[m]
        if drifting:
            friction[wheels[m]] = wheel_friction[m] * (1.0 - grip_loss) if rear else wheel_friction[m]
    if roll_pairs.shape[0]:
        xc = get3(x, c)
        pivots = np.empty((n, 3))
        axes = np.empty((n, 3))
        travel = np.empty(n)
        for m in range(n):
            pv = rotate(qc, get3(pivot_local, m))
            ax = rotate(qc, get3(travel_axis_local, m))
            for i in range(3):
                pivots[m, i] = xc[i] + pv[i]
                axes[m, i] = ax[i]
            travel[m] = dot(sub(get3(x, wheels[m]), get3(pivots, m)), ax)
        for pair in range(roll_pairs.shape[0]):
            lw = roll_pairs[pair, 0]
            rw = roll_pairs[pair, 1]
            force = roll_stiffness[pair] * (travel[lw] - travel[rw])
            for m, sign in ((lw, -1.0), (rw, 1.0)):
                s = sign * force * h
                p = (s * axes[m, 0], s * axes[m, 1], s * axes[m, 2])
                b = wheels[m]
                for i in range(3):
                    v[b, i] += inv_mass[b] * p[i]
                    v[c, i] -= inv_mass[c] * p[i]
                dw = inv_inertia_times(qc, get3(inv_inertia, c), cross(sub(get3(pivots, m), get3(x, c)), p))
                for i in range(3):
                    w[c, i] -= dw[i]
