"""The extension zip: what it holds, and that real Blender installs it with its own Install from
Disk operator, enables it, bakes with the solver shipped in it (a wheel), disables and uninstalls it.

Blender reads its user directories when bpy is first imported, so the install runs in a child
Python whose HOME and BLENDER_USER_RESOURCES point into tmp_path: nothing is written into the
real home directory, and this process's Blender (with the add-on from the source tree) is not
touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile

import pytest

pytest.importorskip("bpy")

from jakobsen_tools import build as build_mod  # noqa: E402

pytestmark = pytest.mark.blender

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Runs in the child: install the zip into the "user_default" repository, enable, bake, disable,
# uninstall; prints one JSON line with what it saw.
INSTALL_SCRIPT = r'''
import json, os, sys
import bpy, addon_utils

zip_path = sys.argv[1]
seen = {"version": bpy.app.version_string}
repo = next(r for r in bpy.context.preferences.extensions.repos if r.module == "user_default")
seen["repo_directory"] = repo.directory
seen["install"] = sorted(bpy.ops.extensions.package_install_files(
    filepath=zip_path, repo="user_default", enable_on_install=True))
module = "bl_ext.user_default.jakobsen_physics"
seen["enabled"] = module in bpy.context.preferences.addons
seen["scene_settings"] = hasattr(bpy.types.Scene, "jakobsen")
seen["object_settings"] = hasattr(bpy.types.Object, "jakobsen")
seen["bake_operator"] = hasattr(bpy.ops.jakobsen, "bake") and bpy.ops.jakobsen.bake.idname() == "JAKOBSEN_OT_bake"
seen["bake_operator_module"] = bpy.types.JAKOBSEN_OT_bake.__module__
seen["engine_file"] = sys.modules["jakobsen_engine"].__file__
seen["installed_files"] = sorted(os.listdir(os.path.join(repo.directory, "jakobsen_physics")))

# Real Blender puts the extensions' site-packages before its Python's own; the bpy module appends
# it after this environment's (its getsitepackages() matches nothing on sys.path), where this
# environment's numba would shadow the extension's. Put it where Blender does.
extension_site = next(p for p in sys.path if os.path.join("extensions", ".local") in p)
sys.path.remove(extension_site)
sys.path.insert(0, extension_site)
seen["extension_site"] = sorted(os.listdir(extension_site))

# Bake a small pinned cloth with the installed add-on (and so with the solver inside it).
bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0, location=(0, 0, 1))
cloth = bpy.context.object
group = cloth.vertex_groups.new(name="pin")
group.add([v.index for v in cloth.data.vertices if v.co.y > 0.49], 1.0, 'REPLACE')
cloth.jakobsen.enabled = True
cloth.jakobsen.type = 'CLOTH'
cloth.jakobsen.cloth.pin_group = "pin"
bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 4
import io, contextlib
report = io.StringIO()
with contextlib.redirect_stdout(report):
    seen["bake"] = sorted(bpy.ops.jakobsen.bake())
seen["report"] = report.getvalue()
seen["numba_file"] = getattr(sys.modules.get("numba"), "__file__", None)
seen["sys_path"] = [p for p in sys.path if "site-packages" in p]
seen["shape_keys"] = len(cloth.data.shape_keys.key_blocks) if cloth.data.shape_keys else 0
seen["generic_engine_imported"] = any(name in sys.modules for name in ("engine", "addon", "tools"))

bpy.ops.preferences.addon_disable(module=module)
seen["after_disable"] = [hasattr(bpy.types.Scene, "jakobsen"), hasattr(bpy.types, "JAKOBSEN_OT_bake"),
                         module in bpy.context.preferences.addons]
repo_index = list(bpy.context.preferences.extensions.repos).index(repo)
seen["uninstall"] = sorted(bpy.ops.extensions.package_uninstall(repo_index=repo_index, pkg_id="jakobsen_physics"))
seen["after_uninstall"] = os.path.exists(os.path.join(repo.directory, "jakobsen_physics"))
print("RESULT " + json.dumps(seen), flush=True)
if tuple(bpy.app.version) < (5, 0, 0):
    os._exit(0)  # bpy 4.x crashes or hangs in its exit handlers after add-ons with callbacks (see conftest.py)
'''


def test_the_zip_holds_the_add_on_at_its_root_and_the_solver_as_a_wheel(tmp_path):
    from jakobsen_engine import __version__

    path = build_mod.build(str(tmp_path))

    assert os.path.basename(path) == f"jakobsen_physics-{__version__}.zip"
    wheel_name = f"jakobsen_engine-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        manifest = tomllib.loads(zf.read("blender_manifest.toml").decode())
        wheel_bytes = zf.read(f"wheels/{wheel_name}")
    tops = {name.split("/")[0] for name in names}
    # The package files at the root, the solver's wheel in wheels/; nothing else at the top.
    assert {"__init__.py", "blender_manifest.toml", "operators", "ui", "properties.py",
            "scene_to_model.py", "baking.py", "bake_job.py", "wheels"} <= tops
    assert "engine" not in tops and "tools" not in tops
    assert not any(n.startswith(("cli/", "tests/")) or "__pycache__" in n or n.endswith(".pyc") for n in names)
    assert all(not os.path.isabs(n) and ".." not in n.split("/") for n in names)
    assert manifest["wheels"] == [f"./wheels/{wheel_name}"]
    # The wheel holds the solver's files as they are in the repository, and a valid RECORD.
    wheel = tmp_path / wheel_name
    wheel.write_bytes(wheel_bytes)
    with zipfile.ZipFile(wheel) as wz:
        inside = wz.namelist()
        with open(os.path.join(REPO, "engine", "__init__.py"), "rb") as f:
            assert wz.read("jakobsen_engine/__init__.py") == f.read()
        record = wz.read(f"jakobsen_engine-{__version__}.dist-info/RECORD").decode().splitlines()
    assert {"jakobsen_engine/solver/solver.py", "jakobsen_engine/builder.py",
            "jakobsen_engine/bodies/rigid.py"} <= set(inside)
    assert len(record) == len(inside)

    assert manifest["id"] == "jakobsen_physics" and manifest["version"] == __version__
    assert manifest["type"] == "add-on" and manifest["blender_version_min"] == "4.2.0"
    assert manifest["license"] == ["SPDX:GPL-3.0-or-later"] and "Physics" in manifest["tags"]
    # Relative imports for the add-on's own modules; the solver by its one name.
    with zipfile.ZipFile(path) as zf:
        for name in names:
            if name.endswith(".py"):
                text = zf.read(name).decode()
                assert "import addon" not in text and "from addon" not in text, name
                assert "from engine" not in text and "import engine\n" not in text, name
                assert "jakobsen_physics" not in text.replace("bl_ext.user_default.jakobsen_physics", ""), name

    # The same input gives the same bytes.
    again = build_mod.build(str(tmp_path / "again"))
    with open(path, "rb") as a, open(again, "rb") as b:
        assert a.read() == b.read()


# The manifest's stated range ends before this version (the newest tested is 5.3).
SUPPORTED_UP_TO = "5.4.0"


@pytest.mark.parametrize("platform, python", [(None, None), ("linux-x64", "3.11"), ("linux-x64", "3.13"),
                                              ("windows-x64", "3.11"), ("windows-x64", "3.13"),
                                              ("macos-arm64", "3.11"), ("macos-arm64", "3.13")])
def test_blenders_validator_accepts_the_zip(tmp_path, platform, python):
    import bpy

    path = build_mod.build(str(tmp_path), platform=platform, python=python)
    with zipfile.ZipFile(path) as zf:
        manifest = tomllib.loads(zf.read("blender_manifest.toml").decode())
        names = zf.namelist()
    if platform:
        assert manifest["platforms"] == [platform]
        # Only this Python's wheels (Blender 4.2 keeps one wheel per name, whatever its Python),
        # and only the Blender versions that have this Python.
        tag = "-cp" + python.replace(".", "") + "-"
        for package in ("numba", "llvmlite"):
            wheels = [n for n in names if n.startswith(f"wheels/{package}-")]
            assert len(wheels) == 1 and tag in wheels[0], wheels
        first, beyond = build_mod.PYTHONS[python]
        assert manifest["blender_version_min"] == first
        assert manifest["blender_version_max"] == (beyond or SUPPORTED_UP_TO)
    else:
        assert manifest["blender_version_min"] == "4.2.0" and manifest["blender_version_max"] == SUPPORTED_UP_TO
    assert all(f"./{n}" in manifest["wheels"] for n in names if n.startswith("wheels/"))
    scripts = bpy.utils.system_resource('SCRIPTS')
    cli = os.path.join(scripts, "addons_core", "bl_pkg", "cli", "blender_ext.py")
    assert os.path.isfile(cli), cli
    done = subprocess.run([sys.executable, cli, "validate", path], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout


def test_install_from_disk_enable_bake_disable_uninstall_in_real_blender(tmp_path):
    """The Linux zip, with numba and llvmlite in it as wheels: the bake runs on the compiled kernels
    from the wheels the extension installed (not from this test's own environment)."""
    # The zip for this Blender's Python (the one a user of this Blender downloads).
    path = build_mod.build(str(tmp_path / "dist"), platform="linux-x64",
                           python=f"{sys.version_info.major}.{sys.version_info.minor}")
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), BLENDER_USER_RESOURCES=str(home / "blender"))
    env.pop("PYTHONPATH", None)  # the child must not find the source tree's add-on or engine
    script = tmp_path / "install.py"
    script.write_text(INSTALL_SCRIPT)

    done = subprocess.run([sys.executable, str(script), path], capture_output=True, text=True, timeout=300,
                          env=env, cwd=str(tmp_path))

    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    seen = json.loads(lines[-1][len("RESULT "):])
    assert seen["repo_directory"].startswith(str(home))  # not the real home directory
    assert seen["install"] == ["FINISHED"]
    assert seen["enabled"] and seen["scene_settings"] and seen["object_settings"] and seen["bake_operator"]
    assert seen["bake_operator_module"].startswith("bl_ext.user_default.jakobsen_physics")
    # The solver came from the wheel Blender installed for the extension, not from the source tree.
    assert seen["engine_file"].startswith(str(home)) and "site-packages" in seen["engine_file"]
    assert "cli" not in seen["installed_files"] and "tools" not in seen["installed_files"]
    assert seen["bake"] == ["FINISHED"] and seen["shape_keys"] == 5  # the basis and frames 1-4
    assert "numba kernels" in seen["report"], seen["report"]
    assert {"numba", "llvmlite", "jakobsen_engine"} <= set(seen["extension_site"]), seen["extension_site"]
    assert seen["numba_file"].startswith(str(home)), (seen["numba_file"], seen["sys_path"])
    assert not seen["generic_engine_imported"]
    assert seen["after_disable"] == [False, False, False]
    assert seen["uninstall"] == ["FINISHED"] and not seen["after_uninstall"]


FALLBACK_SCRIPT = r'''
import sys, io, contextlib, importlib.abc


class NoNumba(importlib.abc.MetaPathFinder):
    """numba as if it could not load here (a platform without its wheels, a broken install)."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numba", "llvmlite"):
            raise ImportError(f"no {name} here (the test blocks it)")
        return None


sys.meta_path.insert(0, NoNumba())
import bpy
import jakobsen_physics
bpy.ops.wm.read_factory_settings(use_empty=True)
jakobsen_physics.register()
bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0, location=(0, 0, 1))
cloth = bpy.context.object
cloth.jakobsen.enabled = True
cloth.jakobsen.type = 'CLOTH'
bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 4
report = io.StringIO()
with contextlib.redirect_stdout(report):
    print(sorted(bpy.ops.jakobsen.bake()))
print("REPORT " + report.getvalue().replace("\n", " | "), flush=True)
if tuple(bpy.app.version) < (5, 0, 0):
    import os
    os._exit(0)
'''


def test_without_numba_the_bake_falls_back_to_the_numpy_kernels_and_says_so(tmp_path):
    script = tmp_path / "fallback.py"
    script.write_text(FALLBACK_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    report = lines[-1]
    assert "['FINISHED']" in report
    assert "numpy kernels" in report and "numba is not available" in report
    assert report.count("numba is not available") <= 2  # one line in the warnings and one in the summary
