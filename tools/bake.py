"""``jakobsen bake SCENE.blend [-o OUT.blend] [--frames START-END]``: bake a .blend headless.

Opens the file in Blender (the bpy module), registers the add-on, runs the same ``BakeJob`` the
Bake button's script path runs (start, every step, finish), printing a progress line every few
frames with the time per frame, and saves the result as OUT (by default ``SCENE_baked.blend``
next to SCENE; the input is never overwritten unless OUT names it). A scene that cannot be baked
exits with status 1 and a message that names the object at fault; nothing is saved then.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass

from jakobsen_physics.files import cannot_write


class BakeCommandError(Exception):
    """What the user asked for cannot be done (bad arguments, an unreadable file, a bad scene)."""


@dataclass
class BakeReport:
    """What ``bake_file`` did."""

    out_path: str
    summary: str
    warnings: list[str]
    frames: tuple[int, int]
    seconds: float


def parse_frames(text: str | None) -> tuple[int, int] | None:
    """``"1-120"`` -> (1, 120); None stays None."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*(-?\d+)\s*[-:]\s*(-?\d+)\s*", text)
    if not match:
        raise BakeCommandError(f"--frames: expected START-END (e.g. 1-120), got {text!r}")
    start, end = int(match.group(1)), int(match.group(2))
    if start < 0 or end <= start:
        raise BakeCommandError(f"--frames: the end frame ({end}) must come after the start frame ({start}), "
                               "both 0 or more")
    return start, end


def default_out_path(scene_path: str) -> str:
    root, _ = os.path.splitext(os.path.abspath(scene_path))
    return root + "_baked.blend"


def _say(text: str) -> None:
    print(text, flush=True)


def bake_file(scene_path: str, out_path: str | None = None, *, frames: tuple[int, int] | None = None,
              scene_name: str | None = None, every: int = 10, log=_say) -> BakeReport:
    """Open ``scene_path``, bake its scene, save to ``out_path``; returns a ``BakeReport``.

    Replaces the Blender session's file (it opens ``scene_path``). Raises ``BakeCommandError``
    for anything the user can fix (the message names the file or the object), after leaving the
    scene as it was (nothing is saved).
    """
    import bpy

    from jakobsen_physics import register, unregister
    from jakobsen_physics.bake_job import BakeJob, describe_failure

    scene_path = os.path.abspath(scene_path)
    if os.path.isdir(scene_path):
        raise BakeCommandError(f"{scene_path}: is a directory, not a .blend file")
    if not os.path.isfile(scene_path):
        raise BakeCommandError(f"{scene_path}: no such file")
    if not scene_path.lower().endswith(".blend"):
        raise BakeCommandError(f"{scene_path}: not a .blend file")
    out_path = os.path.abspath(out_path) if out_path else default_out_path(scene_path)
    if not out_path.lower().endswith(".blend"):
        raise BakeCommandError(f"-o {out_path}: the output must be a .blend file")
    if every < 1:
        raise BakeCommandError(f"--every: must be 1 or more, got {every}")
    why = cannot_write(out_path)
    if why:  # checked now, not after the whole bake has run
        raise BakeCommandError(f"-o {out_path}: cannot write the baked file there: {why}")

    registered_here = not hasattr(bpy.types.Scene, "jakobsen")
    if registered_here:
        register()
    try:
        try:
            bpy.ops.wm.open_mainfile(filepath=scene_path, load_ui=False)
        except RuntimeError as error:
            raise BakeCommandError(f"{scene_path}: Blender could not open it ({str(error).strip()})") from None
        scene = bpy.context.scene
        if scene_name is not None:
            scene = bpy.data.scenes.get(scene_name)
            if scene is None:
                names = ", ".join(repr(s.name) for s in bpy.data.scenes)
                raise BakeCommandError(f"{scene_path}: no scene named {scene_name!r} (it has {names})")
            if bpy.context.window is not None:
                bpy.context.window.scene = scene
        if bpy.context.scene != scene:
            raise BakeCommandError(f"{scene_path}: cannot make the scene '{scene.name}' current")

        t0 = time.perf_counter()
        job = BakeJob(scene.name, frame_range=frames)
        try:
            job.start(bpy.context)
        except Exception as error:  # start() has left the scene as it was
            raise BakeCommandError(f"{os.path.basename(scene_path)}: {describe_failure(error)}") from None
        sm = job.scene_model
        log(f"jakobsen bake: {scene_path}, scene '{scene.name}', frames {sm.frame_start}-{sm.frame_end} "
            f"at {sm.settings.frame_rate:g} fps, {sm.settings.substeps} substeps")
        log("  " + describe_model(sm))
        for warning in job.warnings:
            log(f"  warning: {warning}")
        chunk_t0, chunk_frames = time.perf_counter(), 0
        try:
            while True:
                more = job.step()
                chunk_frames += 1
                if job.frames_done % every == 0 or not more:
                    now = time.perf_counter()
                    log(f"  frame {job.frame} ({job.frames_done}/{job.frame_count}): "
                        f"{1e3 * (now - chunk_t0) / chunk_frames:.1f} ms/frame")
                    chunk_t0, chunk_frames = now, 0
                if not more:
                    break
        except Exception as error:
            job.cancel()
            raise BakeCommandError(f"{os.path.basename(scene_path)}: the bake stopped at frame {job.frame + 1}: "
                                   f"{describe_failure(error)}") from None
        except KeyboardInterrupt:
            job.cancel()
            raise BakeCommandError(f"cancelled at frame {job.frame}; nothing was saved") from None
        try:
            summary = job.finish(elapsed=time.perf_counter() - t0)
        except Exception as error:
            raise BakeCommandError(f"{os.path.basename(scene_path)}: could not write the bake: "
                                   f"{describe_failure(error)}") from None
        log(f"  {summary}")
        try:
            os.makedirs(os.path.dirname(out_path), exist_ok=True)
            bpy.ops.wm.save_as_mainfile(filepath=out_path, check_existing=False)
        except (OSError, RuntimeError) as error:
            raise BakeCommandError(f"-o {out_path}: Blender could not save the baked file "
                                   f"({str(error).strip()})") from None
        seconds = time.perf_counter() - t0
        log(f"jakobsen bake: wrote {out_path} ({seconds:.1f} s in all)")
        return BakeReport(out_path=out_path, summary=summary, warnings=list(job.warnings),
                          frames=(sm.frame_start, sm.frame_end), seconds=seconds)
    finally:
        if registered_here:
            unregister()


def describe_model(sm) -> str:
    """One line: what the scene model holds, by role."""
    parts = []
    if sm.deformables:
        names = ", ".join(f"{d.object_name} ({d.vertex_count} vertices)" for d in sm.deformables)
        parts.append(f"{len(sm.deformables)} deforming ({names})")
    moved = [b.object_name for b in sm.bodies if b.keyed]
    if moved:
        parts.append(f"{len(moved)} rigid bod{'y' if len(moved) == 1 else 'ies'} ({', '.join(moved)})")
    passive = [b.object_name for b in sm.bodies if not b.keyed]
    colliders = [c.object_name for c in sm.colliders] + passive
    if colliders:
        parts.append(f"{len(colliders)} collider{'s' * (len(colliders) != 1)} ({', '.join(colliders)})")
    return "; ".join(parts)


def run_bake(scene_path: str, out_path: str | None = None, frames: str | None = None,
             scene_name: str | None = None, every: int = 10) -> int:
    """The command: 0 when baked and saved, 1 with a message on stderr otherwise."""
    try:
        bake_file(scene_path, out_path, frames=parse_frames(frames), scene_name=scene_name, every=every)
    except BakeCommandError as error:
        print(f"jakobsen bake: error: {error}", file=sys.stderr, flush=True)
        return 1
    return 0
