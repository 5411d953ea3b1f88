import bpy
rigid_body = bpy.context.object.jakobsen.rigid_body

# Ice: ice at 0 °C; wet ice slides, barely bounces.
rigid_body.use_density = True
rigid_body.density = 917.0
rigid_body.friction = 0.05
rigid_body.bounce = 0.1
