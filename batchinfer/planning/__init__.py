"""What a job would do and cost before it runs: inputs, shards, record sizes against the
payload limit, a throughput calibration on the real model, and an estimate of duration and
cost (``batchinfer plan``)."""
