"""Engines: the Beam-free work behind the stages.

Decoding WARC records, extracting a page's content, fetching and normalising
images, loading models: plain Python over plain values, testable without a
pipeline. A module here never imports ``apache_beam``; the stage modules one level
up wrap these engines in DoFns and PTransforms (tests/test_layers.py checks both).
"""
