"""Which Blender object became which part of the engine's model (what ``scene_to_model.build``
returns besides the model)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class DeformableBinding:
    """A cloth or soft body: its vertices are the model's particles ``particles``.

    world_to_local: (1, 4, 4), or (frames, 4, 4) if the object moves, to write results in the
    object's space on each frame. pinned: model indices of its pinned particles;
    pinned_local: (k, 3) where they are in the object's space; pinned_world: (frames, k, 3) where
    they are in the world on each frame when the mesh deforms (an armature, hooks, shape keys),
    else None (then the object's matrix moves pinned_local). soft, soft_local, soft_world: the
    same for its partly pinned particles (a pin weight between 0 and 1), whose pulls follow too.
    """

    object_name: str
    role: str
    particles: slice
    vertex_count: int
    world_to_local: np.ndarray
    object_to_world: np.ndarray
    pinned: np.ndarray
    pinned_local: np.ndarray
    pinned_world: np.ndarray | None = None
    soft: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    soft_local: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    soft_world: np.ndarray | None = None

    @property
    def animated(self) -> bool:
        return len(self.object_to_world) > 1 or self.pinned_world is not None


@dataclass(frozen=True)
class ColliderBinding:
    """An object that takes part as the model's collider ``index``: a collider, or a passive rigid
    body that collides with its faces (``shape`` 'STATIC_MESH')."""

    object_name: str
    role: str
    shape: str
    index: int
    animated: bool


@dataclass(frozen=True)
class BodyBinding:
    """A rigid body: the model's body ``index``.

    mode: the engine's "dynamic", "kinematic" or "ghost"; shape: the engine's collision shape;
    rest_matrix: (4, 4) its matrix_world on the first frame (scale included); to_basis: (4, 4)
    world -> the object's ``matrix_basis`` (its parent and parent inverse, as on the first
    frame), or (frames, 4, 4), one a frame, when its parent moves on its own animation; keyed:
    whether the bake writes its motion (the solver moves it: dynamic and ghost; kinematic bodies
    already follow their own animation); scale: (3,) its scale property on the first frame
    (negative on a mirrored axis), which the keyed rotation leaves out. carrier: the name of the
    simulated rigid body it hangs from (a parent or grandparent the bake keys), or ""; then its
    parent frame on a frame is that body's baked matrix_world times ``carrier_offset`` (4, 4)
    (``BakeJob._to_basis``).
    """

    object_name: str
    index: int
    mode: str
    shape: str
    rest_matrix: np.ndarray
    to_basis: np.ndarray
    keyed: bool
    scale: tuple = (1.0, 1.0, 1.0)
    carrier: str = ""
    carrier_offset: np.ndarray | None = None
