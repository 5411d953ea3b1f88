"""Reading Blender data (bulk, ``foreach_get``) and checking it, naming the object and setting."""
