"""Library logging: structlog events carried by stdlib ``logging`` under the ``rtlforge`` logger.

A library must stay silent until its host asks for output. structlog's default configuration
prints every event to stdout, and configuring it is process-global, so rtlforge never calls
``structlog.configure``: each module wraps a stdlib logger instead. A ``NullHandler`` on
``rtlforge`` keeps Python's last-resort handler quiet; a host that configures ``logging`` (or the
CLI's ``-v``) sees the events, rendered as ``event key=value`` lines.

structlog (some 60 ms of imports) loads with the first event a level lets through: the others
are dropped, before any import, by the test structlog's ``filter_by_level`` would make.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import structlog

ROOT_LOGGER = "rtlforge"
logging.getLogger(ROOT_LOGGER).addHandler(logging.NullHandler())

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "exception": logging.ERROR, "critical": logging.CRITICAL}


@functools.cache
def _bound(name: str) -> structlog.stdlib.BoundLogger:
    import structlog

    logger: structlog.stdlib.BoundLogger = structlog.wrap_logger(
        logging.getLogger(name),
        processors=[structlog.stdlib.filter_by_level,  # drop disabled levels before formatting
                    structlog.processors.LogfmtRenderer(key_order=["event"], drop_missing=True)],
        wrapper_class=structlog.stdlib.BoundLogger)
    return logger


def _dropped(*_args: Any, **_kwargs: Any) -> None:
    return None


class Logger:
    """A structlog ``BoundLogger`` over ``logging.getLogger(name)``, made on first real use."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        level = _LEVELS.get(attr)
        if level is not None and not logging.getLogger(self.name).isEnabledFor(level):
            return _dropped
        return getattr(_bound(self.name), attr)


def get_logger(name: str) -> Logger:
    """A structlog logger over ``logging.getLogger(name)``; ``name`` should start ``rtlforge.``."""
    return Logger(name)
