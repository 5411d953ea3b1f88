"""Many bakes at once: several scenes and parameter wedges as jobs on a Dask cluster.

``jakobsen bake A.blend B.blend --wedge "Flag.jakobsen.cloth.stiffness=100,1000"`` makes one job
per scene and combination of wedge values. Dask distributed schedules them: a ``LocalCluster``
on this machine by default (one single-threaded worker process per core), or the cluster whose
scheduler ``--scheduler tcp://HOST:PORT`` names. Each job runs the plain one-scene
``jakobsen bake`` in a Blender process of its own (Blender keeps one file open per process),
started by the worker; what it writes is the same file a serial ``jakobsen bake`` of that
scene and those values writes, bit for bit.

Faults: a job whose worker dies (killed, out of memory, the machine gone) is run again by Dask
on another worker; the Blender process dies with its worker (it is started with the parent-death
signal), and everything a job writes is written to a temporary name and renamed, so the rerun's
files are the only ones. With ``--checkpoint-every`` the rerun continues from the job's last
checkpoint. A job that fails on its own (a bad scene) is reported with its message and the
others go on; the exit status is the number of jobs that failed (at most 125).

Outputs, in the output folder: per job NAME.blend (the baked scene), NAME.json (its report),
NAME.png (its row of frames); for all, contact_sheet.png (one labelled row per job) and
farm.json (every job's status and report). The folder must be one every worker can reach (a
shared disk on a farm).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from . import wedges as wedge_texts

TOPIC = "jakobsen-bake"
MAX_STATUS = 125  # exit statuses above this mean signals and shell errors


@dataclass
class FarmJob:
    """One bake: a scene and a combination of wedge values, and where its outputs go."""

    index: int
    scene: str
    combination: tuple
    name: str
    out: str
    frames: str | None = None
    scene_name: str | None = None
    checkpoint_every: int = 0
    resume: bool = False
    alembic: str | None = None
    usd: str | None = None
    sheet_frames: str | None = None

    @property
    def label(self) -> str:
        return wedge_texts.label(self.combination)

    @property
    def report(self) -> str:
        return os.path.splitext(self.out)[0] + ".json"

    @property
    def sheet(self) -> str:
        return os.path.splitext(self.out)[0] + ".png"

    def command(self) -> list[str]:
        """The plain ``jakobsen bake`` of this one job, as its worker runs it."""
        cmd = [sys.executable, "-m", "jakobsen_tools", "bake", self.scene, "-o", self.out, "--every", "1000000",
               "--sheet", self.sheet, "--cache-dir", os.path.splitext(self.out)[0] + "_pc2"]
        for target, value in self.combination:
            cmd += ["--wedge", f"{target}={value}"]
        if self.frames:
            cmd += ["--frames", self.frames]
        if self.scene_name:
            cmd += ["--scene", self.scene_name]
        if self.sheet_frames:
            cmd += ["--sheet-frames", self.sheet_frames]
        if self.checkpoint_every:
            cmd += ["--checkpoint-every", str(self.checkpoint_every)]
        if self.checkpoint_every or self.resume:  # a rerun continues where its killed run stopped
            cmd += ["--resume"]
        if self.alembic:
            cmd += ["--alembic", self.alembic]
        if self.usd:
            cmd += ["--usd", self.usd]
        return cmd


@dataclass
class JobResult:
    job: FarmJob
    ok: bool
    message: str = ""
    report: dict = field(default_factory=dict)
    seconds: float = 0.0
    attempts: int = 1


def plan_jobs(scenes, wedge_args, out_dir: str, *, frames=None, scene_name=None, checkpoint_every=0, resume=False,
              alembic=None, usd=None, sheet_frames=None) -> list[FarmJob]:
    """The jobs of a farm bake: every scene times every combination of the wedges."""
    parsed = [wedge_texts.parse(text) for text in wedge_args]
    combos = wedge_texts.combinations(parsed)
    stems = [os.path.splitext(os.path.basename(s))[0] for s in scenes]
    jobs = []
    for k, scene in enumerate(scenes):
        stem = stems[k] if stems.count(stems[k]) == 1 else f"{stems[k]}_{k + 1}"
        for combo in combos:
            name = f"{stem}__{wedge_texts.file_tag(combo)}" if combo else stem
            index = len(jobs)
            jobs.append(FarmJob(index=index, scene=os.path.abspath(scene), combination=combo, name=name,
                                out=os.path.join(out_dir, name + ".blend"), frames=frames, scene_name=scene_name,
                                checkpoint_every=checkpoint_every, resume=resume, sheet_frames=sheet_frames,
                                alembic=_per_job(alembic, name), usd=_per_job(usd, name)))
    if len(jobs) == 1:  # one job: the export paths as given
        jobs[0].alembic, jobs[0].usd = alembic and os.path.abspath(alembic), usd and os.path.abspath(usd)
    return jobs


def _per_job(path, name):
    if not path:
        return None
    root, ext = os.path.splitext(os.path.abspath(path))
    return f"{root}__{name}{ext}"


# -- on the worker ----------------------------------------------------------------------------------

def _die_with_parent() -> None:
    """In the Blender process, before it runs: die when the worker that started it dies, so a
    killed worker leaves no bake behind writing files beside its rerun (Linux; elsewhere the
    temporary-name writes keep the files whole)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run_job(job: FarmJob) -> dict:
    """Run one job in its own Blender process (on a Dask worker); returns what it did, never raises
    for a bad scene (that is a result, not a fault of the worker)."""
    import json

    try:
        from distributed import get_worker

        worker = get_worker()
        where = {"worker": worker.address, "pid": os.getpid()}
        worker.log_event(TOPIC, {"event": "start", "index": job.index, **where})
    except (ImportError, ValueError):  # run outside Dask (serially)
        where = {"worker": "", "pid": os.getpid()}
    t0 = time.perf_counter()
    done = subprocess.run(job.command(), capture_output=True, text=True,
                          preexec_fn=_die_with_parent if os.name == "posix" else None)
    seconds = time.perf_counter() - t0
    report = {}
    if done.returncode == 0 and os.path.isfile(job.report):
        with open(job.report, encoding="utf-8") as f:
            report = json.load(f)
    errors = [line.split("error: ", 1)[1] for line in done.stderr.splitlines()
              if line.startswith("jakobsen bake: error: ")]
    message = errors[-1] if errors else (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return {"index": job.index, "ok": done.returncode == 0, "message": "" if done.returncode == 0 else message,
            "report": report, "seconds": seconds, **where}


# -- on the client ----------------------------------------------------------------------------------

class _Progress:
    """One line per job start and finish, and a progress bar: redrawn in place on a terminal,
    printed after each finish otherwise (a log file)."""

    def __init__(self, jobs, stream=None):
        self.jobs, self.stream = jobs, stream or sys.stdout
        self.tty = self.stream.isatty()
        self.lock = threading.Lock()
        self.done = self.failed = 0
        self.starts: dict[int, int] = {}
        self.t0 = time.perf_counter()

    def line(self, text: str) -> None:
        with self.lock:
            if self.tty:
                self.stream.write("\r\033[K")
            self.stream.write(text + "\n")
            if self.tty:
                self.stream.write(self._bar())
            self.stream.flush()

    def started(self, msg: dict) -> None:
        job = self.jobs[msg["index"]]
        n = self.starts[job.index] = self.starts.get(job.index, 0) + 1
        again = f" (attempt {n}: its worker was lost)" if n > 1 else ""
        self.line(f"  started  [{job.index + 1}/{len(self.jobs)}] {job.name}{self._values(job)} on worker pid "
                  f"{msg['pid']} ({msg['worker']}){again}")

    def finished(self, result: JobResult) -> None:
        job = result.job
        self.done += 1
        if result.ok:
            r = result.report
            text = (f"  finished [{job.index + 1}/{len(self.jobs)}] {job.name}: {result.seconds:.1f} s "
                    f"(solver {r.get('solver_seconds', 0.0):.2f} s), {r.get('checksum', '')[:19]}...")
        else:
            self.failed += 1
            text = f"  FAILED   [{job.index + 1}/{len(self.jobs)}] {job.name}: {result.message}"
        self.line(text)
        if not self.tty:
            self.line(self._bar())

    def _bar(self, width: int = 30) -> str:
        n = len(self.jobs)
        filled = round(width * self.done / n)
        return (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{n} jobs done, {self.failed} failed, "
                f"{time.perf_counter() - self.t0:.0f} s")

    @staticmethod
    def _values(job) -> str:
        return f" ({job.label})" if job.combination else ""


def run_farm(jobs: list[FarmJob], *, workers: int | None = None, scheduler: str | None = None,
             log=print) -> list[JobResult]:
    """Run ``jobs`` on Dask; returns their results in job order."""
    from distributed import Client, LocalCluster, as_completed

    progress = _Progress(jobs)
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as error:
            raise FarmError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({error})") from None
        count = len(client.scheduler_info().get("workers", {}))
        log(f"jakobsen bake: {len(jobs)} job{'s' * (len(jobs) != 1)} on the Dask cluster at {scheduler} "
            f"({count} worker{'s' * (count != 1)})")
    else:
        workers = workers or os.cpu_count() or 1
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=":8787" if _has_dashboard() else None,
                               silence_logs=logging.CRITICAL)
        client = Client(cluster)
        log(f"jakobsen bake: {len(jobs)} job{'s' * (len(jobs) != 1)} on a Dask LocalCluster of {workers} "
            f"worker{'s' * (workers != 1)} (one Blender process per job)")
    if _has_dashboard() or scheduler:
        log(f"  Dask dashboard: {client.dashboard_link}")
    results: list[JobResult | None] = [None] * len(jobs)
    try:
        client.subscribe_topic(TOPIC, lambda event: progress.started(event[1]))
        futures = {client.submit(run_job, job, key=f"jakobsen-bake-{job.index}-{job.name}-{time.time_ns()}",
                                 pure=False): job for job in jobs}
        for future in as_completed(futures):
            job = futures[future]
            attempts = max(progress.starts.get(job.index, 1), 1)
            try:
                out = future.result()
                result = JobResult(job, out["ok"], out["message"], out["report"], out["seconds"], attempts)
            except Exception as error:  # the scheduler gave up on it (its workers kept dying)
                result = JobResult(job, False, f"{type(error).__name__}: {error}", attempts=attempts)
            results[job.index] = result
            progress.finished(result)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return results


class FarmError(Exception):
    """The farm cannot start (no scheduler there, nothing to do)."""


def _has_dashboard() -> bool:
    try:
        import bokeh  # noqa: F401  (Dask serves its dashboard with it)
    except ImportError:
        return False
    return True


def write_outputs(jobs, results, out_dir: str, wall: float, log=print) -> str:
    """farm.json and contact_sheet.png of a finished farm bake; returns the sheet's path."""
    from .reports import write_json

    several_scenes = len({job.scene for job in jobs}) > 1
    summary = {"jobs": [{"name": r.job.name, "scene": r.job.scene, "wedge": dict(r.job.combination),
                         "status": "baked" if r.ok else "failed", "message": r.message, "out": r.job.out,
                         "report": r.job.report if r.ok else None, "seconds": round(r.seconds, 3),
                         "attempts": r.attempts, "checksum": r.report.get("checksum")} for r in results],
               "wall_seconds": round(wall, 3), "failed": sum(not r.ok for r in results)}
    write_json(os.path.join(out_dir, "farm.json"), summary)
    rows = []
    for r in results:
        text = r.job.label if r.job.combination else ""
        if several_scenes or not text:
            text = f"{os.path.splitext(os.path.basename(r.job.scene))[0]} {text}".strip()
        rows.append((text if r.ok else f"{text} failed", r.job.sheet if r.ok else None))
    path = compose_sheet(rows, os.path.join(out_dir, "contact_sheet.png"))
    log(f"jakobsen bake: contact sheet {path}; reports in {out_dir}")
    return path


def compose_sheet(rows, out_path: str, *, label_width: int = 300, gap: int = 2) -> str:
    """Stack the job rows (label, PNG of its frames or None) into one sheet with each label in a
    column on the left; a failed job's row is grey."""
    import bpy  # noqa: F401  (the PNGs are read and written through Blender's image API)
    import numpy as np

    from .contact_sheet import ROW_TILE, draw_label, png_pixels, save_png

    images = [png_pixels(bpy, png)[::-1] if png and os.path.isfile(png) else None for _, png in rows]
    width = max([i.shape[1] for i in images if i is not None] or [ROW_TILE[0] * 4 + 6])
    height = max([i.shape[0] for i in images if i is not None] or [ROW_TILE[1]])
    sheet = np.empty((len(rows) * (height + gap) - gap, label_width + gap + width, 4), np.float32)
    sheet[..., :3], sheet[..., 3] = 0.15, 1.0
    for k, ((text, _), img) in enumerate(zip(rows, images)):
        y = k * (height + gap)
        cell = sheet[y:y + height, :label_width]
        cell[..., :3] = 0.9
        for n, part in enumerate(_wrap(text, label_width)):
            draw_label(cell[n * 22:], part, scale=3, margin=6)
        if img is None:
            sheet[y:y + height, label_width + gap:, :3] = 0.35
        else:
            sheet[y:y + img.shape[0], label_width + gap:label_width + gap + img.shape[1]] = img
    return save_png(sheet, out_path, name="jakobsen_farm_sheet")


def _wrap(text: str, width: int, scale: int = 3) -> list[str]:
    """Words of ``text`` in lines that fit ``width`` pixels of the 3x5 font at ``scale``."""
    per_line = max(1, (width - 12) // (4 * scale))
    lines, line = [], ""
    for word in re.split(r"\s+", text.strip()):
        while len(word) > per_line:
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:per_line])
            word = word[per_line:]
        if line and len(line) + 1 + len(word) > per_line:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    if line:
        lines.append(line)
    return lines or [""]
