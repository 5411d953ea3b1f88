"""The Scene tab: ``SCENE_PT_jakobsen_solver`` and ``SCENE_PT_jakobsen_bake``."""

from bpy.types import Panel

from .. import baking


class JakobsenScenePanel:
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "scene"


class SCENE_PT_jakobsen_solver(JakobsenScenePanel, Panel):
    bl_label = "Jakobsen Physics"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        scene = context.scene
        props = scene.jakobsen
        col = layout.column()
        col.prop(props, "substeps")
        col.prop(props, "iterations")
        col.prop(props, "damping")
        col.prop(props, "wind")
        col = layout.column()
        col.prop(props, "use_scene_gravity")
        sub = col.column()
        if props.use_scene_gravity:
            sub.enabled = False
            sub.prop(scene, "gravity")
        else:
            sub.prop(props, "gravity")


def draw_bake_buttons(layout, scene) -> None:
    """Bake / Free Bake, as both the Scene tab and the sidebar show them."""
    row = layout.row(align=True)
    row.scale_y = 1.3
    row.operator("jakobsen.bake", icon='PHYSICS')
    sub = row.row(align=True)
    sub.enabled = bool(baking.baked_objects(scene))
    sub.operator("jakobsen.free_bake", icon='TRASH')


class SCENE_PT_jakobsen_bake(JakobsenScenePanel, Panel):
    bl_label = "Bake"
    bl_parent_id = "SCENE_PT_jakobsen_solver"

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        props = context.scene.jakobsen
        col = layout.column(heading="Frames")
        col.prop(props, "use_scene_range", text="Scene Range")
        sub = col.column(align=True)
        if props.use_scene_range:
            sub.enabled = False
            sub.prop(context.scene, "frame_start", text="Start")
            sub.prop(context.scene, "frame_end", text="End")
        else:
            sub.prop(props, "frame_start")
            sub.prop(props, "frame_end")
        col = layout.column()
        col.prop(props, "output")
        if props.output == 'PC2':
            col.prop(props, "cache_directory")
        draw_bake_buttons(layout, context.scene)


classes = (SCENE_PT_jakobsen_solver, SCENE_PT_jakobsen_bake)
