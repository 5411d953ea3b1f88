"""``BakeJob``: one bake as a plain object stepped frame by frame.

The modal operator advances it one frame per timer event; the operator's ``execute`` (scripts,
the command line, background mode) and the tests run it to the end with ``run()``. The job
holds names, never references to Blender data, between calls, since an undo step or the user
may free data while a modal bake runs.

Deforming meshes collect object-space positions per frame (written as shape keys or PC2);
rigid bodies the solver moves collect their matrix_world per frame (written as location and
rotation keys). The summary ``finish()`` returns names the connectors and springs that broke and
on which frame.

Life cycle: ``start()`` reads the scene (bad input raises ``JakobsenError`` and changes nothing),
``step()`` computes the next frame and returns whether frames remain, then either ``finish()``
writes the bake (replacing any previous one) or ``cancel()`` leaves the scene as it was before
``start()``. Both end in ``_cleanup()``, the one place that undoes what a running job shows
(the drawn previews and the objects hidden behind them, the current frame); an exception of any
kind inside ``start()`` runs it too. Objects are found again by their ``session_uid`` (which a
rename keeps), so a user who renames an object during a modal bake still gets it back visible,
and baked.

A job's previews are drawn by ``previews`` (a viewport draw handler), not made of objects:
nothing appears in the Outliner or in a file saved during the bake.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

import bpy
import numpy as np

from . import baking, previews, scene_to_model, tearing
from .previews import find_object
from jakobsen_engine import JakobsenError, Solver, State, backend
from jakobsen_engine.geometry.reproducible import matmul

from .translate.transforms import affine_inverse

# How many jobs are reading the scene or moving its frame now (``start``, ``follow_frames``, the
# clean-up): frame changes meanwhile are the job's, not the user's, and the simulate-on-playback
# handlers (``playback``) let them pass.
_busy = [0]


@contextmanager
def busy():
    _busy[0] += 1
    try:
        yield
    finally:
        _busy[0] -= 1


def is_busy() -> bool:
    return _busy[0] > 0


# The ID property the stand-in objects of earlier versions carried (none are made now; tests look
# for strays by it).
PREVIEW_PROPERTY = "jakobsen_preview"


def describe_failure(error: BaseException) -> str:
    """A bake error as the user reads it: a ``JakobsenError`` says what to fix; anything else is a
    fault of the add-on, named as such (the scene has been left as it was by then)."""
    if isinstance(error, JakobsenError):
        return str(error)
    return (f"internal error {type(error).__name__}: {error} (a fault in Jakobsen Physics, not in the scene; "
            "the scene was left as it was; please report it)")


class BakeJob:
    """Bake the enabled objects of a scene over its bake frame range.

    preview: draw each computed frame in the viewport in place of each object the solver moves
    (the modal bake; ``previews``); follow_frames: move the scene to each computed frame, so
    animated colliders are seen where the solver had them.
    """

    def __init__(self, scene_name: str, *, preview: bool = False, follow_frames: bool = False,
                 frame_range: tuple[int, int] | None = None):
        self.scene_name = scene_name
        self.preview = preview
        self.follow_frames = follow_frames
        self.frame_range = frame_range
        self.scene_model: scene_to_model.SceneModel | None = None
        self.solver: Solver | None = None
        self.state: State | None = None
        self.frame: int | None = None  # the last frame computed
        self.warnings: list[str] = []
        self.step_seconds = 0.0
        self.first_frame_seconds: float | None = None  # the first frame's step, when this job made it
        self.output = 'SHAPE_KEYS'
        self.cache_directory = ""
        self._results: dict[str, list[np.ndarray]] = {}
        self._poses: dict[str, list[np.ndarray]] = {}  # rigid body -> matrix_world (4, 4) per frame
        # rigid body -> angular velocity (3,) rad/s in world axes per frame (NaN: not known), which
        # tells the keys how far a body spinning more than half a turn a frame went between frames
        self._spins: dict[str, list[np.ndarray]] = {}
        self._original_frame: tuple[int, float] | None = None
        self._uids: dict[str, int] = {}  # taking part: name at the start -> session_uid
        self._preview_key = f"bake {id(self)}"
        self._preview_meshes: dict[str, tuple[np.ndarray | None, np.ndarray]] = {}  # name -> (body verts, tris)
        self._started = self._ended = False
        self.compiling = False  # the first bake's first frame compiles numba's kernels

    # -- what start() made (the job's parts are None until then) --------------------------------------

    @property
    def _sm(self) -> scene_to_model.SceneModel:
        if self.scene_model is None:
            raise RuntimeError("BakeJob: the scene is read by start(), which has not run")
        return self.scene_model

    @property
    def _solver(self) -> Solver:
        if self.solver is None:
            raise RuntimeError("BakeJob: the solver is made by start(), which has not run")
        return self.solver

    @property
    def _state(self) -> State:
        if self.state is None:
            raise RuntimeError("BakeJob: the solver state is made by start(), which has not run")
        return self.state

    @property
    def _frame(self) -> int:
        if self.frame is None:
            raise RuntimeError("BakeJob: no frame computed before start()")
        return self.frame

    # -- progress -------------------------------------------------------------------------------------

    @property
    def scene(self):
        scene = bpy.data.scenes.get(self.scene_name)
        if scene is None:
            raise JakobsenError(f"the scene '{self.scene_name}' is gone")
        return scene

    @property
    def frame_count(self) -> int:
        return len(self.scene_model.frames) if self.scene_model else 0

    @property
    def frames_done(self) -> int:
        return 0 if self.frame is None else self.frame - self._sm.frame_start + 1

    @property
    def done(self) -> bool:
        return self.frame is not None and self.frame >= self._sm.frame_end

    @property
    def compile_seconds(self) -> float:
        """The first frame's time when it was spent mostly compiling numba's kernels (more than a
        second and ten times the other frames' mean: the first bake of a kind of scene compiles
        what it uses, once), else 0."""
        first, steps = self.first_frame_seconds, self.frames_done - 1
        if first is None or steps < 3:
            return 0.0
        rest = (self.step_seconds - first) / (steps - 1)
        return first if first > 1.0 and first > 10.0 * rest else 0.0

    @property
    def ms_per_frame(self) -> float:
        """The solver's time a frame, the kernels' compiling left out (``compile_seconds``)."""
        compiled = self.compile_seconds
        steps = max(self.frames_done - 1 - (compiled > 0.0), 1)
        return 1e3 * (self.step_seconds - compiled) / steps

    # -- life cycle -----------------------------------------------------------------------------------

    def start(self, context=None) -> None:
        """Read the scene and prepare the solver; frame ``frame_start`` is the rest pose."""
        context = context or bpy.context
        scene = self.scene
        if context.scene != scene:
            raise JakobsenError(f"bake: the scene '{scene.name}' is not the context's scene")
        self._original_frame = (scene.frame_current, scene.frame_subframe)
        with busy():
            self._start(context, scene)

    def _start(self, context, scene) -> None:
        try:
            props = scene.jakobsen
            self.output, self.cache_directory = props.output, props.cache_directory
            sm = scene_to_model.build(context, frame_range=self.frame_range)
            warnings = list(sm.warnings)
            with baking.previous_bakes_hidden([d.object_name for d in sm.deformables]):
                for d in sm.deformables:
                    warnings += baking.check_output(bpy.data.objects[d.object_name], d.vertex_count, self.output,
                                                    self.cache_directory)
            self.scene_model, self.warnings = sm, warnings
            self._uids = {name: bpy.data.objects[name].session_uid
                          for name in [d.object_name for d in sm.deformables] + [b.object_name for b in sm.bodies]}
            solver = self.solver = Solver(sm.model, sm.settings)
            # Motors and springs beyond what a substep resolves act held to a limit: say so.
            self.warnings += solver.warnings
            if solver.backend.note:  # numba could not load: one clear line, and on with numpy
                self.warnings.append(f"solver: {solver.backend.note}")
            self.compiling = solver.backend.name == "numba" and not backend.kernels_cached()
            self.state = solver.make_state()
            self.frame = sm.frame_start
            self._results = {d.object_name: [self._local_positions(d, sm.frame_start)] for d in sm.deformables}
            self._poses = {name: [m] for name, m in self._body_matrices().items()}
            self._spins = {name: [w] for name, w in self._body_spins().items()}
            self._started = True
            if self.preview:
                self._make_previews(context)
        except BaseException:
            self._cleanup()
            raise

    def step(self) -> bool:
        """Compute the next frame; returns True while frames remain.

        A frame the solver cannot compute, or whose result Blender could not store, raises
        ``JakobsenError``; call ``cancel()`` then.
        """
        if not self._started or self._ended:
            raise RuntimeError("BakeJob.step() needs start() first and no finish() or cancel()")
        sm = self._sm
        if self._frame >= sm.frame_end:
            return False
        frame = self._frame + 1
        t0 = time.perf_counter()
        self._solver.step_frame(self._state, pinned_positions=sm.pinned_positions(frame))
        spent = time.perf_counter() - t0
        self.step_seconds += spent
        if frame == sm.frame_start + 1:
            self.first_frame_seconds = spent
        local = {d.object_name: self._local_positions(d, frame) for d in sm.deformables}
        poses = self._body_matrices(frame)
        spins = self._body_spins()
        self.frame = frame
        for name, positions in local.items():
            self._results[name].append(positions)
        for name, m in poses.items():
            self._poses[name].append(m)
            self._spins[name].append(spins[name])
        if self.follow_frames:
            with busy():
                self.scene.frame_set(frame)
        return frame < sm.frame_end

    def _local_positions(self, binding, frame: int) -> np.ndarray:
        """A deformable's positions on ``frame`` in its object space, float32, checked storable."""
        local = self._sm.local_positions(binding, self._state.positions, frame)
        return baking.finite_for_blender(local, f"'{binding.object_name}'",
                                         f"its vertex positions on frame {frame}")

    def run(self, context=None) -> str:
        """start(), every step() and finish(): the whole bake; returns finish()'s summary."""
        t0 = time.perf_counter()
        self.start(context)
        try:
            while self.step():
                pass
        except BaseException:
            self.cancel()
            raise
        return self.finish(elapsed=time.perf_counter() - t0)

    def snapshot(self) -> dict:
        """What a checkpoint keeps (``checkpoints``): the frame, the results so far, the solver and
        its state, the warnings. Plain Python data and the solver's own objects, for pickling."""
        if not self._started or self._ended:
            raise RuntimeError("BakeJob.snapshot() needs a started job that has not finished")
        return {"frame": self.frame, "frame_range": (self._sm.frame_start, self._sm.frame_end),
                "results": self._results, "poses": self._poses, "spins": self._spins, "solver": self.solver,
                "state": self.state,
                "step_seconds": self.step_seconds, "warnings": list(self.warnings)}

    def restore(self, snapshot: dict) -> None:
        """Continue from ``snapshot`` (of a job on the same scene and frames) after ``start()``.

        The scene was read again by ``start()`` (the bindings that turn solver positions into
        object space); the solver, its state and the frames computed come from the snapshot.
        """
        if not self._started or self._ended or self.frame != self._sm.frame_start:
            raise RuntimeError("BakeJob.restore() belongs right after start()")
        sm = self._sm
        if tuple(snapshot["frame_range"]) != (sm.frame_start, sm.frame_end):
            raise JakobsenError(f"the checkpoint is of frames {snapshot['frame_range'][0]}-"
                                f"{snapshot['frame_range'][1]}, this bake is of {sm.frame_start}-{sm.frame_end}")
        if set(snapshot["results"]) != set(self._results) or set(snapshot["poses"]) != set(self._poses):
            raise JakobsenError("the checkpoint is of other objects than the scene now bakes")
        self.solver, self.state = snapshot["solver"], snapshot["state"]
        self.frame, self.step_seconds = snapshot["frame"], snapshot["step_seconds"]
        self._results, self._poses = snapshot["results"], snapshot["poses"]
        # (a checkpoint written before the spins were kept: not known, keyed the short way round)
        self._spins = snapshot.get("spins") or {name: [np.full(3, np.nan)] * len(frames)
                                                for name, frames in self._poses.items()}
        self.warnings = list(snapshot["warnings"])

    def resume_from(self, other: "BakeJob", frame: int, state) -> None:
        """Right after ``start()``: take over ``other``'s frames up to ``frame`` and go on from
        ``state`` (the solver state on ``frame``) with this job's solver, read from the scene as it
        is now (the playback cache after an edit: the frames before it stay, the rest is computed
        with the new settings). A scene whose parts changed (an object added, a mesh remeshed)
        cannot go on from the old state: ``JakobsenError``."""
        if not self._started or self._ended or self.frame != self._sm.frame_start:
            raise RuntimeError("BakeJob.resume_from() belongs right after start()")
        sm = self._sm
        mine, theirs = self._state, state
        if ((sm.frame_start, sm.frame_end) != (other._sm.frame_start, other._sm.frame_end)
                or set(other._results) != set(self._results) or set(other._poses) != set(self._poses)
                or mine.positions.shape != theirs.positions.shape
                or mine.bodies.x.shape != theirs.bodies.x.shape
                or (mine.surfaces is None) != (theirs.surfaces is None)):
            raise JakobsenError("the objects taking part changed (added, removed, or a mesh with other vertices): "
                                "the simulation starts again from its first frame")
        keep = frame - sm.frame_start + 1
        self._results = {name: frames[:keep] for name, frames in other._results.items()}
        self._poses = {name: frames[:keep] for name, frames in other._poses.items()}
        self._spins = {name: frames[:keep] for name, frames in other._spins.items()}
        if state.bodies is not None:
            # An edit (friction, a motor, Deactivation itself) may concern bodies asleep in the
            # old state: the new settings wake them all, and they fall asleep again if still at rest.
            state.bodies.wake_all()
            # A spring's rest length lives in the state (it yields when stretched past its elastic
            # limit): an edited Rest Length moves it by as much (it was ignored: a weight hung on
            # at the old length, found by the add-on probe).
            old_rest, new_rest = other._solver.model.springs.rest, self._solver.model.springs.rest
            if len(old_rest) == len(new_rest) == len(state.bodies.spring_rest):
                state.bodies.spring_rest = state.bodies.spring_rest + (np.asarray(new_rest) - np.asarray(old_rest))
        self.state, self.frame, self.step_seconds = state, frame, other.step_seconds

    def results(self, object_name: str) -> np.ndarray:
        """Object-space positions (frames computed, n, 3) float32 of a deforming object."""
        return np.stack(self._results[object_name])

    def _carried(self, b, only: set[str] | None) -> bool:
        """Whether ``b`` is keyed relative to the simulated body it hangs from (``_to_basis``)."""
        carrier = self._object(b.carrier) if b.carrier else None
        return carrier is not None and (only is None or b.carrier in only or baking.record_of(carrier) is not None)

    def _to_basis(self, b, only: set[str] | None) -> np.ndarray:
        """World -> the body's matrix_basis, (4, 4) or one a frame: for a body hanging from a
        simulated one (``BodyBinding.carrier``), from that one's baked motion, where that one
        is written by this bake or has a bake (one of the child alone, its parent never baked,
        keys it relative to the parent standing where it is)."""
        if self._carried(b, only):
            return affine_inverse(matmul(self.body_results(b.carrier), b.carrier_offset))
        return b.to_basis[:len(self._poses[b.object_name])] if b.to_basis.ndim == 3 else b.to_basis

    def _basis_spins(self, b, only: set[str] | None, to_basis: np.ndarray) -> np.ndarray:
        """(frames computed - 1, 3): the rotation vector of each frame step of ``b`` in the frame
        its keys are in (its parent's, ``to_basis``: world -> matrix_basis), from the average of
        the angular velocities on the step's two frames (``baking.whole_turns``); relative to its
        carrier when keyed relative to it. NaN where not known."""
        frames = len(self._poses[b.object_name])
        w = np.stack(self._spins[b.object_name])
        if self._carried(b, only):
            carrier = self._spins.get(b.carrier, [])
            w = w - np.stack(carrier) if len(carrier) == len(w) else np.full_like(w, np.nan)
        if len(w) != frames:  # (never, but the keys do not depend on it: not known)
            w = np.full((frames, 3), np.nan)
        if frames < 2:
            return np.zeros((0, 3))
        step = 0.5 * (w[1:] + w[:-1]) / self._sm.settings.frame_rate
        a = np.asarray(to_basis, dtype=np.float64)[..., :3, :3]
        a = np.broadcast_to(a, (len(w), 3, 3))[:-1]
        # The parent frame's turn (its scale left out; a mirror turns a rotation's axis the other
        # way, the rotation vector being a pseudovector). Only a sign and a rounding are made of
        # these, so LAPACK's last bits change no key (``geometry.reproducible``).
        u, _, vt = np.linalg.svd(a)
        turn = u @ vt
        return np.linalg.det(turn)[:, None] * np.einsum("kij,kj->ki", turn, step)

    def body_results(self, object_name: str) -> np.ndarray:
        """matrix_world (frames computed, 4, 4) of a rigid body the solver moves."""
        return np.stack(self._poses[object_name])

    def _body_matrices(self, frame: int | None = None) -> dict[str, np.ndarray]:
        sm = self._sm
        if not any(b.keyed for b in sm.bodies):
            return {}
        translations, rotations = self._solver.body_poses(self._state)
        out = sm.body_matrices(translations, rotations)
        # All bodies checked in one call (one each was most of this, 20 us a body a frame); the
        # body to name is looked for only when something is not storable.
        if out and not np.all(np.isfinite(baking.storable(np.stack(list(out.values()))))):
            for name, m in out.items():
                baking.finite_for_blender(m, f"'{name}'", f"its pose on frame {frame or sm.frame_start}")
        return out

    def _body_spins(self) -> dict[str, np.ndarray]:
        """Angular velocity (3,) rad/s in world axes of every keyed body on the frame just computed."""
        bodies = self._state.bodies
        if bodies is None:
            return {}
        w = bodies.angular_velocity
        return {b.object_name: np.array(w[b.index], dtype=np.float64) for b in self._sm.bodies if b.keyed}

    def finish(self, elapsed: float | None = None, only: set[str] | None = None) -> str:
        """Write the bake (replacing each object's previous one); returns a one-line summary.
        ``only``: the names (as at the start, ``name_at_start``) of the objects to write; the
        others are left as they are (a per-object Bake from Cache). It may be called again for
        others: the frames stay until the job is dropped.

        Everything that can fail is done before the scene changes: the objects are found (a
        renamed one by its uid), every value is checked storable, and PC2 files are written beside
        their places (a full disk raises ``OSError`` with the scene and the previous bake as they
        were); only then is each object's previous bake freed and the new one written."""
        if not self.done:
            raise RuntimeError("BakeJob.finish() before the last frame; use cancel() to stop early")
        self._cleanup()
        sm = self._sm
        deformables, bodies = [], []
        for d in sm.deformables:
            if only is not None and d.object_name not in only:
                continue
            obj = self._object(d.object_name)
            if obj is None:
                self.warnings.append(f"'{d.object_name}' was deleted during the bake; nothing written for it")
            else:
                deformables.append((obj, d, self.results(d.object_name)))
        for b in sm.bodies:
            if not b.keyed or (only is not None and b.object_name not in only):
                continue
            obj = self._object(b.object_name)
            if obj is None:
                self.warnings.append(f"'{b.object_name}' was deleted during the bake; nothing written for it")
            else:
                to_basis = self._to_basis(b, only)
                bodies.append((obj, b, matmul(to_basis, self.body_results(b.object_name)),
                               self._basis_spins(b, only, to_basis)))
        torn = self._torn_meshes(deformables)
        deformables = [(obj, d, torn[d.object_name][1] if d.object_name in torn else local)
                       for obj, d, local in deformables]
        staged = {}
        if self.output == 'PC2':
            try:
                for obj, d, local in deformables:
                    staged[d.object_name] = baking.stage_pc2_file(baking.pc2_path(obj, self.cache_directory),
                                                                  sm.frame_start, local)
            except BaseException:
                for path in staged.values():
                    if os.path.exists(path):
                        os.remove(path)
                for mesh, _ in torn.values():
                    bpy.data.meshes.remove(mesh)
                raise
        written = []
        for obj, d, local in deformables:
            baking.free_bake(obj)
            keep = tearing.put_on(obj, torn[d.object_name][0]) if d.object_name in torn else None
            muted = []
            if self.output == 'PC2':
                baking.write_pc2(obj, sm.frame_start, local, self.cache_directory, staged=staged[d.object_name])
            else:
                baking.write_shape_keys(obj, sm.frame_start, local)
                # The bake is of the evaluated mesh: its modifiers are off while it plays.
                muted = baking.mute_modifiers(obj)
                if muted:
                    baking.add_to_record(obj, {"muted_modifiers": muted})
                # And its own shape keys, which the bake includes too.
                keys = baking.mute_shape_keys(obj)
                if keys:
                    baking.add_to_record(obj, {"muted_shape_keys": keys})
                    muted = muted + [{"name": f"shape key {name}"} for name in keys]
            if keep:
                baking.add_to_record(obj, keep)
            notes = ["torn"] * bool(keep) + [f"{', '.join(m['name'] for m in muted)} off while baked"] * bool(muted)
            written.append(f"{obj.name} ({d.vertex_count} vertices{''.join(', ' + n for n in notes)})")
        for obj, b, basis, spins in bodies:
            # What the object rested at before any bake: from the bake being replaced, else as it is now.
            previous = baking.record_of(obj)
            rest = previous.get("rest") if previous and previous.get("output") == 'TRANSFORM' else None
            rest = rest or baking.transform_values(obj)
            baking.free_bake(obj)
            baking.write_transform_keys(obj, sm.frame_start, basis, rest=rest, scale=b.scale, spins=spins)
            written.append(f"{obj.name} (rigid body)")
        stale = self._free_stale_bakes({obj for obj, *_ in deformables} | {obj for obj, *_ in bodies}) \
            if only is None else []
        keyed = len(bodies)
        # Solver time (the frames' own computing) and wall time (everything from the start, a modal
        # bake's redraws included) are told apart: the second says what the first costs the user.
        wall = f", {elapsed:.2f} s wall" if elapsed is not None else ""
        outputs = []
        if len(written) > keyed:
            outputs.append("PC2 point caches" if self.output == 'PC2' else "shape keys")
        if keyed:
            outputs.append("keyframes")
        summary = (f"Baked {len(written)} object{'s' * (len(written) != 1)} ({', '.join(written)}) as "
                   f"{' and '.join(outputs) or 'nothing'}, frames {sm.frame_start}-{sm.frame_end}, "
                   f"in {self.step_seconds:.2f} s of solver time{wall} ({self.frame_count} frames, "
                   f"{self.ms_per_frame:.1f} ms/frame, {self._solver.backend.name} kernels)")
        note = [f"solver: {self._solver.backend.note}"] if self._solver.backend.note else []
        if self.compile_seconds:  # (the ms/frame above leaves it out)
            note.append(f"the first frame took {self.compile_seconds:.0f} s compiling the solver's kernels for "
                        "this kind of scene, once (they are kept for the next bakes)")
        return "; ".join([summary] + note + stale + self.broken())

    def _free_stale_bakes(self, written: set) -> list[str]:
        """Free the previous bakes of the scene's objects that this bake does not write (a body
        since made Dynamic Off or a Collider, or with Jakobsen Physics unticked), as Blender's
        own physics drops the cache of what it no longer simulates: this bake had them where
        they stood before their bake, or not at all, so their old motion would play through
        what was simulated around them (a box that fell on a body switched to Dynamic Off hung
        2.5 m in the air). Returns what it says about them."""
        freed = []
        # (Objects out of the view layer, in an excluded collection, were not read: their bakes
        # are left alone, as one excludes a collection to bake the rest faster.)
        layer = bpy.context.view_layer
        shown = set(layer.objects) if layer is not None and bpy.context.scene == self.scene else set()
        for obj in baking.baked_objects(self.scene):
            if obj in written or obj not in shown or baking.free_blocker(obj) is not None:
                continue  # (one whose NLA is in tweak mode cannot be freed now: left as it is)
            if baking.free_bake(obj):
                freed.append(obj.name)
        if not freed:
            return []
        return [f"freed the previous bake of {', '.join(freed)}: no longer simulated (Dynamic Off, another role, "
                "or Jakobsen Physics off), so it stands where it stood before that bake, as this bake had it"]

    def _torn_meshes(self, deformables) -> dict:
        """{object name: (its mesh split where it tore, the positions for it)} of the cloths that
        tore (``tearing``); made from each object's own mesh, before anything in the scene changes."""
        pairs, times = self._solver.torn_sticks(self._state, with_times=True)
        if not len(pairs):
            return {}
        fps = self._sm.settings.frame_rate
        out = {}
        for obj, d, local in deformables:
            start, stop = d.particles.start, d.particles.stop
            mine = (pairs[:, 0] >= start) & (pairs[:, 0] < stop)
            if not np.any(mine) or obj.type != 'MESH':
                continue
            rec = baking.record_of(obj) or {}
            mesh = rec.get(tearing.ORIGINAL) or obj.data
            if len(mesh.vertices) != d.vertex_count:
                self.warnings.append(f"'{obj.name}': it tore, but its modifiers change its vertex count, so the "
                                     "mesh cannot be split where it tore; the bake shows it stretched instead "
                                     "(apply the modifiers to see the tear)")
                continue
            # The first frame each torn stick shows torn on (frame_start is local[0], at t = 0).
            frames = np.ceil(times[mine] * fps - 1e-6).astype(np.int64)
            split, positions = tearing.split_mesh(mesh, pairs[mine] - start, frames, local)
            if split is not None:
                out[d.object_name] = (split, positions)
        return out

    def objects(self) -> list[str]:
        """The names (as at the start) of the objects ``finish()`` writes: the cloths, soft bodies
        and the rigid bodies the solver moves."""
        sm = self._sm
        return [d.object_name for d in sm.deformables] + [b.object_name for b in sm.bodies if b.keyed]

    def name_at_start(self, obj) -> str | None:
        """The name ``obj`` had when the job started (it may have been renamed since); None if it
        does not take part."""
        return next((name for name, uid in self._uids.items() if uid == obj.session_uid), None)

    def _object(self, name: str):
        """The taking-part object that was called ``name`` when the job started (renamed or not)."""
        return find_object(name, self._uids.get(name))

    def broken(self) -> list[str]:
        """``connector 'Hinge' broke at frame 12`` for each connector and spring that broke so far,
        in the order they broke."""
        if self.solver is None or self.state is None:
            return []
        sm = self._sm
        return [f"{sm.breakable.get(name, 'connector')} '{name}' broke at frame {sm.frame_of(t)}"
                for name, t in self.solver.broken_connectors(self.state)]

    def cancel(self) -> None:
        """Stop: the scene is left as it was before ``start()``."""
        self._cleanup()

    # -- what a running job shows, and its one clean-up ------------------------------------------------

    def _make_previews(self, context) -> None:
        """Draw the computed frame in place of every object the solver moves (each hidden meanwhile)."""
        depsgraph = context.evaluated_depsgraph_get()
        shown = []
        for d in self._sm.deformables:
            obj = bpy.data.objects[d.object_name]
            co, tris = previews.triangles_of(obj, depsgraph)
            if len(co) == d.vertex_count:  # (else its modifiers change it while it bakes: not drawn)
                self._preview_meshes[d.object_name] = (None, tris)
                shown.append(obj)
        for b in self._sm.bodies:
            if b.keyed:
                obj = bpy.data.objects[b.object_name]
                # The evaluated mesh in object space, drawn at each computed pose (scale included).
                self._preview_meshes[b.object_name] = previews.triangles_of(obj, depsgraph)
                shown.append(obj)
        previews.show(self._preview_key, self.preview_geometry, hide=shown, view_layer=context.view_layer)

    def preview_geometry(self) -> previews.Geometry:
        """What the preview draws now: {object name: (world positions (n, 3), triangles (t, 3))} of
        the last frame computed."""
        state = self.state
        if state is None:
            return {}
        out = {}
        for d in self._sm.deformables:
            if d.object_name in self._preview_meshes:
                out[d.object_name] = (state.positions[d.particles], self._preview_meshes[d.object_name][1])
        for name, poses in self._poses.items():
            if name in self._preview_meshes:
                local, tris = self._preview_meshes[name]
                if local is None:  # (only a deforming object's entry has none; those are drawn above)
                    continue
                m = poses[-1]
                out[name] = (local @ m[:3, :3].T.astype(np.float32) + m[:3, 3].astype(np.float32), tris)
        return out

    def _cleanup(self) -> None:
        if self._ended:
            return
        self._ended = True
        previews.release(self._preview_key)
        self._preview_meshes.clear()
        scene = bpy.data.scenes.get(self.scene_name)
        if scene is not None and self._original_frame is not None and (
                (scene.frame_current, scene.frame_subframe) != self._original_frame):
            with busy():
                scene.frame_set(self._original_frame[0], subframe=self._original_frame[1])
