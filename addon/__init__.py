"""Jakobsen Physics: the Blender add-on.

Blender-facing code lives here; the solver (``engine``) never imports bpy. Registration is
filled in by the add-on issue; the command line (``addon.cli``) already drives real Blender.
"""


def register():
    pass


def unregister():
    pass
