"""Typed access to what the add-on adds to Blender's types at run time.

``properties.register()`` gives ``Object`` and ``Scene`` their ``jakobsen`` settings, the overlay
gives ``WindowManager`` its ``jakobsen_show_axes`` toggle and the operators live under
``bpy.ops.jakobsen``. Blender's type stubs (fake-bpy-module) cannot know any of these, so a type
checker would flag every use; these functions are the one place that reaches them by name (with
``getattr``/``setattr``, which is what the attribute access does at run time), and they say what
comes back, so that the code that reads the settings is checked instead of ignored.

The stubs' literal types of ``bl_space_type``, ``bl_region_type`` and ``bl_options`` are here too,
for the mix-in classes that set them for several panels or operators (a mix-in's plain
``bl_space_type = 'VIEW_3D'`` is inferred as ``str``, which does not match ``Panel``'s literal),
and of the enum settings that a function passes on. They are fake-bpy-module's (a development
dependency) for the type checker and plain ``str`` in Blender, which evaluates the annotations of
the classes it registers (looking for properties; it ignores the others, but a name it cannot
resolve stops the class's properties from registering).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import bpy
    from bpy.stub_internal.rna_enums import ObjectEmptyDrawtypeItems as ObjectEmptyDrawtypeItems
    from bpy.stub_internal.rna_enums import OperatorTypeFlagItems as OperatorTypeFlagItems
    from bpy.stub_internal.rna_enums import RegionTypeItems as RegionTypeItems
    from bpy.stub_internal.rna_enums import SpaceTypeItems as SpaceTypeItems

    from .properties import JakobsenObjectSettings, JakobsenSceneSettings
else:
    ObjectEmptyDrawtypeItems = OperatorTypeFlagItems = RegionTypeItems = SpaceTypeItems = str


def object_settings(obj: bpy.types.Object) -> JakobsenObjectSettings:
    """``obj.jakobsen``: whether and as what the object takes part, and each role's settings."""
    return getattr(obj, "jakobsen")


def scene_settings(scene: bpy.types.Scene) -> JakobsenSceneSettings:
    """``scene.jakobsen``: the solver's and the bake's settings."""
    return getattr(scene, "jakobsen")


def add_property(owner: type, name: str, prop: Any) -> None:
    """Register ``prop`` (a ``bpy.props`` property) as ``owner.<name>`` (a Blender type)."""
    setattr(owner, name, prop)


def remove_property(owner: type, name: str) -> None:
    delattr(owner, name)


def operators() -> Any:
    """``bpy.ops.jakobsen``: the add-on's operators, as far as they are registered."""
    import bpy

    return getattr(bpy.ops, "jakobsen")
