"""Actions on Blender 4.2 (``Action.fcurves``) and 4.4+/5.0 (slotted actions, channel bags) alike.

Blender 5.0 removed ``Action.fcurves``: F-curves live in a channel bag per slot, in a keyframe
strip of the action's first layer. Everything else in the add-on goes through these functions.
"""

from __future__ import annotations

import bpy

SLOTTED = "slots" in bpy.types.Action.bl_rna.properties


def assign_new_action(id_data, name: str):
    """Create an action, assign it to ``id_data`` (an Object, a Key, ...); returns (action, fcurves),
    where ``fcurves`` is the collection new F-curves go into (``.new(data_path, index=...)``)."""
    anim_data = id_data.animation_data or id_data.animation_data_create()
    action = bpy.data.actions.new(name)
    if SLOTTED:
        from bpy_extras.anim_utils import action_ensure_channelbag_for_slot

        slot = action.slots.new(id_type=id_data.id_type, name=id_data.name)
        anim_data.action = action
        anim_data.action_slot = slot
        return action, action_ensure_channelbag_for_slot(action, slot).fcurves
    action.id_root = id_data.id_type
    anim_data.action = action
    return action, action.fcurves


def assigned_fcurves(id_data):
    """The F-curves Blender evaluates for ``id_data`` (its action, and on 4.4+ its slot), or None."""
    anim_data = id_data.animation_data
    if anim_data is None or anim_data.action is None:
        return None
    if SLOTTED:
        from bpy_extras.anim_utils import animdata_get_channelbag_for_assigned_slot

        channelbag = animdata_get_channelbag_for_assigned_slot(anim_data)
        return None if channelbag is None else channelbag.fcurves
    return anim_data.action.fcurves


def assignment(id_data) -> dict:
    """What action (and slot) ``id_data`` uses now, by name, to put back with ``restore_assignment``."""
    anim_data = id_data.animation_data
    record = {"animation_data": anim_data is not None, "action": "", "slot": ""}
    if anim_data is not None and anim_data.action is not None:
        record["action"] = anim_data.action.name
        if SLOTTED and anim_data.action_slot is not None:
            record["slot"] = anim_data.action_slot.identifier
    return record


def restore_assignment(id_data, record) -> None:
    """Undo ``assign_new_action``: put back the action (and slot) recorded by ``assignment``."""
    anim_data = id_data.animation_data
    if anim_data is None:
        return
    previous = bpy.data.actions.get(record.get("action", "")) if record.get("action") else None
    anim_data.action = previous
    if previous is not None and SLOTTED and record.get("slot"):
        slot = next((s for s in previous.slots if s.identifier == record["slot"]), None)
        if slot is not None:
            anim_data.action_slot = slot
    if (not record.get("animation_data") and previous is None and not len(anim_data.drivers)
            and not len(anim_data.nla_tracks)):
        id_data.animation_data_clear()


def set_keyframes(fcurve, frames, values, interpolation: str = 'LINEAR') -> None:
    """Replace nothing, add all: ``len(frames)`` keyframes in one go, interpolation set in bulk."""
    import numpy as np

    count = len(frames)
    points = fcurve.keyframe_points
    first = len(points)
    points.add(count)
    co = np.empty(2 * (first + count), dtype=np.float32)
    points.foreach_get("co", co)
    co[2 * first::2] = frames
    co[2 * first + 1::2] = values
    points.foreach_set("co", co)
    code = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items[interpolation].value
    modes = np.empty(first + count, dtype=np.int32)
    points.foreach_get("interpolation", modes)
    modes[first:] = code
    points.foreach_set("interpolation", modes)
    fcurve.update()
