"""Task-acquisition roles (BEHAVE §3.4) as agent plugins; the machinery they serve is
:mod:`rtlforge.behave.acquire` (docs/acquire.md)."""
