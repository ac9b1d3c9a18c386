"""output_files: decoding, truncation markers, tails, log reads and searches, pending logs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from little_loops.fsm.process import output_files
from little_loops.fsm.process.output_files import (
    LogTooLargeError,
    PendingLog,
    SpareFiles,
    action_log_name,
    decodable_length,
    decode_output,
    log_windows,
    read_log_text,
    read_tail,
    search_log,
    skip_partial_character,
    stderr_log_path,
    text_decoder,
    truncation_marker,
)

# --- decoding ---------------------------------------------------------------------------


def test_decode_escapes_bad_bytes_and_reads_every_line_break_as_newline() -> None:
    assert decode_output(b"a\xffb\r\nc\rd\n\xc3\xa9") == "a\\xffb\nc\nd\né"
    assert decode_output(memoryview(b"plain\n")) == "plain\n"


def test_the_streaming_decoder_gives_the_same_text_across_any_split() -> None:
    data = "é\r\nü€x\r".encode() + b"\xff\n"
    for split in range(len(data) + 1):
        decoder = text_decoder()
        text = decoder.decode(data[:split]) + decoder.decode(data[split:], final=True)
        assert text == decode_output(data), split


@pytest.mark.parametrize(
    ("data", "length"),
    [
        (b"", 0),
        (b"abc", 3),
        (b"ab\r", 2),  # a \n may follow
        ("aé".encode(), 3),
        ("aé".encode()[:-1], 1),  # é cut after its first byte
        ("a€".encode()[:-1], 1),  # three-byte character cut after two
        ("a\U0001f600".encode()[:-1], 1),  # four-byte character cut after three
        ("a\U0001f600".encode(), 5),
        (b"a\x80\x80\x80", 4),  # stray continuation bytes: nothing to wait for
    ],
)
def test_decodable_length_leaves_out_what_the_next_bytes_could_change(
    data: bytes, length: int
) -> None:
    assert decodable_length(data) == length


def test_skip_partial_character_counts_leading_continuation_bytes() -> None:
    assert skip_partial_character("€x".encode()[1:]) == 2
    assert skip_partial_character(b"abc") == 0
    assert skip_partial_character(b"\x80\x80\x80\x80") == 3  # never more than 3
    assert skip_partial_character(b"") == 0


# --- names and markers ------------------------------------------------------------------


def test_log_names() -> None:
    assert action_log_name(3, "fix-tests") == "3-fix-tests.log"
    assert action_log_name(12, "a b/c:d") == "12-a_b_c_d.log"
    assert stderr_log_path(Path("x.logs/3-fix.log")) == Path("x.logs/3-fix.stderr.log")


def test_truncation_marker_says_how_much_was_cut_and_where_the_rest_is() -> None:
    assert truncation_marker("output", 5, "x.log") == (
        "[output truncated: 5 earlier bytes dropped; full output in x.log]\n"
    )
    assert truncation_marker("stderr", 7, None) == "[stderr truncated: 7 earlier bytes dropped]\n"


# --- reading logs back ------------------------------------------------------------------


def test_read_tail_keeps_the_last_bytes_without_cutting_a_character(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes("ab€cd".encode())  # € is 3 bytes: a b [3] c d = 7 bytes
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_tail(fd, 7, 10) == ("ab€cd".encode(), 0)
        assert read_tail(fd, 7, 4) == (b"cd", 5)  # the cut € counts as dropped
        assert read_tail(fd, 5, 3) == ("€".encode(), 2)  # `end` bounds the read
    finally:
        os.close(fd)


def test_read_log_text_reads_a_log_up_to_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b'{"a": 1}\r\n')
    assert read_log_text(str(path), 10) == '{"a": 1}\n'
    with pytest.raises(LogTooLargeError) as caught:
        read_log_text(str(path), 9)
    assert str(caught.value) == f"{path} holds 10 bytes (limit 9)"
    assert (caught.value.size, caught.value.limit) == (10, 9)


def test_windows_own_every_position_once_and_overlap_past_it(tmp_path: Path) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(100))
    path = tmp_path / "log"
    path.write_text(text)
    windows = list(log_windows(str(path), 30, 10))
    owned = "".join(window[start:end] for window, start, end in windows)
    assert owned == text
    assert [(len(w), s, e) for w, s, e in windows] == [
        (30, 0, 20),
        (31, 1, 21),
        (31, 1, 21),
        (31, 1, 21),
        (21, 1, 22),  # the last window owns the rest (and the position after it)
    ]
    for window, _, end in windows[:-1]:
        assert len(window) - end == 10  # at least `overlap` characters past what it owns


def test_windows_of_an_empty_log(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"")
    assert list(log_windows(str(path), 30, 10)) == [("", 0, 1)]


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of 64 characters overlapping by 16, so a few lines span several windows."""
    monkeypatch.setattr(output_files, "READ_CHUNK_BYTES", 64)


@pytest.mark.usefixtures("small_windows")
@pytest.mark.parametrize(
    ("pattern", "found"),
    [
        ("line 07", True),
        (r"line 05\nline 06", True),  # across a line break
        ("^line 00", True),  # the start of the output
        ("^line 05", False),  # `^` is the start of the whole output, not of a window
        ("(?m)^line 05", True),
        ("line 19$", True),  # the end of the output
        ("line 04$", False),  # `$` is the end of the whole output, not of a window
        (r"\Aline 03", False),
        ("(?<=line 0)4", True),  # lookbehind sees the character before a window
        ("line 20", False),
        ("line 0[0-9] \\d+", False),
    ],
)
def test_search_log_follows_whole_output_rules(tmp_path: Path, pattern: str, found: bool) -> None:
    path = tmp_path / "log"
    path.write_text("".join(f"line {i:02d}\n" for i in range(20)))  # 160 characters
    assert search_log(str(path), re.compile(pattern), 16) is found


@pytest.mark.usefixtures("small_windows")
def test_search_log_finds_a_match_at_every_position(tmp_path: Path) -> None:
    path = tmp_path / "log"
    for position in range(0, 200):
        text = "." * position + "MARK" + "." * (200 - position)
        path.write_text(text)
        assert search_log(str(path), re.compile("MARK"), 16), position
        assert not search_log(str(path), re.compile("MARK$"), 16), position


# --- logs that take their name when written ---------------------------------------------


def test_pending_log_appears_only_once_it_holds_something(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "1-a.log"
    log = PendingLog(path)
    try:
        assert path.parent.is_dir()
        log.publish_if_written()
        assert (log.visible_path, path.exists()) == (None, False)
        os.write(log.fd, b"out\n")
        log.publish_if_written()
        assert (log.visible_path, path.read_bytes()) == (path, b"out\n")
        os.write(log.fd, b"more\n")  # still the same file
        assert path.read_bytes() == b"out\nmore\n"
    finally:
        log.close()


def test_pending_log_replaces_an_older_file_of_the_same_name(tmp_path: Path) -> None:
    path = tmp_path / "1-a.log"
    path.write_text("earlier attempt\n")
    log = PendingLog(path)
    try:
        assert path.read_text() == "earlier attempt\n"  # untouched until there is output
        os.write(log.fd, b"again\n")
        log.publish_if_written()
        assert path.read_text() == "again\n"
    finally:
        log.close()


def test_without_unnamed_files_the_log_is_named_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "O_TMPFILE")
    path = tmp_path / "1-a.log"
    path.write_text("old\n")
    log = PendingLog(path)
    try:
        assert (log.visible_path, path.read_bytes()) == (path, b"")  # truncated
        os.write(log.fd, b"x")
        log.publish_if_written()
        assert path.read_bytes() == b"x"
    finally:
        log.close()


def test_a_file_system_without_unnamed_files_gets_a_named_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def refuse_tmpfile(path: object, flags: int, *args: int) -> int:
        if flags & os.O_TMPFILE == os.O_TMPFILE:
            raise OSError(95, "Operation not supported")
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse_tmpfile)
    log = PendingLog(tmp_path / "1-a.log")
    log.close()
    assert (tmp_path / "1-a.log").exists()


def test_a_log_that_cannot_be_linked_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = PendingLog(tmp_path / "1-a.log")
    try:
        os.write(log.fd, b"x")
        monkeypatch.setattr(os, "link", _refuse_link)
        log.publish_if_written()
        log.publish_if_written()  # not tried again
        assert (log.visible_path, log.unavailable) == (None, True)
        assert list(tmp_path.iterdir()) == []
    finally:
        log.close()


def _refuse_link(*args: object, **kwargs: object) -> None:
    raise PermissionError(1, "Operation not permitted")


def test_spare_files_serve_the_folder_they_were_made_in(tmp_path: Path) -> None:
    spares = SpareFiles()
    assert spares.take(tmp_path) is None  # none made yet
    spares.prepare(tmp_path)
    spares.prepare(tmp_path)  # one at a time
    fd = spares.take(tmp_path)
    assert fd is not None
    log = PendingLog(tmp_path / "1-a.log", spares)
    assert log.fd != fd  # the spare was taken already: a new file
    log.close()
    os.close(fd)
    other = tmp_path / "other"
    other.mkdir()
    spares.prepare(tmp_path)
    assert spares.take(other) is None  # made elsewhere: closed, not handed out
    spares.prepare(other)
    log = PendingLog(other / "1-b.log", spares)
    os.write(log.fd, b"x")
    log.publish_if_written()
    log.close()
    assert (other / "1-b.log").read_bytes() == b"x"
    spares.prepare(other)
    del spares  # closes the spare it still holds
