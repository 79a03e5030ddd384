"""The lab is safe to run twice at once, says when it drifted from its state, and removes only
what it created: parallel `up`/`down`, a killed userspace stage, a failed `impair`, corrupt and
stale state, planted links in the state directory, and strangers `down --all` must leave alone."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabriclens.cli.app import run
from fabriclens.lab import Lab, LinkSpec, down_all
from fabriclens.lab import lab as lab_module
from fabriclens.lab._ip import LabError, netns_list
from fabriclens.lab.lab import STATE_DIR, Capabilities

# delay, jitter and loss on the userspace stage (a forwarder process per impaired host), even
# where the kernel has netem: the tests below are about those processes
USERSPACE = Capabilities(root=True, iproute2=True, tun=True, netem=False)
TRIAL_TIMEOUT_S = 60


def _cli(*args: str) -> subprocess.Popen[str]:
    """`fabriclens lab ARGS` in a process of its own (for commands that must run at once)."""
    return subprocess.Popen(
        [sys.executable, "-m", "fabriclens", "lab", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _together(*commands: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """Start the commands at once; (exit status, stdout, stderr) of each, in order."""
    procs = [_cli(*c) for c in commands]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=TRIAL_TIMEOUT_S)
        out.append((p.returncode, stdout, stderr))
    return out


def _ns_of(name: str) -> list[str]:
    return sorted(n for n in netns_list() if n.startswith(f"fl-{name}-"))


def _intact(name: str, hosts: int = 2) -> None:
    """All of the lab's namespaces exist, each host has its eth0, and status finds no drift."""
    assert _ns_of(name) == sorted(
        [f"fl-{name}-sw"] + [f"fl-{name}-h{i}" for i in range(1, hosts + 1)]
    )
    for i in range(1, hosts + 1):
        shown = subprocess.run(["ip", "-n", f"fl-{name}-h{i}", "link", "show", "eth0"],
                               capture_output=True, timeout=10, check=False)  # fmt: skip
        assert shown.returncode == 0, f"fl-{name}-h{i} has no eth0"
    [(rc, out, err)] = _together(("status", "--name", name, "--json"))
    assert rc == 0, err
    assert json.loads(out)["drift"] == []


def _gone(name: str) -> None:
    assert _ns_of(name) == []
    assert not [p for p in STATE_DIR.glob(f"{name}*")], list(STATE_DIR.glob(f"{name}*"))


def _stage_pid(name: str, host: str) -> int:
    pid = Lab.load(name).host(host).forwarder_pid
    assert pid
    return pid


def _kill9(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):  # started by this process: reap it
        os.waitpid(pid, 0)
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.01)


@contextlib.contextmanager
def _stranger(lab_arg: str) -> Iterator[subprocess.Popen[bytes]]:
    """A process that is not the lab's but whose command line looks like a forwarder's."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)",
                             "fabriclens.lab.forwarder", "--lab", lab_arg])  # fmt: skip
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


# ---- 1. two commands at once ----------------------------------------------------------------
def test_parallel_up_and_down_of_one_name() -> None:
    """8 trials: two `up --name ps` at once make one lab (the other says it is up, and removes
    nothing: it used to roll back by deleting the winner's namespaces); two `down` at once
    remove it once (the other says there is no such lab)."""
    for trial in range(8):
        (rc1, _, err1), (rc2, _, err2) = _together(*[("up", "--name", "ps", "--hosts", "2")] * 2)
        assert sorted([rc1, rc2]) == [0, 2], (trial, err1, err2)
        assert "already up" in (err1 + err2)
        _intact("ps")
        (rc1, _, err1), (rc2, _, err2) = _together(*[("down", "--name", "ps")] * 2)
        assert sorted([rc1, rc2]) == [0, 2], (trial, err1, err2)
        assert "no lab named 'ps'" in (err1 + err2)
        _gone("ps")


def test_parallel_up_and_down_of_two_names() -> None:
    """8 trials: `up --name pa` and `up --name pb` at once both work, on different subnets."""
    for trial in range(8):
        results = _together(("up", "--name", "pa", "--hosts", "2", "--json"),
                            ("up", "--name", "pb", "--hosts", "2", "--json"))  # fmt: skip
        assert [r[0] for r in results] == [0, 0], (trial, [r[2] for r in results])
        subnets = {json.loads(r[1])["subnet"] for r in results}
        assert len(subnets) == 2, f"both labs got {subnets}"
        _intact("pa")
        _intact("pb")
        results = _together(("down", "--name", "pa"), ("down", "--name", "pb"))
        assert [r[0] for r in results] == [0, 0], (trial, [r[2] for r in results])
        _gone("pa")
        _gone("pb")


def test_up_and_down_of_one_name_at_once() -> None:
    """4 trials: an `up` and a `down` of the same name at once: either the lab is up and
    whole (the down came first and found nothing) or nothing of it is left."""
    for trial in range(4):
        (rc_up, _, err_up), (rc_down, _, err_down) = _together(
            ("up", "--name", "pud", "--hosts", "2"), ("down", "--name", "pud")
        )
        assert rc_up == 0, (trial, err_up)
        assert rc_down in (0, 2), (trial, err_down)
        if rc_down == 0:
            _gone("pud")
        else:
            assert "no lab named" in err_down
            _intact("pud")
            assert run(["lab", "down", "--name", "pud"]) == 0
        _gone("pud")


def test_a_held_lock_times_out_with_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another command holds lab busy's lock: status waits, then says so (it used to read the
    state while the other command was changing it)."""
    lock = STATE_DIR / "busy.lock"
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); "
         "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)", str(lock)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        monkeypatch.setattr("fabriclens.lab._state.LOCK_TIMEOUT_S", 0.5)
        t0 = time.monotonic()
        assert run(["lab", "status", "--name", "busy"]) == 3
        assert time.monotonic() - t0 >= 0.5
        err = capsys.readouterr().err
        assert "lab 'busy' is busy" in err and "try again" in err and err.count("\n") == 1
    finally:
        holder.kill()
        holder.wait(timeout=10)
        lock.unlink(missing_ok=True)


# ---- 2. status says what differs ------------------------------------------------------------
def test_status_reports_a_killed_stage(capsys: pytest.CaptureFixture[str]) -> None:
    """kill -9 of h2's userspace stage takes h2's link with it: status used to show the stage
    as working; now it reports h2's link as down (exit status 1), h1 as fine."""
    lab = Lab.up("kil", hosts=2, overrides={"h2": {"delay": "1ms"}}, capabilities=USERSPACE)
    try:
        _kill9(_stage_pid("kil", "h2"))
        assert run(["lab", "status", "--name", "kil", "--json"]) == 1
        drift = json.loads(capsys.readouterr().out)["drift"]
        assert drift and all(line.startswith("h2: ") for line in drift), drift
        assert any("not running" in line for line in drift)
        assert any("eth0 is missing" in line and "DOWN" in line for line in drift)
        assert run(["lab", "status", "--name", "kil"]) == 1
        assert "the lab differs from its state" in capsys.readouterr().out
    finally:
        lab.down()


def test_a_failed_impair_puts_the_old_shaping_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """tc fails half-way through `impair --bandwidth 50mbit` (the old cap already deleted): the
    link is rebuilt with its old 100 Mbit/s, which is what the state still says. It used to be
    left unshaped while the state claimed 100 Mbit/s."""
    lab = Lab.up("imp", hosts=2, link=LinkSpec(bandwidth_bits_per_s=100e6))
    real_tc = lab_module.tc
    failed = []

    def flaky_tc(*args: str, **kwargs: object):  # type: ignore[no-untyped-def]
        if "tbf" in args and "50000000bit" in args and not failed:
            failed.append(args)
            raise LabError("tc: injected failure")
        return real_tc(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lab_module, "tc", flaky_tc)
    try:
        with pytest.raises(LabError, match="injected"):
            lab.impair("h1", {"bandwidth": "50mbit"})
        assert failed
        shown = subprocess.run(["tc", "-j", "-n", "fl-imp-h1", "qdisc", "show", "dev", "eth0"],
                               capture_output=True, text=True, timeout=10, check=True)  # fmt: skip
        rates = [q["options"]["rate"] * 8 for q in json.loads(shown.stdout) if q["kind"] == "tbf"]
        assert rates == [100e6], shown.stdout
        loaded = Lab.load("imp")
        assert loaded.host("h1").link.bandwidth_bits_per_s == 100e6
        assert loaded.check() == []
    finally:
        lab.down()


# ---- 3. corrupt and stale state --------------------------------------------------------------
def test_corrupt_state_is_reported_and_down_by_name_removes_the_lab(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A state file that is not JSON, not a state, or names another lab's namespaces: status
    says so in one line (exit 2; it used to crash with an internal error), and `down --name`
    removes what the lab's names say is its own, forwarder included."""
    Lab.up("cor", hosts=2, overrides={"h2": {"delay": "1ms"}}, capabilities=USERSPACE)
    state = STATE_DIR / "cor.json"
    good = json.loads(state.read_text())
    tampered = json.loads(state.read_text())
    tampered["hosts"][0]["netns"] = "fl-other-h1"
    try:
        for text in ("{not json", "[]", json.dumps({"name": "cor"}), json.dumps(tampered)):
            state.write_text(text)
            assert run(["lab", "status", "--name", "cor"]) == 2, text
            err = capsys.readouterr().err
            assert "corrupt" in err and "lab down --name cor" in err and err.count("\n") == 1, err
        assert run(["lab", "down", "--name", "cor"]) == 0
        assert "corrupt" in capsys.readouterr().err
        _gone("cor")
        assert not [
            p for p in lab_module._forwarder_like_pids() if "cor-h2" in lab_module.cmdline(p)
        ]
        assert run(["lab", "down", "--name", "cor"]) == 2  # nothing left to do: one clear line
        err = capsys.readouterr().err
        assert "no lab named 'cor'" in err and err.count("\n") == 1
    finally:
        if _ns_of("cor"):
            state.write_text(json.dumps(good))
            run(["lab", "down", "--name", "cor"])


def test_a_stale_pid_of_another_process_is_not_signalled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Lab sta's stages died and their PIDs now belong to lab stb's stage and to a stranger
    whose command line looks like a forwarder's: `down --name sta` used to kill both (it
    checked the command line only); now start time and namespace tell them apart."""
    sta = Lab.up("sta", hosts=2, overrides={"h1": {"delay": "1ms"}, "h2": {"delay": "1ms"}},
                 capabilities=USERSPACE)  # fmt: skip
    stb = Lab.up("stb", hosts=2, overrides={"h2": {"delay": "1ms"}}, capabilities=USERSPACE)
    try:
        with _stranger("sta-h1") as stranger:
            other_stage = _stage_pid("stb", "h2")
            for host in ("h1", "h2"):
                _kill9(_stage_pid("sta", host))
            state = STATE_DIR / "sta.json"
            doc = json.loads(state.read_text())
            for h, pid in zip(doc["hosts"], (stranger.pid, other_stage), strict=True):
                h["forwarder_pid"] = pid  # the PIDs came round again
                if h.get("forwarder"):
                    h["forwarder"]["pid"] = pid
            state.write_text(json.dumps(doc))
            status_rc = run(["lab", "status", "--name", "sta", "--json"])
            status_out = capsys.readouterr().out
            assert run(["lab", "down", "--name", "sta"]) == 0
            assert stranger.poll() is None, "a stranger was killed"
            assert Path(f"/proc/{other_stage}").exists(), "lab stb's stage was killed"
            assert status_rc == 1  # and status did not take them for sta's stages either
            drift = "\n".join(json.loads(status_out)["drift"])
            for host, pid in (("h1", stranger.pid), ("h2", other_stage)):
                assert f"{host}: its userspace stage (pid {pid}) is not running" in drift
            _gone("sta")
            assert run(["lab", "status", "--name", "stb"]) == 0
            capsys.readouterr()
    finally:
        stb.down()
        sta.down()


# ---- 4. down --all removes only what the tool created ---------------------------------------
def test_down_all_leaves_strangers_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """`down --all` used to remove every fl-* namespace, every process mentioning the forwarder
    and every file in the state directory (and died on a subdirectory). Now it removes lab
    `all` only and names the rest."""
    subprocess.run(["ip", "netns", "add", "fl-foreign"], check=True, timeout=10)
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    notes, other, sub = STATE_DIR / "notes.txt", STATE_DIR / "other.json", STATE_DIR / "sub"
    try:
        with _stranger("all-h1") as stranger:
            notes.write_text("kept\n")
            other.write_text("{}\n")  # named like a state, not one this tool wrote
            sub.mkdir()
            (sub / "inner").write_text("kept\n")
            Lab.up("all", hosts=2, overrides={"h2": {"delay": "1ms"}}, capabilities=USERSPACE)
            assert run(["lab", "down", "--all", "--json"]) == 0
            doc = json.loads(capsys.readouterr().out)
            assert doc["removed"] == ["all"]
            left = "\n".join(doc["left_alone"])
            for thing in (
                "fl-foreign",
                str(notes),
                str(other),
                str(sub),
                f"process {stranger.pid}",
            ):
                assert thing in left, (thing, left)
            _gone("all")
            assert "fl-foreign" in netns_list()
            assert stranger.poll() is None
            assert notes.read_text() == "kept\n" and other.read_text() == "{}\n"
            assert (sub / "inner").read_text() == "kept\n"
    finally:
        subprocess.run(["ip", "netns", "del", "fl-foreign"], check=False, timeout=10)
        notes.unlink(missing_ok=True)
        other.unlink(missing_ok=True)
        (sub / "inner").unlink(missing_ok=True)
        with contextlib.suppress(FileNotFoundError):
            sub.rmdir()
        if _ns_of("all"):
            run(["lab", "down", "--name", "all"])


def test_planted_links_are_neither_followed_nor_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Links in the state directory, to files outside it, where `up` writes its state, a
    stage's parameters and its log: `up` used to write through them (root overwriting any file
    on the machine). Now it refuses with one line and removes what it made; `down --all` names
    the links and removes neither them nor their targets."""
    outside = tmp_path / "outside"
    outside.mkdir()
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    planted = {}
    for name in ("syl.tmp", "syl-h2.params.json", "syl-h2.log", "evil.json"):
        target = outside / f"victim-{name}"
        target.write_text("precious\n")
        (STATE_DIR / name).symlink_to(target)
        planted[STATE_DIR / name] = target
    try:
        up_rc = run(["lab", "up", "--name", "syl", "--hosts", "2", "--delay", "1ms"])
        for link, target in planted.items():
            assert target.read_text() == "precious\n", f"`up` wrote {target} through {link}"
        assert up_rc == 2
        err = capsys.readouterr().err
        assert "symbolic link" in err and err.count("\n") == 1, err
        assert _ns_of("syl") == []
        assert run(["lab", "status", "--name", "evil"]) == 2
        assert "symbolic link" in capsys.readouterr().err
        assert run(["lab", "down", "--all", "--json"]) == 0
        left = "\n".join(json.loads(capsys.readouterr().out)["left_alone"])
        for link, target in planted.items():
            assert link.is_symlink() and str(link) in left, (link, left)
            assert target.read_text() == "precious\n", f"{target} was written through {link}"
    finally:
        for link in planted:
            link.unlink(missing_ok=True)
        if _ns_of("syl"):
            run(["lab", "down", "--name", "syl"])
        for stray in STATE_DIR.glob("syl*"):
            stray.unlink()


@pytest.mark.parametrize("kind", ["symlink", "world-writable"])
def test_an_unsafe_state_directory_is_refused(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """FABRICLENS_LAB_STATE pointing at a link, or at a directory others can write: root would
    follow what anyone planted there. `lab up` refuses before it makes anything."""
    real = tmp_path / "real"
    real.mkdir(mode=0o755)
    if kind == "symlink":
        state = tmp_path / "link"
        state.symlink_to(real)
    else:
        state = real
        state.chmod(0o777)
    monkeypatch.setattr(lab_module, "STATE_DIR", state)
    try:
        assert run(["lab", "up", "--name", "sd", "--hosts", "1"]) == 2
        err = capsys.readouterr().err
        assert "refusing to use it" in err and "FABRICLENS_LAB_STATE" in err, err
        assert err.count("\n") == 1
        assert _ns_of("sd") == []
    finally:
        for netns in _ns_of("sd"):
            subprocess.run(["ip", "netns", "del", netns], check=False, timeout=10)


def test_down_all_with_nothing_up_removes_nothing() -> None:
    assert down_all().removed == []
