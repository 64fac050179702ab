"""Library logging: structlog events carried by stdlib ``logging`` under the ``rtlforge`` logger.

A library must stay silent until its host asks for output. structlog's default configuration
prints every event to stdout, and configuring it is process-global, so rtlforge never calls
``structlog.configure``: each module wraps a stdlib logger instead. A ``NullHandler`` on
``rtlforge`` keeps Python's last-resort handler quiet; a host that configures ``logging`` (or the
CLI's ``-v``) sees the events, rendered as ``event key=value`` lines.
"""

from __future__ import annotations

import logging

import structlog

ROOT_LOGGER = "rtlforge"
logging.getLogger(ROOT_LOGGER).addHandler(logging.NullHandler())

_PROCESSORS = (
    structlog.stdlib.filter_by_level,  # drop disabled levels before any formatting work
    structlog.processors.LogfmtRenderer(key_order=["event"], drop_missing=True),
)


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """A structlog logger over ``logging.getLogger(name)``; ``name`` should start ``rtlforge.``."""
    logger: structlog.stdlib.BoundLogger = structlog.wrap_logger(
        logging.getLogger(name), processors=list(_PROCESSORS),
        wrapper_class=structlog.stdlib.BoundLogger)
    return logger
