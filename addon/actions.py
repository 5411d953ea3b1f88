"""Actions on Blender 4.2 (``Action.fcurves``) and 4.4+/5.x (slotted actions, channel bags) alike.

Blender 5.0 removed ``Action.fcurves``: F-curves live in a channel bag per slot, in a keyframe
strip of the action's first layer. Everything else in the add-on goes through these functions.

Assignments are recorded with the action itself (an ID property may point at an ID, and that
pointer counts as a user), not its name: the user's action then survives a bake that replaces it,
a save and a reload, and a rename of the action or its object.
"""

from __future__ import annotations

from typing import cast

import bpy
import numpy as np

SLOTTED = "slots" in bpy.types.Action.bl_rna.properties


def assign_new_action(id_data, name: str):
    """Create an action, assign it to ``id_data`` (an Object, a Key, ...); returns (action, fcurves),
    where ``fcurves`` is the collection new F-curves go into (``.new(data_path, index=...)``)."""
    anim_data = id_data.animation_data or id_data.animation_data_create()
    # The baked keys are the motion itself: not added to the NLA strips below them, nor mixed in at
    # part strength (an animation's Blending Add or Influence 0.5, which ``assignment`` recorded,
    # played a crate baked resting on the ground 3 m or 1.4 m up).
    anim_data.action_blend_type, anim_data.action_influence = 'REPLACE', 1.0
    action = bpy.data.actions.new(name)
    if SLOTTED:
        slot = action.slots.new(id_type=id_data.id_type, name=id_data.name)
        anim_data.action = action
        anim_data.action_slot = slot
        return action, _channelbag(action, slot, ensure=True).fcurves
    # Blender before 4.4: the action's own F-curves (gone in 5.0, whose type stubs are checked against).
    setattr(action, "id_root", id_data.id_type)
    anim_data.action = action
    return action, getattr(action, "fcurves")


def assigned_fcurves(id_data):
    """The F-curves Blender evaluates for ``id_data`` (its action, and on 4.4+ its slot), or None."""
    anim_data = id_data.animation_data
    if anim_data is None or anim_data.action is None:
        return None
    if SLOTTED:
        channelbag = _channelbag(anim_data.action, anim_data.action_slot) if anim_data.action_slot else None
        return None if channelbag is None else channelbag.fcurves
    return anim_data.action.fcurves


def _channelbag(action, slot, *, ensure: bool = False):
    """The channel bag of ``slot`` in ``action`` (the first strip that has one), or None; ensure:
    make the first layer, its keyframe strip and the bag where missing. Written against the RNA
    API (4.4 to 5.x), not bpy_extras.anim_utils, whose helpers differ between those versions."""
    if ensure:
        layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
        strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type='KEYFRAME')
        return strip.channelbag(slot, ensure=True)
    for layer in action.layers:
        for strip in layer.strips:
            channelbag = strip.channelbag(slot)
            if channelbag:
                return channelbag
    return None


def assignment(id_data) -> dict:
    """What action (and slot) ``id_data`` uses now, to put back with ``restore_assignment``.

    The action is kept as a pointer (``"action"``; absent when there is none), which holds it
    while the bake's action is assigned instead; the slot by its identifier."""
    anim_data = id_data.animation_data
    record = {"animation_data": anim_data is not None, "slot": ""}
    if anim_data is not None:
        record["blend"], record["influence"] = anim_data.action_blend_type, float(anim_data.action_influence)
    if anim_data is not None and anim_data.action is not None:
        record["action"] = anim_data.action
        if SLOTTED and anim_data.action_slot is not None:
            record["slot"] = anim_data.action_slot.identifier
    return record


def recorded_action(value):
    """The action a record points at: a pointer, or (records written before pointers) a name."""
    if isinstance(value, str):
        return bpy.data.actions.get(value) if value else None
    return value if isinstance(value, bpy.types.Action) else None


def restore_assignment(id_data, record) -> None:
    """Undo ``assign_new_action``: put back the action (and slot) recorded by ``assignment``."""
    anim_data = id_data.animation_data
    previous = recorded_action(record.get("action"))
    if anim_data is None:
        if previous is None:
            return
        anim_data = id_data.animation_data_create()
    anim_data.action = previous
    if "blend" in record:
        anim_data.action_blend_type, anim_data.action_influence = record["blend"], record["influence"]
    if previous is not None and SLOTTED and record.get("slot"):
        slot = next((s for s in previous.slots if s.identifier == record["slot"]), None)
        if slot is not None:
            anim_data.action_slot = slot
    if (not record.get("animation_data") and previous is None and not len(anim_data.drivers)
            and not len(anim_data.nla_tracks)):
        id_data.animation_data_clear()


def set_keyframes(fcurve, frames, values, interpolation: str = 'LINEAR') -> None:
    """Replace nothing, add all: ``len(frames)`` keyframes in one go, interpolation set in bulk."""
    count = len(frames)
    points = fcurve.keyframe_points
    first = len(points)
    points.add(count)
    co = np.empty(2 * (first + count), dtype=np.float32)
    points.foreach_get("co", co)
    co[2 * first::2] = frames
    co[2 * first + 1::2] = values
    points.foreach_set("co", co)
    prop = cast(bpy.types.EnumProperty, bpy.types.Keyframe.bl_rna.properties["interpolation"])
    code = prop.enum_items[interpolation].value
    modes = np.empty(first + count, dtype=np.int32)
    points.foreach_get("interpolation", modes)
    modes[first:] = code
    points.foreach_set("interpolation", modes)
    fcurve.update()


# Keyframe settings copied in bulk: (attribute, values per key, dtype).
_KEY_ARRAYS = (("co", 2, np.float32), ("handle_left", 2, np.float32), ("handle_right", 2, np.float32),
               ("interpolation", 1, np.int32), ("easing", 1, np.int32), ("handle_left_type", 1, np.int32),
               ("handle_right_type", 1, np.int32), ("type", 1, np.int32), ("amplitude", 1, np.float32),
               ("back", 1, np.float32), ("period", 1, np.float32))
_FCURVE_FLAGS = ("extrapolation", "mute", "hide", "lock", "auto_smoothing", "color_mode")


def copy_fcurves(source, target, skip: set[str]) -> list[str]:
    """Copy the F-curves of ``source`` whose data path is not in ``skip`` into ``target`` (an
    F-curve collection), keys, handles, extrapolation and modifiers included; returns their paths.

    A bake replaces an ID's action with its own. The curves of the user's action that the bake
    does not write (a keyed scale, a material setting, the values of the user's own shape keys)
    are copied into the bake's action, so they keep playing while the bake is shown."""
    copied = []
    for fc in source or ():
        if fc.data_path in skip:
            continue
        new = target.new(fc.data_path, index=fc.array_index)
        count = len(fc.keyframe_points)
        new.keyframe_points.add(count)
        for (attr, _, _), buf in zip(_KEY_ARRAYS, _key_arrays(fc), strict=True):
            new.keyframe_points.foreach_set(attr, buf)
        for flag in _FCURVE_FLAGS:
            if hasattr(fc, flag):
                setattr(new, flag, getattr(fc, flag))
        for mod in fc.modifiers:
            _copy_modifier(mod, new.modifiers.new(mod.type))
        new.update()
        copied.append(fc.data_path)
    return copied


def _copy_modifier(source, target) -> None:
    """Every writable setting of an F-curve modifier (Cycles, Noise, ...), by RNA."""
    for prop in source.bl_rna.properties:
        if prop.is_readonly or prop.identifier in {"rna_type", "type"}:
            continue
        try:
            value = getattr(source, prop.identifier)
            if getattr(prop, "is_array", False):
                value = tuple(value)
            setattr(target, prop.identifier, value)
        except (AttributeError, TypeError, ValueError):
            pass  # a setting that cannot be set on its own (an active flag of another modifier)


def _bag_of(action, slot_identifier: str, id_data, *, ensure: bool = False):
    """(F-curve collection, slot identifier) of ``action`` for the slot ``slot_identifier`` (on
    4.4+; its first slot if that is empty), or on 4.2 the action's own (and ""); with ensure, the
    slot (for ``id_data``) and its channel bag are made where missing. (None, "") if there is none."""
    if not SLOTTED:
        return getattr(action, "fcurves"), ""
    slot = next((s for s in action.slots if s.identifier == slot_identifier), None) if slot_identifier else None
    if slot is None and not slot_identifier and len(action.slots):
        slot = action.slots[0]
    if slot is None:
        if not ensure:
            return None, ""
        slot = action.slots.new(id_type=id_data.id_type, name=id_data.name)
    bag = _channelbag(action, slot, ensure=ensure)
    return (None, "") if bag is None else (bag.fcurves, slot.identifier)


def _key_arrays(fcurve) -> list[np.ndarray]:
    count = len(fcurve.keyframe_points)
    out = []
    for attr, size, dtype in _KEY_ARRAYS:
        buf = np.empty(count * size, dtype=dtype)
        fcurve.keyframe_points.foreach_get(attr, buf)
        out.append(buf)
    return out


def same_fcurve(a, b) -> bool:
    """Whether two F-curves animate alike: the same keys (positions, handles, interpolation and
    the rest), extrapolation, mute and modifier types."""
    if len(a.keyframe_points) != len(b.keyframe_points) or a.extrapolation != b.extrapolation or a.mute != b.mute:
        return False
    if [m.type for m in a.modifiers] != [m.type for m in b.modifiers]:
        return False
    return all(np.array_equal(x, y) for x, y in zip(_key_arrays(a), _key_arrays(b), strict=True))


def keep_new_keys(id_data, ours, record: dict, baked_paths: set[str]) -> dict:
    """Carry the F-curves of the bake's action ``ours`` that the bake did not write (data paths
    not in ``baked_paths``) and that are not as in the user's action (``record``, from
    ``assignment``) into the user's action: the keys the user set while the bake was shown (a
    scale, a custom property, a vehicle's Steering keyed with I go into the assigned action, the
    bake's; Free Bake and a new bake deleted them with it). A curve the user changed replaces
    theirs; where they had no action, one is made (``<name>Action``, as Blender names them).
    Returns the record, pointing at that new action (and slot) where one was made."""
    theirs = recorded_action(record.get("action"))
    source, _ = _bag_of(ours, "", id_data)
    if source is None:
        return record
    target, _ = _bag_of(theirs, record.get("slot", ""), id_data) if theirs is not None else (None, "")
    carry = []
    for fc in source:
        if fc.data_path in baked_paths:
            continue
        match = target.find(fc.data_path, index=fc.array_index) if target is not None else None
        if match is None or not same_fcurve(fc, match):
            carry.append((fc, match))
    if not carry:
        return record
    record = dict(record)
    if theirs is None:
        theirs = bpy.data.actions.new(f"{id_data.name}Action")
        if not SLOTTED:
            setattr(theirs, "id_root", id_data.id_type)
        record["action"], record["animation_data"] = theirs, True
    if target is None:
        target, record["slot"] = _bag_of(theirs, record.get("slot", ""), id_data, ensure=True)
    for fc, match in carry:
        if match is not None:
            target.remove(match)
        copy_fcurves((fc,), target, skip=set())
    return record
