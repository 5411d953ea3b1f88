"""Motor drives, the numpy reference: ``constraints.motors.solve_motor_positions`` itself (all
motors at once, vectorised). ``backend/numba/motors.py`` is the compiled version."""

from ...constraints.motors import solve_motor_positions

__all__ = ["solve_motor_positions"]
