"""The kernel seam: the hot loops, array in, array out."""
