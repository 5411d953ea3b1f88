"""The Physics tab: ``PHYSICS_PT_jakobsen`` (take part, and as what) and one sub-panel per role,
each shown only for objects of that role, laid out like Blender's own physics panels."""

import textwrap

from bpy.types import Panel

from jakobsen_engine.constraints import kinds as connector_kinds

from ..presets import JAKOBSEN_PT_cloth_presets, JAKOBSEN_PT_rigid_body_presets
from ..presets import classes as preset_classes
from ..properties import types_for
from ..registered import RegionTypeItems, SpaceTypeItems
from ..translate.settings import JOINT_KINDS
from .units import prop_with_unit
from .vehicle import wheel_chassis


class JakobsenPhysicsPanel:
    bl_space_type: SpaceTypeItems = 'PROPERTIES'
    bl_region_type: RegionTypeItems = 'WINDOW'
    bl_context = "physics"
    roles: tuple = ()

    @classmethod
    def poll(cls, context):
        ob = context.object
        if ob is None or not types_for(ob):
            return False
        settings = ob.jakobsen
        return settings.enabled and settings.type in cls.roles and settings.type in types_for(ob)


class PHYSICS_PT_jakobsen(Panel):
    bl_label = "Jakobsen Physics"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        return bool(types_for(context.object))

    def draw_header(self, context):
        self.layout.prop(context.object.jakobsen, "enabled", text="")

    def draw(self, context):
        layout = self.layout
        ob = context.object
        settings = ob.jakobsen
        layout.active = settings.enabled
        # Two a row: four types in one row are cut at the default Properties width.
        grid = layout.grid_flow(row_major=True, columns=2, even_columns=True, align=True)
        for role in types_for(ob):
            grid.prop_enum(settings, "type", role)
        if settings.enabled and settings.type not in types_for(ob):
            layout.label(text="Choose a type that suits this object", icon='ERROR')


class PHYSICS_PT_jakobsen_body(JakobsenPhysicsPanel, Panel):
    bl_label = "Rigid Body"
    bl_parent_id = "PHYSICS_PT_jakobsen"
    roles = ('RIGID_BODY',)

    def draw_header_preset(self, _context):
        JAKOBSEN_PT_rigid_body_presets.draw_panel_header(self.layout)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        rb = context.object.jakobsen.rigid_body
        col = layout.column()
        col.prop(rb, "dynamic")
        col.prop(rb, "collision_shape")
        if rb.dynamic == 'ON' and rb.collision_shape == 'STATIC_MESH':
            layout.label(text="A moving body collides with its convex hull", icon='INFO')
        moved = rb.dynamic != 'OFF'  # the solver moves it: mass and damping matter
        col = layout.column()
        col.active = moved
        col.prop(rb, "use_density")
        if rb.use_density:
            col.prop(rb, "density", text="Per m³ (kg)")  # ("Density (kg/m³)" is cut at the default width)
        else:
            col.prop(rb, "mass")
        col = layout.column()
        col.active = rb.dynamic != 'GHOST'
        col.prop(rb, "friction")
        col.prop(rb, "bounce")
        # (Labels of at most about 12 characters fit the default Properties width.)
        col = layout.column()
        col.active = moved
        # (A fraction of the velocity lost per second; the label has no room for the unit.)
        prop_with_unit(col, rb, "linear_damping", "Lin. Damping", "per s")
        prop_with_unit(col, rb, "angular_damping", "Rot. Damping", "per s")
        col.prop(rb, "drag", text="Drag (kg/m)")
        col.prop(rb, "field_weight", text="Fields")
        col = layout.column()
        col.active = moved  # a body with Dynamic Off follows its animation exactly
        col.prop(rb, "follow_position", text="Follow Pos.")
        col.prop(rb, "follow_rotation", text="Follow Rot.")
        col = layout.column(heading="Initial")
        col.active = moved
        col.prop(rb, "use_initial_velocity", text="Velocity")
        sub = col.column()
        sub.active = moved and rb.use_initial_velocity
        sub.prop(rb, "initial_velocity")
        sub.prop(rb, "initial_angular_velocity", text="Spin per s")  # (the field shows degrees only)


class PHYSICS_PT_jakobsen_soft_body(JakobsenPhysicsPanel, Panel):
    """What makes a closed mesh a soft body (its surface has the Cloth panel's settings), as
    Blender's Soft Body panel has Goal (here: the shape it springs back to) and Edges."""
    bl_label = "Soft Body"
    bl_parent_id = "PHYSICS_PT_jakobsen"
    roles = ('SOFT_BODY',)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        ob = context.object
        sb = ob.jakobsen.soft_body
        layout.prop(sb, "jiggle_frequency", text="Jiggle (Hz)")
        layout.prop(sb, "jiggle_damping", text="Damping")
        cloth = ob.jakobsen.cloth
        if cloth.use_rigid_stretch and cloth.use_rigid_shear:
            # (Two lines: one is cut at the default width.)
            col = layout.column(align=True)
            col.label(text="Rigid Stretch and Shear (Cloth):", icon='INFO')
            col.label(text="it dents but cannot squash", icon='BLANK1')


class PHYSICS_PT_jakobsen_soft_body_volume(JakobsenPhysicsPanel, Panel):
    bl_label = "Volume"
    bl_parent_id = "PHYSICS_PT_jakobsen_soft_body"
    roles = ('SOFT_BODY',)

    def draw_header(self, context):
        self.layout.prop(context.object.jakobsen.soft_body, "use_volume", text="")

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        sb = context.object.jakobsen.soft_body
        layout.active = sb.use_volume
        layout.prop(sb, "volume_stiffness", text="Stiffness (Pa)")


class PHYSICS_PT_jakobsen_cloth(JakobsenPhysicsPanel, Panel):
    bl_label = "Cloth"
    bl_parent_id = "PHYSICS_PT_jakobsen"
    roles = ('CLOTH', 'SOFT_BODY')

    def draw_header_preset(self, _context):
        JAKOBSEN_PT_cloth_presets.draw_panel_header(self.layout)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        ob = context.object
        cloth = ob.jakobsen.cloth
        if ob.jakobsen.type == 'SOFT_BODY':
            layout.label(text="The soft body's surface", icon='INFO')

        # Units in the labels: stiffnesses and densities have no Blender unit to show in the field.
        # (Labels of at most about 12 characters fit the default Properties width.)
        col = layout.column(heading="Mass")
        col.prop(cloth, "use_vertex_mass", text="Per Vertex")
        if cloth.use_vertex_mass:
            col.prop(cloth, "vertex_mass")
        else:
            col.prop(cloth, "density", text="Per m² (kg)")  # (under the heading Mass)
        col.prop(cloth, "air_drag", text="Drag (kg/m³)")
        col.prop(cloth, "field_weight", text="Fields")

        col = layout.column(heading="Stiffness")
        row = col.row(align=True)
        row.prop(cloth, "use_rigid_stretch", text="Rigid Stretch")
        sub = col.row()
        sub.active = not cloth.use_rigid_stretch
        sub.prop(cloth, "stretch_stiffness", text="Stretch (N)")
        row = col.row(align=True)
        row.prop(cloth, "use_rigid_shear", text="Rigid Shear")
        sub = col.row()
        sub.active = not cloth.use_rigid_shear
        sub.prop(cloth, "shear_stiffness", text="Shear (N)")
        prop_with_unit(col, cloth, "bend_stiffness", "Bending", "mN m")

        col = layout.column()
        col.prop_search(cloth, "pin_group", ob, "vertex_groups", text="Pin Group")
        sub = col.column()
        sub.active = bool(cloth.pin_group)
        sub.prop(cloth, "pin_stiffness", text="Pin (N/m)")

        col = layout.column(heading="Collisions")
        col.prop(cloth, "thickness")
        col.prop(cloth, "friction")


def _header_toggle(layout, context, switch: str) -> None:
    layout.prop(context.object.jakobsen.cloth, switch, text="")


def _toggled_fields(layout, context, switch: str, fields) -> None:
    """The fields of a sub-panel whose header holds the toggle ``switch``, greyed out while it is
    off, as in Blender's Cloth > Pressure and Self Collisions. fields: (property, label) pairs."""
    layout.use_property_split = True
    cloth = context.object.jakobsen.cloth
    layout.active = getattr(cloth, switch)
    col = layout.column()
    for prop, label in fields:
        col.prop(cloth, prop, text=label)


class PHYSICS_PT_jakobsen_cloth_self_collision(JakobsenPhysicsPanel, Panel):
    bl_label = "Self Collision"
    bl_parent_id = "PHYSICS_PT_jakobsen_cloth"
    roles = ('CLOTH', 'SOFT_BODY')

    def draw_header(self, context):
        _header_toggle(self.layout, context, "use_self_collision")

    def draw(self, context):
        _toggled_fields(self.layout, context, "use_self_collision", (("self_distance", "Distance"),))


class PHYSICS_PT_jakobsen_cloth_pressure(JakobsenPhysicsPanel, Panel):
    bl_label = "Pressure"
    bl_parent_id = "PHYSICS_PT_jakobsen_cloth"
    roles = ('CLOTH',)  # (a soft body keeps its volume with Soft Body > Volume)

    def draw_header(self, context):
        _header_toggle(self.layout, context, "use_pressure")

    def draw(self, context):
        _toggled_fields(self.layout, context, "use_pressure",
                        (("pressure_volume", "Volume Ratio"), ("pressure_stiffness", "Stiffness (Pa)")))


class PHYSICS_PT_jakobsen_cloth_plasticity(JakobsenPhysicsPanel, Panel):
    bl_label = "Plasticity"
    bl_parent_id = "PHYSICS_PT_jakobsen_cloth"
    roles = ('CLOTH', 'SOFT_BODY')

    def draw_header(self, context):
        _header_toggle(self.layout, context, "use_plasticity")

    def draw(self, context):
        _toggled_fields(self.layout, context, "use_plasticity", (("plastic_limit", "Limit"),
                                                                  ("plastic_rate", "Rate (1/s)")))


class PHYSICS_PT_jakobsen_cloth_tearing(JakobsenPhysicsPanel, Panel):
    bl_label = "Tearing"
    bl_parent_id = "PHYSICS_PT_jakobsen_cloth"
    roles = ('CLOTH',)

    def draw_header(self, context):
        _header_toggle(self.layout, context, "use_tearing")

    def draw(self, context):
        _toggled_fields(self.layout, context, "use_tearing", (("tear_factor", "Factor"),))


class PHYSICS_PT_jakobsen_collider(JakobsenPhysicsPanel, Panel):
    bl_label = "Collider"
    bl_parent_id = "PHYSICS_PT_jakobsen"
    roles = ('COLLIDER',)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        collider = context.object.jakobsen.collider
        col = layout.column()
        col.prop(collider, "shape")
        col.prop(collider, "friction")
        col.prop(collider, "bounce")


def _draw_pair(layout, settings, ob) -> None:
    col = layout.column()
    col.prop(settings, "object_a")
    col.prop(settings, "object_b")
    if ob.jakobsen.type == 'MOTOR':
        if settings.object_a is None:
            col.label(text="Set Object A, the body the motor drives", icon='ERROR')
    elif settings.object_a is None and settings.object_b is None:
        col.label(text="Set Object A, Object B or both", icon='ERROR')
    for other in (settings.object_a, settings.object_b):
        if other is not None and not other.jakobsen.enabled:
            col.label(text=f"{other.name} does not take part in the simulation", icon='ERROR')
        elif other is not None and other.jakobsen.type != 'RIGID_BODY':
            col.label(text=f"{other.name} is not a rigid body", icon='ERROR')


def _switched(layout, heading: str, owner, switch: str, fields, text: str = "") -> bool:
    """A heading with a checkbox and the fields it switches on (greyed out while off), the way
    Blender's own panels draw optional limits. fields: (property, label) pairs. Returns the switch."""
    col = layout.column(heading=heading)
    col.prop(owner, switch, text=text)
    sub = col.column(align=True)
    on = getattr(owner, switch)
    sub.active = on
    for prop, label in fields:
        if label is None:
            sub.prop(owner, prop)
        else:
            sub.prop(owner, prop, text=label)
    return on


def _suspension_column(layout, columns):
    if "suspension" not in columns:
        # (No heading: its rows all have labels of their own, so Blender would never show one, and
        # ui.units.prop_with_unit's field, drawn outside the split, would pull it in before itself.)
        columns["suspension"] = layout.column()
    return columns["suspension"]


def _cone(layout, c, columns) -> bool:
    if c.connector_type == 'RAGDOLL':  # always limited; its twist follows in the same column
        columns["ragdoll"] = col = layout.column(align=True)
        col.prop(c, "cone_angle")
        return True
    return _switched(layout, "Cone Limit", c, "use_cone_limit", (("cone_angle", None),))


def _twist(layout, c, columns) -> bool:
    columns["ragdoll"].prop(c, "twist_angle")
    return True


def _box(layout, c, columns) -> bool:
    col = layout.column()
    col.prop(c, "box_lower")
    col.prop(c, "box_upper")
    return True


def _suspension_limits(layout, c, columns) -> bool:
    sub = _suspension_column(layout, columns).column(align=True)
    sub.prop(c, "suspension_lower")
    sub.prop(c, "suspension_upper")
    return True


def _prop_in_suspension(prop: str, text: str | None = None, unit: str = ""):
    """unit: where Blender shows none (a stiffness, a damping), shown in the field."""
    def draw(layout, c, columns) -> bool:
        col = _suspension_column(layout, columns)
        if unit:
            prop_with_unit(col, c, prop, text or c.bl_rna.properties[prop].name, unit)
        else:
            col.prop(c, prop, text=text)
        return False
    return draw


# add_joint keyword -> how the Connector panel draws it: draw(layout, settings, columns) returns
# whether a limit is on (columns holds the columns that several settings share).
_CONNECTOR_DRAWERS = {
    "angle_limits": lambda layout, c, columns: _switched(layout, "Angular Limit", c, "use_angular_limit",
                                                         (("angle_min", "Min"), ("angle_max", "Max"))),
    "distance_limits": lambda layout, c, columns: _switched(layout, "Linear Limit", c, "use_linear_limit",
                                                            (("distance_min", "Min"), ("distance_max", "Max"))),
    "cone_angle": _cone,
    "twist_limits": _twist,
    "box_limits": _box,
    "steering": _prop_in_suspension("steering_angle", "Steering"),
    "suspension_rest": _prop_in_suspension("suspension_rest"),
    "suspension_stiffness": _prop_in_suspension("suspension_stiffness", unit="N/m"),
    "suspension_damping": _prop_in_suspension("suspension_damping", unit="N s/m"),
    "suspension_limits": _suspension_limits,
}


# The wheel connector's settings that a vehicle sets for its wheels instead.
_SET_BY_VEHICLE = {"steering", "suspension_rest", "suspension_stiffness", "suspension_damping",
                   "suspension_limits"}


class PHYSICS_PT_jakobsen_connector(JakobsenPhysicsPanel, Panel):
    bl_label = "Connector"
    bl_parent_id = "PHYSICS_PT_jakobsen"
    roles = ('CONNECTOR',)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        ob = context.object
        c = ob.jakobsen.connector
        row = layout.row()
        row.use_property_split = False  # the whole width: "Wheel Suspension" is cut beside a label
        row.prop(c, "connector_type", text="")
        _draw_pair(layout, c, ob)
        layout.column(heading="Collisions").prop(c, "ignore_collisions", text="Ignore")
        # What the chosen type takes comes from the engine's table (the mapping reads the same).
        kind = JOINT_KINDS[c.connector_type]
        limited = False  # whether Limit Bounce has a limit to bounce off
        columns = {}
        chassis = wheel_chassis(ob)
        if chassis is not None:  # a vehicle's wheel: its suspension and steering are the vehicle's
            col = layout.column(align=True)  # (two lines: one is cut at the default width)
            col.label(text="Suspension: set on the vehicle", icon='AUTO')
            col.label(text=f"'{chassis.name}'", icon='BLANK1')
            limited = True
        for setting in connector_kinds.CONNECTOR_SETTINGS[kind]:
            if chassis is not None and setting in _SET_BY_VEHICLE:
                continue
            limited |= _CONNECTOR_DRAWERS[setting](layout, c, columns)
        if connector_kinds.has_limits(kind):
            row = layout.row()
            row.active = limited
            row.prop(c, "limit_bounce")

        _switched(layout, "Breaking", c, "use_breaking",
                  (("breaking_force", "Force (N)"), ("breaking_torque", "Torque (N m)")), text="Breakable")


class PHYSICS_PT_jakobsen_spring(JakobsenPhysicsPanel, Panel):
    bl_label = "Spring"
    bl_parent_id = "PHYSICS_PT_jakobsen"
    roles = ('SPRING',)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        ob = context.object
        s = ob.jakobsen.spring
        layout.prop(s, "spring_type")
        _draw_pair(layout, s, ob)
        linear = s.spring_type in {'LINEAR', 'BOTH'}
        if linear:
            col = layout.column(heading="Rest Length")
            col.prop(s, "use_current_length", text="Current")
            sub = col.column()
            sub.active = not s.use_current_length
            sub.prop(s, "rest_length", text="Length")
            # (Units in the fields: "Damping (N s/m)" is cut in the label column.)
            prop_with_unit(col, s, "stiffness", "Stiffness", "N/m")
            prop_with_unit(col, s, "damping", "Damping", "N s/m")
        if s.spring_type in {'ANGULAR', 'BOTH'}:
            col = layout.column()
            prop_with_unit(col, s, "angular_stiffness", "Angular", "N m/rad")
            prop_with_unit(col, s, "angular_damping", "Damping", "N m s")  # (per radian: "N m s/rad" was cut)
        if linear:  # plastic and breaking act on the length
            _switched(layout, "Plastic", s, "use_plastic",
                      (("elastic_compression", "Compression"), ("elastic_stretch", "Stretch")))
            _switched(layout, "Breaking", s, "use_breaking",
                      (("break_stretch", "Stretch"), ("break_compression", "Compression")), text="Breakable")


class PHYSICS_PT_jakobsen_motor(JakobsenPhysicsPanel, Panel):
    bl_label = "Motor"
    bl_parent_id = "PHYSICS_PT_jakobsen"
    roles = ('MOTOR',)

    def draw_header(self, context):
        # On / off, keyable from here (key it off and the body coasts).
        self.layout.prop(context.object.jakobsen.motor, "use_motor", text="")

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        ob = context.object
        m = ob.jakobsen.motor
        layout.active = m.use_motor
        layout.prop(m, "motor_type")
        layout.prop(m, "mode")
        _draw_pair(layout, m, ob)
        angular = m.motor_type == 'ANGULAR'
        col = layout.column()
        if m.mode == 'REGULATE_SPEED':
            if angular:
                col.prop(m, "target_angular_speed", text="Speed per s")
            else:
                col.prop(m, "target_linear_speed")
        elif m.mode == 'SERVO':
            col.prop(m, "target_angle" if angular else "target_position", text="Angle" if angular else "Position")
        if angular:
            col.prop(m, "max_torque", text="Torque (N m)")
        else:
            col.prop(m, "max_force", text="Force (N)")


# Parents before their sub-panels; the preset popovers and their Add Preset operators with the
# panels whose headers show them.
# What a bake makes of each Blender field's settings (Blender's panel shows no units for them):
# one short line each, to fit the default Properties width (docs/force_fields.md says it all).
FIELD_UNITS = {
    'WIND': ("Strength: air speed, m/s, along Z", "Felt through Air Drag / Drag", "Noise: gusts"),
    'FORCE': ("Strength: m/s² on any mass", "(N on 1 kg; + pushes away)"),
    'VORTEX': ("Plane/Line: air turning at", "Strength rad/s about Z", "Point: Strength × distance m/s²"),
    'TURBULENCE': ("Strength: m/s², noise", "Size: swirls, m", "Static in time"),
    'HARMONIC': ("Strength: 1/s² (√ = rad/s)", "Damping: ratio (1 critical)", "Rest Length: m"),
    'DRAG': ("Linear: kg/s", "Quadratic: kg/m"),
}


class PHYSICS_PT_jakobsen_cache(JakobsenPhysicsPanel, Panel):
    """Like the Cache panel of Blender's Cloth: this object's part of the playback cache and of
    the bake, with buttons for this object and for all. (The objects are simulated together, so
    the cache is the scene's; baking one object, from the cache or afresh, simulates them all and
    writes only that one, leaving the others as they were.)"""

    bl_label = "Cache"
    bl_parent_id = "PHYSICS_PT_jakobsen"
    bl_options = {'DEFAULT_CLOSED'}
    roles = ('RIGID_BODY', 'CLOTH', 'SOFT_BODY')

    def draw(self, context):
        from .. import baking, playback
        from .scene import cache_info

        layout = self.layout
        ob, scene = context.object, context.scene
        start, end = scene.jakobsen.frame_range()
        cache = playback.cache_of(scene)
        name = cache.job.name_at_start(ob) if cache is not None and cache.job is not None else None
        baked = baking.record_of(ob) is not None
        col = layout.column(align=True)
        col.label(text=f"Frames {start} - {end}")
        if baked:
            col.label(text="This object: baked", icon='CHECKMARK')
        elif name is not None and name in cache.objects():
            col.label(text=f"This object: cached to frame {cache.last_frame}", icon='FILE_CACHE')
        else:
            col.label(text="This object: not cached")
            if not scene.jakobsen.use_simulate_on_playback:  # (a line of its own: it fits the width)
                col.label(text="Simulate on Playback is off")
        for line in cache_info(scene):
            for part in textwrap.wrap(line, 40):
                col.label(text=part)
        # This object's buttons, then all objects', each in two columns: baking on the left,
        # freeing on the right.
        flow = layout.grid_flow(row_major=True, columns=2, even_columns=True, align=True)
        sub = flow.row()
        # (A rigid body with Dynamic Off is not baked: it follows its own animation.)
        sub.enabled = not (ob.jakobsen.type == 'RIGID_BODY' and ob.jakobsen.rigid_body.dynamic == 'OFF')
        sub.operator("jakobsen.bake", text="Bake").object_name = ob.name
        sub = flow.row()
        sub.enabled = baked
        sub.operator("jakobsen.free_bake", text="Free Bake").object_name = ob.name
        sub = flow.row()
        sub.enabled = name is not None and name in cache.objects() and name not in cache.written
        sub.operator("jakobsen.bake_from_cache", text="Bake from Cache").object_name = ob.name
        flow = layout.grid_flow(row_major=True, columns=2, even_columns=True, align=True)
        flow.operator("jakobsen.bake", text="Bake All")
        flow.operator("jakobsen.free_bake", text="Free All Bakes")
        flow.operator("jakobsen.bake_from_cache", text="All from Cache")
        flow.operator("jakobsen.free_cache", text="Free Cache")


class PHYSICS_PT_jakobsen_field(Panel):
    """On a force-field object (an Empty or a mesh): how a Jakobsen bake reads the field (its
    units), whether or not the object takes part itself."""

    bl_label = "Force Field"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "physics"
    bl_parent_id = "PHYSICS_PT_jakobsen"

    @classmethod
    def poll(cls, context):
        ob = context.object
        field = getattr(ob, "field", None) if ob is not None else None
        return field is not None and field.type != 'NONE'

    def draw(self, context):
        layout = self.layout
        lines = FIELD_UNITS.get(context.object.field.type)
        if lines is None:
            layout.label(text="Not simulated by Jakobsen", icon='ERROR')
            return
        col = layout.column(align=True)
        col.label(text="How a bake reads it:", icon='INFO')
        for line in lines:
            col.label(text=line)
        col.label(text="Falloff and Shape as Blender's")


classes = preset_classes + (
    PHYSICS_PT_jakobsen,
    PHYSICS_PT_jakobsen_body,
    PHYSICS_PT_jakobsen_soft_body,
    PHYSICS_PT_jakobsen_soft_body_volume,
    PHYSICS_PT_jakobsen_cloth,
    PHYSICS_PT_jakobsen_cloth_self_collision,
    PHYSICS_PT_jakobsen_cloth_pressure,
    PHYSICS_PT_jakobsen_cloth_plasticity,
    PHYSICS_PT_jakobsen_cloth_tearing,
    PHYSICS_PT_jakobsen_collider,
    PHYSICS_PT_jakobsen_connector,
    PHYSICS_PT_jakobsen_spring,
    PHYSICS_PT_jakobsen_motor,
    PHYSICS_PT_jakobsen_cache,
    PHYSICS_PT_jakobsen_field,
)
