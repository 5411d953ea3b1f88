"""Setting up from the selection: ``jakobsen.add_body`` (the selected meshes take part),
``jakobsen.add_connector``, ``jakobsen.add_spring`` and ``jakobsen.add_motor`` (an Empty between
the selected objects, as Cinema 4D places its connectors).

For connectors and springs, the active object is Object B and the other selected mesh, if any,
Object A (the car tutorial's order: A = the base, B = the wheel); with one mesh selected, Object A
is the world. A motor drives Object A relative to Object B, so there the active object (the one
driven) is Object A and the other selected mesh, if any, Object B (else the world). Bodies that
do not take part yet are enabled as rigid bodies.
"""

import bpy
from bpy.props import EnumProperty
from bpy.types import Operator
from mathutils import Matrix

from ..properties import CONNECTOR_TYPE_ITEMS, MOTOR_TYPE_ITEMS, TYPE_ITEMS

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


def _new_empty(context, name: str, kind: str, location, display: str):
    empty = bpy.data.objects.new(name, None)
    empty.empty_display_type = display
    empty.empty_display_size = 0.5
    empty.matrix_world = Matrix.Translation(location)
    context.collection.objects.link(empty)
    empty.jakobsen.enabled = True
    empty.jakobsen.type = kind
    for obj in context.selected_objects:
        obj.select_set(False)
    empty.select_set(True)
    context.view_layer.objects.active = empty
    return empty


def _enable_bodies(*objects) -> None:
    for obj in objects:
        if obj is not None and not obj.jakobsen.enabled:
            obj.jakobsen.type = 'RIGID_BODY'
            obj.jakobsen.enabled = True


class _FromSelection:
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return context.mode == 'OBJECT' and any(o.type == 'MESH' for o in context.selected_objects)


def _empty_for_pair(operator, context, name: str, role: str, display: str, place):
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
        made = _empty_for_pair(self, context, "Motor", 'MOTOR', 'CIRCLE', lambda a, b: b.matrix_world.translation)
        if made is None:
            return {'CANCELLED'}
        reference, driven, settings = made
        settings.motor_type = self.motor_type
        settings.object_a, settings.object_b = driven, reference
        return {'FINISHED'}


classes = (JAKOBSEN_OT_add_body, JAKOBSEN_OT_add_connector, JAKOBSEN_OT_add_spring, JAKOBSEN_OT_add_motor)
