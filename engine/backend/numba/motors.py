"""Motor drives, compiled: one pass of the speed and servo motors as position drives
(``constraints.motors.solve_motor_positions``, the numpy reference; the same arithmetic motor by
motor, so the two agree to rounding). As in the reference, every motor's step is computed from
the corrections as they stood before the pass, then all are applied."""

from __future__ import annotations

import numpy as np
from numba import njit

from .vec import conj, dot, exp_rotation, get3, get4, inv_inertia_times, log_rotation, qmul, rotate, sub

JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**JIT)
def _solve_motor_positions(a, b, axis_a, linear, mode, effort, force_mode, x, q, x_prev, q_prev, S, inv_mass,
                           inv_inertia, h, speeds, lam, step_limit, limited):
    count = a.shape[0]
    steps = np.zeros((count, 3))
    for k in range(count):
        ia, ib = a[k], b[k]
        qa = qmul(exp_rotation((S[ia, 3], S[ia, 4], S[ia, 5])), get4(q, ia))
        qb = qmul(exp_rotation((S[ib, 3], S[ib, 4], S[ib, 5])), get4(q, ib))
        n = rotate(qa, get3(axis_a, k))
        if linear[k]:
            xa = (x[ia, 0] + S[ia, 0], x[ia, 1] + S[ia, 1], x[ia, 2] + S[ia, 2])
            xb = (x[ib, 0] + S[ib, 0], x[ib, 1] + S[ib, 1], x[ib, 2] + S[ib, 2])
            rel = sub(sub(xa, get3(x_prev, ia)), sub(xb, get3(x_prev, ib)))
            w_eff = inv_mass[ia] + inv_mass[ib]
        else:
            ra = log_rotation(qmul(qa, conj(get4(q_prev, ia))))
            rb = log_rotation(qmul(qb, conj(get4(q_prev, ib))))
            rel = sub(ra, rb)
            # n^T (I_a^-1 + I_b^-1) n in world axes, at the substep's start pose.
            ta = inv_inertia_times(get4(q, ia), (inv_inertia[ia, 0], inv_inertia[ia, 1], inv_inertia[ia, 2]), n)
            tb = inv_inertia_times(get4(q, ib), (inv_inertia[ib, 0], inv_inertia[ib, 1], inv_inertia[ib, 2]), n)
            w_eff = dot(n, (ta[0] + tb[0], ta[1] + tb[1], ta[2] + tb[2]))
        if mode[k] == force_mode or not w_eff > 0.0:
            continue
        progress = dot(n, rel)
        limit = effort[k] * h * h
        if limited:
            limit = min(limit, step_limit[k] / max(w_eff, 1e-300))
        total = min(max(lam[k] + (speeds[k] * h - progress) / max(w_eff, 1e-300), -limit), limit)
        step = total - lam[k]
        lam[k] += step
        steps[k, 0], steps[k, 1], steps[k, 2] = n[0] * step, n[1] * step, n[2] * step
    for k in range(count):
        ia, ib = a[k], b[k]
        p = get3(steps, k)
        if linear[k]:
            for i in range(3):
                S[ia, i] += inv_mass[ia] * p[i]
                S[ib, i] -= inv_mass[ib] * p[i]
        else:
            ta = inv_inertia_times(get4(q, ia), (inv_inertia[ia, 0], inv_inertia[ia, 1], inv_inertia[ia, 2]), p)
            tb = inv_inertia_times(get4(q, ib), (inv_inertia[ib, 0], inv_inertia[ib, 1], inv_inertia[ib, 2]), p)
            for i in range(3):
                S[ia, 3 + i] += ta[i]
                S[ib, 3 + i] -= tb[i]


def motor_arguments(motors, x, q, x_prev, q_prev, S, inv_mass, inv_inertia, h: float, speeds, lam,
                    step_limit=None) -> tuple:
    """``_solve_motor_positions``' arguments from the reference's (see ``solve_motor_positions``):
    what the fused passes of ``rigid.solve_position_passes`` take too."""
    from ...constraints.motors import MODES

    limited = step_limit is not None
    return (motors.a, motors.b, motors.axis_a, motors.linear, motors.mode, motors.effort, MODES.index("force"), x, q,
            x_prev, q_prev, S, inv_mass, inv_inertia, float(h), np.ascontiguousarray(speeds, dtype=np.float64), lam,
            step_limit if limited else np.zeros(motors.count), limited)


def solve_motor_positions(motors, x, q, x_prev, q_prev, S, inv_mass, inv_inertia, h: float, speeds, lam,
                          step_limit=None) -> None:
    """The reference's signature (``constraints.motors.solve_motor_positions``) over the kernel."""
    if not motors.count:
        return
    _solve_motor_positions(*motor_arguments(motors, x, q, x_prev, q_prev, S, inv_mass, inv_inertia, h, speeds, lam,
                                            step_limit))
