"""Connector solves, the numpy reference: ``constraints.joints.solve_joints`` itself (one Newton
step on every joint, each mechanism's rows solved together with vectorised numpy over all
mechanisms at once). ``backend/numba/joints.py`` is the compiled version of the same step."""

from ...constraints.joints import solve_joints

__all__ = ["solve_joints"]
