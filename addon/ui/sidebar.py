"""The 3D View's sidebar tab "Jakobsen": set up from the selection, bake, free, simulate on playback
(its cache: what is cached, Bake from Cache, Free Cache), show the axes overlay."""

import bpy
from bpy.types import Panel

from .scene import cache_info, draw_bake_buttons


class VIEW3D_PT_jakobsen(Panel):
    bl_label = "Jakobsen Physics"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Jakobsen"

    def draw(self, context):
        layout = self.layout
        col = layout.column(align=True)
        col.label(text="Selected Meshes")
        row = col.row(align=True)
        row.operator("jakobsen.add_body", text="Rigid Body", icon='RIGID_BODY').type = 'RIGID_BODY'
        row.operator("jakobsen.add_body", text="Collider", icon='MOD_PHYSICS').type = 'COLLIDER'
        row = col.row(align=True)
        row.operator("jakobsen.add_body", text="Cloth", icon='MOD_CLOTH').type = 'CLOTH'
        row.operator("jakobsen.add_body", text="Soft Body", icon='MOD_SOFT').type = 'SOFT_BODY'

        col = layout.column(align=True)
        col.label(text="Between Selected")
        col.operator_menu_enum("jakobsen.add_connector", "connector_type", text="Connector", icon='CONSTRAINT')
        row = col.row(align=True)
        row.operator("jakobsen.add_spring", text="Spring", icon='FORCE_HARMONIC')
        row.operator_menu_enum("jakobsen.add_motor", "motor_type", text="Motor", icon='FORCE_TURBULENCE')

        layout.separator()
        ob = context.object
        if ob is not None and ob.jakobsen.enabled:
            # The name on its own line and the type below it at full width: side by side, at the
            # sidebar's default width, both were cut ("Rigid Bo...").
            col = layout.column(align=True)
            col.label(text=ob.name, icon='OBJECT_DATA')
            col.prop(ob.jakobsen, "type", text="")
        draw_bake_buttons(layout, context.scene)
        scene = context.scene
        col = layout.column(align=True)
        # "Simulate [x] On Playback", a heading as Blender's own panels do: the whole name does not fit
        # the sidebar's default width.
        row = col.row(heading="Simulate")
        row.use_property_split = True
        row.prop(scene.jakobsen, "use_simulate_on_playback", text="On Playback")
        if scene.jakobsen.use_simulate_on_playback:
            for line in cache_info(scene):
                col.label(text=line)
            row = col.row(align=True)
            row.operator("jakobsen.bake_from_cache", text="Bake from Cache")
            row.operator("jakobsen.free_cache", text="Free Cache", icon='TRASH')
        # (The one WindowManager of the session: the overlay's switch is not saved with the file.)
        layout.prop(bpy.context.window_manager, "jakobsen_show_axes", icon='EMPTY_ARROWS')


classes = (VIEW3D_PT_jakobsen,)
