"""Checks on paths the add-on will write to, made before any work is done (no bpy here)."""

from __future__ import annotations

import os
import tempfile


def cannot_write(path: str, *, directory: bool = False) -> str | None:
    """Why ``path`` (a file, or with ``directory`` a directory to write files into) could not be
    written, or None if it can: it names the part of the path at fault.

    Directories that do not exist yet count as writable if their nearest existing ancestor is a
    directory that can be written (they are made when the output is written). An existing
    directory is tried with a real temporary file, which also catches a read-only disk."""
    path = os.path.abspath(path or ".")
    if directory:
        if os.path.exists(path) and not os.path.isdir(path):
            return f"'{path}' is a file, not a directory"
        folder = path
    else:
        if os.path.isdir(path):
            return f"'{path}' is a directory"
        folder = os.path.dirname(path)
    existing = folder
    while not os.path.exists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            return f"no part of '{folder}' exists"
        existing = parent
    if not os.path.isdir(existing):
        return f"'{existing}' is a file, so '{folder}' cannot be a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"the directory '{existing}' cannot be written to"
    if existing == folder:
        try:
            fd, probe = tempfile.mkstemp(prefix=".jakobsen-write-check-", dir=folder)
        except OSError as error:
            return f"the directory '{folder}' cannot be written to ({error.strerror})"
        os.close(fd)
        os.remove(probe)
    return None
