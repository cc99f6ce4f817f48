#!/usr/bin/env python3
"""The CDK app: reads the environment's config, builds its stack, registers cdk-nag.

``cdk synth`` (or ``python app.py``) works offline: no credentials, no Docker (the image
asset is only staged). ``-c env=NAME`` selects an environment of cdk.json.
"""

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import App, Environment, Validations
from cdk_nag import AwsSolutionsChecks

from stacks.config import DEFAULT_ENV_KEY, ENVIRONMENTS_KEY, load_config
from stacks.pipeline_stack import PipelineStack

REPO_ROOT = Path(__file__).resolve().parent


def cdk_json_context() -> dict[str, Any]:
    return json.loads((REPO_ROOT / "cdk.json").read_text())["context"]


def build_app(
    context: Mapping[str, Any] | None = None,
    *,
    outdir: str | None = None,
    env: Environment | None = None,
    nag: bool = True,
) -> tuple[App, PipelineStack]:
    """The app and its stack. ``context`` defaults to what the CDK CLI passes (cdk.json
    plus ``-c``); ``env`` overrides the configured account and region."""
    if context is None and "CDK_CONTEXT_JSON" not in os.environ:  # run as `python app.py`
        context = cdk_json_context()
    app = App(
        context=dict(context) if context is not None else None,
        outdir=outdir,
        # The template is linted with cfn-lint by the tests; the built-in copy of that
        # check doubles synth time.
        builtin_cloud_formation_validation=False,
    )
    config = load_config(
        {key: app.node.try_get_context(key) for key in (ENVIRONMENTS_KEY, DEFAULT_ENV_KEY)},
        app.node.try_get_context(DEFAULT_ENV_KEY),
        base_dir=REPO_ROOT,
    )
    if env is None and config.account and config.region:
        env = Environment(account=config.account, region=config.region)
    stack = PipelineStack(app, config, env=env)
    if nag:
        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
