"""``jakobsen.bake`` and ``jakobsen.free_bake``, each for every object or (``object_name``) one.

A bake of one object simulates the scene as the full bake does (the objects act on each other,
so all of them are simulated) and writes only that object's result (``BakeJob.finish(only=...)``):
every other object keeps what it had (its bake, its animation, its shape keys), and the playback
cache stays, no longer drawing that object.

Invoked from the UI the bake is modal: on each TIMER event of a window-manager timer the
``BakeJob`` computes as many frames as fit ``TICK_BUDGET`` seconds (at least one), then the scene
moves to the last of them and the viewport draws it (``previews``: drawn, no stand-in objects),
so the bake runs at about the solver's speed and the viewport still answers several times a
second. Blender's progress indicator and the status bar show how far it is, with "Esc to
cancel". While it runs, Bake and Free Bake are greyed out (their poll says why), and a second
Bake is refused with that message. Executed from a script, the command line or in background
mode (where no timer events come) it runs the whole job at once.

Whatever goes wrong (a scene that cannot be baked, an unstable frame, or a fault of the add-on
itself: any exception), the job is cancelled, which leaves the scene as it was, and the error
is reported; the operator returns {'CANCELLED'}.
"""

from __future__ import annotations

import time

import bpy
from bpy.props import StringProperty
from bpy.types import Operator

from .. import baking, playback
from ..bake_job import BakeJob, busy, describe_failure

# Computing time per timer event: short enough that the viewport redraws and answers the mouse
# (and Esc) many times a second, long enough that the redraws cost a small part of the bake.
TICK_BUDGET = 0.030
# Where drawing is slow (software OpenGL: a redraw of the window can take 0.4 s), a fixed budget
# would let redraws take most of the wall time. So the budget grows to SOLVER_SHARE / (1 -
# SOLVER_SHARE) times what Blender spent between two ticks (the redraw, other events): then the
# solver has at least SOLVER_SHARE of the wall time. Up to MAX_TICK, so that Esc is still seen
# within about a second.
SOLVER_SHARE = 2 / 3
MAX_TICK = 1.0
TIMER_STEP = 0.005

_running: dict = {}  # while a modal bake runs: {"scene": its scene's name, "job": the BakeJob}
# The last modal bake's numbers: {"summary", "solver" (s), "wall" (s), "frames", "ticks"} (for the
# GUI test and a curious script; the report says the same).
last_bake: dict = {}
RUNNING_MESSAGE = "A Jakobsen bake is running (Esc in the 3D View cancels it)"


def bake_running() -> str | None:
    """The name of the scene a modal bake is running on, or None."""
    return _running.get("scene")


def _report_warnings(op, warnings) -> None:
    for warning in warnings:
        op.report({'WARNING'}, warning)


def _finish(op, context, job: BakeJob, elapsed: float, only: str | None = None) -> set[str]:
    """Write the bake (``only``: just this object, by its name at the job's start) and report what
    was baked, or why it could not be written."""
    scene = bpy.data.scenes.get(job.scene_name)
    cache = playback.cache_of(scene)
    if only is not None and scene is not None and cache is not None and cache.job is not None:
        # (An edit made before this is still an edit: the cache stays and must know of it.)
        playback.check_edits(scene, context.view_layer, scene.frame_current)
    try:
        with busy():  # (the bake's own writes are not edits for the playback handlers)
            summary = job.finish(elapsed=elapsed, only=None if only is None else {only})
    except OSError as error:  # a PC2 file that could not be written
        op.report({'ERROR'}, f"Could not write the bake: {error}; the scene was left as it was")
        return {'CANCELLED'}
    except Exception as error:
        op.report({'ERROR'}, f"Could not write the bake: {describe_failure(error)}")
        return {'CANCELLED'}
    # The status bar shows the last report alone, cut to its width: it starts by saying that the
    # warnings given when the bake started (the Info editor lists them) are there to be read.
    count = len(job.warnings)
    told = f"{count} warning{'s' * (count != 1)} (Info editor). " if count else ""
    op.report({'WARNING'} if count else {'INFO'}, told + summary)
    op._summary = summary
    if only is None:
        # The bake replaces what simulate on playback had cached (as Blender's point cache does).
        playback.free(job.scene_name)
    elif cache is not None and cache.job is not None:
        # One object baked: it shows its bake, the cache goes on drawing the others.
        obj = job._object(only)
        name = cache.job.name_at_start(obj) if obj is not None else None
        if name is not None and name in cache.objects():
            cache.redraw_without(context, written={name})
    return {'FINISHED'}


def _stopped(op, job: BakeJob, error: BaseException) -> set[str]:
    """A step failed: leave the scene as it was and say why."""
    job.cancel()
    op.report({'ERROR'}, f"Bake stopped at frame {job._frame + 1}: {describe_failure(error)}")
    return {'CANCELLED'}


class JAKOBSEN_OT_bake(Operator):
    """Simulate the objects with Jakobsen Physics over the bake frame range and store the result as animation"""

    bl_idname = "jakobsen.bake"
    bl_label = "Bake"
    bl_options = {'REGISTER', 'UNDO'}

    # (SKIP_SAVE: Bake All after the Bake of one object must not take that object's name again.)
    object_name: StringProperty(
        name="Object", description="Write only this object's bake (all objects are simulated, as they act on "
                                   "each other; the others are left as they are); empty: every object's",
        options={'SKIP_SAVE'})

    _job: BakeJob | None = None
    _only: str | None = None  # the one object to write (its name at the job's start), or None: all
    _timer = None
    _started_at = 0.0
    _ticks = 0
    _between: list = []  # seconds Blender spent between two ticks (drawing, other events)
    _tick_ended = None
    _summary = ""

    @classmethod
    def description(cls, context, properties):
        if properties.object_name:
            return (f"Simulate the objects with Jakobsen Physics (they act on each other) and store only "
                    f"'{properties.object_name}' as animation; the others are left as they are")
        return cls.__doc__

    @classmethod
    def poll(cls, context):
        if bake_running() is not None:
            cls.poll_message_set(RUNNING_MESSAGE)
            return False
        return context.scene is not None and context.view_layer is not None

    def _start(self, context, job: BakeJob) -> bool:
        """Start ``job``; a scene that cannot be baked, or an ``object_name`` the bake does not
        write, is reported and nothing is changed."""
        obj = None
        if self.object_name:
            obj = bpy.data.objects.get(self.object_name)
            if obj is None:
                self.report({'ERROR'}, f"No object '{self.object_name}' to bake")
                return False
        try:
            job.start(context)
        except Exception as error:  # start() has left the scene as it was
            self.report({'ERROR'}, describe_failure(error))
            return False
        self._only = None
        if obj is not None:
            name = job.name_at_start(obj)
            if name is None or name not in job.objects():
                job.cancel()
                self.report({'ERROR'}, f"'{obj.name}' has nothing to bake: only cloths, soft bodies and rigid "
                                       "bodies with Dynamic On or Ghost that take part are baked")
                return False
            self._only = name
        _report_warnings(self, job.warnings)
        return True

    def execute(self, context):
        if bake_running() is not None:  # (poll says so too; this is for a caller that skips it)
            self.report({'ERROR'}, RUNNING_MESSAGE)
            return {'CANCELLED'}
        job = BakeJob(context.scene.name)
        t0 = time.perf_counter()
        if not self._start(context, job):
            return {'CANCELLED'}
        try:
            while job.step():
                pass
        except Exception as error:
            return _stopped(self, job, error)
        except BaseException:  # KeyboardInterrupt in a script: clean up, then let it through
            job.cancel()
            raise
        return _finish(self, context, job, time.perf_counter() - t0, self._only)

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        if bake_running() is not None:
            self.report({'ERROR'}, RUNNING_MESSAGE)
            return {'CANCELLED'}
        # The scene follows the computed frames once per timer event (see modal), not per frame.
        job = BakeJob(context.scene.name, preview=True, follow_frames=False)
        self._started_at = time.perf_counter()
        if not self._start(context, job):
            return {'CANCELLED'}
        self._job = job
        self._ticks, self._between, self._tick_ended = 0, [], None
        _running.update(scene=context.scene.name, job=job)
        wm = context.window_manager
        self._timer = wm.event_timer_add(TIMER_STEP, window=context.window)
        wm.progress_begin(0, job.frame_count)
        wm.modal_handler_add(self)
        self._show_progress(context)
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        try:
            return self._modal(context, event)
        except BaseException as error:  # a fault of the add-on: the scene back as it was, and say so
            job = self._job
            if job is not None:
                job.cancel()
                self._end(context)
            self.report({'ERROR'}, f"Bake stopped: {describe_failure(error)}")
            return {'CANCELLED'}

    def _modal(self, context, event):
        job = self._job
        if event.type in {'ESC', 'RIGHTMOUSE'} and event.value == 'PRESS':
            job.cancel()
            self._end(context)
            self.report({'INFO'}, f"Bake cancelled at frame {job.frame}; nothing was changed")
            return {'CANCELLED'}
        if event.type != 'TIMER':
            return {'PASS_THROUGH'}
        t0 = time.perf_counter()
        self._ticks += 1
        if self._tick_ended is not None:
            self._between.append(t0 - self._tick_ended)
        budget = self.tick_budget()
        try:
            more = job.step()
            while more and time.perf_counter() - t0 < budget:
                more = job.step()
        except Exception as error:
            self._end(context)
            return _stopped(self, job, error)
        self._tick_ended = time.perf_counter()
        if more:
            # Animated colliders are seen where the solver had them on the frame drawn.
            job.scene.frame_set(job.frame)
            self._show_progress(context)
            return {'RUNNING_MODAL'}
        self._end(context)
        wall = time.perf_counter() - self._started_at
        result = _finish(self, context, job, wall, self._only)
        last_bake.clear()
        last_bake.update(summary=self._summary, solver=job.step_seconds, wall=wall, frames=job.frame_count,
                         ticks=self._ticks, result=sorted(result),
                         mean_gap=sum(self._between) / max(len(self._between), 1))
        return result

    def tick_budget(self) -> float:
        """Seconds of computing for this timer event (see SOLVER_SHARE): from the longest of the
        last three gaps between ticks, so that one quick gap does not shrink it."""
        gap = max(self._between[-3:], default=0.0)
        return min(max(TICK_BUDGET, gap * SOLVER_SHARE / (1.0 - SOLVER_SHARE)), MAX_TICK)

    def cancel(self, context):
        # Blender ends the operator itself (file load, window closed): leave the scene as it was.
        if self._job is not None:
            self._job.cancel()
            self._end(context)

    def _show_progress(self, context) -> None:
        job = self._job
        if job is None:  # (no bake running: nothing to show)
            return
        sm = job._sm
        context.window_manager.progress_update(job.frames_done)
        if job.compiling and job.frames_done <= 1:
            context.workspace.status_text_set(
                "Jakobsen bake: compiling the solver's kernels (the first bake after installing takes a few "
                "seconds longer; they are kept from then on)    Esc to cancel")
            return
        context.workspace.status_text_set(
            f"Jakobsen bake: frame {job.frame} of {sm.frame_start}-{sm.frame_end}, "
            f"{job.ms_per_frame:.1f} ms/frame    Esc to cancel")

    def _end(self, context) -> None:
        """The one clean-up of the modal UI (the job cleans up the scene itself)."""
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        self._job = None
        _running.clear()


class JAKOBSEN_OT_free_bake(Operator):
    """Remove the baked animation of every object in the scene and put back what was there before"""

    bl_idname = "jakobsen.free_bake"
    bl_label = "Free Bake"
    bl_options = {'REGISTER', 'UNDO'}

    # (SKIP_SAVE: Free All after the Free Bake of one object must not take that object's name again.)
    object_name: StringProperty(
        name="Object", description="Only this object's bake; empty: every object's in the scene",
        options={'SKIP_SAVE'})

    @classmethod
    def description(cls, context, properties):
        if properties.object_name:
            return f"Remove the baked animation of '{properties.object_name}' and put back what was there before"
        return cls.__doc__

    @classmethod
    def poll(cls, context):
        if bake_running() is not None:  # the running bake writes when it ends
            cls.poll_message_set(RUNNING_MESSAGE)
            return False
        return context.scene is not None

    def execute(self, context):
        scene = context.scene
        if self.object_name:
            obj = bpy.data.objects.get(self.object_name)
            if obj is None:
                self.report({'ERROR'}, f"No object '{self.object_name}' to free the bake of")
                return {'CANCELLED'}
            blocker = baking.free_blocker(obj)
            if blocker is not None:
                self.report({'ERROR'}, blocker)
                return {'CANCELLED'}
            if playback.cache_of(scene) is not None:  # (an edit made before this is still an edit)
                playback.check_edits(scene, context.view_layer, scene.frame_current)
            if not baking.free_bake(obj):
                self.report({'INFO'}, f"Nothing to free: '{obj.name}' has no Jakobsen bake")
                return {'CANCELLED'}
            # A bake written from the playback cache, freed: the cache shows that object again.
            cache = playback.cache_of(scene)
            name = cache.job.name_at_start(obj) if cache is not None and cache.job is not None else None
            if name is not None and name in cache.written:
                cache.redraw_without(context, unwritten={name})
            self.report({'INFO'}, f"Freed the bake of {obj.name}")
            return {'FINISHED'}
        # All or nothing: one that cannot be freed (its NLA in tweak mode) stops the others too.
        blockers = [b for b in map(baking.free_blocker, baking.baked_objects(scene)) if b is not None]
        if blockers:
            self.report({'ERROR'}, "; ".join(blockers) + "; nothing was freed")
            return {'CANCELLED'}
        if playback.cache_of(scene) is not None:
            playback.check_edits(scene, context.view_layer, scene.frame_current)
        freed = [obj.name for obj in baking.baked_objects(scene) if baking.free_bake(obj)]
        freed += [f"the mesh '{name}' of a deleted object" for name in baking.free_orphans()]
        if not freed:
            self.report({'INFO'}, "Nothing to free: no object in the scene has a Jakobsen bake")
            return {'CANCELLED'}
        cache = playback.cache_of(scene)
        if cache is not None and cache.job is not None and cache.written:
            cache.redraw_without(context, unwritten=set(cache.written))
        self.report({'INFO'}, f"Freed the bake of {', '.join(freed)}")
        return {'FINISHED'}


def draw_progress(self, context) -> None:
    """A progress bar in the status bar while a modal bake runs (appended to Blender's
    ``STATUSBAR_HT_header``, beside the text ``_show_progress`` sets)."""
    job = _running.get("job")
    if job is None or job.scene_model is None:
        return
    total = max(job.frame_count - 1, 1)
    row = self.layout.row()
    row.ui_units_x = 12  # (the status bar gives an appended item no width of its own)
    row.progress(factor=min(max(job.frames_done - 1, 0) / total, 1.0), type='BAR',
                 text=f"Jakobsen bake {job.frames_done}/{job.frame_count}")


def register() -> None:
    """What the bake shows outside its operator: the progress bar in the status bar."""
    # (The stubs type a header's draw function as f(context); Blender calls it as f(self, context).)
    bpy.types.STATUSBAR_HT_header.append(draw_progress)  # type: ignore[arg-type]


def unregister() -> None:
    bpy.types.STATUSBAR_HT_header.remove(draw_progress)  # type: ignore[arg-type]  # (as in register)
    _running.clear()


classes = (JAKOBSEN_OT_bake, JAKOBSEN_OT_free_bake)
