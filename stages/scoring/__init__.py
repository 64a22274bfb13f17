"""Stage `scoring`: CLIP image-text similarity, NSFW scores, and the optional VLM
judge. Its modules, each one job (the Beam-free engines sit in ``stages.engines``:
``clip_encoder``, ``nsfw_scorer``, ``image_text_scores``, ``judge_prompt``,
``judge_client``, ``judge_cache``):

- ``score_image_text``: ``ScoreImageText``, the stage's transform (CLIP, then the judge);
- ``model_handler``: ``ClipModelHandler``, open_clip through ``RunInference``
  (also embeds the recycle stage's pairs);
- ``judge``: ``JudgeDocuments``, the VLM judge, part of this stage (its rows carry
  stage ``scoring``);
- ``images_table``: reading the images table's rows (bytes joined by image_id);
- ``options``: ``ScoringOptions``, the stage's Beam flag ``--scoring_accelerator``.

Importing this package imports none of them (the model modules pull in torch).
"""

STAGE = "scoring"
