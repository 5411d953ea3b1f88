"""Jakobsen Physics engine: Verlet particles, projected constraints, relaxation.

Never imports bpy. The flow is ``ModelBuilder`` (lists) -> ``finalize()`` -> ``Model`` (immutable
arrays) -> ``State`` (positions that change) stepped by ``Solver``. The packages:

- ``geometry``: quaternions, meshes (triangulation, mass properties, convex hulls), shapes;
- ``particles``: cloth topology; ``bodies``: rigid bodies; ``collision``: contacts of bodies;
- ``constraints``: connectors, springs, motors; ``forces``: force fields;
- ``solver``: settings and the substep loop; ``backend``: the hot loops behind one seam.
"""

# One module identity. numba's kernel cache pickles each kernel with its module's name: the
# engine imported as ``engine`` (the repository's folder on sys.path) wrote kernels that a process
# importing ``jakobsen_engine`` with the same sources then loaded and failed on ("No module named
# 'engine'": a bake from the checkout stopped after the tests had run there).
if __name__ != "jakobsen_engine":
    raise ImportError(f"the Jakobsen Physics engine is the package jakobsen_engine: import it by that name, "
                      f"not as {__name__!r}")

from .bodies.rigid import BodyHandle
from .builder import ClothHandle, ModelBuilder
from .errors import JakobsenError
from .geometry import quaternions
from .geometry.shapes import Box, BoxInterior, Capsule, ConvexHull, Cylinder, Plane, Sphere, TriangleMesh
from .model import Model, State, StickKind
from .solver.solver import Solver, SolverSettings
from .tracks import Track

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
    "quaternions",
    "Track",
    "__version__",
]
