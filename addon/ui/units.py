"""Units that Blender cannot show: forces, stiffnesses, dampings and rates have no Blender
``unit=``, and at the default Properties width a label with its unit ("Damping (N s/m)") is cut.
``prop_with_unit`` draws such a setting as ``use_property_split`` would (its name in the label
column, the keyframe dot after the field) with the unit in the field itself ("N s/m   1.00").

Not under a column heading that no checkbox has taken yet (``layout.column(heading=...)``): the
field is drawn outside the split, where Blender puts a pending heading on a line of its own and
the field after it at the column's full width (seen in the GUI: the Wheel Suspension connector's
Stiffness, issue 14)."""

from __future__ import annotations

# The label column's share of a split row: Blender's UI_ITEM_PROP_SEP_DIVIDE.
SPLIT_FACTOR = 0.4


def prop_with_unit(layout, owner, prop: str, label: str, unit: str) -> None:
    """``owner.prop`` labelled ``label`` in the label column and ``unit`` in its field, laid out
    as Blender lays out a property of a ``use_property_split`` layout (a row of the label column,
    the field and, where the layout has them, the keyframe decorator)."""
    row = layout.row(align=True)
    row.use_property_split = False  # (the field keeps its text: the unit)
    split = row.split(factor=SPLIT_FACTOR, align=True)
    left = split.row(align=True)
    left.alignment = 'RIGHT'
    left.label(text=label)
    split.prop(owner, prop, text=unit)
    if layout.use_property_decorate:
        row.prop_decorator(owner, prop)
