"""``python -m batchinfer``: the same as the ``batchinfer`` command."""

from batchinfer.cli import app

app()
