"""The AWS-facing stores of a run: S3 objects (JSON, JSON Lines, the ordered merge), the status
table and its instance leases, the clients the Lambdas share, and the run-finished
announcements."""
