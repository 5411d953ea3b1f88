"""Checkpoints of a running bake: save the solver where it is, continue from there later.

A checkpoint holds everything a ``BakeJob`` has computed and will compute from: the frame, the
per-frame results collected so far, and the solver itself with its state (warm-started
multipliers, contact lists, torn sticks, energy bookkeeping: every cache the next step reads).
Pickling the whole solver, not a list of its arrays, is what makes a resumed bake bit-identical
to one that never stopped whatever caches the solver grows later. The kernel modules it refers
to are pickled by name and imported again on load (the same kernels, not copies of them).

The file also carries a fingerprint of what was baked (the input file's bytes, the frames, the
wedge values, the add-on's version): a checkpoint is only ever continued by the bake it came
from. It is written to a temporary name and renamed, so a bake killed while writing leaves the
previous checkpoint whole. Like any pickle it runs code when loaded: load only your own.
"""

from __future__ import annotations

import importlib
import io
import os
import pickle
import types

from jakobsen_engine import backend as backends

FORMAT = 1


class CheckpointError(Exception):
    """A checkpoint that cannot be used (another bake's, damaged, or of another version)."""


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (obj.__name__,)
        if isinstance(obj, backends.Backend):
            return backends.select, (obj.name,)
        return NotImplemented


def save(path: str, job, fingerprint: dict) -> None:
    """Write ``job``'s checkpoint (``BakeJob.snapshot()``) to ``path``, atomically."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(
        {"format": FORMAT, "fingerprint": fingerprint, "job": job.snapshot()})
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(buffer.getvalue())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load(path: str, fingerprint: dict) -> dict:
    """The snapshot in ``path`` for ``BakeJob.restore``; CheckpointError if it is not this bake's."""
    try:
        with open(path, "rb") as f:
            data = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError) as error:
        raise CheckpointError(f"{path}: cannot read the checkpoint ({type(error).__name__}: {error}); "
                              "delete it to bake from the start") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a checkpoint of this version of Jakobsen Physics; delete it to bake "
                              "from the start")
    theirs = data.get("fingerprint", {})
    different = sorted(k for k in set(theirs) | set(fingerprint) if theirs.get(k) != fingerprint.get(k))
    if different:
        raise CheckpointError(f"{path}: the checkpoint is of another bake (what differs: {', '.join(different)}); "
                              "delete it to bake from the start")
    return data["job"]
