"""``jakobsen build``: the Blender extension zips (Blender 4.2+, Install from Disk).

The zip's root is the add-on package itself: ``blender_manifest.toml``, ``__init__.py`` and the
add-on's modules. The solver goes in as a wheel of its own package, ``jakobsen_engine`` (built
here from ``engine/``, pure Python), listed in the manifest's ``wheels``: Blender installs it into
the extension's site-packages, so the add-on imports ``jakobsen_engine`` by the same name as the
repository and the tests do (one module identity), and nothing generic lands in site-packages.
Left out: the command line (``tools/``), caches and anything that is not part of the add-on.

One zip per platform (Linux x86-64, Windows x64, macOS arm64) and Blender Python (3.11: Blender
4.2 to 5.0; 3.13: 5.1 and later) adds numba and llvmlite, the compiled kernels' compiler, as the
wheels PyPI publishes for that platform and Python; the manifest says which platform and which
Blender versions it is for. (One zip with the wheels of both Pythons does not work on Blender
4.2: its installer keeps one wheel per package name, the later file name, so it installed the
3.13 numba into Python 3.11, which then could not import it.)
``--platform none`` builds the one zip without them, for any platform: it bakes with the numpy
kernels. Downloaded wheels are kept in ``build/wheels`` (pip download, from PyPI).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import tomllib
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADDON_DIR = os.path.join(REPO, "addon")
ENGINE_DIR = os.path.join(REPO, "engine")
ENGINE_PACKAGE = "jakobsen_engine"
MANIFEST = "blender_manifest.toml"
# Directories that are not shipped.
EXCLUDED_DIRS = {"__pycache__", "tests", ".pytest_cache"}
# Files that are shipped, by extension (no compiled files, no editor or OS leftovers).
SHIPPED_SUFFIXES = (".py", ".toml", ".txt", ".md", ".json")
# Every file in the zips gets this time stamp: the same input gives the same bytes.
STAMP = (2024, 1, 1, 0, 0, 0)
# The compiler of the kernels, by Blender platform: PyPI's platform tag for its wheels.
NUMBA = ("numba==0.68.1", "llvmlite==0.50.0")
PLATFORMS = {"linux-x64": "manylinux_2_28_x86_64", "windows-x64": "win_amd64", "macos-arm64": "macosx_12_0_arm64"}
# Blender's Python -> the Blender versions that have it: (first, first that does not; None: open).
PYTHONS = {"3.11": ("4.2.0", "5.1.0"), "3.13": ("5.1.0", None)}
WHEEL_CACHE = os.path.join(REPO, "build", "wheels")


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


def package_files(directory: str, prefix: str = "") -> list[tuple[str, str]]:
    """(path on disk, path in the archive) of every shipped file under ``directory``, sorted."""
    out = []
    for root, dirs, files in os.walk(directory):
        rel_root = os.path.relpath(root, directory)
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDED_DIRS and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(SHIPPED_SUFFIXES) or name.startswith("."):
                continue
            arc = os.path.normpath(os.path.join(prefix, rel_root, name)).replace(os.sep, "/")
            out.append((os.path.join(root, name), arc))
    return sorted(out, key=lambda item: item[1])


def _write(zf: zipfile.ZipFile, arc: str, data: bytes) -> None:
    info = zipfile.ZipInfo(arc, date_time=STAMP)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest},{len(data)}"


def build_engine_wheel(out_dir: str, version: str, *, engine_dir: str = ENGINE_DIR) -> str:
    """The solver as a pure-Python wheel ``jakobsen_engine-<version>-py3-none-any.whl`` (PEP 427:
    the package, and a dist-info with METADATA, WHEEL and RECORD); returns its path."""
    name = f"{ENGINE_PACKAGE}-{version}-py3-none-any.whl"
    path = os.path.join(out_dir, name)
    info = f"{ENGINE_PACKAGE}-{version}.dist-info"
    files = [(arc, open(disk, "rb").read()) for disk, arc in package_files(engine_dir, ENGINE_PACKAGE)]
    files.append((f"{info}/METADATA", (
        "Metadata-Version: 2.1\n"
        f"Name: {ENGINE_PACKAGE}\n"
        f"Version: {version}\n"
        "Summary: The Jakobsen Physics solver (Verlet particles, projected constraints, rigid bodies)\n"
        "Requires-Python: >=3.11\n"
        "Requires-Dist: numpy>=1.26\n").encode()))
    files.append((f"{info}/WHEEL", (
        "Wheel-Version: 1.0\nGenerator: jakobsen build\nRoot-Is-Purelib: true\nTag: py3-none-any\n").encode()))
    files.append((f"{info}/top_level.txt", f"{ENGINE_PACKAGE}\n".encode()))
    record = "".join(f"{arc},{_record_hash(data)}\n" for arc, data in files) + f"{info}/RECORD,,\n"
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w") as zf:
        for arc, data in files:
            _write(zf, arc, data)
        _write(zf, f"{info}/RECORD", record.encode())
    os.replace(tmp, path)
    return path


def manifest_with_wheels(text: str, wheels: list[str], platform: str | None = None,
                         python: str | None = None) -> str:
    """The manifest's text with ``wheels = [...]`` (and, for one platform's zip, ``platforms`` and
    the Blender versions that have its ``python``) among its top-level keys (before the first
    table, where TOML would read them as part of it)."""
    entry = "wheels = [\n" + "".join(f'  "./wheels/{w}",\n' for w in wheels) + "]\n"
    if platform:
        entry += f'platforms = ["{platform}"]\n'
    if python:
        first, beyond = PYTHONS[python]
        text = re.sub(r'^blender_version_min\s*=\s*"([^"]*)"',
                      lambda m: f'blender_version_min = "{max(m.group(1), first, key=_version_key)}"', text,
                      flags=re.M)
        if beyond:  # the manifest's own maximum, or this Python's last Blender if that comes first
            pattern = r'^blender_version_max\s*=\s*"([^"]*)"\s*$'
            if re.search(pattern, text, flags=re.M):
                text = re.sub(pattern, lambda m: f'blender_version_max = "{min(m.group(1), beyond, key=_version_key)}"',
                              text, flags=re.M)
            else:
                entry += f'blender_version_max = "{beyond}"\n'
    entry += "\n"
    match = re.search(r"^\[", text, flags=re.M)
    at = match.start() if match else len(text)
    return text[:at] + entry + text[at:]


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def platform_wheels(platform: str, python: str, cache: str = WHEEL_CACHE) -> list[str]:
    """numba's and llvmlite's wheels for ``platform`` and Blender's ``python`` ("3.11" or "3.13"),
    downloaded from PyPI into ``cache`` once (paths, sorted). numpy is not among them: Blender
    ships its own."""
    if platform not in PLATFORMS:
        raise BuildError(f"unknown platform {platform!r}; one of {', '.join(PLATFORMS)}")
    if python not in PYTHONS:
        raise BuildError(f"unknown Blender Python {python!r}; one of {', '.join(PYTHONS)}")
    folder = os.path.join(cache, platform)
    os.makedirs(folder, exist_ok=True)
    tag = "-cp" + python.replace(".", "") + "-"

    def wanted() -> list[str]:
        return [n for n in os.listdir(folder) if n.endswith(".whl") and tag in n
                and any(n.startswith(req.replace("==", "-")) for req in NUMBA)]

    if len(wanted()) < len(NUMBA):
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                               "--platform", PLATFORMS[platform], "--python-version", python, "-d", folder, *NUMBA],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise BuildError(f"could not download {' '.join(NUMBA)} for {platform}, Python {python}: "
                             f"{done.stderr.strip()[-500:]}")
    return sorted(os.path.join(folder, n) for n in wanted())


def build(out_dir: str = "dist", *, platform: str | None = None, python: str | None = None,
          addon_dir: str = ADDON_DIR, engine_dir: str = ENGINE_DIR, wheel_cache: str = WHEEL_CACHE) -> str:
    """Write the extension zip into ``out_dir``: ``<id>-<version>.zip`` without the compiler (any
    platform and Blender, numpy kernels), or with ``platform`` and Blender's ``python`` the numba
    wheels for them, ``<id>-<version>-<platform>-py<311>.zip`` (for the Blender versions with that
    Python); returns its absolute path."""
    if (platform is None) != (python is None):
        raise BuildError("a zip with the compiler is for one platform and one Blender Python: give both")
    from jakobsen_engine import __version__

    manifest = read_manifest(addon_dir)
    if manifest["version"] != __version__:
        raise BuildError(f"{MANIFEST} says version {manifest['version']!r} but the engine is {__version__!r}; "
                         "make them agree")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", manifest["id"]):
        raise BuildError(f"{MANIFEST}: id {manifest['id']!r} must be a Python identifier")
    for key in ("wheels", "platforms"):
        if key in manifest:
            raise BuildError(f"{MANIFEST}: leave {key!r} out; the build writes it for each zip")
    files = package_files(addon_dir)
    arcs = {arc for _, arc in files}
    for needed in (MANIFEST, "__init__.py"):
        if needed not in arcs:
            raise BuildError(f"the add-on at {addon_dir} has no {needed}")
    if not os.path.isfile(os.path.join(engine_dir, "__init__.py")):
        raise BuildError(f"the solver at {engine_dir} has no __init__.py")
    os.makedirs(out_dir, exist_ok=True)
    engine_wheel = build_engine_wheel(out_dir, __version__, engine_dir=engine_dir)
    wheels = [engine_wheel] + (platform_wheels(platform, python, wheel_cache) if platform else [])
    suffix = f"-{platform.replace('-', '_')}-py{python.replace('.', '')}" if platform else ""
    path = os.path.abspath(os.path.join(out_dir, f"{manifest['id']}-{manifest['version']}{suffix}.zip"))
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w") as zf:
        for disk, arc in files:
            with open(disk, "rb") as f:
                data = f.read()
            if arc == MANIFEST:
                data = manifest_with_wheels(data.decode(), [os.path.basename(w) for w in wheels], platform,
                                            python).encode()
            _write(zf, arc, data)
        for wheel in wheels:
            with open(wheel, "rb") as f:
                # Stored, not deflated again: wheels are zips already.
                info = zipfile.ZipInfo(f"wheels/{os.path.basename(wheel)}", date_time=STAMP)
                info.external_attr = 0o644 << 16
                zf.writestr(info, f.read())
    os.replace(tmp, path)
    os.remove(engine_wheel)
    return path


def run_build(out_dir: str = "dist", platforms=("none",)) -> list[str]:
    """``jakobsen build [--platform ...]``: the zips asked for (``all``: one per platform and the
    one without the compiler)."""
    chosen = list(PLATFORMS) + ["none"] if "all" in platforms else list(platforms)
    jobs = [(None, None) if p == "none" else (p, python) for p in chosen for python in
            ((None,) if p == "none" else PYTHONS)]
    paths = []
    for platform, python in jobs:
        path = build(out_dir, platform=platform, python=python)
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
        size = os.path.getsize(path)
        if platform is None:
            what = "numpy kernels, any platform"
        else:
            first, beyond = PYTHONS[python]
            what = f"numba kernels, {platform}, Blender {first}" + (f" to before {beyond}" if beyond else " and later")
        print(f"jakobsen build: {path} ({len(names)} files, {size / 1e6:.1f} MB; {what})")
        paths.append(path)
    print("  install it in Blender 4.2+: Edit > Preferences > Get Extensions > Install from Disk")
    return paths
