"""Simulate on playback: a cache in memory, filled frame by frame as the timeline plays.

With ``Scene.jakobsen.use_simulate_on_playback`` on, the scene behaves like Blender's own Cloth
and Rigid Body with their point cache:
- on the first frame of the bake range the scene is read and the cache starts (``BakeJob`` kept in
  memory, never baked until asked);
- each frame change to the frame after the last one cached (Play, or stepping forward) computes
  that frame and keeps it; the viewport draws it (``previews``) in place of the objects;
- a jump back shows the cached frame; a jump forward past the cache computes nothing (the
  frames in between were never simulated) and shows the objects as they are;
- an edit to anything that takes part (a setting of the scene's or of an object's Jakobsen
  Physics, an enabled object moved or its mesh changed, a force field) marks the cache outdated:
  the frames after the current one are dropped, the ones up to it are kept (and shown as
  outdated), and playing on from there computes with the new settings; back on the first frame,
  an outdated cache starts again from scratch;
- Bake from Cache writes the cached frames as a bake would (``BakeJob.finish``: shape keys, PC2,
  keyframes), without simulating again; Free Cache drops it; the memory it takes is shown and
  bounded (``cache_memory_limit``): when full, playback stops simulating and says so.

The cache is Python memory, never part of the file: a save writes the file without it (and
``previews`` shows the hidden objects during the save), a file load or the add-on's unregister
frees it. Frame changes made by a running bake (``bake_job.is_busy``, a modal bake) are not the
user's and are let pass.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, cast

import bpy
import numpy as np
from bpy.app.handlers import persistent
from bpy.props import StringProperty
from bpy.types import Operator

from . import baking, previews
from .bake_job import BakeJob, describe_failure, is_busy
from .blender_io.reads import takes_part
from jakobsen_engine import State

_caches: dict[str, "PlaybackCache"] = {}  # scene name -> its cache


def cache_of(scene) -> "PlaybackCache | None":
    return _caches.get(scene.name) if scene is not None else None


def _nbytes(value, seen: set) -> int:
    """Memory held by numpy arrays inside ``value`` (a state, lists and dicts of arrays)."""
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, dict):
        return sum(_nbytes(v, seen) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v, seen) for v in value)
    if hasattr(value, "__dict__"):
        return _nbytes(vars(value), seen)
    return 0


# -- what takes part, as a fingerprint -----------------------------------------------------------

def _values(struct, out: list, depth: int = 0, path: str = "", animated: frozenset = frozenset()) -> None:
    """Every plain property value of ``struct`` (and of its nested property groups), in order.
    path: the struct's data path from its ID ("jakobsen.motor"); values at an ``animated`` path
    (an F-curve or a driver drives them) are left out: they change with the frame, and their
    animation is hashed instead (a motor's keyed Target Speed outdated the cache at every frame)."""
    for prop in struct.bl_rna.properties:
        key = prop.identifier
        if key == "rna_type":
            continue
        here = f"{path}.{key}" if path else key
        if prop.type == 'POINTER':
            value = getattr(struct, key)
            if isinstance(value, bpy.types.ID):
                # (by session_uid, not name: renaming the body a connector holds changes nothing)
                out.append((key, value.session_uid))
            elif value is not None and depth < 3 and isinstance(value, bpy.types.PropertyGroup):
                _values(value, out, depth + 1, here, animated)
            continue
        if prop.type == 'COLLECTION' or here in animated:
            continue
        value = getattr(struct, key)
        out.append((key, tuple(value) if getattr(prop, "is_array", False) else value))


def _fcurve_keys(fcurves, digest) -> None:
    for fc in fcurves or ():
        co = np.empty(len(fc.keyframe_points) * 2, np.float32)
        fc.keyframe_points.foreach_get("co", co)
        digest.update(f"{fc.data_path}[{fc.array_index}]{fc.mute}".encode())
        digest.update(co.tobytes())


def _action_fcurves(action) -> list:
    """Every F-curve of an action (all its slots' on 4.4+)."""
    from . import actions

    if not actions.SLOTTED:
        return list(getattr(action, "fcurves"))
    return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
            for fc in bag.fcurves]


# Force-field settings that share one stored value (Blender's RNA names it several ways): keying
# one animates the others (a keyed Strength changed Linear Drag with it, which outdated the cache at
# every frame). Found by setting each and reading the rest, on 4.2 and 5.3 alike.
_FIELD_ALIASES = ({"strength", "linear_drag", "guide_minimum"}, {"quadratic_drag", "harmonic_damping"},
                  {"flow", "inflow"}, {"size", "rest_length"})


def animated_paths(id_data) -> frozenset:
    """The data paths an ID's animation drives: its action's F-curves, its NLA strips' and its
    drivers'."""
    from . import actions

    ad = getattr(id_data, "animation_data", None)
    if ad is None:
        return frozenset()
    paths = {fc.data_path for fc in (actions.assigned_fcurves(id_data) or ())}
    paths |= {fc.data_path for track in ad.nla_tracks for strip in track.strips if strip.action is not None
              for fc in _action_fcurves(strip.action)}
    paths |= {fc.data_path for fc in ad.drivers}
    for group in _FIELD_ALIASES:
        if any(f"field.{name}" in paths for name in group):
            paths |= {f"field.{name}" for name in group}
    return frozenset(paths)


def _animation(id_data, digest) -> bool:
    """Hash what animates ``id_data``: its action's keys, its NLA strips (their actions' keys,
    frames, blending, mute) and its drivers (expressions and targets); returns whether anything
    does. (The values they drive change with the frame and are left out: an object animated by
    NLA strips or a driver alone has no action, and its matrix outdated the cache at every frame.)"""
    from . import actions

    ad = getattr(id_data, "animation_data", None)
    if ad is None:
        digest.update(b"-")
        return False
    animated = False
    if ad.action is not None:
        _fcurve_keys(actions.assigned_fcurves(id_data), digest)
        animated = True
    for track in ad.nla_tracks:
        digest.update(repr((track.mute, track.is_solo)).encode())
        for strip in track.strips:
            digest.update(repr((strip.frame_start, strip.frame_end, strip.blend_type, strip.influence, strip.mute,
                                strip.repeat, strip.scale, strip.extrapolation)).encode())
            if strip.action is not None and not strip.mute and not track.mute:
                _fcurve_keys(_action_fcurves(strip.action), digest)
                animated = True
    for fc in ad.drivers:
        driver = fc.driver
        targets = [(v.type, [(t.id.session_uid if t.id is not None else None, t.data_path, t.transform_type,
                              t.bone_target) for t in v.targets]) for v in driver.variables]
        digest.update(repr((fc.data_path, fc.array_index, fc.mute, driver.type, driver.expression,
                            targets)).encode())
        animated = animated or not fc.mute
    return animated


_TRANSFORM_CHANNELS = ("location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale",
                       "delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale")


def _transform(obj, digest) -> None:
    """Hash where the object is: its animation if it is animated, else its matrix; then its
    constraints, and its parent's the same way up the chain (a crate under a layout Empty moved
    2 m played its old fall from the cache)."""
    depth = 0
    while obj is not None and depth < 64:
        _animation(obj, digest)
        # The channels no animation drives (a shelf keyed to turn, moved by hand: its location).
        animated = animated_paths(obj)
        digest.update(repr([(name, tuple(getattr(obj, name))) for name in _TRANSFORM_CHANNELS
                            if name not in animated] + [obj.rotation_mode]).encode())
        digest.update(repr([(c.type, c.mute, c.influence, getattr(getattr(c, "target", None), "session_uid", None))
                            for c in obj.constraints]).encode())
        digest.update(repr((obj.parent_type, obj.parent_bone)).encode())
        digest.update(np.array(obj.matrix_parent_inverse, np.float64).tobytes())
        obj, depth = obj.parent, depth + 1


def fingerprint(scene, view_layer) -> str:
    """A digest of everything the simulation reads that the user can edit: the scene's settings,
    and of each object taking part (and each force field) its settings, its transform or its
    animation, its parents' the same way, and its mesh. Values that change with the frame (an
    animated object's matrix, a keyed setting) are left out; their animation is in."""
    digest = hashlib.sha1()
    values: list = [scene.render.fps, scene.render.fps_base, tuple(scene.gravity), scene.use_gravity,
                    scene.jakobsen.frame_range()]
    _values(scene.jakobsen, values, 0, "jakobsen", animated_paths(scene))
    digest.update(repr(values).encode())
    # (By session_uid, not name: a rename changes nothing the simulation reads.)
    for obj in sorted(view_layer.objects, key=lambda o: o.session_uid):
        field = obj.field is not None and obj.field.type != 'NONE'
        if not (takes_part(obj) or field):
            continue
        animated = animated_paths(obj)
        values = [obj.session_uid, obj.type, obj.parent.session_uid if obj.parent else None]
        if takes_part(obj):
            _values(obj.jakobsen, values, 0, "jakobsen", animated)
        if field:
            _values(obj.field, values, 0, "field", animated)
        digest.update(repr(values).encode())
        _transform(obj, digest)
        if obj.type == 'MESH':
            mesh = obj.data
            co = np.empty(len(mesh.vertices) * 3, np.float32)
            mesh.vertices.foreach_get("co", co)
            digest.update(co.tobytes())
            digest.update(repr((len(mesh.edges), len(mesh.polygons), [m.name for m in obj.modifiers],
                                [g.name for g in obj.vertex_groups])).encode())
    return digest.hexdigest()


# -- the cache -------------------------------------------------------------------------------------

class PlaybackCache:
    """The frames simulated so far of one scene: a ``BakeJob`` that is stepped one frame per frame
    change, and the solver state of every frame it computed (to go on from any of them after an
    edit, and to draw it)."""

    def __init__(self, scene_name: str):
        self.scene_name = scene_name
        self.job: BakeJob | None = None
        self.states: dict[int, State] = {}
        self.outdated = False
        self.outdated_at: int | None = None  # the frame of the first edit since the cache started
        self.needs_new_solver = False  # an edit since the last frame: the next one is read afresh
        self.fingerprint = ""
        self.message = ""  # why playback does not simulate now (shown in the panel)
        self.memory_full = False
        self.seen_frame: int | None = None  # the frame last handled
        self._tris: dict[str, tuple[np.ndarray | None, np.ndarray]] = {}
        self._shown = False
        # Objects (names as at the start) baked from this cache one at a time: they show their
        # bake, so the cache neither draws nor hides them any more.
        self.written: set[str] = set()

    @property
    def key(self) -> str:
        return f"playback {self.scene_name}"

    @property
    def _job(self) -> BakeJob:
        """The job of a started cache (``start()``), for what only a started one does."""
        if self.job is None:
            raise RuntimeError("PlaybackCache: start() first")
        return self.job

    @property
    def frame_start(self) -> int:
        return self._job._sm.frame_start

    @property
    def frame_end(self) -> int:
        return self._job._sm.frame_end

    @property
    def last_frame(self) -> int:
        return self._job._frame

    @property
    def frames_cached(self) -> int:
        return len(self.states)

    def has(self, frame: int) -> bool:
        return frame in self.states

    def memory_bytes(self) -> int:
        if self.job is None:
            return 0
        seen: set = set()
        return (_nbytes(self.states, seen) + _nbytes(self.job._results, seen) + _nbytes(self.job._poses, seen)
                + _nbytes(self.job._spins, seen))

    def start(self, context) -> None:
        """Read the scene and keep its first frame (the objects at rest)."""
        scene = context.scene
        job = BakeJob(scene.name)
        job.start(context)
        self.job = job
        self.states = {job._frame: copy.deepcopy(job._state)}
        self.written = set()
        self.outdated, self.outdated_at, self.needs_new_solver = False, None, False
        self.fingerprint = fingerprint(scene, context.view_layer)
        self.message = ""
        self.memory_full = False
        self._read_triangles(context)

    def _read_triangles(self, context) -> None:
        depsgraph = context.evaluated_depsgraph_get()
        self._tris = {}
        sm = self._job._sm
        for d in sm.deformables:
            co, tris = previews.triangles_of(bpy.data.objects[d.object_name], depsgraph)
            if len(co) == d.vertex_count:
                self._tris[d.object_name] = (None, tris)
        for b in sm.bodies:
            if b.keyed:
                self._tris[b.object_name] = previews.triangles_of(bpy.data.objects[b.object_name], depsgraph)

    def step(self, context) -> None:
        """Compute the frame after the last one cached."""
        limit = context.scene.jakobsen.cache_memory_limit * 1024 * 1024
        if self.memory_bytes() >= limit:
            self.memory_full = True
            self.message = (f"the cache is full ({self.memory_bytes() / 2**20:.1f} MB of the {limit // 2**20} MB "
                            "Memory Limit): raise the limit, or Bake")
            return
        if self.needs_new_solver:
            # An edit since the last frame: the scene is read again, the frames so far kept.
            old = self._job
            frame = old._frame
            job = BakeJob(self.scene_name)
            job.start(context)
            job.resume_from(old, frame, copy.deepcopy(self.states[frame]))
            old.cancel()
            self.job, self.needs_new_solver = job, False
            self._read_triangles(context)
        job = self._job
        job.step()
        self.states[job._frame] = copy.deepcopy(job._state)

    def mark_outdated(self, frame: int) -> None:
        """An edit on ``frame``: the frames after it go, the ones up to it stay (outdated)."""
        self.outdated = True
        if self.outdated_at is None or frame < self.outdated_at:
            self.outdated_at = frame
        job = self._job
        keep_to = min(max(frame, self.frame_start), job._frame)
        for f in [f for f in self.states if f > keep_to]:
            del self.states[f]
        if keep_to < job._frame:
            keep = keep_to - self.frame_start + 1
            job._results = {n: v[:keep] for n, v in job._results.items()}
            job._poses = {n: v[:keep] for n, v in job._poses.items()}
            job._spins = {n: v[:keep] for n, v in job._spins.items()}
            job.frame = keep_to
            job.state = copy.deepcopy(self.states[keep_to])
        self.needs_new_solver = True
        self.memory_full = False

    def geometry(self, frame: int | None) -> previews.Geometry:
        """What the viewport draws on ``frame`` (a cached one; none when there is no scene)."""
        if frame is None:
            return {}
        state = self.states.get(frame)
        if state is None:
            return {}
        job = self._job
        sm = job._sm
        out = {}
        for d in sm.deformables:
            if d.object_name in self._tris and d.object_name not in self.written:
                out[d.object_name] = (state.positions[d.particles], self._tris[d.object_name][1])
        k = frame - sm.frame_start
        for name, poses in job._poses.items():
            if name in self._tris and name not in self.written and k < len(poses):
                local, tris = self._tris[name]
                if local is None:  # (only a deforming object's entry has none; those are drawn above)
                    continue
                m = poses[k]
                out[name] = (local @ m[:3, :3].T.astype(np.float32) + m[:3, 3].astype(np.float32), tris)
        return out

    def show(self, context, frame: int | None) -> None:
        """Draw ``frame`` if it is cached (the objects it stands for hidden); else draw nothing."""
        if frame is None or not self.has(frame):
            if self._shown:
                previews.release(self.key)
                self._shown = False
            return
        if not self._shown:
            objects = [obj for obj in (self._job._object(name) for name in self._tris if name not in self.written)
                       if obj is not None]
            previews.show(self.key, lambda: self.geometry(self._frame()), hide=objects,
                          view_layer=context.view_layer)
            self._shown = True
        else:
            previews._redraw()

    def objects(self) -> list[str]:
        """The names (as at the start) of the objects the cache can bake: cloths, soft bodies and the
        rigid bodies the solver moves (also those it cannot draw, such as a mesh whose modifiers
        change its vertex count)."""
        return self._job.objects()

    def redraw_without(self, context, written=(), unwritten=()) -> None:
        """Objects were baked from the cache (``written``) or their bake freed (``unwritten``): draw
        and hide again what the cache stands for now. The bake is the cache's own output, not an
        edit of what the simulation reads, so the cache is not outdated by it."""
        self.written |= set(written)
        self.written -= set(unwritten)
        previews.release(self.key)
        self._shown = False
        self.fingerprint = fingerprint(context.scene, context.view_layer)
        self.show(context, context.scene.frame_current)

    def _frame(self) -> int | None:
        scene = bpy.data.scenes.get(self.scene_name)
        return scene.frame_current if scene is not None else None

    def free(self) -> None:
        previews.release(self.key)
        self._shown = False
        if self.job is not None and not self.job._ended:
            self.job.cancel()
        self.job, self.states = None, {}


def free(scene_name: str) -> bool:
    cache = _caches.pop(scene_name, None)
    if cache is None:
        return False
    cache.free()
    return True


def check_edits(scene, view_layer, frame: int) -> bool:
    """Whether what takes part changed since the cache last looked; if so the cache is outdated
    from ``frame`` (the frame the edit was made on) on."""
    cache = _caches.get(scene.name)
    if cache is None or cache.job is None:
        return False
    now = fingerprint(scene, view_layer)
    if now == cache.fingerprint:
        return False
    cache.fingerprint = now
    cache.mark_outdated(frame)
    return True


def _on_frame(scene, context) -> None:
    """The frame changed to ``scene.frame_current``: show it, compute it, or (re)start the cache."""
    props = scene.jakobsen
    frame = scene.frame_current
    start, end = props.frame_range()
    cache = _caches.get(scene.name)
    # A script's edit tags nothing for the depsgraph: the edit is found here, made on the frame
    # last shown.
    if cache is not None and cache.job is not None:
        seen = cache.seen_frame if cache.seen_frame is not None else frame
        check_edits(scene, context.view_layer, seen)
        cache.seen_frame = frame
    if cache is not None and cache.job is not None and (cache.frame_start, cache.frame_end) != (start, end):
        free(scene.name)
        cache = None
    if frame <= start:
        if cache is None or cache.outdated or cache.job is None:
            if cache is not None:
                free(scene.name)
            cache = _caches[scene.name] = PlaybackCache(scene.name)
            cache.seen_frame = frame
            if not bpy.app.background and not bpy.app.timers.is_registered(_watch):
                bpy.app.timers.register(_watch, first_interval=WATCH_SECONDS, persistent=True)
            if baking.baked_objects(scene):
                cache.message = "the scene has a bake: Free Bake to simulate on playback"
                return
            try:
                cache.start(context)
            except Exception as error:
                cache.free()
                cache.message = describe_failure(error)
                return
        cache.show(context, frame)
        return
    if cache is None or cache.job is None:
        return
    if not cache.has(frame) and frame == cache.last_frame + 1 and frame <= cache.frame_end:
        try:
            cache.step(context)
        except Exception as error:
            cache.message = f"frame {frame} could not be computed: {describe_failure(error)}"
            cache.show(context, None)
            return
        if cache.has(frame):
            cache.message = ""
    elif not cache.has(frame) and frame > cache.last_frame + 1 and not cache.memory_full:
        cache.message = (f"frame {frame} is not cached: the cache holds frames {cache.frame_start}-"
                         f"{cache.last_frame}; play on from frame {cache.last_frame} to simulate")
    cache.show(context, frame)


def _context_for(scene):
    """A context whose scene is ``scene`` (a frame change of a scene in no window: the first one's)."""
    context = bpy.context
    if context.scene == scene and context.view_layer is not None:
        return context
    return None


_guard = [False]

# The frame is shown (and computed) before Blender evaluates it: frame_change_pre, not _post.
# Showing a cached frame hides the object it stands for (its view-layer hide flag), and Blender 5.2
# and 5.3 crash (SIGSEGV, after the handler returns) when that flag changes in frame_change_post;
# in frame_change_pre it is part of the frame's own evaluation, on every version. Nothing here
# needs the new frame evaluated: the animation the solver follows was sampled when the cache started.
@persistent
def _frame_change_pre(scene, depsgraph=None) -> None:
    if _guard[0] or is_busy() or not scene.jakobsen.use_simulate_on_playback:
        return
    from .operators.bake import bake_running

    if bake_running() is not None:
        return
    context = _context_for(scene)
    if context is None:
        return
    _guard[0] = True
    try:
        _on_frame(scene, context)
    finally:
        _guard[0] = False


@persistent
def _depsgraph_update_post(scene, depsgraph=None) -> None:
    if _guard[0] or is_busy():
        return
    cache = _caches.get(scene.name)
    if cache is None or cache.job is None:
        return
    context = _context_for(scene)
    if context is None:
        return
    relevant = depsgraph is None or any(
        isinstance(u.id, (bpy.types.Scene, bpy.types.Object, bpy.types.Mesh, bpy.types.Action, bpy.types.Key))
        for u in depsgraph.updates)
    if not relevant:
        return
    _guard[0] = True
    try:
        if check_edits(scene, context.view_layer, scene.frame_current):
            cache.seen_frame = scene.frame_current
            cache.show(context, scene.frame_current)
    finally:
        _guard[0] = False


WATCH_SECONDS = 0.5


def _watch():
    """While a cache exists in a GUI session: look for edits twice a second, so the panel says
    "outdated" soon after a click in a panel (which, for the add-on's own settings, tags nothing
    that the depsgraph handler hears), not only at the next frame change."""
    if not _caches:
        return None
    if not (_guard[0] or is_busy()):
        context = bpy.context
        scene, view_layer = context.scene, context.view_layer
        if scene is not None and view_layer is not None and scene.name in _caches:
            _guard[0] = True
            try:
                if check_edits(scene, view_layer, scene.frame_current):
                    cache = _caches[scene.name]
                    cache.seen_frame = scene.frame_current
                    cache.show(context, scene.frame_current)
                    for window in context.window_manager.windows:
                        for area in window.screen.areas:
                            if area.type in {'PROPERTIES', 'VIEW_3D'}:
                                area.tag_redraw()
            except Exception:  # a timer must not raise into Blender's loop; the frame change looks again
                pass
            finally:
                _guard[0] = False
    return WATCH_SECONDS


def _property_changed(*_args) -> None:
    # (The message bus: a setting changed in the UI or by a script, seen at the end of the event.)
    scene = bpy.context.scene
    if scene is not None and bpy.context.view_layer is not None:
        _depsgraph_update_post(scene)


_msgbus_owner = object()


def _subscribe() -> None:
    from . import properties

    for cls in properties.classes:
        # (The stubs take only a Struct or Property as the key; Blender takes a PropertyGroup class too.)
        bpy.msgbus.subscribe_rna(key=cast(Any, cls), owner=_msgbus_owner, args=(), notify=_property_changed)


@persistent
def _load_pre(*_args) -> None:
    for name in list(_caches):
        free(name)


@persistent
def _load_post(*_args) -> None:
    bpy.msgbus.clear_by_owner(_msgbus_owner)  # (a file load drops the subscriptions)
    _subscribe()


def toggled(scene) -> None:
    """``use_simulate_on_playback`` changed: off frees the cache; on starts it if on the first frame."""
    if not scene.jakobsen.use_simulate_on_playback:
        free(scene.name)
        return
    _frame_change_pre(scene)


# -- operators --------------------------------------------------------------------------------------

class JAKOBSEN_OT_bake_from_cache(Operator):
    """Write the cached frames as the bake (shape keys, point caches or keyframes), without simulating again"""

    bl_idname = "jakobsen.bake_from_cache"
    bl_label = "Bake from Cache"
    bl_options = {'REGISTER', 'UNDO'}

    # (SKIP_SAVE: All from Cache after one object's Bake from Cache must not take its name again.)
    object_name: StringProperty(
        name="Object", description="Only this object's bake (the others stay cached); empty: every object",
        options={'SKIP_SAVE'})

    @classmethod
    def description(cls, context, properties):
        if properties.object_name:
            return (f"Write the cached frames of '{properties.object_name}' as its bake; the other objects stay "
                    "cached (they were simulated together)")
        return cls.__doc__

    @classmethod
    def poll(cls, context):
        from .operators.bake import RUNNING_MESSAGE, bake_running

        if bake_running() is not None:
            cls.poll_message_set(RUNNING_MESSAGE)
            return False
        cache = cache_of(context.scene)
        if cache is None or cache.job is None:
            cls.poll_message_set("Nothing is cached: turn on Simulate on Playback and play from the first frame")
            return False
        return True

    def execute(self, context):
        scene = context.scene
        cache = cache_of(scene)
        check_edits(scene, context.view_layer, scene.frame_current)
        if cache.outdated:
            self.report({'ERROR'}, f"The cache is outdated (edited on frame {cache.outdated_at}): Free Cache and play "
                                   "again from the first frame, or Bake")
            return {'CANCELLED'}
        if not cache.job.done:
            self.report({'ERROR'}, f"The cache holds frames {cache.frame_start}-{cache.last_frame} of "
                                   f"{cache.frame_start}-{cache.frame_end}: play to frame {cache.frame_end} first, "
                                   "or Bake")
            return {'CANCELLED'}
        if self.object_name:
            obj = bpy.data.objects.get(self.object_name)
            name = cache.job.name_at_start(obj) if obj is not None else None
            if name is None or name not in cache.objects():
                self.report({'ERROR'}, f"'{self.object_name}' is not in the cache (only cloths, soft bodies and "
                                       "moving rigid bodies that took part when it started are)")
                return {'CANCELLED'}
            only = {name}
        else:
            only = set(cache.objects()) - cache.written
        previews.release(cache.key)
        cache._shown = False
        _guard[0] = True  # (the bake's own writes are not edits for the handlers to see)
        try:
            summary = cache.job.finish(only=only)
        except Exception as error:
            self.report({'ERROR'}, f"Could not write the bake: {describe_failure(error)}")
            return {'CANCELLED'}
        finally:
            _guard[0] = False
        for warning in cache.job.warnings:
            self.report({'WARNING'}, warning)
        if set(cache.objects()) <= cache.written | only:
            free(scene.name)  # every object is baked: nothing is left to draw from the cache
        else:
            cache.redraw_without(context, written=only)
        self.report({'INFO'}, summary.replace("Baked", "Baked from the cache", 1))
        return {'FINISHED'}


class JAKOBSEN_OT_free_cache(Operator):
    """Free the frames simulated on playback (the bake, if any, stays)"""

    bl_idname = "jakobsen.free_cache"
    bl_label = "Free Cache"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context):
        cache = cache_of(context.scene)
        if cache is None or cache.job is None:
            cls.poll_message_set("Nothing is cached")
            return False
        return True

    def execute(self, context):
        frames = cache_of(context.scene).frames_cached
        free(context.scene.name)
        self.report({'INFO'}, f"Freed {frames} cached frame{'s' * (frames != 1)}")
        return {'FINISHED'}


classes = (JAKOBSEN_OT_bake_from_cache, JAKOBSEN_OT_free_cache)

_HANDLERS = (("frame_change_pre", _frame_change_pre), ("depsgraph_update_post", _depsgraph_update_post),
             ("undo_post", _depsgraph_update_post), ("redo_post", _depsgraph_update_post),
             ("load_pre", _load_pre), ("load_post", _load_post))


def register() -> None:
    for cls in classes:
        bpy.utils.register_class(cls)
    for name, fn in _HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        if fn not in handlers:
            handlers.append(fn)
    _subscribe()


def unregister() -> None:
    if bpy.app.timers.is_registered(_watch):
        bpy.app.timers.unregister(_watch)
    bpy.msgbus.clear_by_owner(_msgbus_owner)
    for name in list(_caches):
        free(name)
    for name, fn in _HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        if fn in handlers:
            handlers.remove(fn)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
