import bpy
cloth = bpy.context.object.jakobsen.cloth

# From Blender's Rubber cloth preset (vertex mass 3 kg, tension 15, shear 15,
# bending 25); converted as presets/__init__.py says:
# density = vertex mass x 0.5 /m^2, Vertex Mass = Blender's, stiffnesses in N as they are,
# bending x 0.1; Air Drag and Friction are this add-on's (Blender's presets have none).
cloth.use_vertex_mass = False
cloth.density = 1.5
cloth.vertex_mass = 3.0
cloth.use_rigid_stretch = False
cloth.stretch_stiffness = 15.0
cloth.use_rigid_shear = False
cloth.shear_stiffness = 15.0
cloth.bend_stiffness = 2.5
cloth.air_drag = 0.6
cloth.friction = 1.0
cloth.use_plasticity = False
cloth.plastic_limit = 10.0
cloth.plastic_rate = 10.0
