import bpy
rigid_body = bpy.context.object.jakobsen.rigid_body

# Wood: dry pine to oak, 500 to 750 kg/m³; wood on wood.
rigid_body.use_density = True
rigid_body.density = 600.0
rigid_body.friction = 0.5
rigid_body.bounce = 0.3
