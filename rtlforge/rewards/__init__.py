"""Reward plugins (see issue: PPA, HVC and AST rewards)."""
