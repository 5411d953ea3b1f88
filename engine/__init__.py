"""Jakobsen Physics engine: Verlet particles, projected constraints, relaxation.

numpy only; never imports bpy. The flow is ``ModelBuilder`` (lists) -> ``finalize()`` ->
``Model`` (immutable arrays) -> ``State`` (positions that change) stepped by ``Solver``.
"""

from .errors import JakobsenError
from .colliders import Plane, Sphere, Box, BoxInterior, Capsule, Cylinder, ConvexHull, TriangleMesh
from .model import Model, State, StickKind
from .builder import ModelBuilder, ClothHandle
from .rigid import BodyHandle
from .solver import Solver, SolverSettings

__version__ = "0.1.0"

__all__ = [
    "JakobsenError",
    "Plane",
    "Sphere",
    "Box",
    "BoxInterior",
    "Capsule",
    "Cylinder",
    "ConvexHull",
    "TriangleMesh",
    "Model",
    "State",
    "StickKind",
    "ModelBuilder",
    "ClothHandle",
    "BodyHandle",
    "Solver",
    "SolverSettings",
    "__version__",
]
