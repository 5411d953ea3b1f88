"""``jakobsen bake SCENE.blend [-o OUT.blend] [--frames START-END]``: bake a .blend headless.

Opens the file in Blender (the bpy module), registers the add-on, runs the same ``BakeJob`` the
Bake button's script path runs (start, every step, finish), printing a progress line every few
frames with the time per frame, and saves the result as OUT (by default ``SCENE_baked.blend``
next to SCENE; the input is never overwritten unless OUT names it). A scene that cannot be baked
exits with status 1 and a message that names the object at fault; nothing is saved then.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import sys
import time
from dataclasses import dataclass

from jakobsen_engine import JakobsenError
from jakobsen_physics.files import cannot_write


class BakeCommandError(Exception):
    """What the user asked for cannot be done (bad arguments, an unreadable file, a bad scene)."""


@dataclass
class BakeReport:
    """What ``bake_file`` did; ``data`` is the JSON report it wrote (``report_path``)."""

    out_path: str
    summary: str
    warnings: list[str]
    frames: tuple[int, int]
    seconds: float
    report_path: str = ""
    data: dict | None = None


def checkpoint_path(out_path: str) -> str:
    """Where the bake that writes ``out_path`` keeps its checkpoint (beside it)."""
    return out_path + ".checkpoint"


def report_path_for(out_path: str) -> str:
    """The JSON report beside a baked file: OUT.blend -> OUT.json."""
    return os.path.splitext(out_path)[0] + ".json"


def file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


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
              scene_name: str | None = None, every: int = 10, log=_say, wedge=(), report: bool = True,
              checkpoint_every: int = 0, resume: bool = False, alembic: str | None = None,
              usd: str | None = None, cache_dir: str | None = None, sheet: str | None = None,
              sheet_frames=None) -> BakeReport:
    """Open ``scene_path``, bake its scene, save to ``out_path``; returns a ``BakeReport``.

    wedge: ((OBJECT.path.to.prop, value text), ...) set in the opened file before the bake
    (``wedges.apply``); report: write the JSON report beside the baked file (OUT.json: settings,
    wedge values, solver and wall time, warnings, broken connectors, a checksum of the baked
    values); checkpoint_every: save a checkpoint every N frames (OUT.blend.checkpoint, removed
    when the bake is saved); resume: continue from that checkpoint if there is one; alembic, usd:
    also write those caches of the baked animation; cache_dir: where PC2 files go (default the
    scene's setting); sheet: render frames ``sheet_frames`` (default four across the range) of
    the result into this PNG, one row (through the scene's camera, else one that frames the
    baked objects).

    Replaces the Blender session's file (it opens ``scene_path``). Raises ``BakeCommandError``
    for anything the user can fix (the message names the file or the object), after leaving the
    scene as it was (nothing is saved).
    """
    import bpy

    from jakobsen_engine import __version__
    from jakobsen_physics import checkpoints, register, unregister
    from jakobsen_physics.bake_job import BakeJob, describe_failure

    from . import reports, wedges
    from .exports import ExportError, export_alembic, export_usd

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
    if checkpoint_every < 0:
        raise BakeCommandError(f"--checkpoint-every: must be 1 or more, got {checkpoint_every}")
    for option, path, ends in (("--alembic", alembic, (".abc",)), ("--usd", usd, (".usd", ".usdc", ".usda")),
                               ("--sheet", sheet, (".png",))):
        if path and not path.lower().endswith(ends):
            raise BakeCommandError(f"{option} {path}: the file name must end in {' or '.join(ends)}")
    for option, path in (("-o", out_path), ("--alembic", alembic), ("--usd", usd), ("--sheet", sheet)):
        why = path and cannot_write(os.path.abspath(path))
        if why:  # checked now, not after the whole bake has run
            raise BakeCommandError(f"{option} {os.path.abspath(path)}: cannot write there: {why}")
    checkpoint = checkpoint_path(out_path)
    source_digest = file_digest(scene_path)

    registered_here = not hasattr(bpy.types.Scene, "jakobsen")
    if registered_here:
        register()
    try:
        try:
            bpy.ops.wm.open_mainfile(filepath=scene_path, load_ui=False)
        except RuntimeError as error:
            saved = saved_by(scene_path)
            if saved is not None and saved > tuple(bpy.app.version[:2]):
                # (Blender itself only says "not a blend file")
                raise BakeCommandError(
                    f"{scene_path}: saved by Blender {saved[0]}.{saved[1]}, newer than this Blender "
                    f"({bpy.app.version[0]}.{bpy.app.version[1]}), which cannot open it; bake it with Blender "
                    f"{saved[0]}.{saved[1]} or later") from None
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
        try:
            wedged = wedges.apply(bpy, wedge, os.path.basename(scene_path))
        except wedges.WedgeError as error:
            raise BakeCommandError(str(error)) from None
        if cache_dir:
            scene.jakobsen.cache_directory = os.path.abspath(cache_dir)

        t0 = time.perf_counter()
        job = BakeJob(scene.name, frame_range=frames)
        try:
            job.start(bpy.context)
        except Exception as error:  # start() has left the scene as it was
            raise BakeCommandError(f"{os.path.basename(scene_path)}: {describe_failure(error)}") from None
        sm = job.scene_model
        fingerprint = {"scene file": source_digest, "scene": scene.name, "frames": [sm.frame_start, sm.frame_end],
                       "wedge": [list(pair) for pair in wedge], "version": __version__}
        log(f"jakobsen bake: {scene_path}, scene '{scene.name}', frames {sm.frame_start}-{sm.frame_end} "
            f"at {sm.settings.frame_rate:g} fps, {sm.settings.substeps} substeps")
        for line in wedged:
            log(f"  wedge: {line}")
        log("  " + describe_model(sm))
        resumed_from = None
        if resume and os.path.isfile(checkpoint):
            try:
                job.restore(checkpoints.load(checkpoint, fingerprint))
            except (checkpoints.CheckpointError, JakobsenError) as error:
                job.cancel()
                raise BakeCommandError(f"--resume: {error}") from None
            resumed_from = job.frame
            log(f"  resumed from the checkpoint at frame {job.frame} ({checkpoint})")
        elif resume:
            log(f"  --resume: no checkpoint at {checkpoint}; baking from the start")
        for warning in job.warnings:
            log(f"  warning: {warning}")
        chunk_t0, chunk_frames, saved_at = time.perf_counter(), 0, resumed_from
        try:
            more = not job.done
            while more:
                more = job.step()
                chunk_frames += 1
                if job.frames_done % every == 0 or not more:
                    now = time.perf_counter()
                    log(f"  frame {job.frame} ({job.frames_done}/{job.frame_count}): "
                        f"{1e3 * (now - chunk_t0) / chunk_frames:.1f} ms/frame")
                    chunk_t0, chunk_frames = now, 0
                if more and checkpoint_every and job.frames_done % checkpoint_every == 0:
                    checkpoints.save(checkpoint, job, fingerprint)
                    saved_at = job.frame
                    log(f"  checkpoint at frame {job.frame}")
        except Exception as error:
            job.cancel()
            raise BakeCommandError(f"{os.path.basename(scene_path)}: the bake stopped at frame {job.frame + 1}: "
                                   f"{describe_failure(error)}") from None
        except KeyboardInterrupt:
            # Not a checkpoint now: the interrupt may have come between the solver's step and the
            # job's record of it. The last one saved is whole.
            job.cancel()
            if saved_at is not None:
                raise BakeCommandError(f"stopped at frame {job.frame}; the checkpoint of frame {saved_at} is kept: "
                                       "run the same command with --resume to continue from there") from None
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
        if os.path.isfile(checkpoint):
            os.remove(checkpoint)
        range_ = (sm.frame_start, sm.frame_end)
        exported = {}
        try:
            if alembic:
                exported["alembic"] = export_alembic(bpy, alembic, range_)
                log(f"  wrote the Alembic cache {exported['alembic']}")
            if usd:
                exported["usd"] = export_usd(bpy, usd, range_)
                log(f"  wrote the USD cache {exported['usd']}")
        except ExportError as error:
            raise BakeCommandError(str(error)) from None
        baked = [d.object_name for d in sm.deformables] + [b.object_name for b in sm.bodies if b.keyed]
        data = {
            "status": "baked", "scene_file": scene_path, "scene": scene.name, "out": out_path,
            "frames": list(range_), "wedge": {target: value for target, value in wedge},
            "settings": dataclasses.asdict(sm.settings), "backend": job.solver.backend.name,
            "objects": {"deforming": [d.object_name for d in sm.deformables],
                        "rigid bodies": [b.object_name for b in sm.bodies if b.keyed],
                        "colliders": [c.object_name for c in sm.colliders]
                        + [b.object_name for b in sm.bodies if not b.keyed]},
            "solver_seconds": round(job.step_seconds, 4),
            "ms_per_frame": round(job.ms_per_frame, 3),
            "resumed_from_frame": resumed_from,
            "warnings": list(job.warnings), "broken": job.broken(), "summary": summary,
            "exports": exported,
            "checksum": reports.baked_checksum(bpy, baked, scene.jakobsen.cache_directory),
            "input_checksum": source_digest, "version": __version__,
        }
        if sheet:
            from .contact_sheet import render_row

            shown = baked + data["objects"]["colliders"]
            data["sheet"] = render_row(bpy, scene, shown, sheet, sheet_frames or _sheet_frames(range_))
        data["wall_seconds"] = round(time.perf_counter() - t0, 3)  # the sheet's render included
        path = reports.write_json(report_path_for(out_path), data) if report else ""
        seconds = time.perf_counter() - t0
        log(f"jakobsen bake: wrote {out_path} ({seconds:.1f} s in all; {data['checksum'][:19]}...)")
        return BakeReport(out_path=out_path, summary=summary, warnings=list(job.warnings),
                          frames=range_, seconds=seconds, report_path=path, data=data)
    finally:
        if registered_here:
            unregister()


def _sheet_frames(frames: tuple[int, int], count: int = 4) -> list[int]:
    """``count`` frames spread evenly over a bake's range, its first and last among them."""
    start, end = frames
    return sorted({round(start + (end - start) * k / (count - 1)) for k in range(count)})


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


def run_bake(args) -> int:
    """The command (``args`` from ``jakobsen bake``): one job bakes here; several scenes, wedges of
    more than one combination, ``--workers`` or ``--scheduler`` bake on Dask (``farm``). Returns the
    exit status: 0 when all baked, else the number of jobs that failed (a one-job bake: 1), with a
    message on stderr for each."""
    from . import farm, wedges

    try:
        frames = parse_frames(args.frames)
        sheet_frames = _parse_frame_list(args.sheet_frames)
        combos = wedges.combinations([wedges.parse(text) for text in args.wedge])
    except (BakeCommandError, wedges.WedgeError) as error:
        print(f"jakobsen bake: error: {error}", file=sys.stderr, flush=True)
        return 1
    if args.workers is not None and args.workers < 1:
        print(f"jakobsen bake: error: --workers: must be 1 or more, got {args.workers}", file=sys.stderr, flush=True)
        return 1
    on_dask = len(args.scene) > 1 or len(combos) > 1 or args.workers is not None or args.scheduler
    if not on_dask:
        try:
            bake_file(args.scene[0], args.out, frames=frames, scene_name=args.scene_name, every=args.every,
                      wedge=combos[0], checkpoint_every=args.checkpoint_every, resume=args.resume,
                      alembic=args.alembic, usd=args.usd, cache_dir=args.cache_dir, sheet=args.sheet,
                      sheet_frames=sheet_frames)
        except BakeCommandError as error:
            print(f"jakobsen bake: error: {error}", file=sys.stderr, flush=True)
            return 1
        return 0
    for option in ("sheet", "cache_dir"):
        if getattr(args, option):
            print(f"jakobsen bake: error: --{option.replace('_', '-')} is for one job; several jobs each get their "
                  "own in the output folder", file=sys.stderr, flush=True)
            return 1
    missing = [s for s in args.scene if not os.path.isfile(s)]
    if missing:  # before any cluster starts: a typo is not a job
        print(f"jakobsen bake: error: no such file: {', '.join(missing)}", file=sys.stderr, flush=True)
        return 1
    out_dir = os.path.abspath(args.out or os.path.join(os.path.dirname(os.path.abspath(args.scene[0])),
                                                       "jakobsen_bakes"))
    why = cannot_write(os.path.join(out_dir, "farm.json"))
    if why:
        print(f"jakobsen bake: error: -o {out_dir}: cannot write there: {why}", file=sys.stderr, flush=True)
        return 1
    t0 = time.perf_counter()
    jobs = farm.plan_jobs(args.scene, args.wedge, out_dir, frames=args.frames, scene_name=args.scene_name,
                          checkpoint_every=args.checkpoint_every, resume=args.resume, alembic=args.alembic,
                          usd=args.usd, sheet_frames=args.sheet_frames)
    try:
        results = farm.run_farm(jobs, workers=args.workers, scheduler=args.scheduler)
    except farm.FarmError as error:
        print(f"jakobsen bake: error: {error}", file=sys.stderr, flush=True)
        return 1
    wall = time.perf_counter() - t0
    farm.write_outputs(jobs, results, out_dir, wall)
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"jakobsen bake: error: {r.job.name} ({r.job.scene}): {r.message}", file=sys.stderr, flush=True)
    print(f"jakobsen bake: {len(results) - len(failed)} of {len(results)} jobs baked in {wall:.1f} s"
          + (f"; {len(failed)} failed" if failed else ""), flush=True)
    return min(len(failed), farm.MAX_STATUS)


def _parse_frame_list(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        frames = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BakeCommandError(f"--sheet-frames: expected frame numbers separated by commas, got {text!r}") from None
    if not frames:
        raise BakeCommandError("--sheet-frames: give at least one frame")
    return frames


_HEADER = re.compile(rb"BLENDER(?:[-_][vV](\d{3})|\d\d-\d\d[vV](\d{4}))")


def saved_by(path: str) -> tuple[int, int] | None:
    """The Blender version (major, minor) a .blend file was saved by, from its header: plain
    ("BLENDER-v402", "BLENDER17-01v0503"), or zstd-compressed where the header's block is stored
    as it is (as Blender writes it); None where it cannot be told."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    found = _HEADER.search(head)
    if found is None:
        return None
    number = int(found.group(1) or found.group(2))
    return number // 100, number % 100
