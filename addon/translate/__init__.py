"""Pure conversions between Blender's data and the engine's (numpy, no bpy): testable without Blender."""
