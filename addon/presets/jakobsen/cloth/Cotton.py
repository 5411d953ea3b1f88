import bpy
cloth = bpy.context.object.jakobsen.cloth

# From Blender's Cotton cloth preset (vertex mass 0.3 kg, tension 15, shear 15,
# bending 0.5); converted as presets/__init__.py says:
# density = vertex mass x 0.5 /m^2, Vertex Mass = Blender's, stiffnesses in N as they are,
# bending x 0.1; Air Drag and Friction are this add-on's (Blender's presets have none).
cloth.use_vertex_mass = False
cloth.density = 0.15
cloth.vertex_mass = 0.3
cloth.use_rigid_stretch = True
cloth.stretch_stiffness = 15.0
cloth.use_rigid_shear = True
cloth.shear_stiffness = 15.0
cloth.bend_stiffness = 0.05
cloth.air_drag = 0.6
cloth.friction = 0.5
cloth.use_plasticity = False
cloth.plastic_limit = 10.0
cloth.plastic_rate = 10.0
