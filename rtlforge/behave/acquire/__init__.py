"""Feedback-guided task acquisition (BEHAVE §3.4, issue 14 section 1).

Training rollouts show where the policy is weak; acquisition turns that into new tasks. An
Analyst reads the rollouts and picks sources from a vetted library (:mod:`.sources`), a Builder
writes a spec S and a behaviour model B1, an Implementer writes B2 from S alone in a separate
context, and a Reviewer compares B1 and B2 with BEHAVE-Sim (:mod:`.round`). Accepted (S, B1)
pairs join a cumulative task pool (:mod:`.taskpool`) that RL samples from with the paper's
schedule (:mod:`.schedule`). docs/acquire.md describes the design.
"""
