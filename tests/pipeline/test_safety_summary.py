"""The manifest's safety section: what ran, with which thresholds, and its counts."""

from mmcurate.filters import reasons
from mmcurate.pipeline.config import load_config
from mmcurate.pipeline.safety_summary import format_safety, safety_summary


def test_nsfw_off_says_why():
    assert safety_summary(load_config(), {})["nsfw"] == {
        "enabled": False,
        "why": "stage scoring is not in run.stages; it needs a CLIP checkpoint and stage images",
        "threshold": 0.5,
        "reject_document_min_images": 1,
        "images_dropped": 0,
        "documents_rejected": 0,
        "pairs_dropped": 0,
    }
    no_checkpoint = load_config(overrides=["run.stages=heuristics,images,scoring", "scoring.judge.enabled=true",
                                           "scoring.judge.endpoint=http://127.0.0.1:9/v1", "scoring.judge.model=m"])
    assert safety_summary(no_checkpoint, {})["nsfw"]["why"].startswith("scoring.checkpoint is not set")
    off = load_config(overrides=["scoring.nsfw.enabled=false"])
    assert safety_summary(off, {})["nsfw"]["why"] == "scoring.nsfw.enabled is false"


def test_nsfw_on_names_its_method_and_counts():
    config = load_config(overrides=["run.stages=heuristics,images,scoring,recycle", "scoring.checkpoint=/models/clip.pt"])
    counters = {
        ("scoring", f"image.reason.{reasons.IMAGE_NSFW}"): 4,
        ("scoring", f"rejected.{reasons.SAFETY_NSFW_IMAGES}"): 2,
        ("recycle", f"pair.rejected.{reasons.IMAGE_NSFW}"): 1,
        ("heuristics", f"rejected.{reasons.SAFETY_FLAGGED_WORDS}"): 3,
        ("heuristics", "nodes.removed.flagged_words"): 5,
        ("write", "pii.documents"): 2,
        ("write", "pii.email"): 3,
    }
    summary = safety_summary(config, counters)
    assert summary["nsfw"]["enabled"] is True
    assert summary["nsfw"]["method"] == "zero-shot nsfw_prompts_v1.txt (version 1)"
    assert (summary["nsfw"]["images_dropped"], summary["nsfw"]["documents_rejected"], summary["nsfw"]["pairs_dropped"]) == (4, 2, 1)
    assert (summary["flagged_words"]["documents_rejected"], summary["flagged_words"]["nodes_removed"]) == (3, 5)
    lines = format_safety({"safety": summary})
    assert "  NSFW images    4 images dropped, 2 documents rejected (at 1+ NSFW images), 1 pairs dropped" in lines[3]
    assert "score > 0.5" in lines[3]
    assert lines[4].startswith("  personal data  3 e-mail, 0 IP, 0 phone replaced in 2 kept documents")
    assert lines[1] == "  adult URLs     0 pages rejected before extraction, 0 images dropped  [shipped UT1 adult list]"


def test_adult_urls_off_only_without_the_shipped_list_and_list_files():
    config = load_config(overrides=["safety.urls.shipped_list=false"])
    summary = safety_summary(config, {})
    assert summary["urls"]["enabled"] is False
    assert format_safety({"safety": summary})[1] == (
        "  adult URLs     off (safety.urls.shipped_list is false and safety.urls names no list)"
    )
    allowing = load_config(overrides=["safety.urls.allowed_domains=[cosmopolitan.com]"])
    counters = {("extract", f"rejected.{reasons.URL_BLOCKLISTED_PREFIX}"): 2}
    lines = format_safety({"safety": safety_summary(allowing, counters)})
    assert lines[1] == (
        "  adult URLs     2 pages rejected before extraction, 0 images dropped  [shipped UT1 adult list, 1 allowed domain(s)]"
    )
