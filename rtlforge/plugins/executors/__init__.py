"""Executor plugins: the local ones (``serial``, ``thread``) and the Ray cluster (``ray``)."""
