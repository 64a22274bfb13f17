"""runners/options_views.py gives Beam's callers the views Beam's own view_as gives."""

import apache_beam as beam
from apache_beam.options.pipeline_options import (
    DirectOptions,
    PipelineOptions,
    StandardOptions,
    TypeOptions,
)

from mmcurate.runners import options_views

BEAM_VIEW_AS = getattr(PipelineOptions.view_as, "__wrapped__", PipelineOptions.view_as)


def _values(view):
    return {name: getattr(view, name) for name in view._visible_option_list()}


def _memo():
    made = []

    def counted(options, cls):
        made.append(cls)
        return BEAM_VIEW_AS(options, cls)

    return options_views.memoized(counted), made


def test_a_view_is_made_once_per_options_object_and_class_and_answers_as_beams():
    view_as, made = _memo()
    flags = ["--direct_num_workers=3", "--runner=DirectRunner", "--type_check_strictness=ALL_REQUIRED"]
    options, theirs = PipelineOptions(list(flags)), PipelineOptions(list(flags))
    for cls in (TypeOptions, DirectOptions, StandardOptions):
        first = view_as(options, cls)
        assert view_as(options, cls) is first and isinstance(first, cls)
        assert _values(first) == _values(BEAM_VIEW_AS(theirs, cls))
        assert options._all_options == theirs._all_options
    assert made == [TypeOptions, DirectOptions, StandardOptions]
    assert view_as(options, DirectOptions).direct_num_workers == 3
    # A value set through a view is the options object's, as in Beam.
    view_as(options, StandardOptions).streaming = True
    BEAM_VIEW_AS(theirs, StandardOptions).streaming = True
    assert view_as(options, StandardOptions).streaming is True
    assert _values(view_as(options, StandardOptions)) == _values(BEAM_VIEW_AS(theirs, StandardOptions))
    # A new options object gets its own views.
    other = PipelineOptions(["--direct_num_workers=1"])
    assert view_as(other, DirectOptions).direct_num_workers == 1 and made[-1] is DirectOptions


def test_a_view_is_made_again_when_its_flags_or_option_store_change():
    view_as, made = _memo()
    options = PipelineOptions(["--direct_num_workers=2"])
    first = view_as(options, DirectOptions)
    options._flags.append("--direct_running_mode=multi_processing")  # the same list, changed
    second = view_as(options, DirectOptions)
    assert second is not first and len(made) == 2
    assert _values(second) == _values(BEAM_VIEW_AS(options, DirectOptions))
    options._all_options = dict(options._all_options)  # a new store
    third = view_as(options, DirectOptions)
    assert third is not second and third._all_options is options._all_options and len(made) == 3
    # An option missing from the store is added back at its parsed value, as Beam does.
    del options._all_options["direct_num_workers"]
    assert view_as(options, DirectOptions) is third and options._all_options["direct_num_workers"] == 2
    assert len(made) == 3


def test_the_memo_is_installed_only_on_the_beam_release_it_was_checked_against(monkeypatch):
    assert options_views.install() is True  # conftest installed it already; installing again is a no-op
    installed = PipelineOptions.view_as
    assert installed.__wrapped__ is BEAM_VIEW_AS and options_views.install() and PipelineOptions.view_as is installed
    monkeypatch.setattr(beam, "__version__", "2.99.0")
    monkeypatch.setattr(PipelineOptions, "view_as", BEAM_VIEW_AS)
    assert options_views.install() is False
    assert not hasattr(PipelineOptions.view_as, "__wrapped__")
