import bpy
rigid_body = bpy.context.object.jakobsen.rigid_body

# Rubber: vulcanised rubber, 1000 to 1200 kg/m³; grips and bounces.
rigid_body.use_density = True
rigid_body.density = 1100.0
rigid_body.friction = 1.0
rigid_body.bounce = 0.8
