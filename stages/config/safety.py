"""Settings of safety: URL lists and personal data.

Part of the one typed config tree (``pipeline.config.Config`` assembles it); the
stage receives this section only.
"""

from __future__ import annotations


from mmcurate.stages.config.base import Section as _Section


class UnsafeUrlsConfig(_Section):
    """``safety.urls``: adult (or other unsafe) URL lists in the UT1 format
    (filters/unsafe_urls.py). Page URLs are checked before the page is parsed, in
    stage extract (url.blocklisted_domain, url.blocklisted_prefix, url.blocklisted_substring); image URLs as soon as extraction found them (image.blocklisted_domain,
    image.blocklisted_prefix, image.blocklisted_substring), so no later stage, recycling included, sees them.
    Files or gs://, s3:// paths, one entry a line."""

    # The UT1 adult list mmcurate ships (filters/data/adult_urls_ut1/, CC BY-SA 4.0):
    # its 4.6 million domains (and their subdomains) and 19,586 URL prefixes are
    # refused. FineWeb's URL filter refuses the same list by default.
    shipped_list: bool = True
    # Domains never refused by any list, nor their subdomains: the lists' false
    # positives (a listed domain that changed hands, a health or art site).
    allowed_domains: tuple[str, ...] = ()
    # UT1 `domains` files: a listed domain also blocks its subdomains.
    domain_blocklists: tuple[str, ...] = ()
    # UT1 `urls` files (or plain substrings) matched against the normalised URL.
    substring_blocklists: tuple[str, ...] = ()
    # Also drop images whose URL matches.
    images: bool = True


class PiiConfig(_Section):
    """``safety.pii``: personal data in kept text replaced by placeholders
    (filters/pii.py), after every filtering stage, just before write."""

    enabled: bool = True
    # What to replace; datatrove's PIIFormatter replaces e-mail and IP addresses,
    # NeMo Curator's PII modifier also phone numbers.
    email: bool = True
    # IP addresses (see ip_public_only).
    ip: bool = True
    # Phone numbers (see phone_region).
    phone: bool = True
    # Only globally routable IP addresses are personal data; private, loopback,
    # documentation and reserved ranges stay (datatrove's only_remove_public_ips).
    ip_public_only: bool = True
    # Placeholders. datatrove substitutes example addresses (email@example.com);
    # ours are explicit tokens, so a reader of the corpus sees that text was redacted.
    email_placeholder: str = "<EMAIL>"
    # What an IP address becomes.
    ip_placeholder: str = "<IP_ADDRESS>"
    # What a phone number becomes.
    phone_placeholder: str = "<PHONE>"
    # Phone numbers written without a country prefix are read in the region of the
    # page's country-code TLD (.de -> DE), else in this one (ours; a guess for .com).
    phone_region: str = "US"
    # Also redact image alt text, captions and titles (they are written with the text).
    image_text: bool = True


class SafetyConfig(_Section):
    """Safety steps that belong to no single filtering stage: the adult URL lists
    (stage extract) and personal-data redaction (before write). Flagged words are
    ``heuristics.flagged_words``, the NSFW image score ``scoring.nsfw``."""

    urls: UnsafeUrlsConfig = UnsafeUrlsConfig()
    pii: PiiConfig = PiiConfig()
