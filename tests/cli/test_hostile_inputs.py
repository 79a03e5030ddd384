"""Hostile input, generated from the command tree (benchmarks/hostile.py holds the cases): every
option of every command with 0, -1, huge, NaN, infinities, empty, text and unicode values, and
every command that reads a file with empty, binary, invalid UTF-8, /dev/zero, a FIFO, a directory,
deeply nested JSON, NaN/huge numbers, wrong-shape JSON and a log whose lines are built to make a
careless pattern backtrack (a regular expression that is not linear hangs it). Each case ends in exit 0/1 with valid
output or exit 2 with one stderr line, within its deadline; none exits 3.

Skipped (with the reason) in hostile.SKIPPED_COMMANDS / SKIPPED_OPTIONS / SKIPPED_VALUES: `lab`
(root, namespaces), options whose value would be fetched or looked up as a host, and those that
start servers. All ~2,000 cases run in about 15 s."""

from __future__ import annotations

import json
import os
import re
import resource
from pathlib import Path

import pytest

import hostile
from fabriclens.cli.app import run

EVERY = 1  # run one option case in EVERY (all of them: ~15 s); every file case runs


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[hostile.Case]]:
    tmp = tmp_path_factory.mktemp("hostile")
    files = hostile.make_files(tmp)
    options = hostile.option_cases(tmp)
    hostile.warm_imports()  # a cold import of torch is not a case's time
    return tmp, options[::EVERY] + hostile.file_cases(tmp, files)


def test_every_command_has_a_runnable_form_or_a_reason(tmp_path: Path) -> None:
    # option_cases raises for a command with neither a BASE form nor a SKIPPED reason
    covered = {" ".join(c.argv[:2]) for c in hostile.option_cases(tmp_path)}
    for command in (
        "plan",
        "logs",
        "fleet",
        "http",
        "watch",
        "doctor",
        "catalog",
        "transfer",
        "bench import",
        "bench serve",
        "bench net",
        "bench p2p",
        "bench collective",
    ):
        assert any(c == command or c.startswith(command + " ") for c in covered), command


def test_hostile_cases_never_exit_3_or_hang(
    cases: tuple[Path, list[hostile.Case]], monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp, todo = cases
    monkeypatch.chdir(tmp)  # --record text and --plot text write here
    assert len(todo) > 1500
    bad = []
    for case in todo:
        outcome = hostile.run_case(case, deadline_s=8.0)
        if outcome.problem:
            bad.append(f"{case.name}: {outcome.problem[:200]}")
    assert not bad, "\n".join(bad)


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and err.startswith("fabriclens: error: ")


@pytest.mark.parametrize("slot", sorted(hostile.FILE_SLOTS))
def test_a_fifo_is_refused_at_once_naming_it(
    slot: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = hostile.make_files(tmp_path)
    argv = [a.replace("{file}", str(files["fifo"])).replace("{tmp}", str(tmp_path))
            for a in hostile.FILE_SLOTS[slot]]  # fmt: skip
    outcome = hostile.run_case(hostile.Case(slot, argv), deadline_s=5.0)
    assert outcome.status == 2, outcome.problem
    assert "fifo.json is a FIFO (named pipe), not a regular file" in outcome.err
    assert _one_line(outcome.err)


def test_dev_zero_is_refused(tmp_path: Path) -> None:
    (tmp_path / "z.log").symlink_to("/dev/zero")
    outcome = hostile.run_case(hostile.Case("zero", ["logs", str(tmp_path / "z.log")]), 5.0)
    assert outcome.status == 2, outcome.problem
    assert "is a character device, not a regular file" in outcome.err and _one_line(outcome.err)


def test_a_log_on_stdin_is_read(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    text = (hostile.NCCL_LOG).read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text)))
    assert run(["logs", "-", "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["nccl"]["transport"] == "IB"


def test_max_input_caps_a_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "big.log"
    hostile.make_big_log(log, 300_000)
    assert run(["logs", str(log), "--max-input", "100kB"]) == 2
    err = capsys.readouterr().err
    assert "is over" in err and "--max-input" in err and _one_line(err)


@pytest.mark.parametrize(
    ("argv", "limit"),
    [(["logs"], "4 GB"), (["bench", "import"], "64 MB")],
)
def test_a_file_over_the_limit_is_refused_before_it_is_read(
    argv: list[str], limit: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 5 GB file (sparse: it takes no disk) is refused from its size, with one line naming
    the limit and the fix; reading it would take minutes."""
    big = tmp_path / "huge.log"
    with big.open("wb") as fh:
        fh.truncate(5 * 10**9)
    assert run([*argv, str(big)]) == 2
    err = capsys.readouterr().err
    assert f"is over {limit}" in err and "--max-input" in err and _one_line(err)


def test_a_20_mb_log_streams_in_bounded_memory(tmp_path: Path) -> None:
    """Memory of `logs` must not grow with the file: a 20 MB log (real corpus lines repeated)
    adds under 100 MB to the peak RSS (~47 MB: the capped lists of events and the JSON document;
    reading it whole added 166 MB, 8x the file)."""
    import subprocess
    import sys

    log = tmp_path / "big.log"
    hostile.make_big_log(log, 20 * 10**6)
    code = (
        "import resource, sys; from fabriclens.cli.app import run;"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss;"
        f"status = run(['logs', {str(log)!r}, '--json']);"
        "grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before;"
        "sys.stderr.write(f'GROWN {grown}\\n'); sys.exit(status)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env=env, check=False)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-500:]
    grown_kb = int(done.stderr.split("GROWN ")[1].split()[0])
    assert grown_kb < 100 * 1024, f"peak RSS grew {grown_kb / 1024:.0f} MB"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["watch", "--duration", "nan"], "nan is not a finite number"),
        (["watch", "--interval", "inf"], "inf is not a finite number"),
        (["lab", "exec", "h1", "--timeout", "nan", "--", "true"], "nan is not a finite number"),
        (["bench", "net", "127.0.0.1", "--timeout", "-1"], "-1 is negative"),
        (["bench", "net", "127.0.0.1", "--port", "70000"], "give a port from 0 to 65535"),
        (["bench", "p2p", "--spawn", "9" * 5000], "is too large"),
        (["plan", "llama-3.1-8b", "--nics-per-node", "-1"], "-1 is negative"),
        (["plan", "llama-3.1-8b", "--workload", "lora", "--lora-rank", "-1"], "-1 is negative"),
        (["collective", "all_reduce", "1GB", "--ranks", "16", "--nics-per-node", "0"],
         "0 NICs per node"),
        (["transfer", "1e308"], "over 1 ZB"),
        (["plan", "9" * 5000], "unknown model"),
        (["watch", "--sys-root", "9" * 5000], "is not a directory"),
        (["bench", "net", "127.0.0.1", "--streams", "9" * 5000], ""),
        (["bench", "serve", hostile.CLOSED, "--model", "m", "--concurrency", "9" * 5000],
         "--concurrency"),
    ],
)  # fmt: skip
def test_numbers_and_names_that_used_to_fail_inside(argv: list[str], needle: str) -> None:
    outcome = hostile.run_case(hostile.Case(" ".join(argv), argv), 5.0)  # watch nan ran for ever
    assert outcome.status == 2, outcome.problem
    assert needle in outcome.err and _one_line(outcome.err), outcome.err


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        # transformers writes NaN and Infinity as Python's json does: read, then refused where
        # the planner needs a number
        (
            '{"model_type": "llama", "hidden_size": NaN, "num_hidden_layers": 2, '
            '"num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 8}',
            "hidden_size = nan is not a whole number",
        ),
        (
            '{"model_type": "llama", "num_attention_heads": Infinity}',
            "num_attention_heads = inf is not a whole",
        ),
        ('{"hidden_size": 1e999}', "overflows a float"),
        ('{"hidden_size": 1' + "0" * 5000 + "}", "an integer of 5001 digits"),
    ],
)
def test_config_json_numbers_and_nesting(
    content: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "config.json"
    f.write_text(content)
    assert run(["plan", str(f)]) == 2
    err = capsys.readouterr().err
    assert needle in err and _one_line(err), err


def test_terminal_escapes_in_a_log_are_not_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "evil.log"
    evil = "\x1b]0;owned\x07\x1b[2J\x1b[31m"
    log.write_text(
        f"node1:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth{evil}0\n"
        f"node1:1:1 [0] NCCL INFO Bootstrap : Using eth0{evil}:10.0.0.1<0>\n"
        f"node1:1:1 [0] NCCL WARN bad {evil} thing\x9b31m\x07\n"
    )
    for form in ([], ["--markdown"]):
        run(["logs", str(log), *form])
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out, repr(out)
        assert "bad" in out and "thing" in out


def test_rich_markup_in_an_interface_name_prints_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An interface called ens[bold]0 (a legal name) was printed as "ens0", in bold."""
    import shutil

    root = tmp_path / "root"
    shutil.copytree(hostile.SYSFS, root, symlinks=True)
    (root / "sys/class/net/ens1f0").rename(root / "sys/class/net/ens[bold]0")
    assert run(["doctor", "--sys-root", str(root)]) in (0, 1)
    out = capsys.readouterr().out
    assert re.search(r"^\s+ens\[bold\]0\s+up\s", out, re.M), out  # the interface table's row


def test_peak_memory_of_the_suite_is_bounded() -> None:
    # every /dev/zero case ran under an address-space cap: none may have taken the process far
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 3 * 1024 * 1024
