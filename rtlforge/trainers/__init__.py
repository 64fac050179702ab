"""Trainer plugins (see issue: GRPO, PPO, SFT)."""
