"""``event_source`` and ``notification_emails``: how runs' events are published and who is
told of them."""

import re
from typing import TYPE_CHECKING

from stacks.config.checks import require

if TYPE_CHECKING:
    from stacks.config.pipeline import PipelineConfig


def check_event_source(config: "PipelineConfig", where: str) -> None:
    """The ``source`` of the runs' EventBridge events: not one of AWS's own."""
    require(
        re.fullmatch(r"[a-z][a-z0-9.-]{0,63}", config.event_source) is not None
        and not config.event_source.startswith("aws."),
        f"{where}.event_source",
        config.event_source,
        "lowercase letters, digits, dots and hyphens, not starting with 'aws.'",
    )


def check_emails(config: "PipelineConfig", where: str) -> None:
    for email in config.notification_emails:
        require(
            isinstance(email, str) and re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", email),
            f"{where}.notification_emails",
            email,
            "e-mail addresses",
        )
