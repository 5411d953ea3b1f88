"""The Vehicle panels: ``PHYSICS_PT_jakobsen_vehicle`` (a sub-panel of the Rigid Body panel, its
header switching ``vehicle.enabled``) and ``VIEW3D_PT_jakobsen_vehicle`` in the 3D View's sidebar
tab "Jakobsen" (the vehicle of the active object: the chassis, one of its wheels or wheel
connectors), each with the sub-panels Suspension (front and rear side by side) and Follow Path.
Both draw the same settings with the same code.

Labels are short enough for the default Properties width, as Blender's own physics panels are
(``use_property_split``); settings without a Blender unit say theirs in the label ("N m").
Create Vehicle and Hitch Trailer are drawn only where those operators are registered.
"""

from __future__ import annotations

from bpy.types import Panel

from ..blender_io.reads import takes_part
from ..registered import RegionTypeItems, SpaceTypeItems, operators


def is_chassis(obj) -> bool:
    return (obj is not None and obj.type == 'MESH' and takes_part(obj) and obj.jakobsen.type == 'RIGID_BODY'
            and obj.jakobsen.vehicle.enabled)


def wheel_chassis(connector):
    """The chassis (a vehicle's rigid body) whose wheel this Wheel Suspension holds, or None."""
    if connector is None or connector.type != 'EMPTY' or not takes_part(connector):
        return None
    settings = connector.jakobsen
    if settings.type != 'CONNECTOR' or settings.connector.connector_type != 'WHEEL_SUSPENSION':
        return None
    chassis = settings.connector.object_a
    return chassis if is_chassis(chassis) else None


def vehicle_of(context):
    """The chassis the active object belongs to: itself, the Object A of a wheel connector, or the
    chassis of a wheel (the Object B of such a connector); None if it belongs to no vehicle."""
    obj = context.object
    if obj is None:
        return None
    if is_chassis(obj):
        return obj
    if obj.type == 'EMPTY':
        return wheel_chassis(obj)
    if obj.type != 'MESH' or not takes_part(obj) or obj.jakobsen.type != 'RIGID_BODY':
        return None
    for other in context.scene.objects:
        if other.type == 'EMPTY':
            chassis = wheel_chassis(other)
            if chassis is not None and other.jakobsen.connector.object_b == obj:
                return chassis
    return None


def has_operator(name: str) -> bool:
    """Whether ``bpy.ops.jakobsen.<name>`` is registered (the vehicle operators come from their own
    module, which may not be there). ``hasattr(bpy.ops.jakobsen, name)`` is true for any name."""
    try:
        getattr(operators(), name).get_rna_type()
    except (KeyError, AttributeError):
        return False
    return True


def draw_vehicle_buttons(layout) -> None:
    row = layout.row(align=True)
    if has_operator("vehicle_create"):
        row.operator("jakobsen.vehicle_create", text="Create Vehicle", icon='AUTO')
    if has_operator("vehicle_hitch"):
        row.operator("jakobsen.vehicle_hitch", text="Hitch Trailer", icon='LINKED')


# Labels: at most about 12 characters fit the label column at the default Properties width (277
# pixels in Blender 4.3's factory layout on a 1600 pixel wide screen), as the GUI check shows.

def draw_vehicle(layout, v) -> None:
    """The Vehicle panel's settings (``v``: an object's ``jakobsen.vehicle``), in groups: the car,
    its motor, steering, brakes, tyres."""
    layout.use_property_split = True
    layout.active = v.enabled
    col = layout.column()
    col.prop(v, "forward_axis")  # (a list: six buttons in a row are cut at the default width)
    col.prop(v, "drive")
    sub = col.column()
    sub.active = v.drive != 'NONE'
    sub.prop(v, "differential")

    col = layout.column(align=True)
    col.active = v.drive != 'NONE'
    col.prop(v, "target_speed")
    col.prop(v, "throttle")
    col.prop(v, "motor_torque", text="Torque (N m)")

    col = layout.column(align=True)
    col.active = v.follow_path is None  # a path steers the car itself
    col.prop(v, "steering_angle", text="Steering")
    col = layout.column()
    col.prop(v, "max_steering_angle", text="Max Steering")
    col.prop(v, "use_ackermann")

    col = layout.column(align=True)
    col.prop(v, "brake")
    col.prop(v, "handbrake")
    col.prop(v, "brake_torque", text="Torque (N m)")

    col = layout.column(align=True)
    col.prop(v, "wheel_friction", text="Tyre Friction")
    col.prop(v, "rolling_resistance", text="Rolling Res.")
    layout.prop(v, "initial_speed")


# Suspension rows: (label, the property's name after front_ / rear_, its unit where Blender shows none).
SUSPENSION_ROWS = (("Rest", "suspension_rest", ""), ("Travel", "suspension_travel", ""),
                   ("Stiffness", "suspension_stiffness", "N/m"), ("Damping", "suspension_damping", "N s/m"),
                   ("Anti-Roll", "anti_roll", "N/m"))


def draw_suspension(layout, v) -> None:
    """Front and rear axles side by side, a row a setting, the labels right-aligned on the left as
    use_property_split places them; the units Blender does not show under the table (a column of
    them leaves the numbers too narrow at the default width)."""
    layout.active = v.enabled
    col = layout.column(align=True)
    for label, name, _unit in (("", None, ""),) + SUSPENSION_ROWS:
        split = col.split(factor=0.3, align=True)  # (at 0.4 the numbers are cut: "3400.")
        left = split.row()
        left.alignment = 'RIGHT'
        left.label(text=label)
        row = split.row(align=True)
        if name is None:
            row.label(text="Front")
            row.label(text="Rear")
        else:
            row.prop(v, f"front_{name}", text="")
            row.prop(v, f"rear_{name}", text="")
    units: dict[str, list[str]] = {}
    for label, _name, unit in SUSPENSION_ROWS:
        if unit:
            units.setdefault(unit, []).append(label)
    notes = layout.column(align=True)
    notes.active = False
    for unit, labels in units.items():
        notes.label(text=f"{', '.join(labels)}: {unit}")


def draw_follow_path(layout, v) -> None:
    layout.use_property_split = True
    layout.active = v.enabled
    layout.prop(v, "follow_path", text="Curve")
    col = layout.column(heading="Speed")
    col.active = v.follow_path is not None
    col.prop(v, "use_path_speed", text="From Radius")
    col = col.column()
    col.prop(v, "look_ahead")
    col.prop(v, "max_lateral_acceleration", text="Lateral Limit")
    col.prop(v, "steering_response", text="Steer Time")
    col.prop(v, "drift")


# -- the Physics tab -----------------------------------------------------------------------------

class _PhysicsVehicle:
    bl_space_type: SpaceTypeItems = 'PROPERTIES'
    bl_region_type: RegionTypeItems = 'WINDOW'
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        ob = context.object
        return (ob is not None and ob.type == 'MESH' and takes_part(ob) and ob.jakobsen.type == 'RIGID_BODY')


def draw_not_a_vehicle(layout) -> None:
    """What the Vehicle panel says of a rigid body that is not a chassis (short: most are not)."""
    col = layout.column(align=True)
    col.active = False
    col.label(text="A car's chassis: its wheels are held")
    col.label(text="by Wheel Suspension connectors")
    draw_vehicle_buttons(layout)


class PHYSICS_PT_jakobsen_vehicle(_PhysicsVehicle, Panel):
    bl_label = "Vehicle"
    bl_parent_id = "PHYSICS_PT_jakobsen_body"

    def draw_header(self, context):
        self.layout.prop(context.object.jakobsen.vehicle, "enabled", text="")

    def draw(self, context):
        v = context.object.jakobsen.vehicle
        if not v.enabled:
            draw_not_a_vehicle(self.layout)
            return
        draw_vehicle(self.layout, v)
        draw_vehicle_buttons(self.layout)


class _PhysicsVehiclePart(_PhysicsVehicle):
    bl_parent_id = "PHYSICS_PT_jakobsen_vehicle"

    @classmethod
    def poll(cls, context):
        return super().poll(context) and context.object.jakobsen.vehicle.enabled


class PHYSICS_PT_jakobsen_vehicle_suspension(_PhysicsVehiclePart, Panel):
    bl_label = "Suspension"

    def draw(self, context):
        draw_suspension(self.layout, context.object.jakobsen.vehicle)


class PHYSICS_PT_jakobsen_vehicle_path(_PhysicsVehiclePart, Panel):
    bl_label = "Follow Path"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        draw_follow_path(self.layout, context.object.jakobsen.vehicle)


# -- the 3D View's sidebar ------------------------------------------------------------------------

class _SidebarVehicle:
    bl_space_type: SpaceTypeItems = 'VIEW_3D'
    bl_region_type: RegionTypeItems = 'UI'
    bl_category = "Jakobsen"


class VIEW3D_PT_jakobsen_vehicle(_SidebarVehicle, Panel):
    bl_label = "Vehicle"

    def draw_header(self, context):
        ob = context.object
        chassis = vehicle_of(context)
        if chassis is None and ob is not None and ob.type == 'MESH' and takes_part(ob) \
                and ob.jakobsen.type == 'RIGID_BODY':
            self.layout.prop(ob.jakobsen.vehicle, "enabled", text="")

    def draw(self, context):
        layout = self.layout
        chassis = vehicle_of(context)
        if chassis is None:
            layout.label(text="Select the chassis and its wheels")
            draw_vehicle_buttons(layout)
            return
        layout.label(text=chassis.name, icon='AUTO')
        draw_vehicle(layout, chassis.jakobsen.vehicle)
        draw_vehicle_buttons(layout)


class _SidebarVehiclePart(_SidebarVehicle):
    bl_parent_id = "VIEW3D_PT_jakobsen_vehicle"

    @classmethod
    def poll(cls, context):
        return vehicle_of(context) is not None


class VIEW3D_PT_jakobsen_vehicle_suspension(_SidebarVehiclePart, Panel):
    bl_label = "Suspension"

    def draw(self, context):
        draw_suspension(self.layout, vehicle_of(context).jakobsen.vehicle)


class VIEW3D_PT_jakobsen_vehicle_path(_SidebarVehiclePart, Panel):
    bl_label = "Follow Path"
    bl_options = {'DEFAULT_CLOSED'}

    def draw(self, context):
        draw_follow_path(self.layout, vehicle_of(context).jakobsen.vehicle)


physics_classes = (PHYSICS_PT_jakobsen_vehicle, PHYSICS_PT_jakobsen_vehicle_suspension,
                   PHYSICS_PT_jakobsen_vehicle_path)
sidebar_classes = (VIEW3D_PT_jakobsen_vehicle, VIEW3D_PT_jakobsen_vehicle_suspension,
                   VIEW3D_PT_jakobsen_vehicle_path)
classes = physics_classes + sidebar_classes
