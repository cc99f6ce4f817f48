"""The local engine: a Batch Transform (or Processing) job run on this machine."""
