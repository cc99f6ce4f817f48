"""What a run asks for: its request (checked before anything starts), the Create*Job requests
of its jobs, the split jobs of its large gzip inputs, its own model and its estimate."""
