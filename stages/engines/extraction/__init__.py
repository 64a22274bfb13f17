"""Main-content extraction without Beam: the extractor interface and its registry
(``registry.load_extractor``), the trafilatura adapter with its own DOM work for
images (``trafilatura_adapter``: page index, ``srcset``/``<picture>``, text
location, image recovery and the lead image), and the per-page time limit
(``time_limit``)."""
