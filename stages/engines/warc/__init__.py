"""Reading WARC and ARC files without Beam: byte streams, record boundaries, record
classification (page, captured image, other), faults and resynchronisation, range
reads of single records."""
