"""Jakobsen Physics: the Blender add-on. Registration only.

Blender imports this package under its extension name (``bl_ext.user_default.jakobsen_physics``),
so every import of the add-on's own modules is relative. The solver is its own package,
``jakobsen_engine`` (``engine/`` in the repository), which the extension ships as a wheel: one
module identity in the repository, the tests and Blender alike. The command line, the demo and
the benchmarks (``jakobsen_tools``, ``tools/``) are not part of what Blender loads.
"""

import bpy

from . import operators, playback, previews, properties, renames, ui

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(operators.classes + ui.classes)


def _configure_kernels() -> None:
    """Point numba's kernel cache at the extension's own user folder (the installed add-on's folder
    may not be writable, and is replaced on update); outside an extension numba's default stays."""
    from jakobsen_engine import backend

    try:
        folder = bpy.utils.extension_path_user(__package__, path="numba-cache", create=True)
    except (ValueError, AttributeError):  # not installed as an extension (a checkout, the tests)
        return
    backend.configure(cache_dir=folder)


def register():
    _configure_kernels()
    properties.register()
    _register_classes()
    ui.register()
    previews.register()
    operators.bake.register()
    playback.register()
    renames.register()


def unregister():
    renames.unregister()
    playback.unregister()
    operators.bake.unregister()
    previews.unregister()
    ui.unregister()
    _unregister_classes()
    properties.unregister()
