"""Wedges: ``--wedge "OBJECT.path.to.prop=V1,V2,V3"``, the settings a farm bake sweeps.

A wedge names one property of one object (or scene) and the values to try; several wedges bake
every combination (their product), as Houdini's wedge TOP does. This module parses the text
(no Blender needed, so the farm's client can plan jobs and name them before any bake runs) and
sets the values in an open Blender file (``apply``: inside the job's own Blender process).

``OBJECT`` is an object's name, else a scene's; names may contain dots ("Cube.001"), so the
longest leading part that names one wins. The path is Python attribute access below it
(``jakobsen.cloth.stiffness``, ``location``); a value is converted by the property's own type:
numbers, ``true``/``false``, an enum item's identifier, text, or for a vector its components
separated by spaces ("0 0 -9.81").
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass


class WedgeError(ValueError):
    """A wedge that cannot be parsed or set; the message names the wedge and what is wrong."""


@dataclass(frozen=True)
class Wedge:
    """One ``--wedge``: ``target`` ("Flag.jakobsen.cloth.stiffness") and its values, as typed."""

    target: str
    values: tuple[str, ...]

    @property
    def short_name(self) -> str:
        """The property's own name, for labels: "stiffness"."""
        return self.target.rsplit(".", 1)[-1]


def parse(text: str) -> Wedge:
    """``"Flag.jakobsen.cloth.stiffness=100,1000"`` -> Wedge; WedgeError naming the text if malformed."""
    target, sep, values = text.partition("=")
    target = target.strip()
    if not sep or not target:
        raise WedgeError(f"--wedge {text!r}: expected OBJECT.path.to.property=V1,V2,... "
                         "(e.g. Flag.jakobsen.cloth.stiffness=100,1000)")
    if "." not in target:
        raise WedgeError(f"--wedge {text!r}: {target!r} names no property; write OBJECT.path.to.property")
    parts = tuple(v.strip() for v in values.split(","))
    if not parts or any(not v for v in parts):
        raise WedgeError(f"--wedge {text!r}: give one or more values after '=', separated by commas, none empty")
    if len(set(parts)) != len(parts):
        raise WedgeError(f"--wedge {text!r}: a value is given twice")
    return Wedge(target, parts)


def combinations(wedges: list[Wedge]) -> list[tuple[tuple[str, str], ...]]:
    """Every combination of the wedges' values, as ((target, value), ...) per job, the first
    wedge varying slowest (rows of the contact sheet read like nested loops). No wedges: one
    empty combination (the scene as saved)."""
    targets = [w.target for w in wedges]
    if len(set(targets)) != len(targets):
        twice = next(t for t in targets if targets.count(t) > 1)
        raise WedgeError(f"--wedge {twice}: the same property is wedged twice; give all its values in one --wedge")
    return [tuple(zip(targets, values)) for values in itertools.product(*(w.values for w in wedges))]


def label(combination) -> str:
    """A short human label of a combination: "stiffness=100 air_drag=0.5" ("as saved" for none)."""
    if not combination:
        return "as saved"
    return " ".join(f"{target.rsplit('.', 1)[-1]}={value}" for target, value in combination)


def file_tag(combination) -> str:
    """A file-name part for a combination, "Flag.stiffness-100__Flag.air_drag-0.5" (object and
    property, not the path between: short, and unique as long as the targets are)."""
    tags = []
    for target, value in combination:
        head, _, prop = target.rpartition(".")
        owner = head.split(".", 1)[0]
        tags.append(f"{owner}.{prop}-{value}")
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", "__".join(tags))


# -- inside Blender ------------------------------------------------------------------------------------

def apply(bpy, combination, where: str) -> list[str]:
    """Set each (target, value) of ``combination`` in the open file; returns "target = value" lines.

    Raises WedgeError naming the wedge (and ``where``, the file) for an unknown object or
    property, a value of the wrong kind or out of the property's range; nothing is set then
    (every value is checked before the first is set).
    """
    planned = [_resolve(bpy, target, value, where) for target, value in combination]
    done = []
    for owner, name, converted, target in planned:
        setattr(owner, name, converted)
        done.append(f"{target} = {_show(getattr(owner, name))}")
    return done


def _resolve(bpy, target: str, value: str, where: str):
    parts = target.split(".")
    owner, rest = None, []
    for k in range(len(parts) - 1, 0, -1):  # the longest leading part that names an object or scene
        name = ".".join(parts[:k])
        owner = bpy.data.objects.get(name) or bpy.data.scenes.get(name)
        if owner is not None:
            rest = parts[k:]
            break
    if owner is None:
        objects = ", ".join(sorted(o.name for o in bpy.data.objects)[:12])
        scenes = ", ".join(repr(s.name) for s in bpy.data.scenes)
        raise WedgeError(f"--wedge {target}: {where} has no object or scene named {parts[0]!r} "
                         f"(its scenes: {scenes}; its objects: {objects or 'none'})")
    for k, attr in enumerate(rest[:-1]):
        child = getattr(owner, attr, None)
        if child is None or not hasattr(child, "bl_rna"):
            raise WedgeError(f"--wedge {target}: {'.'.join(parts[:len(parts) - len(rest) + k])} has no settings "
                             f"group {attr!r}")
        owner = child
    name = rest[-1]
    prop = owner.bl_rna.properties.get(name)
    if prop is None or name == "rna_type":
        raise WedgeError(f"--wedge {target}: {owner.bl_rna.identifier} has no property {name!r}")
    if prop.is_readonly:
        raise WedgeError(f"--wedge {target}: {name!r} is read-only")
    return owner, name, _convert(prop, value, target), target


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _convert(prop, text: str, target: str):
    kind = prop.type
    length = getattr(prop, "array_length", 0)
    if kind in {"FLOAT", "INT", "BOOLEAN"} and length:
        items = text.split()
        if len(items) != length:
            raise WedgeError(f"--wedge {target}: {text!r} has {len(items)} components, the property {length} "
                             "(separate them with spaces: \"0 0 -9.81\")")
        return tuple(_scalar(prop, kind, item, target) for item in items)
    if kind in {"FLOAT", "INT", "BOOLEAN"}:
        return _scalar(prop, kind, text, target)
    if kind == "ENUM":
        names = [item.identifier for item in prop.enum_items]
        if text not in names:
            raise WedgeError(f"--wedge {target}: {text!r} is not one of {', '.join(names)}")
        return {text} if prop.is_enum_flag else text
    if kind == "STRING":
        return text
    raise WedgeError(f"--wedge {target}: a {kind.lower()} property cannot be wedged (numbers, switches, "
                     "choices and text can)")


def _scalar(prop, kind: str, text: str, target: str):
    if kind == "BOOLEAN":
        low = text.lower()
        if low not in _TRUE | _FALSE:
            raise WedgeError(f"--wedge {target}: {text!r} is not true or false")
        return low in _TRUE
    try:
        value = int(text) if kind == "INT" else float(text)
    except ValueError:
        raise WedgeError(f"--wedge {target}: {text!r} is not a{'' if kind == 'INT' else ' '}"
                         f"{'n integer' if kind == 'INT' else 'number'}") from None
    if value != value or not (prop.hard_min <= value <= prop.hard_max):
        raise WedgeError(f"--wedge {target}: {text} is outside the property's range "
                         f"{prop.hard_min:g} to {prop.hard_max:g}")
    return value


def _show(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if hasattr(value, "__len__") and not isinstance(value, str):
        return " ".join(_show(v) for v in value)
    return str(value)
