"""Design knowledge for the agents: hand-written entries, reference designs, retrieval.

:mod:`.base` holds the models, the leakage guard and the :class:`Retriever` interface;
:mod:`.retrieval` the keyword (paper) and BM25 strategies; :mod:`.indexer` turns a folder of
Verilog into reference entries; :mod:`.plugin` registers the built-ins. Nothing heavy is imported
here (``bm25s`` loads only when a BM25 retriever is built).
"""
