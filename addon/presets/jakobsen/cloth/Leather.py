import bpy
cloth = bpy.context.object.jakobsen.cloth

# From Blender's Leather cloth preset (vertex mass 0.4 kg, tension 80, shear 80,
# bending 150); converted as presets/__init__.py says:
# density = vertex mass x 0.5 /m^2, Vertex Mass = Blender's, stiffnesses in N as they are,
# bending x 0.1; Air Drag and Friction are this add-on's (Blender's presets have none).
cloth.use_vertex_mass = False
cloth.density = 0.2
cloth.vertex_mass = 0.4
cloth.use_rigid_stretch = True
cloth.stretch_stiffness = 80.0
cloth.use_rigid_shear = True
cloth.shear_stiffness = 80.0
cloth.bend_stiffness = 15.0
cloth.air_drag = 0.6
cloth.friction = 0.7
cloth.use_plasticity = False
cloth.plastic_limit = 10.0
cloth.plastic_rate = 10.0
