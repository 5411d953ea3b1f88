import bpy
rigid_body = bpy.context.object.jakobsen.rigid_body

# Steel: carbon steel; dry steel on steel.
rigid_body.use_density = True
rigid_body.density = 7850.0
rigid_body.friction = 0.6
rigid_body.bounce = 0.5
