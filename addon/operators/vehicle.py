"""Vehicles in one click: ``jakobsen.vehicle_create`` (a car rig from a chassis and its wheels)
and ``jakobsen.vehicle_hitch`` (a trailer hitched behind a car with a Ball and Socket).

Create Vehicle takes the active mesh as the chassis and the other selected meshes as its wheels
(with the chassis alone selected: the meshes among its children and their children that look
like wheels: round, lying across the car, standing on the ground). In one undoable step it

- finds each wheel's hub, axle, radius and width from its vertices (``translate.wheels``);
- splits an object that holds several wheels (an axle) into one object per wheel with Blender's
  own Separate, which keeps materials, UVs and attributes (``Axle`` -> ``Axle.L``, ``Axle.R``);
- makes a mesh that other objects share single user before changing it;
- frees the wheels from parents that are simulated (the chassis, another body, another wheel),
  keeping them where they are (a child of a simulated body would be moved twice on playback);
  the chassis itself stays under its parent (an importer's Y-up rotation Empty): the bake keys
  a body in its parent's space;
- re-bases each wheel: its origin at the hub and its local Z along the axle (the mesh data moved
  by the inverse, so every vertex stays where it is in the world), collision shape Cylinder;
- moves a wheel's own animation (an imported spin) out of the way: the action goes into a muted
  NLA track (Blender's "[Action Stash]"), so playback shows only the simulation and the user's
  action is kept (unmute the track to see it again);
- adds one Wheel Suspension connector per wheel at its hub (X along the axle to the car's left,
  Z up; Object A the chassis, Object B the wheel, collisions between them ignored);
- sets masses from real-world densities where the user left the default (a car-sized chassis
  about 1,200 kg), and the vehicle's suspension, motor and brakes from them; enables the vehicle
  on the chassis with its forward axis (the chassis-local axis along the wheelbase, at the end
  that is Blender's (or glTF's) front, unless the Forward option names one).

A selection it cannot rig is refused before anything is touched, with a message naming the
objects (among them: a wheel lying flat, a wheel with a Mirror or Array modifier, wheels all on
one side, a wheel made active instead of the body); wheels whose axles run along the body are
rigged with a warning (the car drives sideways). Running it again on a rigged car keeps the
connectors it made (moved to the hubs) and sets the motor, brakes and suspension from the masses
again, naming in a warning the values it replaced (docs/vehicles.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import bpy
import numpy as np
from bpy.props import EnumProperty, StringProperty
from bpy.types import Operator
from mathutils import Matrix

from .. import actions, baking
from ..blender_io.reads import evaluated_world_vertices, takes_part
from ..properties import AXIS_ITEMS
from ..registered import OperatorTypeFlagItems, object_settings
from ..translate.transforms import matrix
from ..translate.wheels import (
    AXES,
    UP,
    Layout,
    Wheel,
    axis_vector,
    covers_circle,
    group_wheels,
    unparallel_axles,
    wheel_geometry,
    wheel_layout,
)
from jakobsen_engine import JakobsenError
CHASSIS_DENSITY = 110.0  # kg per m^3 of the chassis' bounding box: 4.5 x 1.8 x 1.5 m is about 1,300 kg
WHEEL_DENSITY = 260.0  # kg per m^3 of the wheel's cylinder: a 0.33 m x 0.22 m car wheel is about 20 kg
DEFAULT_MASS = 1.0  # the Mass setting's default: a user who changed it chose the mass
TRAVEL_PER_RADIUS = 0.6  # suspension travel as a share of the wheel radius
SAG_SHARE = 0.25  # the chassis' weight compresses the springs by this share of the travel
DAMPING_RATIO = 0.4  # of critical damping (0.3 to 0.5 in road cars)
# The motor's torque pushes the whole car at this many g: a brisk road car (0-100 km/h in about
# 10 s); more would spin the rear wheels of a car with half its weight on them.
MOTOR_GRIP = 0.3
BRAKE_GRIP = 2.0  # the brakes' torque could stop the car at this many g (the tyres' grip limits it)
STASH_TRACK = "[Action Stash]"  # Blender's name for an NLA track that keeps an action out of the way


class RigError(Exception):
    """A selection Create Vehicle or Hitch cannot rig; the message names the objects."""


def _names(objects) -> str:
    return ", ".join(f"'{o.name}'" for o in objects)


# -- reading (changes nothing) ----------------------------------------------------------------------

def _mesh_world(obj) -> tuple[np.ndarray, np.ndarray]:
    """The object's own mesh (not evaluated: it is what gets split and moved) in world space
    (n, 3), and its edges (m, 2)."""
    mesh = obj.data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    edges = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    mesh.edges.foreach_get("vertices", edges)
    m = matrix(obj.matrix_world)
    return co.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3], edges.reshape(-1, 2)


def _oriented_extent(world: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Extent (3,) in metres of world points along the object's own (normalised) axes."""
    axes = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
    local = world @ axes
    return np.ptp(local, axis=0)


@dataclass
class WheelPlan:
    """One wheel to be: ``indices`` of its vertices in its source object's mesh."""

    source: str
    indices: np.ndarray
    wheel: Wheel
    where: str


@dataclass
class VehiclePlan:
    chassis: str
    chassis_extent: np.ndarray  # (3,) along its own axes, m
    sources: list[str]
    wheels: list[WheelPlan]
    layout: Layout
    skipped: list[str] = field(default_factory=list)  # children that did not look like wheels
    warnings: list[str] = field(default_factory=list)  # what it rigs but the user may not mean


def _check_editable(objects) -> None:
    view_layer = bpy.context.view_layer
    if view_layer is None:  # a script run without a window: nothing tells what is hidden
        raise RigError("there is no view layer to check the objects in")
    for obj in objects:
        if baking.record_of(obj) is not None:
            raise RigError(f"'{obj.name}' has a bake, which moves it on playback; free it first (Scene > Jakobsen "
                           "Physics > Free Bake) so that the rig is made from the objects as they are")
        if obj.library is not None or (obj.data is not None and obj.data.library is not None):
            raise RigError(f"'{obj.name}' is linked from another file; make it local (Object > Relations > "
                           "Make Local) to rig it")
        if obj.name not in view_layer.objects or not obj.visible_get(view_layer=view_layer):
            raise RigError(f"'{obj.name}' is hidden; unhide it (Alt+H) so that it can be rigged")


def _wheels_of(obj, where: str) -> tuple[list[WheelPlan], np.ndarray]:
    """The wheels one object holds (one, or several loose parts: an axle), and its vertices in
    world space."""
    world, edges = _mesh_world(obj)
    if len(world) == 0:
        raise RigError(f"wheel '{obj.name}' has no vertices")
    groups = group_wheels(world, edges)
    out = []
    for k, indices in enumerate(groups):
        label = where if len(groups) == 1 else f"{where} (its part {k + 1} of {len(groups)}, "\
            f"{len(indices)} vertices)"
        try:
            wheel = wheel_geometry(world[indices], where=label)
        except JakobsenError as error:
            raise RigError(str(error)) from None
        out.append(WheelPlan(source=obj.name, indices=indices, wheel=wheel, where=label))
    return out, world


# Modifiers that add copies of the mesh: a wheel object's raw mesh (what is read, split and
# re-based) is then not what is drawn (a Mirror's right wheel, an Array's row of wheels), and a
# Mirror about the object's origin folds its copy onto the wheel once the origin is at the hub.
COPYING_MODIFIERS = {'MIRROR': "Mirror", 'ARRAY': "Array"}


def _check_copying_modifiers(objects) -> None:
    for obj in objects:
        for mod in obj.modifiers:
            if mod.type in COPYING_MODIFIERS and (mod.show_viewport or mod.show_render):
                raise RigError(f"wheel '{obj.name}' has a {COPYING_MODIFIERS[mod.type]} modifier ('{mod.name}'), "
                               "whose copies are drawn but are not in its mesh; apply it first (Object > Apply > "
                               "Visual Geometry to Mesh, or Ctrl+A over the modifier), so that every wheel it makes "
                               "is rigged")


def _box_diagonal(obj) -> float:
    """The diagonal (m) of the object's bounding box in world space (from its 8 corners)."""
    corners = np.array([tuple(c) for c in obj.bound_box], dtype=np.float64)
    m = matrix(obj.matrix_world)
    return float(np.linalg.norm(np.ptp(corners @ m[:3, :3].T, axis=0)))


def _looks_like_wheel(obj) -> bool:
    """Whether the mesh is round about its axle in every part (a wheel, or an axle of wheels)."""
    if obj is None or obj.type != 'MESH' or len(obj.data.vertices) == 0:
        return False
    try:
        plans, world = _wheels_of(obj, f"'{obj.name}'")
    except RigError:
        return False
    return all(covers_circle(world[p.indices], p.wheel) for p in plans)


def _descendants(obj) -> list:
    out, todo = [], list(obj.children)
    while todo:
        child = todo.pop(0)
        out.append(child)
        todo.extend(child.children)
    return out


def _wheel_children(chassis, chassis_world: np.ndarray) -> tuple[list, list[str]]:
    """The chassis' descendant meshes that look like wheels: each of their parts round about a
    horizontal axle, and standing on the ground (the lowest point of the car); the others' names."""
    found: list[bpy.types.Object] = []
    skipped: list[str] = []
    candidates = {}
    for child in sorted(_descendants(chassis), key=lambda o: o.name):
        if child.type != 'MESH' or len(child.data.vertices) == 0:
            continue
        try:
            candidates[child.name] = (child, *_wheels_of(child, f"'{child.name}'"))
        except RigError:
            skipped.append(child.name)
    bottoms = [p.wheel.hub @ UP - p.wheel.radius for _, plans, _ in candidates.values() for p in plans]
    ground = min([float((chassis_world @ UP).min())] + bottoms) if len(chassis_world) else min(bottoms, default=0.0)
    for name, (child, plans, world) in candidates.items():
        wheel_like = all(
            abs(p.wheel.axle @ UP) < 0.5
            and p.wheel.hub @ UP - p.wheel.radius <= ground + 0.25 * p.wheel.radius
            and covers_circle(world[p.indices], p.wheel)
            for p in plans)
        (found if wheel_like else skipped).append(child if wheel_like else name)
    return found, skipped


def _simulated_ancestor(obj, wheel_names: set[str], chassis_name: str):
    """The nearest parent of ``obj`` that is simulated (the chassis, a wheel, a body), or None."""
    parent = obj.parent
    while parent is not None:
        if parent.name == chassis_name or parent.name in wheel_names or takes_part(parent):
            return parent
        parent = parent.parent
    return None


def plan_vehicle(context, chassis, wheel_objects, *, forward_axis: str | None = None, min_wheels: int = 3,
                 forward_hint=None) -> VehiclePlan:
    """Everything Create Vehicle will do, read from the scene without changing it; a selection it
    cannot rig raises ``RigError`` naming the objects.

    wheel_objects: the wheels' objects, or None to look for them among the chassis' children.
    forward_hint: (3,) world direction the chassis' front should point along (a trailer's: the
    car's forward), used to choose the forward axis when ``forward_axis`` is None."""
    if chassis is None or chassis.type != 'MESH':
        raise RigError("Make the chassis (a mesh) the active object, and select its wheels too (or select the "
                       "chassis alone to use the wheels among its children)")
    depsgraph = context.evaluated_depsgraph_get()
    chassis_world = evaluated_world_vertices(chassis, depsgraph)
    if len(chassis_world) == 0:
        raise RigError(f"chassis '{chassis.name}' has no vertices")
    m = matrix(chassis.matrix_world)
    extent = _oriented_extent(chassis_world, m)
    if extent.min() <= 1e-6 * max(extent.max(), 1e-300):
        raise RigError(f"chassis '{chassis.name}' has no volume (it is flat: {_size_text(extent)}); a chassis is "
                       "a solid body")
    skipped: list[str] = []
    if wheel_objects is None:
        # A car rigged before: its wheels are no longer its children (the rig unparents them), so
        # running it again with the chassis alone takes the wheels its Wheel Suspensions hold
        # (the docs promise a re-rig; it was refused with "no wheels").
        wheels_held = (object_settings(empty).connector.object_b for empty in _wheel_connectors(chassis).values())
        rigged = {wheel.name: wheel for wheel in wheels_held}
        if rigged:
            wheel_objects = [rigged[name] for name in sorted(rigged)]
    if wheel_objects is None:
        wheel_objects, skipped = _wheel_children(chassis, chassis_world)
        if not wheel_objects and chassis.parent is not None and _looks_like_wheel(chassis):
            raise RigError(f"the active object '{chassis.name}' looks like a wheel (of '{chassis.parent.name}'?); "
                           "make the body the active object (select it alone to use the wheels among its children)")
        if not wheel_objects:
            raise RigError(f"no wheels: select the wheels of chassis '{chassis.name}' as well (the chassis active), "
                           "or parent them to it"
                           + (f"; its children {', '.join(repr(s) for s in skipped)} do not look like wheels"
                              if skipped else "; it has no child meshes"))
    else:
        seen = set()
        for obj in wheel_objects:
            if obj == chassis:
                raise RigError(f"'{chassis.name}' is the chassis and cannot be one of its wheels too; select the "
                               "wheels and make the chassis the active object")
            if obj.name in seen:
                raise RigError(f"wheel '{obj.name}' is given twice")
            seen.add(obj.name)
        not_meshes = [o for o in wheel_objects if o.type != 'MESH']
        if not_meshes:
            raise RigError(f"{_names(not_meshes)} {'is not a mesh' if len(not_meshes) == 1 else 'are not meshes'}; "
                           "wheels are meshes (deselect the others)")
        if not wheel_objects:
            raise RigError(f"no wheels: select the wheels of chassis '{chassis.name}' as well (the chassis active), "
                           "or select the chassis alone to use the wheels among its children")
        shared = [o for o in wheel_objects if o.data == chassis.data]
        shares = "shares its mesh" if len(shared) == 1 else "share its mesh"
        if shared and _looks_like_wheel(chassis) and not all(o.data == chassis.data for o in wheel_objects):
            # (Wheels sharing one mesh, as an imported car's do, with a wheel active: the body
            # selected too does not share it. Told "shares its mesh with chassis 'Wheel.FL'",
            # a user was sent to select the wheels only.)
            raise RigError(f"the active object '{chassis.name}' looks like a wheel ({_names(shared)} {shares} "
                           "with it); make the body the active object (select the wheels, then Ctrl+click the body "
                           "last)")
        if shared:
            raise RigError(f"{_names(shared)} {shares} with chassis '{chassis.name}' (the chassis selected "
                           "again, as a wheel); select the wheels only")
        # A wheel made active by mistake (the body clicked first): the body would be read as a
        # wheel far from "chassis" 'WheelFL'; say what to do instead.
        # (Read only when a selected object is bigger than the "chassis": a body's mesh can be large.)
        size_of = float(np.linalg.norm(np.ptp(chassis_world, axis=0)))
        bigger = [o for o in wheel_objects if _box_diagonal(o) > size_of]
        if bigger and _looks_like_wheel(chassis):
            bodies = [o for o in bigger if not _looks_like_wheel(o)]
            if bodies:
                raise RigError(f"the active object '{chassis.name}' looks like a wheel, and {_names(bodies)} "
                               f"{'does' if len(bodies) == 1 else 'do'} not; make the body the active object "
                               "(select the wheels, then Ctrl+click the body last)")
    _check_editable([chassis, *wheel_objects])
    _check_copying_modifiers(wheel_objects)
    parts = [(obj, *_wheels_of(obj, f"wheel '{obj.name}'")) for obj in wheel_objects]
    # Selected, as among the chassis' children, a wheel is round about its axle (a cube selected
    # with the wheels was rigged as a fifth wheel, a cylinder the size of the cube).
    not_round = [obj for obj, plans, world in parts
                 if not all(covers_circle(world[p.indices], p.wheel) for p in plans)]
    if not_round:
        one = len(not_round) == 1
        raise RigError(f"{_names(not_round)} {'is' if one else 'are'} not round about an axle (the outermost "
                       f"vertices of a wheel go all the way round it), so {'it' if one else 'they'} cannot roll "
                       f"as {'a wheel' if one else 'wheels'}; deselect {'it' if one else 'them'}")
    wheels = [p for _, plans, _ in parts for p in plans]
    # A wheel another vehicle holds (its Wheel Suspension): rigged again it hung from both cars.
    held: dict[str, tuple[str, str]] = {}
    for obj, c in _wheel_suspensions():
        if c.object_a is not None and c.object_a != chassis:
            held.setdefault(c.object_b.name, (c.object_a.name, obj.name))
    taken = [f"'{obj.name}' (of vehicle '{held[obj.name][0]}', by '{held[obj.name][1]}')"
             for obj in wheel_objects if obj.name in held]
    if taken:
        raise RigError(f"{', '.join(taken)} {'is' if len(taken) == 1 else 'are'} already a wheel of another "
                       "vehicle; duplicate the wheels for this one (Shift+D), or delete that vehicle's "
                       "suspension connectors first")
    # A wheel lying flat (its axle upright) rolls on nothing: its suspension's up cannot be made
    # square to its axle, and the rig would be refused only at the bake, blaming the connector.
    upright = [(p, abs(float(p.wheel.axle @ UP))) for p in wheels]
    flat = [(p, math.degrees(math.acos(min(up, 1.0)))) for p, up in upright if up > math.sin(math.radians(45.0))]
    if flat:
        one = len(flat) == 1
        widest = max(angle for _, angle in flat)
        how = "straight up" if widest < 0.5 else f"up, within {widest:.0f} degrees of vertical"
        raise RigError(f"{', '.join(p.where for p, _ in flat)} {'lies' if one else 'lie'} flat: "
                       f"{'its axle points' if one else 'their axles point'} {how}; a wheel turns about a level "
                       f"axle: rotate {'it' if one else 'them'} 90 degrees (R Y 90 for a car along Y) so that "
                       f"{'its axle is' if one else 'their axles are'} level, across the car")
    size = float(extent.max())
    lo, hi = chassis_world.min(axis=0), chassis_world.max(axis=0)
    far = []
    for p in wheels:
        gap = float(np.linalg.norm(np.maximum(np.maximum(lo - p.wheel.hub, p.wheel.hub - hi), 0.0)))
        if gap > size:
            far.append(f"{p.where} is {gap:.3g} m from chassis '{chassis.name}'")
    if far:
        raise RigError(f"{'; '.join(far)}, farther than the chassis' size ({size:.3g} m); select the wheels of this "
                       "chassis only")
    if len(wheels) < min_wheels:
        found = ", ".join(p.where for p in wheels)
        raise RigError(f"chassis '{chassis.name}' has {len(wheels)} wheel{'s' * (len(wheels) != 1)} ({found}); a "
                       f"vehicle needs at least {min_wheels} (an axle mesh holding two wheels counts as two)")
    crooked = unparallel_axles([p.wheel.axle for p in wheels], [p.where for p in wheels])
    if crooked:
        listed = "; ".join(f"{b}'s is {angle:.0f} degrees off {a}'s" for a, b, angle in crooked)
        raise RigError(f"the wheels' axles are not parallel ({listed}); a car's wheels turn about parallel axles "
                       "(is one of them not a wheel?)")
    if forward_axis is None and forward_hint is not None:
        forward_axis = _axis_along(m, np.asarray(forward_hint, dtype=np.float64))
    layout = wheel_layout([p.wheel.hub for p in wheels], [p.wheel.axle for p in wheels], m,
                          forward_axis=forward_axis, radii=[p.wheel.radius for p in wheels])
    # Wheels on one side only (the other side's not selected, or made by a modifier): the car
    # would stand on one side of its body and fall over.
    across = chassis_world @ layout.lateral
    middle, half = 0.5 * (across.min() + across.max()), 0.5 * float(np.ptp(across))
    side = np.array([p.wheel.hub @ layout.lateral for p in wheels]) - middle
    tolerance = 0.1 * half
    if (side > tolerance).all() or (side < -tolerance).all():
        which = "left" if side[0] > 0 else "right"
        raise RigError(f"the wheels of chassis '{chassis.name}' ({', '.join(p.where for p in wheels)}) all lie on "
                       f"its {which} side; select the wheels of both sides (or apply the modifier that mirrors them)")
    warnings = []
    # The wheels roll across their axles, whatever the body's shape: with the axles along the
    # body's length the car drives sideways. That may be meant (a crab), so it is said, not refused.
    rolling = np.cross(layout.up, layout.lateral)
    along, across_size = float(np.ptp(chassis_world @ rolling)), float(np.ptp(across))
    if across_size > 1.25 * along:
        warnings.append(f"chassis '{chassis.name}': its wheels' axles run along its length ({across_size:.3g} m; it "
                        f"is {along:.3g} m across them), so it will drive sideways; if that is not meant, turn each "
                        "wheel 90 degrees about the vertical so that its axle runs across the body")
    return VehiclePlan(chassis=chassis.name, chassis_extent=extent, sources=[o.name for o in wheel_objects],
                       wheels=wheels, layout=layout, skipped=skipped, warnings=warnings)


def _axis_along(m: np.ndarray, direction: np.ndarray) -> str:
    """The chassis-local axis name ('NEG_Y', ...) whose world direction is nearest ``direction``."""
    return max(AXES, key=lambda name: float(axis_vector(m, name) @ direction))


def _size_text(extent) -> str:
    return " x ".join(f"{e:.3g}" for e in extent) + " m"


def _check_forward(plan: VehiclePlan) -> None:
    offered = {item[0] for item in AXIS_ITEMS}
    if plan.layout.forward_axis not in offered:
        column = "XYZ"[AXES[plan.layout.forward_axis][0]]
        raise RigError(f"chassis '{plan.chassis}': its wheelbase lies along its local {column} axis, which the "
                       f"vehicle's Forward setting cannot name (it offers {', '.join(sorted(offered))}); turn the "
                       "chassis' mesh so that its length lies along its local X or Y (Object > Apply > Rotation, "
                       "on the chassis and its parents)")


# -- changing the scene -----------------------------------------------------------------------------

# A round part of an imported wheel's node turns with its tyre (``_carry_round_parts``) when its
# hub is within HUB_MATCH of the tyre's radius of the tyre's, its axle within AXLE_MATCH degrees.
HUB_MATCH = 0.1
AXLE_MATCH = 5.0


def _keep_world(obj, new_parent=None) -> None:
    world = obj.matrix_world.copy()
    obj.parent = new_parent
    obj.matrix_world = world


def _carry_round_parts(wheels, pieces, nodes) -> None:
    """An imported wheel is often a node (an Empty) holding the tyre and, beside it, a rim or a
    hub cap, or the tyre and the rim are both children of the body: the tyre becomes the wheel,
    and the other meshes under what it hung from that are round about the same axle, on the same
    hub (turning with it), are parented to it, keeping where they are, so they spin, steer and
    ride the suspension with it. They were left where they hung, which the bake does not turn
    (rims 53-79 mm off their tyres after 2 s). Parts that are not round about the axle (a brake
    caliper, which does not spin) stay where they are."""
    taken = {piece.name for piece, _ in pieces}
    source_of = {piece.name: source for piece, source in pieces}
    seen: dict[str, np.ndarray] = {}  # part -> its world vertices (a node's parts are read once)
    for piece, wheel in wheels:
        node = nodes.get(source_of.get(piece.name, ""))
        if node is None:
            continue
        for part in _descendants(node):
            if part.type != 'MESH' or part.name in taken or takes_part(part) or len(part.data.vertices) == 0:
                continue
            if part.name not in seen:
                seen[part.name] = _mesh_world(part)[0]
            world = seen[part.name]
            middle = 0.5 * (world.min(axis=0) + world.max(axis=0))
            if np.linalg.norm(middle - wheel.hub) > wheel.radius:  # (not near this hub: a body's other parts)
                continue
            try:
                round_part = wheel_geometry(world, where=f"'{part.name}'")
            except (RigError, JakobsenError):  # (flat, a line: not a round part)
                continue
            if np.linalg.norm(round_part.hub - wheel.hub) <= HUB_MATCH * wheel.radius \
                    and abs(float(round_part.axle @ wheel.axle)) >= math.cos(math.radians(AXLE_MATCH)):
                _keep_world(part, piece)
                taken.add(part.name)


def _detach_action(obj):
    """Take the object's action off it (the action, its slot's identifier), or None."""
    ad = obj.animation_data
    if ad is None or ad.action is None:
        return None
    slot = ad.action_slot.identifier if actions.SLOTTED and ad.action_slot is not None else ""
    action = ad.action
    ad.action = None
    return action, slot


def _stash(obj, detached) -> None:
    """Keep an action on the object in a muted NLA track, as Blender's Stash does."""
    action, slot = detached
    ad = obj.animation_data or obj.animation_data_create()
    if ad.action == action:
        ad.action = None
    track = ad.nla_tracks.new()
    track.name = STASH_TRACK
    strip = track.strips.new(action.name, int(math.floor(action.frame_range[0])), action)
    if actions.SLOTTED and slot:
        chosen = next((s for s in action.slots if s.identifier == slot), None)
        if chosen is not None and getattr(strip, "action_slot", None) != chosen:
            strip.action_slot = chosen
    track.mute = True


def _selection(mesh, name: str, domain: str):
    """The mesh's selection attribute ``name`` on ``domain``, made anew if it is not a boolean of
    that domain (Blender 5.0's ``from_pydata`` leaves ``.select_edge`` a copy of the edges' vertex
    pairs, which ``edges.foreach_set("select", ...)`` then crashes on)."""
    attribute = mesh.attributes.get(name)
    if attribute is not None and (attribute.data_type != 'BOOLEAN' or attribute.domain != domain):
        mesh.attributes.remove(attribute)
        attribute = None
    return attribute if attribute is not None else mesh.attributes.new(name, 'BOOLEAN', domain)


def _select_vertices(mesh, selected: np.ndarray) -> None:
    """Select exactly the vertices ``selected`` (n,) bool, and the edges and faces among them."""
    edges = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    mesh.edges.foreach_get("vertices", edges)
    totals = np.empty(len(mesh.polygons), dtype=np.int32)
    mesh.polygons.foreach_get("loop_total", totals)
    corners = np.empty(int(totals.sum()), dtype=np.int32)
    mesh.polygons.foreach_get("vertices", corners)
    faces = np.zeros(len(totals), dtype=bool)
    if len(totals):
        faces = np.logical_and.reduceat(selected[corners], np.concatenate(([0], np.cumsum(totals)[:-1])))
    for name, domain, values in ((".select_vert", 'POINT', selected),
                                 (".select_edge", 'EDGE', selected[edges.reshape(-1, 2)].all(axis=1)),
                                 (".select_poly", 'FACE', faces)):
        _selection(mesh, name, domain).data.foreach_set("value", np.ascontiguousarray(values, dtype=bool))


def _separate(context, obj, indices: np.ndarray):
    """Blender's Separate Selection of the vertices ``indices`` of ``obj`` into a new object."""
    selected = np.zeros(len(obj.data.vertices), dtype=bool)
    selected[indices] = True
    _select_vertices(obj.data, selected)
    before = set(bpy.data.objects)
    with context.temp_override(active_object=obj, object=obj, selected_objects=[obj],
                               selected_editable_objects=[obj]):
        bpy.ops.object.mode_set(mode='EDIT')
        try:
            bpy.ops.mesh.separate(type='SELECTED')
        finally:
            bpy.ops.object.mode_set(mode='OBJECT')
    made = [o for o in bpy.data.objects if o not in before]
    if len(made) != 1:
        raise RuntimeError(f"separating a wheel from '{obj.name}' made {len(made)} objects")
    return made[0]


def _split(context, obj) -> list:
    """The object split into one object per wheel (itself first)."""
    pieces = [obj]
    while True:
        world, edges = _mesh_world(obj)
        groups = group_wheels(world, edges)
        if len(groups) <= 1:
            return pieces
        pieces.append(_separate(context, obj, groups[-1]))


def _piece_names(base: str, labels: list[tuple[str, str]]) -> list[str]:
    """Names of the wheels an object was split into, from (axle, side) labels: 'Axle.L', 'Axle.R'
    for one axle; 'Wheels.FL', ... for several; numbered where positions repeat."""
    axles = {a for a, _ in labels}
    sides = {s for _, s in labels}
    if len(axles) == 1:
        suffixes = [s for _, s in labels]
    elif len(sides) == 1:
        suffixes = [a for a, _ in labels]
    else:
        suffixes = [a + s for a, s in labels]
    if len(set(suffixes)) != len(suffixes):
        return [base if k == 0 else f"{base}.{k:03d}" for k in range(len(labels))]
    return [f"{base}.{s}" for s in suffixes]


def _frame(axle_left: np.ndarray, up: np.ndarray) -> np.ndarray:
    """A rotation (3, 3) whose Z is ``axle_left``, X up (across the axle) and Y = Z x X (forward)."""
    z = axle_left / np.linalg.norm(axle_left)
    x = up - (up @ z) * z
    if np.linalg.norm(x) < 1e-6:
        x = np.cross(z, [1.0, 0.0, 0.0] if abs(z[0]) < 0.9 else [0.0, 1.0, 0.0])
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], axis=1)


def _connector_frame(axle_left: np.ndarray, up: np.ndarray) -> np.ndarray:
    """A Wheel Suspension connector's axes (3, 3): X along the axle to the car's left, Z up (world
    up made square to the axle: the suspension and steering axis), Y = Z x X (to the rear)."""
    x = axle_left / np.linalg.norm(axle_left)
    z = up - (up @ x) * x
    z /= np.linalg.norm(z)
    return np.stack([x, np.cross(z, x), z], axis=1)


def _rebase(obj, hub: np.ndarray, rotation: np.ndarray) -> None:
    """Move the object's origin to ``hub`` and its axes to ``rotation`` (scale 1; a mirrored
    object keeps its mirror on Z), moving its mesh by the inverse: every vertex stays where it is
    in the world, and so do its children."""
    old = matrix(obj.matrix_world)
    new = np.eye(4)
    new[:3, :3], new[:3, 3] = rotation, hub
    if np.linalg.det(old[:3, :3]) < 0:  # keep the winding of the faces: no mirror in the mesh change
        new[:3, 2] *= -1.0
    change = np.linalg.inv(new) @ old
    obj.data.transform(Matrix(change.tolist()), shape_keys=True)
    obj.data.update()
    for child in obj.children:
        child.matrix_parent_inverse = Matrix(change.tolist()) @ child.matrix_parent_inverse
    obj.matrix_world = Matrix(new.tolist())


def _gravity(scene) -> float:
    props = scene.jakobsen
    if props.use_scene_gravity:
        g = np.array(scene.gravity) if scene.use_gravity else np.zeros(3)
    else:
        g = np.array(props.gravity)
    magnitude = float(np.linalg.norm(g))
    return magnitude if math.isfinite(magnitude) and magnitude > 0.0 else 9.81


def _enable_rigid(obj):
    j = obj.jakobsen
    if j.type != 'RIGID_BODY':
        j.type = 'RIGID_BODY'
    j.enabled = True
    return j.rigid_body


def _user_mass(rb) -> bool:
    return rb.use_density or abs(rb.mass - DEFAULT_MASS) > 1e-9


def _wheel_suspensions():
    """(Empty, its connector settings) of every Wheel Suspension in the file that holds a wheel."""
    for obj in bpy.data.objects:
        if obj.type != 'EMPTY' or not takes_part(obj) or object_settings(obj).type != 'CONNECTOR':
            continue
        c = object_settings(obj).connector
        if c.connector_type == 'WHEEL_SUSPENSION' and c.object_b is not None:
            yield obj, c


def _wheel_connectors(chassis) -> dict[str, bpy.types.Object]:
    """The chassis' Wheel Suspension connectors, by the name of their Object B."""
    out: dict[str, bpy.types.Object] = {}
    for obj, c in _wheel_suspensions():
        if c.object_a == chassis:
            out.setdefault(c.object_b.name, obj)
    return out


def _connector_empty(context, chassis, name: str, existing=None):
    if existing is not None:
        return existing
    empty = bpy.data.objects.new(name, None)
    collection = chassis.users_collection[0] if chassis.users_collection else context.scene.collection
    collection.objects.link(empty)
    settings = object_settings(empty)
    settings.enabled = True
    settings.type = 'CONNECTOR'
    return empty


def build_vehicle(context, plan: VehiclePlan, *, drive: str | None = None) -> dict:
    """Rig the plan's chassis and wheels (see the module's docstring); returns what was made."""
    chassis = bpy.data.objects[plan.chassis]
    layout = plan.layout
    view_layer = context.view_layer
    for obj in list(context.selected_objects):
        obj.select_set(False)
    sources = [bpy.data.objects[name] for name in plan.sources]
    wheel_names = set(plan.sources)

    # Wheel objects: animation out of the way, single user, free of simulated parents, split.
    pieces = []  # (object, source name)
    nodes = {}  # source name -> what it hung from (an imported wheel's node, the chassis), if anything
    for obj in sources:
        if obj.parent is not None:
            nodes[obj.name] = obj.parent
        detached = _detach_action(obj)
        data = obj.data  # a mesh: plan_vehicle takes meshes only
        if data is not None and data.users > 1:
            obj.data = data.copy()
        if _simulated_ancestor(obj, wheel_names, plan.chassis) is not None:
            _keep_world(obj)
        view_layer.objects.active = obj
        split = _split(context, obj)
        for piece in split:
            if detached is not None:
                _stash(piece, detached)
            pieces.append((piece, obj.name))

    # Match each piece to its planned wheel (the same vertices: the same hub).
    planned_hubs = np.array([p.wheel.hub for p in plan.wheels])
    matched: list[tuple[bpy.types.Object, Wheel] | None] = [None] * len(plan.wheels)
    by_source: dict[str, list[tuple[int, bpy.types.Object]]] = {}
    for piece, source in pieces:
        world, _ = _mesh_world(piece)
        wheel = wheel_geometry(world, where=f"wheel '{piece.name}'")
        k = int(np.argmin(np.linalg.norm(planned_hubs - wheel.hub, axis=1)))
        matched[k] = (piece, wheel)
        by_source.setdefault(source, []).append((k, piece))
    for source, members in by_source.items():
        if len(members) < 2:
            continue
        labels = [(_axle_label(layout, k), "L" if layout.on_left[k] else "R") for k, _ in members]
        for (k, piece), name in zip(members, _piece_names(source, labels), strict=True):
            piece.name = name
            if piece.data is not None:  # always: a mesh split off the wheel's
                piece.data.name = piece.name
    wheels = [m for m in matched if m is not None]
    if len(wheels) != len(matched):  # the split pieces are the planned wheels' vertices: never seen
        raise RigError(f"chassis '{plan.chassis}': {len(matched) - len(wheels)} of its planned wheels are not among "
                       "the split wheel objects")

    # Re-base, enable and connect each wheel.
    g = _gravity(context.scene)
    vehicle = object_settings(chassis).vehicle
    existing = _wheel_connectors(chassis)
    connectors = []
    for k, (piece, wheel) in enumerate(wheels):
        axle_left = wheel.axle if wheel.axle @ layout.lateral >= 0 else -wheel.axle
        _rebase(piece, wheel.hub, _frame(axle_left, layout.up))
        rb = _enable_rigid(piece)
        rb.dynamic = 'ON'
        rb.collision_shape = 'CYLINDER'
        rb.friction = vehicle.wheel_friction
        if not _user_mass(rb):
            rb.mass = WHEEL_DENSITY * wheel.volume
        empty = _connector_empty(context, chassis, f"{piece.name} Suspension", existing.get(piece.name))
        empty.empty_display_type = 'ARROWS'
        empty.empty_display_size = wheel.radius
        frame = np.eye(4)
        frame[:3, :3], frame[:3, 3] = _connector_frame(axle_left, layout.up), wheel.hub
        empty.parent = None
        empty.matrix_world = Matrix(frame.tolist())
        c = object_settings(empty).connector
        c.connector_type = 'WHEEL_SUSPENSION'
        c.object_a, c.object_b = chassis, piece
        c.ignore_collisions = True
        connectors.append(empty)
    _carry_round_parts(wheels, pieces, nodes)

    # The chassis and the vehicle's settings.
    rb = _enable_rigid(chassis)
    if not _user_mass(rb):
        rb.mass = CHASSIS_DENSITY * float(np.prod(plan.chassis_extent))
    chassis_mass = float(rb.mass) if not rb.use_density else rb.density * float(np.prod(plan.chassis_extent))
    wheel_mass = sum(float(object_settings(w).rigid_body.mass) for w, _ in wheels)
    total = chassis_mass + wheel_mass
    n = len(wheels)
    radii = np.array([w.radius for _, w in wheels])
    front = np.asarray(layout.front)
    rerun = vehicle.enabled  # a vehicle already: the settings below may be the user's tuning
    vehicle.enabled = True
    vehicle.forward_axis = layout.forward_axis
    if drive is not None:
        vehicle.drive = drive
    derived = {}
    for axle, on_axle in (("front", front), ("rear", ~front)):
        r = float(radii[on_axle].mean()) if on_axle.any() else float(radii.mean())
        travel = TRAVEL_PER_RADIUS * r
        stiffness = (chassis_mass * g / n) / (SAG_SHARE * travel)
        derived[f"{axle}_suspension_rest"] = 0.0
        derived[f"{axle}_suspension_travel"] = travel
        derived[f"{axle}_suspension_stiffness"] = stiffness
        derived[f"{axle}_suspension_damping"] = 2.0 * DAMPING_RATIO * math.sqrt(stiffness * chassis_mass / n)
    r = float(radii.mean())
    derived["motor_torque"] = total * g * MOTOR_GRIP * r
    derived["brake_torque"] = BRAKE_GRIP * total * g * r / n
    # Running it again re-derives these from the masses (what a user re-runs it for after changing
    # a mass or moving the wheels); values the user had set otherwise are named with their old
    # value, so that a tuned Motor Torque is not lost without a word.
    reset = []
    for name, value in derived.items():
        old = float(getattr(vehicle, name))
        setattr(vehicle, name, value)
        new = float(getattr(vehicle, name))  # as stored (a float property holds 32 bits)
        if rerun and abs(old - new) > 1e-4 * max(abs(old), abs(new)) + 1e-9:
            reset.append(f"{_setting_label(vehicle, name)} {_number(old)} -> {_number(new)}")

    for obj in [chassis] + [w for w, _ in wheels] + connectors:
        obj.select_set(True)
    view_layer.objects.active = chassis
    return {"chassis": chassis, "wheels": [w for w, _ in wheels], "connectors": connectors,
            "chassis_mass": chassis_mass, "total_mass": total, "reset": reset}


def _number(value: float) -> str:
    """3 significant figures, thousands separated: 1,201, 359, 0.34, 0.0021."""
    return f"{value:,.0f}" if abs(value) >= 100.0 else f"{value:.3g}"


def _setting_label(vehicle, name: str) -> str:
    """The panel's label of a vehicle setting: 'Motor Torque', 'Front Stiffness'."""
    label = vehicle.bl_rna.properties[name].name
    axle = name.split("_", 1)[0]
    return f"{axle.title()} {label}" if axle in ("front", "rear") else label


def _axle_label(layout: Layout, k: int) -> str:
    count = layout.axle_count
    a = int(layout.axle_of[k])
    if count == 1:
        return "M"
    return "F" if a == 0 else ("R" if a == count - 1 else f"M{a}")


def _summary(made: dict, plan: VehiclePlan) -> str:
    layout = plan.layout
    wheels = made["wheels"]
    front = [w.name for w, f in zip(wheels, layout.front, strict=True) if f]
    rear = [w.name for w, f in zip(wheels, layout.front, strict=True) if not f]
    axis = next(item[1] for item in AXIS_ITEMS if item[0] == layout.forward_axis)
    text = (f"Vehicle '{made['chassis'].name}': {len(wheels)} wheels (front: {', '.join(front) or 'none'}; "
            f"rear: {', '.join(rear)}), forward {axis}, chassis {_number(made['chassis_mass'])} kg, "
            f"{_number(made['total_mass'])} kg in all")
    if plan.skipped:
        text += f"; not wheels: {', '.join(plan.skipped)}"
    return text


# -- operators --------------------------------------------------------------------------------------

_FORWARD_ITEMS = (('AUTO', "Automatic", "The chassis-local axis along the wheelbase, at the end that is "
                                        "Blender's front (-Y, -X) or glTF's (+Z)"),) + tuple(AXIS_ITEMS)


def _names_list(text: str, what: str) -> list:
    out: list[bpy.types.Object] = []
    for name in (n.strip() for n in text.split(",")):
        if not name:
            continue
        obj = bpy.data.objects.get(name)
        if obj is None:
            raise RigError(f"{what} '{name}' is not an object of this file")
        out.append(obj)
    return out


class _InObjectMode:
    bl_options: set[OperatorTypeFlagItems] = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return context.mode == 'OBJECT'


class JAKOBSEN_OT_vehicle_create(_InObjectMode, Operator):
    """Rig the active mesh as a car's chassis and the selected meshes as its wheels (chassis alone: its children)"""

    bl_idname = "jakobsen.vehicle_create"
    bl_label = "Create Vehicle"

    forward_axis: EnumProperty(
        name="Forward", description="The chassis' axis that points to its front",
        items=_FORWARD_ITEMS, default='AUTO')
    chassis: StringProperty(
        name="Chassis", description="For scripts: the chassis' object name (empty: the active object)",
        default="", options={'HIDDEN', 'SKIP_SAVE'})
    wheels: StringProperty(
        name="Wheels", description="For scripts: the wheels' object names, separated by commas (empty: the "
                                   "selected meshes other than the chassis, or the chassis' children)",
        default="", options={'HIDDEN', 'SKIP_SAVE'})

    def execute(self, context):
        try:
            if self.chassis:
                chassis = _names_list(self.chassis, "chassis")
                if len(chassis) != 1:
                    raise RigError("name one chassis")
                chassis = chassis[0]
            else:
                chassis = context.active_object
            if self.wheels:
                wheel_objects = _names_list(self.wheels, "wheel")
            else:
                others = sorted((o for o in context.selected_objects if o != chassis), key=lambda o: o.name)
                wheel_objects = others or None
            plan = plan_vehicle(context, chassis, wheel_objects,
                                forward_axis=None if self.forward_axis == 'AUTO' else self.forward_axis)
            _check_forward(plan)
        except RigError as error:
            self.report({'ERROR'}, f"Create Vehicle: {error}; nothing was changed")
            return {'CANCELLED'}
        made = build_vehicle(context, plan)
        self.report({'INFO'}, _summary(made, plan))
        for warning in plan.warnings:
            self.report({'WARNING'}, f"Create Vehicle: {warning}")
        if made["reset"]:
            self.report({'WARNING'}, f"Create Vehicle: vehicle '{plan.chassis}': set from the masses again, replacing "
                                     f"what was set: {', '.join(made['reset'])} (Ctrl+Z to get them back)")
        return {'FINISHED'}


def _vehicle_forward(chassis) -> np.ndarray:
    return axis_vector(matrix(chassis.matrix_world), chassis.jakobsen.vehicle.forward_axis)


def _is_vehicle(obj) -> bool:
    return obj.type == 'MESH' and takes_part(obj) and obj.jakobsen.type == 'RIGID_BODY' \
        and obj.jakobsen.vehicle.enabled


class JAKOBSEN_OT_vehicle_hitch(_InObjectMode, Operator):
    """Hitch the selected trailer behind the active vehicle with a Ball and Socket (a trailer becomes a vehicle)"""

    bl_idname = "jakobsen.vehicle_hitch"
    bl_label = "Hitch Trailer"

    def execute(self, context):
        car = context.active_object
        try:
            if car is None or not _is_vehicle(car):
                what = "nothing is active" if car is None else f"'{car.name}' is not a vehicle"
                raise RigError(f"make the towing car the active object; {what} (Create Vehicle first)")
            others = [o for o in context.selected_objects if o != car]
            if len(others) != 1 or others[0].type != 'MESH':
                raise RigError(f"select one trailer (a mesh) besides car '{car.name}', not "
                               f"{_names(others) if others else 'nothing'}")
            trailer = others[0]
            _check_editable([car, trailer])
            depsgraph = context.evaluated_depsgraph_get()
            forward = _vehicle_forward(car)
            car_world = evaluated_world_vertices(car, depsgraph)
            trailer_world = evaluated_world_vertices(trailer, depsgraph)
            if len(trailer_world) == 0:
                raise RigError(f"trailer '{trailer.name}' has no vertices")
            if float(trailer_world.mean(axis=0) @ forward) >= float(car_world.mean(axis=0) @ forward):
                raise RigError(f"trailer '{trailer.name}' is not behind car '{car.name}' (its front points along "
                               f"{car.jakobsen.vehicle.forward_axis}); move it behind the car")
            plan = None
            if not _is_vehicle(trailer):
                plan = plan_vehicle(context, trailer, None, min_wheels=2, forward_hint=forward)
                _check_forward(plan)
        except RigError as error:
            self.report({'ERROR'}, f"Hitch Trailer: {error}; nothing was changed")
            return {'CANCELLED'}
        if plan is not None:
            build_vehicle(context, plan, drive='NONE')
        rear = float((car_world @ forward).min())
        front = float((trailer_world @ forward).max())
        centre = 0.5 * (car_world.min(axis=0) + car_world.max(axis=0))
        point = centre + (0.5 * (rear + front) - centre @ forward) * forward
        existing = next((o for o in bpy.data.objects if o.type == 'EMPTY' and takes_part(o)
                         and o.jakobsen.type == 'CONNECTOR'
                         and o.jakobsen.connector.connector_type == 'BALL_SOCKET'
                         and o.jakobsen.connector.object_a == car and o.jakobsen.connector.object_b == trailer), None)
        hitch = _connector_empty(context, car, f"{car.name} Hitch", existing)
        hitch.empty_display_type = 'SPHERE'
        hitch.empty_display_size = 0.05 * float(np.ptp(car_world @ forward))
        hitch.parent = None
        hitch.matrix_world = Matrix.Translation(point.tolist())
        c = hitch.jakobsen.connector
        c.connector_type = 'BALL_SOCKET'
        c.object_a, c.object_b = car, trailer
        c.ignore_collisions = True
        for obj in list(context.selected_objects):
            obj.select_set(False)
        for obj in (car, trailer, hitch):
            obj.select_set(True)
        context.view_layer.objects.active = car
        self.report({'INFO'}, f"Trailer '{trailer.name}' hitched behind '{car.name}' at '{hitch.name}'"
                              + (" (made a vehicle without a motor)" if plan is not None else ""))
        for warning in plan.warnings if plan is not None else ():
            self.report({'WARNING'}, f"Hitch Trailer: {warning}")
        return {'FINISHED'}


classes = (JAKOBSEN_OT_vehicle_create, JAKOBSEN_OT_vehicle_hitch)
