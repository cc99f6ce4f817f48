"""The stack's template synthesized in-process from cdk.json, as the offline stack runs it."""

import json
from pathlib import Path
from typing import Any


def synthesize(env: str, directory: Path, overrides: dict[str, Any]) -> dict[str, Any]:
    """The template of environment ``env`` of cdk.json, its config updated with
    ``overrides``, synthesized into ``directory``."""
    from app import build_app, cdk_json_context

    context = cdk_json_context()
    config = context["batchinfer:environments"][env] | overrides
    context = context | {"env": env, "batchinfer:environments": {env: config}}
    app, stack = build_app(context, outdir=str(directory), nag=False)
    assembly = app.synth()
    return json.loads(
        Path(assembly.get_stack_artifact(stack.artifact_id).template_full_path).read_text()
    )
