"""The examples each command's ``--help`` ends with: what the command is for, then the
command line, as the README's local quick start and docs/operate.md run them."""

CSV_JOB = (
    "--content-type text/csv --accept text/csv --split-type Line --assemble-with Line "
    "--join-source Input"
)
EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "run": (
        (
            "each CSV row with its prediction appended, 2 model servers, one merged output",
            f"batchinfer run demo/input --model demo/model --output demo/output {CSV_JOB} "
            "--instance-count 2 --shards 2 --merge",
        ),
        (
            "JSON Lines: the model gets each record's features, the output keeps its id",
            "batchinfer run data.jsonl --model model.tar.gz --output out "
            "--content-type application/jsonlines --accept application/jsonlines "
            "--split-type Line --assemble-with Line --join-source Input "
            "--input-filter '$.features' --output-filter '$[\"id\",\"SageMakerOutput\"]'",
        ),
    ),
    "plan": (
        (
            "what the job would do, with the model's measured throughput and its cost",
            f"batchinfer plan demo/input --model demo/model {CSV_JOB} --instance-count 2 "
            "--instance-type ml.m5.xlarge --shards auto",
        ),
        (
            "the fastest MaxPayloadInMB and MaxConcurrentTransforms for the model",
            f"batchinfer plan demo/input --model demo/model {CSV_JOB} --tune",
        ),
    ),
    "process": (
        (
            "the files under --input-dir, with all cores, as a Processing job runs it",
            "batchinfer process --input-dir demo/input --model-dir demo/model "
            "--output-dir out --settings-json "
            '\'{"content_type": "text/csv", "split_type": "Line"}\'',
        ),
    ),
    "example": (
        (
            "a model and 20,000 rows of CSV input under demo/",
            "batchinfer example demo --rows 20000",
        ),
        (
            "an XGBoost model with its code/inference.py, and JSON Lines input",
            "batchinfer example demo-xgb --framework xgboost --format jsonl",
        ),
    ),
    "split": (
        (
            "8 shards of a local file, each ending after a newline",
            "batchinfer split demo/input/data.csv --output shards --shards 8",
        ),
        (
            "an S3 object with a header row, in shards of about 64 MiB",
            "batchinfer split s3://bucket/input/data.csv --output s3://bucket/shards/ "
            "--shard-size 64MiB --header",
        ),
    ),
    "serve": (
        (
            "the example model on port 8080, 2 workers",
            "batchinfer serve --model-dir demo/model --port 8080 --workers 2",
        ),
    ),
    "submit": (
        (
            "a run on the deployed stack: 8 shards per object, 4 instances, one output",
            "batchinfer submit --stack batchinfer-prod --input s3://bucket/input/2024-05-01/ "
            "--shards 8 --merge --instance-count 4",
        ),
        (
            "the request checked and printed, nothing started",
            "batchinfer submit --stack batchinfer-prod --input s3://bucket/input/2024-05-01/ "
            "--split-type Line --dry-run",
        ),
    ),
    "status": (
        (
            "a run and its shards, refreshed until it ends",
            "batchinfer status scores-2024-05-01 --stack batchinfer-prod --watch",
        ),
    ),
    "runs": (
        ("the stack's failed runs", "batchinfer runs --stack batchinfer-prod --status FAILED"),
    ),
}


def epilog(command: str) -> str:
    """The ``Examples:`` section of ``command``'s help: a comment line, then the command."""
    return "Examples:\n\n" + "\n\n".join(f"# {what}\n{line}" for what, line in EXAMPLES[command])
