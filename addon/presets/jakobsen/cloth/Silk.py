import bpy
cloth = bpy.context.object.jakobsen.cloth

# From Blender's Silk cloth preset (vertex mass 0.15 kg, tension 5, shear 5,
# bending 0.05); converted as presets/__init__.py says:
# density = vertex mass x 0.5 /m^2, Vertex Mass = Blender's, stiffnesses in N as they are,
# bending x 0.1; Air Drag and Friction are this add-on's (Blender's presets have none).
cloth.use_vertex_mass = False
cloth.density = 0.075
cloth.vertex_mass = 0.15
cloth.use_rigid_stretch = True
cloth.stretch_stiffness = 5.0
cloth.use_rigid_shear = True
cloth.shear_stiffness = 5.0
cloth.bend_stiffness = 0.005
cloth.air_drag = 0.6
cloth.friction = 0.25
cloth.use_plasticity = False
cloth.plastic_limit = 10.0
cloth.plastic_rate = 10.0
