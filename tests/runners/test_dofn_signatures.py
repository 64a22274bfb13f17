"""runners/dofn_signatures.py gives Beam the answers Beam's own introspection gives."""

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.transforms import core, userstate

from mmcurate.runners import dofn_signatures


class _Counting(beam.DoFn):
    COUNT = userstate.ReadModifyWriteStateSpec("count", VarIntCoder())

    def process(self, element, count=beam.DoFn.StateParam(COUNT), timestamp=beam.DoFn.TimestampParam):
        yield element


def test_the_memo_answers_as_beam_does_and_once_per_function():
    original = getattr(core.get_function_args_defaults, "__wrapped__", core.get_function_args_defaults)
    calls = []

    def counted(f):
        calls.append(f)
        return original(f)

    memo = dofn_signatures.memoized(counted)
    fn = _Counting()
    first = memo(fn.process)
    assert first == original(fn.process) and first[0] == ["element", "count", "timestamp"]
    first[0].append("changed")  # the caller's lists are its own
    assert memo(_Counting().process) == original(fn.process) and len(calls) == 1
    # Anything but a bound method of a plain function goes to Beam every time.
    memo(len)
    memo(len)
    assert calls[1:] == [len, len]
    # Beam sees the state spec through the memo (conftest installs it).
    assert userstate.is_stateful_dofn(fn) and userstate.get_dofn_specs(fn)[0] == {_Counting.COUNT}


def test_the_memo_is_installed_only_on_the_beam_release_it_was_checked_against(monkeypatch):
    # The pin and the memo move together: a new Beam pin fails here until the memo's
    # callers are checked again and BEAM_VERSION follows.
    assert beam.__version__ == dofn_signatures.BEAM_VERSION
    assert dofn_signatures.install() is True
    installed = core.get_function_args_defaults
    monkeypatch.setattr(beam, "__version__", "2.99.0")
    monkeypatch.setattr(core, "get_function_args_defaults", installed.__wrapped__)
    assert dofn_signatures.install() is False
    assert not hasattr(core.get_function_args_defaults, "__wrapped__")


class _Timed(beam.DoFn):
    TIMER = userstate.TimerSpec("flush", userstate.TimeDomain.WATERMARK)
    STATE = userstate.BagStateSpec("seen", VarIntCoder())

    def process(self, element, seen=beam.DoFn.StateParam(STATE), flush=beam.DoFn.TimerParam(TIMER)):
        yield element

    @userstate.on_timer(TIMER)
    def flushed(self, seen=beam.DoFn.StateParam(STATE)):
        yield from seen.read()


def _beam_specs(dofn):
    return getattr(userstate.get_dofn_specs, "__wrapped__", userstate.get_dofn_specs)(dofn)


def test_the_specs_memo_answers_as_beam_does_once_per_set_of_methods():
    from apache_beam.typehints.typecheck import TypeCheckWrapperDoFn

    from mmcurate.stages.results import ApplyFiltersFn

    calls = []

    def counted(dofn):
        calls.append(dofn)
        return _beam_specs(dofn)

    memo = dofn_signatures.memoized_specs(counted)
    dofns = [_Counting(), _Timed(), ApplyFiltersFn("heuristics"), beam.Map(len).fn]
    for fn in dofns:
        answer = memo(fn)
        assert answer == _beam_specs(fn)
        answer[0].add("changed")  # the caller's sets are its own
    assert memo(_Timed()) == ({_Timed.STATE}, {_Timed.TIMER}) and len(calls) == len(dofns)
    assert memo(_Counting()) == ({_Counting.COUNT}, set()) and len(calls) == len(dofns)
    # An instance attribute that is a bound method is part of the key.
    odd = _Counting()
    odd.extra = _Timed().process
    assert memo(odd) == _beam_specs(odd) == ({_Counting.COUNT, _Timed.STATE}, {_Timed.TIMER})
    assert calls[-1] is odd
    # beam.Map of a function: its process is no bound method, the class's methods are the key.
    assert memo(beam.Map(str).fn) == (set(), set()) and calls[-1] is odd
    # Beam's type-check wrapper (its own __getattr__) and a callable wrapper of a bound
    # method (beam.FlatMap's; process read through its _inspect_process hook) go to
    # Beam each time.
    wrapped = TypeCheckWrapperDoFn(_Counting(), beam.typehints.decorators.IOTypeHints.empty())
    bound = beam.FlatMap(_Counting().process).fn
    for fn in (wrapped, wrapped, bound, bound):
        assert memo(fn) == _beam_specs(fn)
    assert calls[-4:] == [wrapped, wrapped, bound, bound]
    # Beam's own callers get the memo (conftest installs it).
    assert hasattr(userstate.get_dofn_specs, "__wrapped__") and userstate.is_stateful_dofn(_Timed())
