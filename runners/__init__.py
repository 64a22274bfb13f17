"""Option presets for the runners mmcurate runs on. Presets only: no pipeline logic."""
