"""``jakobsen.bake`` and ``jakobsen.free_bake``.

Invoked from the UI the bake is modal: a window-manager timer advances the ``BakeJob`` one frame
per TIMER event while the viewport shows the frame just computed, the status bar the progress
and "Esc to cancel". Executed from a script, the command line or in background mode (where no
timer events come) it runs the whole job at once.

Whatever goes wrong (a scene that cannot be baked, an unstable frame, or a fault of the add-on
itself: any exception), the job is cancelled, which leaves the scene as it was, and the error
is reported; the operator returns {'CANCELLED'}.
"""

from __future__ import annotations

import time

import bpy
from bpy.types import Operator

from .. import baking
from ..bake_job import BakeJob, describe_failure


def _report_warnings(op, warnings) -> None:
    for warning in warnings:
        op.report({'WARNING'}, warning)


def _finish(op, job: BakeJob, elapsed: float) -> set[str]:
    """Write the bake and report what was baked, or why it could not be written."""
    try:
        summary = job.finish(elapsed=elapsed)
    except OSError as error:  # a PC2 file that could not be written
        op.report({'ERROR'}, f"Could not write the bake: {error}; the scene was left as it was")
        return {'CANCELLED'}
    except Exception as error:
        op.report({'ERROR'}, f"Could not write the bake: {describe_failure(error)}")
        return {'CANCELLED'}
    op.report({'INFO'}, summary)
    return {'FINISHED'}


def _stopped(op, job: BakeJob, error: BaseException) -> set[str]:
    """A step failed: leave the scene as it was and say why."""
    job.cancel()
    op.report({'ERROR'}, f"Bake stopped at frame {job.frame + 1}: {describe_failure(error)}")
    return {'CANCELLED'}


class JAKOBSEN_OT_bake(Operator):
    """Simulate the objects with Jakobsen Physics over the bake frame range and store the result as animation"""

    bl_idname = "jakobsen.bake"
    bl_label = "Bake"
    bl_options = {'REGISTER', 'UNDO'}

    _job = None
    _timer = None
    _started_at = 0.0

    @classmethod
    def poll(cls, context):
        return context.scene is not None and context.view_layer is not None

    def _start(self, context, job: BakeJob) -> bool:
        """Start ``job``; a scene that cannot be baked is reported and nothing is changed."""
        try:
            job.start(context)
        except Exception as error:  # start() has left the scene as it was
            self.report({'ERROR'}, describe_failure(error))
            return False
        _report_warnings(self, job.warnings)
        return True

    def execute(self, context):
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
        return _finish(self, job, time.perf_counter() - t0)

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        job = BakeJob(context.scene.name, preview=True, follow_frames=True)
        if not self._start(context, job):
            return {'CANCELLED'}
        self._job = job
        self._started_at = time.perf_counter()
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.progress_begin(0, job.frame_count)
        wm.modal_handler_add(self)
        self._show_progress(context)
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        job = self._job
        if event.type in {'ESC', 'RIGHTMOUSE'} and event.value == 'PRESS':
            job.cancel()
            self._end(context)
            self.report({'INFO'}, f"Bake cancelled at frame {job.frame}; nothing was changed")
            return {'CANCELLED'}
        if event.type != 'TIMER':
            return {'PASS_THROUGH'}
        try:
            more = job.step()
        except Exception as error:
            self._end(context)
            return _stopped(self, job, error)
        if more:
            self._show_progress(context)
            return {'RUNNING_MODAL'}
        self._end(context)
        return _finish(self, job, time.perf_counter() - self._started_at)

    def cancel(self, context):
        # Blender ends the operator itself (file load, window closed): leave the scene as it was.
        if self._job is not None:
            self._job.cancel()
            self._end(context)

    def _show_progress(self, context) -> None:
        job = self._job
        sm = job.scene_model
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


class JAKOBSEN_OT_free_bake(Operator):
    """Remove the baked animation of every object in the scene and put back what was there before"""

    bl_idname = "jakobsen.free_bake"
    bl_label = "Free Bake"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return context.scene is not None

    def execute(self, context):
        freed = [obj.name for obj in baking.baked_objects(context.scene) if baking.free_bake(obj)]
        freed += [f"the mesh '{name}' of a deleted object" for name in baking.free_orphans()]
        if not freed:
            self.report({'INFO'}, "Nothing to free: no object in the scene has a Jakobsen bake")
            return {'CANCELLED'}
        self.report({'INFO'}, f"Freed the bake of {', '.join(freed)}")
        return {'FINISHED'}


classes = (JAKOBSEN_OT_bake, JAKOBSEN_OT_free_bake)
