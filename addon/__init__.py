"""Jakobsen Physics: the Blender add-on. Registration only.

Blender imports this package under its extension name (``bl_ext.user_default.jakobsen_physics``),
so every import inside it is relative, and the solver ships inside it as ``.engine``. The
command line (``addon.cli``) is not part of what Blender loads.
"""

import bpy

from . import operators, properties, ui

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(operators.classes + ui.classes)


def register():
    properties.register()
    _register_classes()


def unregister():
    _unregister_classes()
    properties.unregister()
