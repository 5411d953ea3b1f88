"""Blender's scene -> the engine's model: ``build(context)``, the one entry point.

The work is split by what it touches: ``blender_io`` reads Blender data (bulk) and checks it,
``translate`` holds the pure conversions (numpy only, testable without Blender), and ``mapping``
turns each family of objects into engine calls (``bodies``: cloth, soft and rigid bodies,
colliders; ``connectors``: connector, spring and motor Empties; ``fields``: force fields).

``build(context)`` reads every object with ``jakobsen.enabled`` in the view layer, as it is on
the bake's first frame: evaluated meshes (modifiers applied) in world space, pin weights,
collider shapes fitted to the objects, and the transforms of animated objects on every frame of
the bake (sampled once, here, so that the solver never changes the scene's frame). It returns a
``SceneModel``: the engine ``Model``, the ``SolverSettings``, and which object is which.

Everything is read with ``foreach_get`` into numpy buffers, except vertex-group weights: Blender
(4.2 to 5.0) has no bulk access to them, so ``blender_io.reads.vertex_group_weights`` makes one
pass over the evaluated mesh's vertices, once per pinned cloth per bake (about 1 µs a vertex).

Rigid bodies (``RIGID_BODY``) become engine bodies: Dynamic On a dynamic body, Off a kinematic
body that follows its animation (pushing the others, never pushed back), Ghost a body the
solver moves that collides with nothing; a passive (Off) body with the Static Mesh shape, or
a flat one with the Automatic shape, becomes a triangle-mesh collider instead. The bake keys
the bodies the solver moves (``BodyBinding.keyed``): their pose composed with the object's
matrix on the first frame, so scale, parents and the rotation mode are kept.

Connector Empties (all ten types) become engine joints between the rigid bodies in Object A and
Object B (an empty slot is the world), at the Empty's origin with the Empty's axes (its rotation,
scale removed) as on the first frame; their limits, breaking and the wheel's suspension come
from the Connector panel. Spring Empties become springs between the origins of Object A and
Object B (an empty slot: the Empty's location). Motor Empties drive Object A about or along the
Empty's Z axis, relative to Object B or the world. Settings a user animates (the wheel's
steering angle, a motor's target) are sampled on every frame of the bake and interpolated
linearly in between (engine ``Track``s, as the motions of animated objects are).

A rigid body with Vehicle on (``Object.jakobsen.vehicle``) is a chassis: its wheels are the
bodies its Wheel Suspension connectors hold (it is their Object A), driven, braked and steered
by the engine's driver from the Vehicle settings (``mapping.vehicles``), which may be keyed.

Blender's own force fields (Add > Force Field) in the view layer act too, as Blender's Cloth and
Rigid Body read them: Wind, Force, Vortex, Turbulence, Harmonic and Drag, with their shape,
falloff and noise, keyed strengths sampled per frame (``mapping.fields``, docs/force_fields.md);
other field types are ignored with a warning naming them.

Bad input raises ``JakobsenError`` with a message naming the object; awkward but legal input
adds a line to ``SceneModel.warnings``. Reading changes nothing in the scene: the current frame
is restored, and a previous bake's output is hidden only while the meshes are read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from jakobsen_engine import JakobsenError, Model, ModelBuilder, SolverSettings
from jakobsen_engine.geometry.reproducible import matmul
from jakobsen_engine.geometry import quaternions as quat

from . import baking
from .blender_io.checks import (ROLE_NAMES, check_no_blender_physics, check_not_in_tweak_mode, check_not_linked,
                                check_numbers, describe, label, role_settings)
from .blender_io.reads import (deforms, disabled_in_viewports, enabled_objects, field_objects, instanced_only,
                                may_move, moved_unseen, sample_matrices, simulated_ancestor, takes_part,
                                viewport_disabled_collections)
from .mapping.bindings import BodyBinding, ColliderBinding, DeformableBinding
from .mapping.bodies import add_collider, add_deformable, add_rigid_body, centres, passing_through
from .mapping.connectors import add_empties, animated_settings, check_pairs, idle_pairs, sheared_empties
from .mapping.fields import add_force_field
from .mapping.vehicles import add_vehicles
from .mapping.vehicles import animated_settings as vehicle_settings
from .properties import types_for

DEFORMING = ('CLOTH', 'SOFT_BODY')


# -- what build returns -----------------------------------------------------------------------------

@dataclass
class SceneModel:
    """The model, how to step it, and which Blender object is which part of it."""

    model: Model
    settings: SolverSettings
    frame_start: int
    frame_end: int
    deformables: list[DeformableBinding]
    colliders: list[ColliderBinding]
    bodies: list[BodyBinding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    breakable: dict[str, str] = field(default_factory=dict)  # engine name -> "connector" or "spring"

    @property
    def frames(self) -> range:
        return range(self.frame_start, self.frame_end + 1)

    def time_of(self, frame: int) -> float:
        """Solver time (s) of a frame: 0 on the first frame of the bake."""
        return (frame - self.frame_start) / self.settings.frame_rate

    def frame_of(self, time: float) -> int:
        """The frame on which solver time ``time`` (s) falls: the first frame computed at or after it."""
        return self.frame_start + int(math.ceil(time * self.settings.frame_rate - 1e-6))

    def pinned_positions(self, frame: int):
        """(n, 3) world positions of the pinned and partly pinned particles on ``frame`` (where
        the pins are, and where the partial pins pull), or None if no pin moves."""
        moving = [d for d in self.deformables if d.animated and (len(d.pinned) or len(d.soft))]
        if not moving:
            return None
        pos = np.array(self.model.rest_positions)
        k = frame - self.frame_start
        for d in moving:
            for index, local, world in ((d.pinned, d.pinned_local, d.pinned_world),
                                        (d.soft, d.soft_local, d.soft_world)):
                if world is not None:  # on the deformed mesh (an armature, hooks, shape keys)
                    pos[index] = world[min(k, len(world) - 1)]
                    continue
                m = d.object_to_world[min(k, len(d.object_to_world) - 1)]
                pos[index] = local @ m[:3, :3].T + m[:3, 3]
        return pos

    def body_matrices(self, translations: np.ndarray, rotations: np.ndarray) -> dict[str, np.ndarray]:
        """matrix_world (4, 4) of every keyed body, from the solver's ``body_poses``: translation
        (B, 3) and rotation quaternion (B, 4) w x y z, the motion from the rest pose to now,
        composed with the object's rest matrix (so its scale stays as it was). All bodies in one
        product each frame, and none through BLAS (see ``geometry.reproducible``)."""
        keyed = [b for b in self.bodies if b.keyed]
        if not keyed:
            return {}
        k = np.array([b.index for b in keyed], dtype=np.int64)
        q = rotations[k]
        q = q / np.sqrt(q[:, 0] * q[:, 0] + q[:, 1] * q[:, 1] + q[:, 2] * q[:, 2] + q[:, 3] * q[:, 3])[:, None]
        motion = np.zeros((len(keyed), 4, 4))
        motion[:, :3, :3] = quat.to_matrix(q)
        motion[:, :3, 3] = translations[k]
        motion[:, 3, 3] = 1.0
        out = matmul(motion, np.stack([b.rest_matrix for b in keyed]))
        return {b.object_name: out[n] for n, b in enumerate(keyed)}

    def local_positions(self, binding: DeformableBinding, positions: np.ndarray, frame: int) -> np.ndarray:
        """A deformable's world positions (n, 3) on ``frame`` -> its object space (float64; what
        Blender stores is float32, checked by the bake)."""
        m = binding.world_to_local[min(frame - self.frame_start, len(binding.world_to_local) - 1)]
        return positions[binding.particles] @ m[:3, :3].T + m[:3, 3]


# -- build ------------------------------------------------------------------------------------------

def solver_settings(scene) -> SolverSettings:
    """The engine's settings from ``Scene.jakobsen`` and the scene (frame rate, gravity)."""
    props = scene.jakobsen
    check_numbers(props, f"scene '{scene.name}' (Scene > Jakobsen Physics)")
    if props.use_scene_gravity and scene.use_gravity and not all(math.isfinite(g) for g in scene.gravity):
        raise JakobsenError(f"scene '{scene.name}': its Gravity (Scene > Gravity) is not a finite number")
    if props.use_scene_gravity:
        gravity = tuple(scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0)
    else:
        gravity = tuple(props.gravity)
    settings = SolverSettings(frame_rate=scene.render.fps / scene.render.fps_base, substeps=props.substeps,
                              iterations="auto" if props.use_auto_iterations else props.iterations,
                              gravity=tuple(float(g) for g in gravity),
                              damping=float(props.damping), air_velocity=tuple(float(w) for w in props.wind),
                              sleeping=bool(props.use_deactivation), sleep_speed=float(props.deactivate_speed),
                              sleep_time=float(props.deactivate_time))
    try:
        settings.validate()
    except JakobsenError as error:
        # The engine names its own parameters ("air_velocity"); the user knows the panel's labels.
        field = error.setting
        if field is None or field not in _PANEL_PROPERTY:
            raise
        prop = _PANEL_PROPERTY[field]
        if field == "gravity" and props.use_scene_gravity:
            shown = "Gravity (Scene > Gravity)"
        elif prop is None:  # the frame rate, Blender's own setting
            shown = "Frame Rate (Output Properties > Format)"
        else:
            shown = f"{label(props, prop)} (Scene > Jakobsen Physics)"
        raise JakobsenError(f"scene '{scene.name}': its {shown} is out of the range the solver takes "
                            f"({error})") from None
    return settings


# The engine's settings and the Scene.jakobsen property each comes from.
_PANEL_PROPERTY = {"air_velocity": "wind", "gravity": "gravity", "damping": "damping", "substeps": "substeps",
                   "iterations": "iterations", "frame_rate": None, "sleep_speed": "deactivate_speed",
                   "sleep_time": "deactivate_time"}


def build(context, *, frame_range: tuple[int, int] | None = None) -> SceneModel:
    """Read the enabled objects of ``context.view_layer`` into a ``SceneModel``."""
    scene = context.scene
    start, end = frame_range if frame_range is not None else scene.jakobsen.frame_range()
    if end <= start:
        raise JakobsenError(f"bake frame range: the end frame ({end}) must come after the start frame ({start})")
    if scene.render.frame_map_old != scene.render.frame_map_new:
        # Blender samples the animation at stretched times while the bake keys scene frames, which
        # playback stretches again: an animated paddle ran ahead of the box it pushed, 1 m inside it.
        raise JakobsenError(f"scene '{scene.name}': its Time Stretching (Output Properties > Frame Range > Time "
                            f"Stretching: Old {scene.render.frame_map_old}, New {scene.render.frame_map_new}) "
                            "retimes the animation on playback, which a bake cannot follow; set Old and New "
                            "equal to bake (and retime the baked result after)")
    settings = solver_settings(scene)
    objects = enabled_objects(context)
    instanced = instanced_only(context)
    if not objects:
        raise JakobsenError("; ".join(["nothing to bake: no object has Jakobsen Physics enabled "
                                       "(Properties > Physics > Jakobsen Physics)"] + instanced))
    for obj in objects:
        if obj.jakobsen.type not in types_for(obj):
            raise JakobsenError(f"object '{obj.name}' ({obj.type.title()}) cannot be a "
                                f"{ROLE_NAMES[obj.jakobsen.type]}; meshes can be bodies, cloth or colliders, "
                                "Empties connectors, springs or motors")
        if obj.mode == 'EDIT':
            raise JakobsenError(f"{describe(obj)} is in Edit Mode; switch to Object Mode to bake")
        check_numbers(role_settings(obj), describe(obj))
        check_no_blender_physics(obj, scene)
        check_not_linked(obj, scene.jakobsen.output)
        check_not_in_tweak_mode(obj, scene.jakobsen.output)
        blocker = baking.free_blocker(obj, "bake again")  # (its previous bake is hidden while the scene is read)
        if blocker is not None:
            raise JakobsenError(blocker)
    warnings: list[str] = list(instanced)
    check_pairs(objects)
    warnings += idle_pairs(objects)
    warnings += sheared_empties(objects, context.evaluated_depsgraph_get())
    fields = field_objects(context)
    # Blender's own Collision modifier on an object that does not take part: what makes it a
    # collider for Blender's Cloth does nothing here (a cloth fell through such a table, silently).
    warnings += [f"object '{o.name}' has Blender's Collision modifier, which Jakobsen Physics does not read: "
                 "make it a Collider to collide with it (Physics > Jakobsen Physics)"
                 for o in sorted(context.view_layer.objects, key=lambda o: o.name)
                 if o.type == 'MESH' and not takes_part(o) and any(m.type == 'COLLISION' for m in o.modifiers)]

    meshes = [o for o in objects if o.type == 'MESH']
    frames = range(start, end + 1)
    original = (scene.frame_current, scene.frame_subframe)
    try:
        with baking.previous_bakes_hidden([o.name for o in meshes], warnings):
            off = viewport_disabled_collections()
            # A Collider disabled in viewports is left out, as Blender's Collision leaves it out
            # (what an artist turns off with the screen icon; it went on colliding).
            left_out = [o for o in meshes if o.jakobsen.type == 'COLLIDER' and disabled_in_viewports(o, scene, off)]
            warnings += [f"{describe(o)}: it is disabled in viewports (the screen icon, on it or on its collection), "
                         "so it is left out, as Blender's physics leaves it out; enable it in viewports to collide "
                         "with it (the eye can still hide it)" for o in left_out]
            meshes = [o for o in meshes if o not in left_out]
            moving = [o.name for o in meshes if may_move(o)]
            for o in meshes:
                if (o.name in moving or deforms(o)) and disabled_in_viewports(o, scene, off):
                    warnings.append(f"{describe(o)}: it is disabled in viewports (the screen icon, on it or on its "
                                    "collection), so Blender does not play its animation, drivers or modifiers while "
                                    "the bake reads it, and it takes part as it stands on the first frame; enable it "
                                    "in viewports (the eye can still hide it)")
            animated = animated_settings(objects)
            animated.update(vehicle_settings(objects))
            # Cloth whose pins ride on a deforming mesh (a cape on an armature): their vertices
            # are sampled on every frame, as the matrices are.
            # And so are colliders with Shape Mesh whose mesh deforms (a character a cape falls on).
            deforming = [o.name for o in meshes if deforms(o) and (
                (o.jakobsen.type in DEFORMING and o.jakobsen.cloth.pin_group)
                or (o.jakobsen.type == 'COLLIDER' and o.jakobsen.collider.shape == 'MESH'))]
            # Bodies the bake keys whose parent moves on its own animation: their keys are made
            # relative to where the parent is on each frame (``bodies.add_rigid_body``), for which
            # their own matrix_basis is sampled too (the parent frame is matrix_world times its
            # inverse, whatever the kind of parent: an object, a bone, a vertex).
            carried = [o.name for o in meshes if o.name in moving and o.parent is not None and may_move(o.parent)
                       and o.jakobsen.type == 'RIGID_BODY' and o.jakobsen.rigid_body.dynamic != 'OFF'
                       and simulated_ancestor(o) is None]
            tracks, sampled, sampled_vertices, bases = (
                sample_matrices(scene, context, moving, frames, animated, deforming, carried)
                if moving or animated or deforming else ({}, {}, {}, {}))
            scene.frame_set(start)
            depsgraph = context.evaluated_depsgraph_get()
            builder = ModelBuilder()
            warnings += moved_unseen([o for o in objects if o not in left_out], scene, off, depsgraph)
            deformables: list[DeformableBinding] = []
            colliders: list[ColliderBinding] = []
            bodies: list[BodyBinding] = []
            pending = []
            # Where what moves starts: a plane collider faces it (see ``bodies.facing_what_moves``).
            movers = centres([o for o in meshes if o.jakobsen.type in DEFORMING or (
                o.jakobsen.type == 'RIGID_BODY' and o.jakobsen.rigid_body.dynamic != 'OFF')], depsgraph)
            for obj in meshes:
                track = tracks.get(obj.name)
                if track is not None and np.allclose(track, track[:1], atol=1e-9):
                    track = None  # animated, but it does not move within the bake
                role = obj.jakobsen.type
                if role in DEFORMING:
                    pending.append(add_deformable(builder, obj, depsgraph, track, warnings))
                elif role == 'RIGID_BODY':
                    item = add_rigid_body(builder, obj, depsgraph, track, settings.frame_rate, warnings,
                                          basis_track=bases.get(obj.name), movers=movers)
                    if isinstance(item, BodyBinding):
                        bodies.append(item)
                    else:
                        colliders.append(item)
                else:
                    colliders.append(add_collider(builder, obj, depsgraph, track, settings.frame_rate, warnings,
                                                  deformed=sampled_vertices.get(obj.name), movers=movers))
            breakable = add_empties(builder, objects, depsgraph, bodies, colliders, sampled, settings.frame_rate,
                                     warnings)
            add_vehicles(builder, objects, depsgraph, bodies, sampled, settings.frame_rate, warnings)
            for obj in fields:
                add_force_field(builder, obj, depsgraph, warnings, frames=frames, frame_rate=settings.frame_rate)
            warnings += passing_through([o for o in meshes if o.jakobsen.type in DEFORMING], depsgraph)
    finally:
        scene.frame_set(original[0], subframe=original[1])

    if not pending and not any(b.keyed for b in bodies):
        raise JakobsenError("; ".join(["nothing to simulate: enable Jakobsen Physics on a cloth, a soft body or a "
                                       "rigid body with Dynamic On or Ghost (Properties > Physics > Jakobsen "
                                       "Physics)"] + instanced))
    warnings.extend(builder.warnings)
    model = builder.finalize()
    for name, role, handle, to_world, local in pending:
        pinned_mask = model.inverse_masses[handle.slice] == 0.0
        to_local = np.linalg.inv(to_world)
        world_track = sampled_vertices.get(name)
        if world_track is not None and world_track.shape[1] != handle.count:
            raise JakobsenError(f"'{name}': its evaluated mesh has {world_track.shape[1]} vertices during the bake "
                                f"but {handle.count} on its first frame")
        pinned_world = world_track[:, pinned_mask] if world_track is not None and np.any(pinned_mask) else None
        goals = model.goals.index
        soft = np.sort(goals[(goals >= handle.start) & (goals < handle.start + handle.count)])
        deformables.append(DeformableBinding(
            object_name=name, role=role, particles=handle.slice, vertex_count=handle.count,
            world_to_local=to_local, object_to_world=to_world,
            pinned=np.flatnonzero(pinned_mask) + handle.start, pinned_local=local[pinned_mask],
            pinned_world=pinned_world, soft=soft, soft_local=local[soft - handle.start],
            soft_world=world_track[:, soft - handle.start] if world_track is not None and len(soft) else None))
    return SceneModel(model=model, settings=settings, frame_start=start, frame_end=end,
                      deformables=deformables, colliders=colliders, bodies=bodies, warnings=warnings,
                      breakable=breakable)


