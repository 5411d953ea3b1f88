"""The kernel seam: the hot loops, array in, array out, implemented twice.

``backend/numba`` compiles them (the default wherever numba imports); ``backend/numpy`` is the
reference, and the fallback where numba cannot load. Both take the same arguments and give the
same numbers (the kernel tests hold them to that), and both are deterministic.

``select(name)`` -> ``Backend``: ``name`` is "auto" (numba if it loads, else numpy), "numba" or
"numpy". ``JAKOBSEN_BACKEND`` in the environment, or ``use(name)``, changes what "auto" means
(the tests run every physics test on both). ``configure(cache_dir=...)`` says where numba keeps
its compiled kernels (the add-on points it at the extension's user folder before the first bake).
"""

from __future__ import annotations

import contextlib
import importlib
import os
from dataclasses import dataclass
from types import ModuleType

from ..errors import JakobsenError

NAMES = ("numba", "numpy")
# The kernel modules each backend provides, by the same names.
MODULES = ("particles", "distance", "contacts", "rigid", "joints", "motors", "springs", "sweep", "self_contact",
           "surfaces", "fields", "vehicles")

_default = os.environ.get("JAKOBSEN_BACKEND", "auto")
_loaded: dict[str, "Backend"] = {}
_numba_failure: str | None = None


@dataclass(frozen=True)
class Backend:
    """The kernels of one backend: ``backend.particles.verlet_integrate(...)`` and so on.

    name: "numba" or "numpy"; note: why "auto" fell back to numpy (empty if it did not)."""

    name: str
    particles: ModuleType
    distance: ModuleType
    contacts: ModuleType
    rigid: ModuleType
    joints: ModuleType
    motors: ModuleType
    springs: ModuleType
    sweep: ModuleType
    self_contact: ModuleType
    surfaces: ModuleType
    fields: ModuleType
    vehicles: ModuleType
    note: str = ""


def kernel_sources_digest() -> str:
    """A digest (16 hex digits) of the engine's source files. numba keys each cached kernel on
    its own file only: a kernel that calls one from another file (the fused position passes call
    the joints' and motors') would be loaded with the old callee after an update that changed only
    the callee's file, and a constant a kernel imports (``geometry.kinds``, the numpy reference's
    tolerances) is compiled into it. So ``configure`` keeps each version of the engine's kernels
    apart."""
    import hashlib

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the engine package
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).replace(os.sep, "/").encode())
                with open(path, "rb") as source:
                    digest.update(source.read())
    return digest.hexdigest()[:16]


def configure(*, cache_dir: str | None = None) -> None:
    """Where numba caches its compiled kernels: a folder in ``cache_dir`` (a writable folder) for
    this version of the kernels' sources (``kernel_sources_digest``). Must be set before the first
    kernel compiles, or numba writes beside the source, which may be read-only in an extension."""
    if cache_dir:
        digest = kernel_sources_digest()
        _prune_other_versions(cache_dir, digest)
        cache_dir = os.path.join(cache_dir, digest)
        os.makedirs(cache_dir, exist_ok=True)
        os.environ["NUMBA_CACHE_DIR"] = cache_dir
        try:
            import sys

            numba = sys.modules.get("numba")
            if numba is not None:
                numba.config.CACHE_DIR = cache_dir
        except AttributeError:
            pass


# A cache folder of another version of the kernels is removed once nothing in it has been
# written or used for this long (a day): an update leaves its predecessor's kernels (tens of
# megabytes) behind otherwise, while another Blender still running the old version keeps its own.
STALE_CACHE_SECONDS = 24 * 3600


def _prune_other_versions(cache_dir: str, digest: str) -> None:
    """Remove the folders of other versions of the kernels (named by a digest, holding numba's
    cache files and nothing else) in ``cache_dir`` that are stale; anything else there is left."""
    import re
    import shutil
    import time

    try:
        entries = os.listdir(cache_dir)
    except OSError:
        return
    now = time.time()
    for name in entries:
        folder = os.path.join(cache_dir, name)
        if name == digest or not re.fullmatch(r"[0-9a-f]{16}", name) or not os.path.isdir(folder):
            continue
        try:
            newest = os.path.getmtime(folder)
            only_cache = True
            for root, _dirs, files in os.walk(folder):
                for file in files:
                    path = os.path.join(root, file)
                    only_cache &= file.endswith((".nbi", ".nbc"))
                    newest = max(newest, os.path.getmtime(path), os.path.getatime(path))
        except OSError:  # (another Blender removing or writing it now): left for another time
            continue
        if only_cache and now - newest > STALE_CACHE_SECONDS:
            shutil.rmtree(folder, ignore_errors=True)


def kernels_cached() -> bool:
    """Whether compiled kernels are in numba's cache folder already (so the first bake does not
    compile them): any index file there. True when no cache folder is configured (numba then
    caches beside the source and compiles as it must; nothing to tell)."""
    folder = os.environ.get("NUMBA_CACHE_DIR")
    if not folder:
        return True
    for _root, _dirs, files in os.walk(folder):
        if any(name.endswith(".nbi") for name in files):
            return True
    return False


def _load(name: str) -> Backend:
    if name not in _loaded:
        if name == "numba" and not os.environ.get("NUMBA_CACHE_DIR"):
            # Not told where (the add-on tells it; scripts and the tests do not): numba would cache
            # beside the sources, keyed on each kernel's own file, and after an update (a pull)
            # that changed only a callee or a constant, load kernels compiled from the old one.
            with contextlib.suppress(OSError):  # (a read-only install: numba's own place, as before)
                configure(cache_dir=os.path.join(os.path.dirname(os.path.abspath(__file__)), "numba", "__pycache__",
                                                 "versions"))
        mods = {m: importlib.import_module(f"{__name__}.{name}.{m}") for m in MODULES}
        _loaded[name] = Backend(name=name, **mods)
    return _loaded[name]


def numba_problem() -> str | None:
    """Why the numba backend cannot load here (None if it can): not installed, or broken."""
    global _numba_failure
    if "numba" in _loaded:
        return None
    if _numba_failure is None:
        try:
            _load("numba")
            return None
        except Exception as error:  # ImportError, or numba/llvmlite broken in this Python
            _numba_failure = f"{type(error).__name__}: {error}"
    return _numba_failure


def select(name: str = "auto") -> Backend:
    """The backend to step with. "auto" takes numba where it loads, else numpy (with ``note``
    saying why); asking for "numba" where it cannot load is an error."""
    if name == "auto":
        name = _default
    if name == "auto":
        problem = numba_problem()
        if problem is None:
            return _load("numba")
        numpy = _load("numpy")
        return Backend(name="numpy", **{m: getattr(numpy, m) for m in MODULES},
                       note=f"numba is not available ({problem}); using the numpy kernels (slower)")
    if name not in NAMES:
        raise JakobsenError(f"solver settings: backend must be 'auto', 'numba' or 'numpy', got {name!r}")
    if name == "numba":
        problem = numba_problem()
        if problem is not None:
            raise JakobsenError(f"solver settings: backend 'numba' cannot load here ({problem}); use 'auto' or "
                                "'numpy'")
    return _load(name)


@contextlib.contextmanager
def use(name: str):
    """Within: "auto" means ``name`` ("numba" or "numpy")."""
    global _default
    if name not in NAMES + ("auto",):
        raise ValueError(name)
    previous, _default = _default, name
    try:
        yield
    finally:
        _default = previous
