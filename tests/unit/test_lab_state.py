"""The lab's state directory, locks and process identities, without namespaces (no root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fabriclens.lab import _proc, _state
from fabriclens.lab.lab import STATE_MARK, STATE_VERSION, CorruptState, Host, Lab
from fabriclens.lab.spec import LinkSpec


def test_parse_stat_reads_field_22_past_a_command_name_with_parentheses() -> None:
    """proc(5): field 2 is the command name in parentheses and may hold ') (' itself."""
    rest = " ".join(str(i) for i in range(4, 23))  # fields 4..22
    assert _proc.parse_stat(f"1234 (evil) (x y) S {rest} 23 24") == ("S", 22)
    assert _proc.parse_stat("1234 (short) S 1 2") is None


def test_a_pid_matches_only_with_its_start_time_namespace_and_command_line() -> None:
    me = _proc.identify(os.getpid())
    assert me is not None
    assert _proc.matches(me, "python") or _proc.matches(me, "pytest")
    assert not _proc.matches(me, "fabriclens.lab.forwarder")
    assert not _proc.matches(_proc.ProcessId(me.pid, me.start_ticks + 1, me.netns_inode))
    assert not _proc.matches(_proc.ProcessId(me.pid, me.start_ticks, me.netns_inode + 1))


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700)
    path.chmod(0o700)
    return path


@pytest.mark.parametrize(("kind", "words"), [("symlink", "a symbolic link"), ("file", "not a directory"),
                                             ("o+w", "can be written by other users"),
                                             ("g+w", "can be written by other users")])  # fmt: skip
def test_an_unsafe_state_directory_is_refused(tmp_path: Path, kind: str, words: str) -> None:
    real = _private_dir(tmp_path / "real")
    path = tmp_path / "state"
    if kind == "symlink":
        path.symlink_to(real)
    elif kind == "file":
        path.write_text("")
    else:
        path = real
        path.chmod(0o702 if kind == "o+w" else 0o720)
    with pytest.raises(_state.StateError) as exc:
        _state.open_dir(path)
    assert words in exc.value.message and _state.STATE_ENV in exc.value.message
    assert "\n" not in exc.value.message


def test_a_missing_state_directory_is_made_private(tmp_path: Path) -> None:
    old = os.umask(0o002)  # a umask that would make it group-writable
    try:
        with _state.state_dir(tmp_path / "a" / "labs"):
            pass
    finally:
        os.umask(old)
    assert (tmp_path / "a" / "labs").stat().st_mode & 0o777 == 0o755


def test_files_are_never_written_read_or_removed_through_a_link(tmp_path: Path) -> None:
    state = _private_dir(tmp_path / "state")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (state / "x.json").symlink_to(victim)
    (state / "sub").mkdir()
    with _state.state_dir(state) as dfd:
        with pytest.raises(_state.StateError, match="symbolic link"):
            _state.write_file(dfd, state, "x.json", b"{}")
        with pytest.raises(_state.StateError, match="symbolic link"):
            _state.read_file(dfd, state, "x.json")
        with pytest.raises(_state.StateError, match="symbolic link"):
            _state.open_append(dfd, state, "x.json")
        assert not _state.unlink_ours(dfd, "x.json")
        assert not _state.unlink_ours(dfd, "sub")
        _state.write_file(dfd, state, "y.json", b"one")
        _state.write_file(dfd, state, "y.json", b"two")  # replaces a file of ours
        assert _state.read_file(dfd, state, "y.json") == b"two"
        assert _state.unlink_ours(dfd, "y.json")
    assert victim.read_text() == "precious\n" and (state / "x.json").is_symlink()
    assert sorted(p.name for p in state.iterdir()) == ["sub", "x.json"]  # no temporary files


def test_a_lab_lock_excludes_other_processes_and_leaves_no_file(tmp_path: Path) -> None:
    state = _private_dir(tmp_path / "state")
    other = [sys.executable, "-c", (
        "import sys; from pathlib import Path; from fabriclens.lab import _state\n"
        "try:\n    with _state.lab_lock(Path(sys.argv[1]), 'x', timeout_s=0.3): print('got it')\n"
        "except _state.LabBusy as e: print(e.message)"), str(state)]  # fmt: skip
    with _state.lab_lock(state, "x"), _state.lab_lock(state, "x"):  # re-entrant in one process
        assert (state / "x.lock").exists()
        out = subprocess.run(other, capture_output=True, text=True, timeout=30, check=True).stdout
        assert "lab 'x' is busy" in out and "try again" in out
    assert not (state / "x.lock").exists()
    out = subprocess.run(other, capture_output=True, text=True, timeout=30, check=True).stdout
    assert out.strip() == "got it"


def _state_doc(name: str) -> dict[str, object]:
    hosts = [Host(f"h{i}", i, f"fl-{name}-h{i}", f"198.18.0.{i}", LinkSpec()) for i in (1, 2)]
    lab = Lab(name=name, subnet="198.18.0.0/24", impairment="userspace", hosts=hosts)
    return lab._state_json()


def test_a_state_round_trips_and_may_not_name_another_labs_namespace() -> None:
    doc = _state_doc("a")
    assert doc["written_by"] == STATE_MARK and doc["version"] == STATE_VERSION
    assert (
        Lab._from_state("a", json.loads(json.dumps(doc))).to_json()
        == Lab._from_state("a", doc).to_json()
    )
    for bad in (
        lambda d: d["hosts"][1].__setitem__("netns", "fl-b-h2"),
        lambda d: d.__setitem__("written_by", "someone"),
        lambda d: d.__setitem__("name", "b"),
        lambda d: d["hosts"][0].__setitem__("forwarder", {"pid": "x"}),
    ):
        tampered = json.loads(json.dumps(doc))
        bad(tampered)
        with pytest.raises((ValueError, LookupError, TypeError)):
            Lab._from_state("a", tampered)


def test_load_reports_a_corrupt_state_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fabriclens.lab import lab as lab_module

    state = _private_dir(tmp_path / "state")
    monkeypatch.setattr(lab_module, "STATE_DIR", state)
    (state / "a.json").write_text("{not json")
    with pytest.raises(CorruptState) as exc:
        Lab.load("a")
    assert "corrupt" in exc.value.message and "fabriclens lab down --name a" in exc.value.message
