"""CLI sub-commands, one module each; registered in :mod:`batchinfer.cli`."""
