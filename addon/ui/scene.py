"""The Scene tab: ``SCENE_PT_jakobsen_solver``, ``SCENE_PT_jakobsen_deactivation``, ``SCENE_PT_jakobsen_bake`` and
``SCENE_PT_jakobsen_cache`` (simulate on playback, laid out as Blender's Point Cache panel)."""

import textwrap

from bpy.types import Panel

from .. import baking, playback
from ..registered import RegionTypeItems, SpaceTypeItems
from .units import prop_with_unit


class JakobsenScenePanel:
    bl_space_type: SpaceTypeItems = 'PROPERTIES'
    bl_region_type: RegionTypeItems = 'WINDOW'
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
        row = col.row(heading="Iterations")
        row.prop(props, "use_auto_iterations", text="Auto")
        sub = row.row()
        sub.active = not props.use_auto_iterations
        sub.prop(props, "iterations", text="")
        prop_with_unit(col, props, "damping", "Damping", "1/s")  # (a rate: Blender has no unit for it)
        col.prop(props, "wind")
        col = layout.column()
        col.prop(props, "use_scene_gravity")
        sub = col.column()
        if props.use_scene_gravity:
            sub.enabled = False
            sub.prop(scene, "gravity")
        else:
            sub.prop(props, "gravity")


class SCENE_PT_jakobsen_deactivation(JakobsenScenePanel, Panel):
    """Rigid bodies at rest stop being simulated (Blender's Rigid Body > Dynamics > Deactivation)."""

    bl_label = "Deactivation"
    bl_parent_id = "SCENE_PT_jakobsen_solver"
    bl_options = {'DEFAULT_CLOSED'}

    def draw_header(self, context):
        self.layout.prop(context.scene.jakobsen, "use_deactivation", text="")

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        props = context.scene.jakobsen
        col = layout.column(align=True)
        col.active = props.use_deactivation
        col.prop(props, "deactivate_speed")
        col.prop(props, "deactivate_time")


def cache_info(scene) -> list[str]:
    """The cache panel's lines of information, as Blender's Point Cache says them: frames and
    memory, whether it is outdated, and why playback does not simulate now."""
    from ..operators.bake import bake_running

    lines = []
    if bake_running() is not None:
        lines.append("Baking... (Esc to cancel)")
    cache = playback.cache_of(scene)
    if cache is None or cache.job is None:
        if scene.jakobsen.use_simulate_on_playback:
            lines.append(f"Nothing cached: play from frame {scene.jakobsen.frame_range()[0]}")
    else:
        limit = scene.jakobsen.cache_memory_limit
        lines.append(f"{cache.frames_cached} frames in memory ({cache.frame_start}-{cache.last_frame})")
        lines.append(f"Memory: {cache.memory_bytes() / 2**20:.1f} of {limit} MB")
        if cache.outdated:
            lines.append(f"Cache is outdated (edited on frame {cache.outdated_at})")
    message = cache.message if cache is not None else ""
    if message:
        lines.append(message[0].upper() + message[1:])
    return lines


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
            col.prop(props, "cache_directory", text="Directory")  # ("Cache Directory" is cut at the default width)
        draw_bake_buttons(layout, context.scene)


class SCENE_PT_jakobsen_cache(JakobsenScenePanel, Panel):
    bl_label = "Simulate on Playback"
    bl_parent_id = "SCENE_PT_jakobsen_solver"

    def draw_header(self, context):
        self.layout.prop(context.scene.jakobsen, "use_simulate_on_playback", text="")

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        scene = context.scene
        props = scene.jakobsen
        start, end = props.frame_range()
        col = layout.column(align=True)
        col.active = props.use_simulate_on_playback
        row = col.row(align=True)
        row.enabled = False  # (set in the Bake panel above)
        row.label(text="Frames")
        row.label(text=f"{start} - {end}")
        row = col.row()
        row.use_property_split = False  # (the label in the field: it fits the default width)
        row.prop(props, "cache_memory_limit", text="Memory Limit (MB)")
        lines = cache_info(scene)
        if lines:
            info = layout.column(align=True)
            info.alignment = 'RIGHT'
            for line in lines:
                for part in textwrap.wrap(line, 40):
                    info.label(text=part)
        flow = layout.grid_flow(row_major=True, columns=0, even_columns=True, even_rows=False, align=False)
        col = flow.column()
        col.operator("jakobsen.bake", text="Bake")
        col.operator("jakobsen.bake_from_cache", text="Bake from Cache")
        col = flow.column()
        col.operator("jakobsen.free_cache", text="Free Cache")
        sub = col.row()
        sub.enabled = bool(baking.baked_objects(scene))
        sub.operator("jakobsen.free_bake", text="Free Bake")


classes = (SCENE_PT_jakobsen_solver, SCENE_PT_jakobsen_deactivation, SCENE_PT_jakobsen_bake, SCENE_PT_jakobsen_cache)
