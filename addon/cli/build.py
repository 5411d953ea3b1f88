"""``jakobsen build``: the Blender extension zip (Blender 4.2+, Install from Disk).

The zip's root is the add-on package itself: ``blender_manifest.toml``, ``__init__.py`` and the
add-on's modules, with the solver copied in as ``engine/`` (in the repository ``addon/engine``
is a symlink to ``../engine``; the zip holds real files). Blender imports it as
``bl_ext.<repository>.jakobsen_physics`` and the solver as ``...jakobsen_physics.engine``, so
nothing lands under a generic top-level name. Left out: the command line (``cli/``, which needs
the repository), caches and anything that is not part of the add-on.
"""

from __future__ import annotations

import os
import re
import tomllib
import zipfile

ADDON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = "blender_manifest.toml"
# Directories of the add-on package that are not shipped.
EXCLUDED_DIRS = {"cli", "__pycache__", "tests", ".pytest_cache"}
# Files that are shipped, by extension (no compiled files, no editor or OS leftovers).
SHIPPED_SUFFIXES = (".py", ".toml", ".txt", ".md", ".json")


class BuildError(Exception):
    """The add-on cannot be packaged as it is (a bad manifest, a version mismatch)."""


def read_manifest(addon_dir: str = ADDON_DIR) -> dict:
    path = os.path.join(addon_dir, MANIFEST)
    with open(path, "rb") as f:
        manifest = tomllib.load(f)
    for key in ("schema_version", "id", "version", "name", "tagline", "maintainer", "type", "license",
                "blender_version_min"):
        if key not in manifest:
            raise BuildError(f"{path}: the manifest has no {key!r}")
    return manifest


def package_files(addon_dir: str = ADDON_DIR) -> list[tuple[str, str]]:
    """(path on disk, path in the zip) of every file the extension ships, sorted by zip path.

    Symlinked directories (``engine``) are followed, so the zip holds the solver's files.
    """
    out = []
    for root, dirs, files in os.walk(addon_dir, followlinks=True):
        rel_root = os.path.relpath(root, addon_dir)
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDED_DIRS and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(SHIPPED_SUFFIXES) or name.startswith("."):
                continue
            arc = os.path.normpath(os.path.join(rel_root, name)).replace(os.sep, "/")
            out.append((os.path.join(root, name), arc))
    return sorted(out, key=lambda item: item[1])


def build(out_dir: str = "dist", *, addon_dir: str = ADDON_DIR) -> str:
    """Write ``<id>-<version>.zip`` into ``out_dir``; returns its absolute path."""
    from engine import __version__

    manifest = read_manifest(addon_dir)
    if manifest["version"] != __version__:
        raise BuildError(f"{MANIFEST} says version {manifest['version']!r} but the engine is {__version__!r}; "
                         "make them agree")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", manifest["id"]):
        raise BuildError(f"{MANIFEST}: id {manifest['id']!r} must be a Python identifier")
    files = package_files(addon_dir)
    arcs = {arc for _, arc in files}
    for needed in (MANIFEST, "__init__.py", "engine/__init__.py"):
        if needed not in arcs:
            raise BuildError(f"the add-on at {addon_dir} has no {needed}")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.abspath(os.path.join(out_dir, f"{manifest['id']}-{manifest['version']}.zip"))
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for disk, arc in files:
            info = zipfile.ZipInfo(arc, date_time=(2024, 1, 1, 0, 0, 0))  # reproducible: same input, same zip
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with open(disk, "rb") as f:
                zf.writestr(info, f.read())
    os.replace(tmp, path)
    return path


def run_build(out_dir: str = "dist") -> str:
    path = build(out_dir)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    size = os.path.getsize(path)
    print(f"jakobsen build: {path} ({len(names)} files, {size / 1024:.0f} KB)")
    print("  install it in Blender 4.2+: Edit > Preferences > Get Extensions > Install from Disk")
    return path
