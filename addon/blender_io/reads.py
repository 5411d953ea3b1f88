"""Reading Blender data: which objects take part, evaluated meshes with bulk ``foreach_get``,
vertex-group weights, transforms sampled over the bake's frames, what is animated.

The one per-vertex pass over Blender data is ``vertex_group_weights``: Blender (4.2 to 5.0) has
no bulk access to vertex-group weights, so it runs once per pinned cloth per bake, never per frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from jakobsen_engine import JakobsenError

from .. import actions
from ..translate.transforms import matrix
from .checks import describe


def may_move(obj) -> bool:
    """Whether the object's transform could change over time (animation, drivers, constraints, parents)."""
    o = obj
    while o is not None:
        ad = o.animation_data
        if ad is not None and (ad.action is not None or len(ad.drivers) or len(ad.nla_tracks)):
            return True
        if len(o.constraints):
            return True
        o = o.parent
    return False


def viewport_disabled_collections() -> set[str]:
    """The names of the collections Blender leaves out of the viewport's evaluation: Disable in
    Viewports (the screen icon) on them or on a collection holding them."""
    off = set()
    for c in bpy.data.collections:
        if c.hide_viewport:
            off.add(c.name)
            off.update(child.name for child in c.children_recursive)
    return off


def disabled_in_viewports(obj, scene, off: set[str]) -> bool:
    """Whether Blender leaves the object out of the viewport's evaluation: Disable in Viewports on
    it, or every collection it is in among ``off`` (``viewport_disabled_collections``). Its
    animation, drivers and modifiers are then not played while the bake reads it (hidden with
    the eye, it still is)."""
    if obj.hide_viewport:
        return True
    mine = [c for c in obj.users_collection if c != scene.collection]
    return bool(mine) and obj.name not in scene.collection.objects and all(c.name in off for c in mine)


def moved_unseen(objects, scene, off: set[str], depsgraph) -> list[str]:
    """Warnings for objects disabled in viewports (the screen icon) moved since Blender last drew
    them: Blender does not update such an object, so it is read where it was drawn. (A hinge's
    Empty moved so, in the N panel or the Outliner, was read where it had been and held its door
    still; a body started where it had been and its keys pulled it back there.) Its own matrix
    is its parent's (an object) times its parent inverse times its basis; one with constraints or
    another kind of parent is not judged."""
    out = []
    for o in objects:
        if not disabled_in_viewports(o, scene, off) or len(o.constraints):
            continue
        own = np.array(o.matrix_basis)
        if o.parent is not None:
            if o.parent_type != 'OBJECT':
                continue
            own = np.array(o.parent.evaluated_get(depsgraph).matrix_world) @ np.array(o.matrix_parent_inverse) @ own
        drawn = np.array(o.evaluated_get(depsgraph).matrix_world)
        if np.abs(drawn - own).max() > 1e-6 * max(1.0, float(np.abs(own).max())):
            out.append(f"{describe(o)}: it is disabled in viewports (the screen icon, on it or on its collection) and "
                       "was moved since Blender last drew it, which Blender does not update, so it is read where it "
                       "was drawn; enable it in viewports (the eye can still hide it)")
    return out



TRANSFORM_PATHS = {"location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale",
                    "delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale"}


def transform_animated(obj) -> bool:
    """Whether the object's transform (or a parent's) is keyed, driven or constrained; keys on
    its other settings (an animated Steering Angle) do not count."""
    o = obj
    while o is not None:
        if len(o.constraints):
            return True
        ad = o.animation_data
        if ad is not None:
            if len(ad.nla_tracks):
                return True
            paths = [fc.data_path for fc in ad.drivers]
            paths += [fc.data_path for fc in (actions.assigned_fcurves(o) or ())]
            if any(p in TRANSFORM_PATHS for p in paths):
                return True
        o = o.parent
    return False


def has_animation(obj) -> bool:
    """Whether the object's own settings may change over time (keyframes, drivers, NLA strips)."""
    ad = obj.animation_data
    return ad is not None and (ad.action is not None or len(ad.drivers) > 0 or len(ad.nla_tracks) > 0)


def sample_matrices(scene, context, names: list[str], frames: range, settings: dict | None = None,
                    deforming: Sequence[str] = (), bases: Sequence[str] = ()) -> tuple[dict, dict, dict, dict]:
    """matrix_world (frames, 4, 4) of each object in ``names``, (frames,) values of each setting
    in ``settings`` ((object name, setting) -> getter(evaluated object)), the world positions
    (frames, n, 3) of the evaluated mesh's vertices of each object in ``deforming`` (an armature,
    hooks, shape keys: what moves the vertices besides the object's matrix), and matrix_basis
    (frames, 4, 4) of each object in ``bases``, on each frame. Changes the current frame."""
    settings = settings or {}
    # A setting changed by a script (a wedge, a Python console) reaches Blender's evaluated copy
    # of the object only when the object is tagged: untagged, a keyed car's changed Target Speed
    # was read as it had been one change before, and a wedge on it changed nothing (found by the
    # add-on probe). The panel's edits tag it; tagging again costs one evaluation.
    for name in {key[0] for key in settings}:
        bpy.data.objects[name].update_tag()
    out = {name: np.empty((len(frames), 4, 4)) for name in names}
    basis = {name: np.empty((len(frames), 4, 4)) for name in bases}
    values = {key: np.empty(len(frames)) for key in settings}
    vertices: dict[str, np.ndarray] = {}
    for k, frame in enumerate(frames):
        scene.frame_set(frame)
        depsgraph = context.evaluated_depsgraph_get()
        for name in names:
            out[name][k] = matrix(bpy.data.objects[name].evaluated_get(depsgraph).matrix_world)
        for name in bases:
            basis[name][k] = matrix(bpy.data.objects[name].evaluated_get(depsgraph).matrix_basis)
        for key, getter in settings.items():
            values[key][k] = float(getter(bpy.data.objects[key[0]].evaluated_get(depsgraph)))
        for name in deforming:
            world = evaluated_world_vertices(bpy.data.objects[name], depsgraph)
            if name not in vertices:
                vertices[name] = np.empty((len(frames),) + world.shape)
            if world.shape != vertices[name].shape[1:]:
                raise JakobsenError(f"'{name}': its modifiers change its vertex count during the bake "
                                    f"({vertices[name].shape[1]} on frame {frames[0]}, {len(world)} on frame "
                                    f"{frame}); a cloth needs the same vertices on every frame")
            vertices[name][k] = world
    return out, values, vertices, basis


def deforms(obj) -> bool:
    """Whether something besides its matrix may move an object's vertices over time: a modifier
    that is on (an Armature, a Hook, ...; not the bake's own Mesh Cache) or animated shape keys."""
    if any(m.show_viewport and m.type != 'MESH_CACHE' for m in obj.modifiers):
        return True
    key = obj.data.shape_keys if obj.type == 'MESH' else None
    return bool(key is not None and key.animation_data is not None
                and (key.animation_data.action is not None or len(key.animation_data.drivers)))


def evaluated_world_vertices(obj, depsgraph) -> np.ndarray:
    """(n, 3) float64 world positions of the object's evaluated (deformed) mesh's vertices."""
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh(depsgraph=depsgraph)
    try:
        co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", co)
    finally:
        ob_eval.to_mesh_clear()
    m = matrix(ob_eval.matrix_world)
    return co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


@dataclass
class MeshData:
    local: np.ndarray  # (n, 3) float64, object space
    loop_total: np.ndarray  # (f,) corners of each face
    corners: np.ndarray  # (c,) vertex index of each corner, face by face
    weights: np.ndarray | None  # (n,) pin weights, or None


def read_mesh(obj, depsgraph, where: str, pin_group: str = "") -> MeshData:
    """The evaluated mesh (modifiers applied) in object space, with pin weights if asked for."""
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh(preserve_all_data_layers=bool(pin_group), depsgraph=depsgraph)
    try:
        n = len(mesh.vertices)
        co = np.empty(n * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", co)
        f = len(mesh.polygons)
        loop_total = np.empty(f, dtype=np.int32)
        mesh.polygons.foreach_get("loop_total", loop_total)
        # polygons' 'vertices' flattens face by face, so loop_total alone splits it.
        corners = np.empty(int(loop_total.sum()), dtype=np.int32)
        mesh.polygons.foreach_get("vertices", corners)
        weights = None
        if pin_group:
            if obj.vertex_groups.get(pin_group) is None:
                raise JakobsenError(f"{where}: its pin group '{pin_group}' is not one of its vertex groups "
                                    "(Pin Group, in its Jakobsen Physics cloth settings)")
            # The evaluated object lists only the groups that hold vertices after the modifiers.
            group = ob_eval.vertex_groups.get(pin_group)
            weights = np.zeros(n) if group is None else vertex_group_weights(mesh, group.index)
    finally:
        ob_eval.to_mesh_clear()
    local = co.reshape(-1, 3).astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(local).all(axis=1))
    if len(bad):
        raise JakobsenError(f"{where}: vertex {bad[0]} has a coordinate that is not a number "
                            f"({tuple(local[bad[0]].tolist())}); fix the mesh (e.g. Mesh > Clean Up)")
    return MeshData(local, loop_total.astype(np.int64), corners.astype(np.int64), weights)


def vertex_group_weights(mesh, group_index: int) -> np.ndarray:
    """(n,) weights of one vertex group, 0 where a vertex is not in it.

    Blender offers no bulk read of vertex-group weights, so this is the one per-vertex pass the
    add-on makes over Blender data: once per pinned cloth per bake, never per frame.
    """
    weights = np.zeros(len(mesh.vertices))
    for v in mesh.vertices:
        for element in v.groups:
            if element.group == group_index:
                weights[v.index] = element.weight
                break
    return weights


# Blender 4.x keeps an ID's Python-defined settings among its custom properties and creates them
# the first time they are read: reading ``obj.jakobsen.enabled`` on every object of a scene would
# add a 'jakobsen' property to objects that never take part. 5.0 stores them apart.
_SETTINGS_AMONG_CUSTOM_PROPERTIES = bpy.app.version < (5, 0, 0)


# Between the vertex group names kept with a Pin Group (no name has this character).
GROUP_NAMES_SEPARATOR = "\x1f"


def pin_group(obj) -> tuple[str, str]:
    """(the Pin Group's name now, the name set if the group was renamed since, else "").

    Blender's Cloth follows a renamed pin group; ours keeps the name, so the group is found by
    its place among the object's vertex groups when the Pin Group was set
    (``pin_group_names``): the group there now, if it has a name none had then and the weights
    the pin group had (``pin_group_print``). A group deleted or moved is not followed (its place
    holds another group, or none)."""
    s = obj.jakobsen.cloth
    name = s.pin_group
    if not name or obj.vertex_groups.get(name) is not None or not s.pin_group_names:
        return name, ""
    known = s.pin_group_names.split(GROUP_NAMES_SEPARATOR)
    if name not in known:
        return name, ""
    place = known.index(name)
    if place < len(obj.vertex_groups) and obj.vertex_groups[place].name not in known:
        candidate = obj.vertex_groups[place].name
        # Its weights as they were (a group deleted and another added in its place is not a
        # rename: a cloth was pinned whole by a new 'Mask' group, found by the add-on probe),
        # unless the group was empty when it was chosen (then painted: its weights say nothing).
        kept = s.pin_group_print
        if not kept or kept.startswith("0:") or group_print(obj, candidate) == kept:
            return candidate, name
    return name, ""


def group_print(obj, name: str) -> str:
    """A vertex group's weights in short (how many vertices, their sum), to tell a renamed group
    from another one; "" without such a group or mesh."""
    group = obj.vertex_groups.get(name) if obj.type == 'MESH' and obj.data is not None else None
    if group is None:
        return ""
    weights = vertex_group_weights(obj.data, group.index)
    return f"{int(np.count_nonzero(weights > 0.0))}:{float(weights.sum()):.6g}"


def takes_part(obj) -> bool:
    """Whether Jakobsen Physics is enabled on ``obj``, read without creating its settings."""
    if _SETTINGS_AMONG_CUSTOM_PROPERTIES and "jakobsen" not in obj.keys():
        return False
    return obj.jakobsen.enabled


def simulated_ancestor(obj):
    """The nearest parent (or grandparent...) of ``obj`` that the solver moves and the bake keys
    (a rigid body with Dynamic On or Ghost that takes part), or None."""
    o = obj.parent
    while o is not None:
        if (o.type == 'MESH' and takes_part(o) and o.jakobsen.type == 'RIGID_BODY'
                and o.jakobsen.rigid_body.dynamic != 'OFF'):
            return o
        o = o.parent
    return None


def enabled_objects(context) -> list:
    """The objects that take part, in a stable order (by name)."""
    context.view_layer.update()  # objects linked since the last update are not in the view layer before
    return sorted((o for o in context.view_layer.objects if takes_part(o)), key=lambda o: o.name)


def instanced_only(context) -> list[str]:
    """Messages for objects with Jakobsen Physics on that the view layer shows only through a
    collection instance (an Empty instancing their collection): a bake simulates the scene's own
    objects, and an instance's copies are drawn, not simulated (the bake said to enable Jakobsen
    Physics, which was on)."""
    in_layer = set(context.view_layer.objects)
    seen: dict[str, str] = {}
    for empty in sorted(in_layer, key=lambda o: o.name):
        collection = empty.instance_collection if empty.instance_type == 'COLLECTION' else None
        if collection is None:
            continue
        for obj in sorted(collection.all_objects, key=lambda o: o.name):
            if obj not in in_layer and obj.name not in seen and takes_part(obj):
                seen[obj.name] = (f"object '{obj.name}' has Jakobsen Physics on but is shown only through the "
                                  f"collection instance '{empty.name}' (of the collection '{collection.name}'), "
                                  "which is drawn, not simulated; make it real (Object > Apply > Make Instances "
                                  "Real) or link the collection into the scene to simulate it")
    return list(seen.values())


def field_objects(context) -> list:
    """The objects of the view layer with a Blender force field, by name (as Blender, a field
    outside the view layer does nothing)."""
    return sorted((o for o in context.view_layer.objects if o.field is not None and o.field.type != 'NONE'),
                  key=lambda o: o.name)
