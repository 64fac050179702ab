"""Helpers for testing rtlforge and code built on it (fixtures that need no downloads)."""

from __future__ import annotations

from rtlforge.testing.tiny_model import build_tiny_model

__all__ = ["build_tiny_model"]
