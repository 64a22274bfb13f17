"""inspect: --doc by URL or doc_id prefix, reason-code suggestions, CJK-aligned tables."""

from __future__ import annotations

from mmcurate.pipeline import inspect_cmd
from mmcurate.pipeline.cli import main
from mmcurate.pipeline.run_output import connect


def test_tables_align_wide_characters_in_terminal_columns():
    text = inspect_cmd.format_rows(["lang", "title", "n"], [["ja", "港の歴史と市場", 3], ["en", "The harbour", 12]])
    header, rule, first, second, _ = text.splitlines()
    # The third column starts at the same terminal column on every line.
    col = inspect_cmd.display_width(header[: header.rindex(" n") + 1])
    for line, value in ((first, "3"), (second, "12")):
        prefix = line[: line.rindex(value)]
        assert inspect_cmd.display_width(prefix) == col, line
    assert inspect_cmd.display_width("港の歴史と市場") == 14
    cut = inspect_cmd._cell("中文文本" * 10, 9)
    assert cut.endswith("…") and inspect_cmd.display_width(cut) <= 9


def test_doc_by_url_or_doc_id_prefix(report_run, capsys):
    out, ids = report_run
    assert main(["inspect", str(out), "--doc", "https://news.example.org/harbour"]) == 0
    assert f"doc_id    {ids['harbour']}" in capsys.readouterr().out
    assert main(["inspect", str(out), "--doc", ids["orchard"][:8]]) == 0
    assert f"doc_id    {ids['orchard']}" in capsys.readouterr().out
    # A page that was not kept, by its URL: its decisions.
    assert main(["inspect", str(out), "--doc", "https://news.example.org/short"]) == 0
    assert "not kept; decisions:" in capsys.readouterr().out


def test_an_ambiguous_prefix_lists_the_documents(report_run, capsys):
    out, ids = report_run
    con, views = connect(str(out))
    everything = inspect_cmd.find_documents(con, views, "")
    assert everything == []  # an empty key names nothing
    by_first = {}
    for doc_id in ids.values():
        by_first.setdefault(doc_id[0], []).append(doc_id)
    shared = [(k, v) for k, v in by_first.items() if len(v) > 1]
    if shared:
        key, expected = shared[0]
        assert inspect_cmd.find_documents(con, views, key) == sorted(expected)
        assert main(["inspect", str(out), "--doc", key]) == 1
        assert f"{key} names {len(expected)} documents" in capsys.readouterr().err
    assert main(["inspect", str(out), "--doc", "no-such-thing"]) == 1
    assert "no document or decision with doc_id, URL or doc_id prefix no-such-thing" in capsys.readouterr().err


def test_a_mistyped_reason_gets_the_closest_code(report_run, capsys):
    out, _ = report_run
    assert main(["inspect", str(out), "--reason", "content.too_few_word"]) == 1
    assert "; did you mean content.too_few_words or " in capsys.readouterr().err  # the closest first
    assert main(["inspect", str(out), "--reason", "gopher.too_few_wrds"]) == 1
    err = capsys.readouterr().err
    assert "; did you mean gopher.too_few_words (declared, no rows in this run)" in err
    assert main(["inspect", str(out), "--reason", "zzzz"]) == 1
    assert "codes in this run: " in capsys.readouterr().err


def test_a_wide_character_at_the_cut_is_dropped_and_tabs_keep_the_columns():
    # "ab中文" in 4 columns: "ab" and the ellipsis; 中 would straddle the edge.
    assert inspect_cmd._cell("ab中文", 4) == "ab…"
    assert inspect_cmd._cell("abc中文", 4) == "abc…"
    text = inspect_cmd.format_rows(["value", "n"], [["a\tb", 1], ["港\n口", 22]])
    header, _, first, second, _ = text.splitlines()
    assert first.startswith("a b ") and second.startswith("港 口")
    col = inspect_cmd.display_width(header[: header.rindex("n")])
    for line, value in ((first, "1"), (second, "22")):
        assert inspect_cmd.display_width(line[: line.rindex(value)]) == col, line
