"""Alembic and USD caches of a bake, written by Blender's own exporters.

The baked file plays its animation through shape keys (or a PC2 Mesh Cache) and keyframes; the
exporters evaluate the scene frame by frame over the bake's range and write what renders:
deforming meshes as time-sampled points, rigid bodies as animated transforms. Shape keys go out
as plain points, not as USD blend shapes (one per frame would be an odd rig to hand a pipeline).
"""

from __future__ import annotations

import os


class ExportError(Exception):
    """Blender could not write the cache; the message names the file."""


def export_alembic(bpy, path: str, frames: tuple[int, int]) -> str:
    """Write the open scene's frames ``frames`` to the Alembic file ``path``; returns its path."""
    path = _prepare(path, ".abc")
    try:
        bpy.ops.wm.alembic_export(filepath=path, start=frames[0], end=frames[1], selected=False,
                                  flatten=False, evaluation_mode='RENDER', export_hair=False,
                                  export_particles=False, check_existing=False)
    except RuntimeError as error:
        raise ExportError(f"--alembic {path}: Blender's Alembic exporter failed ({str(error).strip()})") from None
    return _written(path, "--alembic")


def export_usd(bpy, path: str, frames: tuple[int, int]) -> str:
    """Write the open scene's frames ``frames`` to the USD file ``path`` (.usd, .usdc, .usda)."""
    path = _prepare(path, (".usd", ".usdc", ".usda"))
    scene = bpy.context.scene
    old = scene.frame_start, scene.frame_end
    # The USD exporter takes the scene's frame range, not arguments.
    scene.frame_start, scene.frame_end = frames
    try:
        bpy.ops.wm.usd_export(filepath=path, export_animation=True, export_shapekeys=False,
                              selected_objects_only=False, evaluation_mode='RENDER', check_existing=False)
    except RuntimeError as error:
        raise ExportError(f"--usd {path}: Blender's USD exporter failed ({str(error).strip()})") from None
    finally:
        scene.frame_start, scene.frame_end = old
    return _written(path, "--usd")


def _prepare(path: str, extensions) -> str:
    path = os.path.abspath(path)
    extensions = (extensions,) if isinstance(extensions, str) else extensions
    if not path.lower().endswith(tuple(extensions)):
        raise ExportError(f"{path}: the file name must end in {' or '.join(extensions)}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def _written(path: str, option: str) -> str:
    if not os.path.isfile(path):
        raise ExportError(f"{option} {path}: Blender's exporter wrote nothing")
    return path
