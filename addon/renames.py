"""The Pin Group follows its vertex group when the group is renamed, as Blender's Cloth modifier's
does: Blender reports the rename on its message bus (in the interface, at the end of the event),
and each cloth or soft body whose Pin Group names no group now takes the group in its place
(``blender_io.reads.pin_group``). Where nothing reports it (a script, in the background), the bake
finds the group the same way and says so."""

from __future__ import annotations

from typing import Any, cast

import bpy
from bpy.app.handlers import persistent

from .blender_io.reads import pin_group, takes_part
from .scene_to_model import DEFORMING  # the roles with a Pin Group

_owner = object()


def follow_renamed_pin_groups(*_args) -> None:
    for obj in bpy.data.objects:
        _follow(obj)


def _follow(obj) -> None:
    if obj.type != 'MESH' or obj.library is not None or not takes_part(obj) or obj.jakobsen.type not in DEFORMING:
        return
    group, renamed_from = pin_group(obj)
    if renamed_from:
        obj.jakobsen.cloth.pin_group = group  # (which keeps the names now: properties._pin_group_set)


def _subscribe() -> None:
    # (The stubs take a Struct instance and a name; Blender takes the class too.)
    bpy.msgbus.subscribe_rna(key=cast(Any, (bpy.types.VertexGroup, "name")), owner=_owner, args=(),
                             notify=follow_renamed_pin_groups)


@persistent
def _load_post(*_args) -> None:
    bpy.msgbus.clear_by_owner(_owner)  # (a file load drops the subscriptions)
    _subscribe()


def register() -> None:
    _subscribe()
    if _load_post not in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.append(_load_post)


def unregister() -> None:
    bpy.msgbus.clear_by_owner(_owner)
    if _load_post in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(_load_post)
