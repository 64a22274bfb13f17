"""``mmcurate report DIR``: one self-contained HTML page about a finished run.

``DIR/report.html`` shows the funnel (pages -> kept per stage, and the share of
pages each reason code removed), the distributions of the main signals for kept and
rejected pages with the run's thresholds drawn on them, a sample of kept documents
rendered interleaved with their images, a sample of rejected pages per reason (with
the start of each page's text, read back from its WARC record), image and error
decisions, and recycled pairs when the run wrote a ``pairs`` table.

The page needs no network when it is viewed: CSS is inline, the plots are SVG
written here, images are ``data:`` URLs made from the images table's bytes (or a
placeholder naming the URL when the run stored none), and a Content-Security-Policy
forbids the browser any other load. Thresholds come from the config stamped in
``manifest.json``.

Modules, one job each:

- ``command``: the ``mmcurate report`` command; writes ``report.html`` (any filesystem).
- ``page``: the page itself: its sections in order, the run summary, the CSS
  (``report.css``) and the Content-Security-Policy.
- ``queries``: every DuckDB query the page makes over the run's tables.
- ``manifest_view``: what the page reads from ``manifest.json`` (config values,
  stages run, thresholds, the funnel's rows).
- ``charts``: SVG histograms and bar charts; ``funnel``: the funnel plot, legend and table.
- ``distributions``: which signals are plotted, against which thresholds.
- ``samples``: kept documents and rejected pages; ``images_pairs``: image decisions
  and recycled pairs; ``sources``: yield per domain and language.
- ``thumbnails``: image bytes as ``data:`` URLs (re-encoded when large) or a placeholder.
- ``warc_page_text``: the start of a rejected page's visible text, from its WARC record.
- ``markup``: HTML escaping and short number formatting shared by all of them.
"""
