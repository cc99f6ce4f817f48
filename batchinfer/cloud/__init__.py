"""Operating a deployed stack: find its resources through its outputs, start runs, read
their status (stdlib + boto3)."""
