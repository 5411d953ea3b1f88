"""Setting up from the selection: ``jakobsen.add_body`` (the selected meshes take part),
``jakobsen.add_connector``, ``jakobsen.add_spring`` and ``jakobsen.add_motor`` (an Empty between
the selected objects, as Cinema 4D places its connectors).

For connectors and springs, the active object is Object B and the other selected mesh, if any,
Object A (the car tutorial's order: A = the base, B = the wheel); with one mesh selected, Object A
is the world. A motor drives Object A relative to Object B, so there the active object (the one
driven) is Object A and the other selected mesh, if any, Object B (else the world). Bodies that
do not take part yet are enabled as rigid bodies.

Wheels are found from their geometry (``translate.wheels.wheel_geometry``: hub and axle from the
vertices, never from the object's local axes): a Wheel Suspension is placed at the wheel's hub
with its X along the axle and its Z up; an angular motor at the hub of the body it drives with
its Z along the axle (the axle of the Wheel Suspension holding it, if there is one), the sign
chosen so that a positive speed rolls the wheel forward: towards the Forward axis of Object B
(its Vehicle settings when it is a vehicle, else Blender's front, -Y, or the chassis-local axis
that lies across the axle).
"""

import bpy
import numpy as np
from bpy.props import EnumProperty
from bpy.types import Operator
from mathutils import Matrix

from jakobsen_engine import JakobsenError

from ..blender_io.checks import describe
from ..blender_io.reads import read_mesh, takes_part
from ..mapping.connectors import empty_frame, free_axis, freeing_connectors
from ..properties import CONNECTOR_TYPE_ITEMS, MOTOR_TYPE_ITEMS, TYPE_ITEMS
from ..registered import ObjectEmptyDrawtypeItems, OperatorTypeFlagItems, object_settings
from ..translate.transforms import matrix, world
from ..translate.wheels import CONVENTIONAL_FRONT, UP, axis_vector, wheel_geometry

_BODY_ITEMS = tuple(item for item in TYPE_ITEMS if item[0] in ('RIGID_BODY', 'CLOTH', 'SOFT_BODY', 'COLLIDER'))


def _selected_meshes(context) -> list:
    return [o for o in context.selected_objects if o.type == 'MESH']


def _pair_from_selection(op, context):
    """(Object A, Object B) from the selection, or None after reporting why not."""
    meshes = _selected_meshes(context)
    active = context.active_object
    if active is None or active.type != 'MESH' or active not in meshes:
        op.report({'ERROR'}, "Make a mesh the active object (the body at the Empty); "
                             "select one more mesh to join it to")
        return None
    others = [o for o in meshes if o != active]
    if len(others) > 1:
        op.report({'ERROR'}, f"Select one or two meshes, not {len(meshes)}")
        return None
    return (others[0] if others else None), active


def _new_empty(context, name: str, kind: str, location, display: ObjectEmptyDrawtypeItems):
    empty = bpy.data.objects.new(name, None)
    empty.empty_display_type = display
    empty.empty_display_size = 0.5
    empty.matrix_world = Matrix.Translation(location)
    context.collection.objects.link(empty)
    settings = object_settings(empty)
    settings.enabled = True
    settings.type = kind
    for obj in context.selected_objects:
        obj.select_set(False)
    empty.select_set(True)
    context.view_layer.objects.active = empty
    return empty


def _wheel(context, obj):
    """(hub (3,), axle (3,) unit, radius) of a mesh from its evaluated vertices in the world, or
    None when they do not make a solid (flat, a line)."""
    try:
        data = read_mesh(obj, context.evaluated_depsgraph_get(), describe(obj))
        found = wheel_geometry(world(data.local, matrix(obj.matrix_world)), describe(obj))
    except JakobsenError:
        return None
    return found.hub, found.axle, found.radius


def _forward(reference, axle: np.ndarray) -> np.ndarray:
    """The direction a wheel on ``axle`` rolls forward: Object B's Forward axis (its Vehicle
    setting when it is a vehicle, else the conventional fronts, -Y first) or for the world -Y,
    the first that lies across the axle, made horizontal and across it."""
    frame = np.eye(4) if reference is None else matrix(reference.matrix_world)
    axes = list(CONVENTIONAL_FRONT)
    if reference is not None and reference.jakobsen.vehicle.enabled:
        axes.insert(0, reference.jakobsen.vehicle.forward_axis)
    for axis in axes:
        v = axis_vector(frame, axis)
        v = v - (v @ axle) * axle - (v @ UP) * UP
        if np.linalg.norm(v) > 0.5:
            return v / np.linalg.norm(v)
    return np.cross(axle, UP) / max(np.linalg.norm(np.cross(axle, UP)), 1e-12)


def _frame(x=None, z=None, location=(0.0, 0.0, 0.0)) -> Matrix:
    """A Blender matrix with the given unit X or Z axis (the other axes completed, Z kept as near
    world up as the X allows), at ``location``."""
    if z is not None:  # Z given: X across it, horizontal where it can be
        helper = UP if abs(z @ UP) < 0.9 else np.array([1.0, 0.0, 0.0])
        x = np.cross(helper, z)
        x /= np.linalg.norm(x)
    else:  # X given: Z up, made square to X
        z = UP - (UP @ x) * x
        if np.linalg.norm(z) < 1e-6:  # a vertical axle: Z along world Y
            z = np.array([0.0, 1.0, 0.0]) - x[1] * x
        z /= np.linalg.norm(z)
    y = np.cross(z, x)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = x, y, z, location
    return Matrix(m.tolist())


def _motor_frame(context, driven, reference, motor_type: str):
    """Where a motor driving ``driven`` goes and how it is turned (a Blender matrix), and its
    display size; None when there is no axis to find. Its Z is the axis the connector holding
    ``driven`` leaves free (a Wheel Suspension's axle, a Hinge's or Slider's Z: Add Motor put a
    door's motor across the slab, and it stood still), else for an angular motor the axle found
    in the mesh (a wheel)."""
    held = freeing_connectors(driven, reference, [o for o in context.scene.objects if takes_part(o)], motor_type)
    found = _wheel(context, driven) if motor_type == 'ANGULAR' else None
    if held:
        m = empty_frame(held[0], context.evaluated_depsgraph_get())
        hub, axle = m[:3, 3], free_axis(held[0], context.evaluated_depsgraph_get(), motor_type)
    elif found is not None:
        hub, axle = found[0], found[1]
    else:
        return None
    if motor_type == 'ANGULAR':
        z = axle if np.cross(UP, _forward(reference, axle)) @ axle >= 0.0 else -axle
    else:
        z = axle
    size = 1.5 * found[2] if found is not None else 0.5
    return _frame(z=z, location=hub), size


def _enable_bodies(*objects) -> None:
    for obj in objects:
        if obj is not None and not obj.jakobsen.enabled:
            obj.jakobsen.type = 'RIGID_BODY'
            obj.jakobsen.enabled = True


class _FromSelection:
    bl_options: set[OperatorTypeFlagItems] = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return context.mode == 'OBJECT' and any(o.type == 'MESH' for o in context.selected_objects)


def _empty_for_pair(operator, context, name: str, role: str, display: ObjectEmptyDrawtypeItems, place):
    """The pair from the selection (Object A, Object B) with both enabled, and a new Empty of
    ``role`` at ``place(a, b)`` whose settings join them; None (reported) without a pair."""
    pair = _pair_from_selection(operator, context)
    if pair is None:
        return None
    a, b = pair
    _enable_bodies(a, b)
    empty = _new_empty(context, name, role, place(a, b), display)
    return a, b, getattr(empty.jakobsen, role.lower())


class JAKOBSEN_OT_add_body(_FromSelection, Operator):
    """Make the selected meshes take part in the Jakobsen Physics simulation"""

    bl_idname = "jakobsen.add_body"
    bl_label = "Add Body"

    type: EnumProperty(name="Type", description="What the selected meshes become", items=_BODY_ITEMS,
                       default='RIGID_BODY')

    def execute(self, context):
        meshes = _selected_meshes(context)
        for obj in meshes:
            obj.jakobsen.type = self.type
            obj.jakobsen.enabled = True
        label = next(item[1] for item in _BODY_ITEMS if item[0] == self.type)
        self.report({'INFO'}, f"{len(meshes)} object{'s' * (len(meshes) != 1)} set as {label}")
        return {'FINISHED'}


class JAKOBSEN_OT_add_connector(_FromSelection, Operator):
    """Add a connector at the active object between it (Object B) and the other selected mesh (Object A)"""

    bl_idname = "jakobsen.add_connector"
    bl_label = "Add Connector"

    connector_type: EnumProperty(
        name="Type", description="The kind of joint",
        items=CONNECTOR_TYPE_ITEMS, default='HINGE')

    def execute(self, context):
        made = _empty_for_pair(self, context, "Connector", 'CONNECTOR', 'ARROWS',
                               lambda a, b: b.matrix_world.translation)
        if made is None:
            return {'CANCELLED'}
        a, b, settings = made
        settings.connector_type = self.connector_type
        settings.object_a, settings.object_b = a, b
        if self.connector_type == 'WHEEL_SUSPENSION':
            found = _wheel(context, b)
            if found is None:
                self.report({'WARNING'}, f"'{b.name}' has no axle to find (it is flat); the connector is not "
                                         "turned: set its X along the axle and its Z up")
            else:
                empty = context.view_layer.objects.active
                empty.matrix_world = _frame(x=found[1], location=found[0])
                empty.empty_display_size = 1.2 * found[2]
        return {'FINISHED'}


class JAKOBSEN_OT_add_spring(_FromSelection, Operator):
    """Add a spring between the two selected meshes (or the active one and the world), at rest at their distance"""

    bl_idname = "jakobsen.add_spring"
    bl_label = "Add Spring"

    def execute(self, context):
        def ends(a, b):
            pb = b.matrix_world.translation
            return (a.matrix_world.translation if a is not None else pb), pb

        def middle(a, b):
            pa, pb = ends(a, b)
            return (pa + pb) / 2

        made = _empty_for_pair(self, context, "Spring", 'SPRING', 'SINGLE_ARROW', middle)
        if made is None:
            return {'CANCELLED'}
        a, b, settings = made
        pa, pb = ends(a, b)
        settings.object_a, settings.object_b = a, b
        settings.rest_length = (pb - pa).length
        return {'FINISHED'}


class JAKOBSEN_OT_add_motor(_FromSelection, Operator):
    """Add a motor at the active object that drives it (Object A) relative to the other selected mesh (Object B)"""

    bl_idname = "jakobsen.add_motor"
    bl_label = "Add Motor"

    motor_type: EnumProperty(
        name="Type", description="Whether the motor turns or pushes",
        items=MOTOR_TYPE_ITEMS, default='ANGULAR')

    def execute(self, context):
        # A single arrow shows the Empty's Z: the axis the motor turns about (right-handed) or
        # pushes along.
        made = _empty_for_pair(self, context, "Motor", 'MOTOR', 'SINGLE_ARROW',
                               lambda a, b: b.matrix_world.translation)
        if made is None:
            return {'CANCELLED'}
        reference, driven, settings = made
        settings.motor_type = self.motor_type
        settings.object_a, settings.object_b = driven, reference
        placed = _motor_frame(context, driven, reference, self.motor_type)
        if placed is not None:
            empty = context.view_layer.objects.active
            empty.matrix_world, empty.empty_display_size = placed
        elif self.motor_type == 'ANGULAR':
            self.report({'WARNING'}, f"'{driven.name}' has no axle to find (it is flat); the motor turns "
                                     "about the Empty's Z: turn the Empty so that its Z is the axle")
        return {'FINISHED'}


classes = (JAKOBSEN_OT_add_body, JAKOBSEN_OT_add_connector, JAKOBSEN_OT_add_spring, JAKOBSEN_OT_add_motor)
