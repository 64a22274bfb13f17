"""mmcurate: curate interleaved image-text pretraining corpora from WARC files with Apache Beam."""

__version__ = "0.1.0"
