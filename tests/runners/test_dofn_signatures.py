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
