"""What the scale harness charges for each AWS call, from AWS's documented figures.

- S3 requests: "consistent small object latencies (and first-byte-out latencies for larger
  objects) of roughly 100-200 milliseconds" (Amazon S3 User Guide, "Performance design
  patterns for Amazon S3",
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance-design-patterns.html):
  the harness charges the top, 200 ms, for every request.
- S3 transfer: "make one concurrent request for each 85-90 MB/s of desired network
  throughput" (Amazon S3 User Guide, "Performance guidelines for Amazon S3",
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance-guidelines.html):
  85 MB/s a connection. AWS documents no rate for server-side copies (CopyObject,
  UploadPartCopy); the harness charges them the same rate, as if the bytes went through the
  caller's connection.
- DynamoDB: "single-digit millisecond performance at any scale" (Amazon DynamoDB Developer
  Guide, "What is Amazon DynamoDB?",
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Introduction.html): 10 ms a
  request, the top of that range; a Query page holds at most 1 MB ("Query" in the DynamoDB API
  Reference).
- DynamoDB rates: "a new on-demand table starts with a warm throughput of 12,000 read units
  per second and 4,000 write units per second", and "each individual partition is
  limited to 1,000 write units per second and 3,000 read units per second" (Amazon DynamoDB
  Developer Guide, "Understanding DynamoDB warm throughput in different scenarios",
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html);
  a write unit is one write of up to 1 KB, a read unit one strongly consistent read of up to
  4 KB ("DynamoDB on-demand capacity mode"). The harness takes each partition key as a
  partition of its own (DynamoDB puts all items of one key on one partition) and a step at
  least as long as its units over each rate.
- Step Functions StartExecution: a token bucket of 1,300 requests refilled at 300 a second
  in the largest regions, 800 and 150 in the others ("Step Functions service quotas",
  https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html): the harness
  charges the other regions' refill, 1/150 s a start beyond the bucket, and 50 ms a request.
- Lambda CPU: "at 1,769 MB, a function has the equivalent of one vCPU" and less in
  proportion below (AWS Lambda Developer Guide, "Configure Lambda function memory",
  https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html): the CPU seconds
  measured here are scaled by 1,769 / the function's memory (at least 1).
- The client's own CPU: the fake S3 and the fake SHARD items stand in for boto3's clients,
  so botocore's work for each of their requests (building and signing it, reading the answer,
  boto3's conversion of DynamoDB items) is not spent here, and is charged instead as CPU
  seconds, scaled as above. Measured on this machine against moto's server in another
  process, over HTTP (HTTPS would add its own): 1.4 ms a ranged GetObject of 64 KiB, 0.17
  ms an item sent in a BatchWriteItem of 25, 0.023 ms an item a Query answers (three
  attributes projected). The other calls (the RUN items, Step Functions) go through boto3 to
  that server, and their CPU is measured.
"""

S3_REQUEST_SECONDS = 0.2
S3_BYTES_PER_SECOND = 85e6
DYNAMODB_REQUEST_SECONDS = 0.01
DYNAMODB_PAGE_BYTES = 1024 * 1024
DYNAMODB_TABLE_WRITES_PER_SECOND = 4000
DYNAMODB_PARTITION_WRITES_PER_SECOND = 1000
DYNAMODB_PARTITION_READS_PER_SECOND = 3000
DYNAMODB_READ_UNIT_BYTES = 4096
STATES_REQUEST_SECONDS = 0.05
STATES_START_BUCKET = 800
STATES_STARTS_PER_SECOND = 150
ONE_VCPU_MB = 1769
S3_CLIENT_CPU_SECONDS = 0.0014
DYNAMODB_WRITE_CLIENT_CPU_SECONDS = 0.00017  # an item
DYNAMODB_READ_CLIENT_CPU_SECONDS = 0.000023  # an item


def s3_seconds(size: int = 0) -> float:
    """One S3 request moving ``size`` bytes over one connection."""
    return S3_REQUEST_SECONDS + size / S3_BYTES_PER_SECOND


def cpu_scale(memory_mb: int) -> float:
    """How much slower than this machine's core a function of ``memory_mb`` computes."""
    return max(1.0, ONE_VCPU_MB / memory_mb)
