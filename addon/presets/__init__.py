"""Presets through Blender's own preset machinery: ``JAKOBSEN_PT_cloth_presets`` and
``JAKOBSEN_PT_rigid_body_presets`` are preset popovers for the Cloth and Rigid Body panels'
headers (Blender's ``PresetPanel``, as its Cloth panel has ``CLOTH_PT_presets``), and
``jakobsen.cloth_preset_add`` / ``jakobsen.rigid_body_preset_add`` are ``AddPresetBase``
operators that write and remove user presets.

A preset is a Python file that sets the active object's settings (``bpy.context.object.jakobsen.
cloth``), run by Blender's ``script.execute_preset``. The add-on's own presets ship in this folder,
``presets/<subdir>/``, where ``<subdir>`` is ``jakobsen/cloth`` or ``jakobsen/rigid_body`` (a
folder of our own, so Blender's ``presets/cloth`` and ours never mix); user presets go where
Blender puts them, ``<user scripts>/presets/<subdir>/``. Blender 4.3 and later find ours
through ``bpy.utils.register_preset_path`` (registered with the popover); 4.2 has no such call, so
the popover lists this folder itself as well. Each popover registers its Add Preset operator when
Blender registers the popover (with the panels, ``ui.physics.classes``) and unregisters it with it.
"""

import os

import bpy
from bl_operators.presets import AddPresetBase
from bl_ui.utils import PresetPanel
from bpy.types import Operator, Panel

# The folder that holds ``presets/`` (what register_preset_path wants): the add-on's own.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CLOTH_SUBDIR = "jakobsen/cloth"
RIGID_BODY_SUBDIR = "jakobsen/rigid_body"

# The cloth presets (Cotton, Denim, Leather, Rubber, Silk) are Blender's own cloth presets
# (scripts/presets/cloth/*.py) in this add-on's units:
# - Mass: Blender's ``mass`` is kg per vertex, whatever the mesh; ours is kg/m^2 of cloth. Blender's
#   Cotton, 0.3 kg a vertex, is real cotton's 0.15 kg/m^2, so Density = Blender's mass x 0.5 /m^2
#   (keeping Blender's ratios between the cloths); Vertex Mass (Per Vertex on) is Blender's number.
# - Stretch and Shear: Blender's solver pulls a spring with tension x (length - rest) / mean spring
#   length, a force per unit strain of one edge: newtons, as ours are, so the numbers carry over.
#   Blender's values keep woven cloth within about 1% of its length, so Cotton, Denim, Leather and
#   Silk are Rigid (the number is there for Rigid off); Rubber stretches, so it is not.
# - Bending: Blender's angular springs resist the angle, ours a stick across the edge, so there is
#   no exact conversion; x 0.1 makes Blender's default (0.5, Cotton) this add-on's default (0.05)
#   and keeps Blender's ratios (Silk 100 times softer than Cotton, Leather 300 times stiffer).
# - Air Drag: Blender's air damping is 1 in every preset; ours is 0.6 kg/m^3 (half air's density
#   times a flat sheet's drag coefficient of about 1) in every preset. Friction is not in Blender's
#   cloth presets: typical Coulomb coefficients of each fabric.
# What a preset stores: the material, not what belongs to one mesh (its pin group) or one scene.
CLOTH_VALUES = ("use_vertex_mass", "density", "vertex_mass", "use_rigid_stretch", "stretch_stiffness",
                "use_rigid_shear", "shear_stiffness", "bend_stiffness", "air_drag", "friction",
                "use_plasticity", "plastic_limit", "plastic_rate")
RIGID_BODY_VALUES = ("use_density", "density", "friction", "bounce")


def shipped_directory(subdir: str) -> str:
    """The add-on's own presets of ``subdir``."""
    return os.path.join(ROOT, "presets", *subdir.split("/"))


def preset_directories(subdir: str) -> list[str]:
    """Every folder with presets of ``subdir``: Blender's (its own, the user's, registered ones)
    and the add-on's, each once."""
    dirs = list(bpy.utils.preset_paths(subdir))
    shipped = shipped_directory(subdir)
    if os.path.isdir(shipped) and os.path.normcase(os.path.realpath(shipped)) not in {
            os.path.normcase(os.path.realpath(d)) for d in dirs}:
        dirs.append(shipped)
    return dirs


def shipped_names(subdir: str) -> set[str]:
    """File names (no extension) of the presets the add-on ships for ``subdir``."""
    folder = shipped_directory(subdir)
    if not os.path.isdir(folder):
        return set()
    return {os.path.splitext(f)[0] for f in os.listdir(folder) if f.endswith(".py")}


class _AddPreset(AddPresetBase):
    """AddPresetBase, refusing to shadow or remove the presets the add-on ships (in a checkout
    Blender would not know them as read-only, and 4.2 does not see them at all)."""

    @classmethod
    def poll(cls, context):
        ob = context.object
        return ob is not None and ob.type == 'MESH' and hasattr(ob, "jakobsen")

    def execute(self, context):
        name = self.as_filename(self.name.strip()) if not self.remove_active else ""
        if self.remove_active:
            name = self.as_filename(getattr(bpy.types, self.preset_menu).bl_label)
        shipped = {n.lower() for n in shipped_names(self.preset_subdir)}
        if name and name.lower() in shipped:
            if self.remove_name or self.remove_active:
                self.report({'WARNING'}, f"\"{self.name}\" ships with Jakobsen Physics and cannot be removed")
            else:
                self.report({'WARNING'}, f"Cannot create preset \"{self.name}\": Jakobsen Physics ships one of "
                                         "that name; choose another")
            return {'CANCELLED'}
        return super().execute(context)


# (ignore[misc]: the stubs of AddPresetBase say its check() and invoke() return None, where
# Operator's return a bool and a set; Blender's own preset operators are built the same way.)
class JAKOBSEN_OT_cloth_preset_add(_AddPreset, Operator):  # type: ignore[misc]
    """Add or remove a Jakobsen Physics cloth preset (mass, stiffness, drag, friction, plasticity)"""
    bl_idname = "jakobsen.cloth_preset_add"
    bl_label = "Add Cloth Preset"
    preset_menu = "JAKOBSEN_PT_cloth_presets"
    preset_subdir = CLOTH_SUBDIR
    # Whole paths, no preset_defines: Blender 4.3's AddPresetBase exec()s the defines into its
    # function's locals, which Python 3.13 does not let its eval() see (NameError in the GUI).
    preset_values = [f"bpy.context.object.jakobsen.cloth.{name}" for name in CLOTH_VALUES]


class JAKOBSEN_OT_rigid_body_preset_add(_AddPreset, Operator):  # type: ignore[misc]
    """Add or remove a Jakobsen Physics rigid body preset (density, friction, bounce)"""
    bl_idname = "jakobsen.rigid_body_preset_add"
    bl_label = "Add Rigid Body Preset"
    preset_menu = "JAKOBSEN_PT_rigid_body_presets"
    preset_subdir = RIGID_BODY_SUBDIR
    preset_values = [f"bpy.context.object.jakobsen.rigid_body.{name}" for name in RIGID_BODY_VALUES]


class _PresetPopover(PresetPanel):
    """A preset popover (drawn in a panel's header with ``draw_panel_header``) that lists the
    add-on's own presets besides Blender's preset paths."""

    preset_operator = "script.execute_preset"
    preset_subdir = ""
    preset_add_operator = ""
    add_operator_class: "type[Operator] | None" = None  # the operator behind preset_add_operator
    roles: tuple = ()

    @classmethod
    def poll(cls, context):
        ob = context.object
        return ob is not None and ob.type == 'MESH' and ob.jakobsen.enabled and ob.jakobsen.type in cls.roles

    @classmethod
    def register(cls):
        # The popover and the operator that adds to it come and go together (Blender calls this
        # when it registers the popover, with the panels).
        if not cls.add_operator_class.is_registered:
            bpy.utils.register_class(cls.add_operator_class)
        # Blender 4.3+: Blender's own preset look-ups (preset_find, preset_paths) see ours too.
        register = getattr(bpy.utils, "register_preset_path", None)
        if register is not None and ROOT not in getattr(bpy.utils, "_preset_path_registry", ()):
            register(ROOT)

    @classmethod
    def unregister(cls):
        if cls.add_operator_class.is_registered:
            bpy.utils.unregister_class(cls.add_operator_class)
        unregister = getattr(bpy.utils, "unregister_preset_path", None)
        if unregister is not None and ROOT in getattr(bpy.utils, "_preset_path_registry", ()):
            unregister(ROOT)

    def draw(self, context):
        # PresetPanel.draw (Menu.draw_preset) with the add-on's folder added for Blender 4.2.
        layout = self.layout
        layout.emboss = 'PULLDOWN_MENU'
        layout.operator_context = 'EXEC_DEFAULT'
        self.path_menu(preset_directories(self.preset_subdir), self.preset_operator,
                       filter_ext=lambda ext: ext.lower() == ".py", add_operator=self.preset_add_operator,
                       display_name=lambda name: bpy.path.display_name(name, title_case=False))


class JAKOBSEN_PT_cloth_presets(_PresetPopover, Panel):
    bl_label = "Cloth Presets"
    roles = ('CLOTH', 'SOFT_BODY')
    preset_subdir = CLOTH_SUBDIR
    preset_add_operator = "jakobsen.cloth_preset_add"
    add_operator_class = JAKOBSEN_OT_cloth_preset_add


class JAKOBSEN_PT_rigid_body_presets(_PresetPopover, Panel):
    bl_label = "Rigid Body Presets"
    roles = ('RIGID_BODY',)
    preset_subdir = RIGID_BODY_SUBDIR
    preset_add_operator = "jakobsen.rigid_body_preset_add"
    add_operator_class = JAKOBSEN_OT_rigid_body_preset_add


# The popovers (shown in the Cloth and Rigid Body panels' headers, registered with the panels);
# each registers its Add Preset operator with itself.
classes = (
    JAKOBSEN_PT_cloth_presets,
    JAKOBSEN_PT_rigid_body_presets,
)
