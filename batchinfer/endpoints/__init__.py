"""Scoring through a real-time endpoint with a transform job's semantics: the per-file scoring
and its saved position, and the endpoints a stack may invoke. Standard library and boto3
only: the local endpoint engine and the ScoreShard Lambda share it."""
