"""Shell completion as a user's shell drives it: the script it installs, and the answers to a
completion request (typer's bash protocol: _FABRICLENS_COMPLETE=complete_bash, COMP_WORDS,
COMP_CWORD)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# typer otherwise asks shellingham which shell runs the tests; naming the shell keeps it exact
FIXED_SHELL = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}


def _fabriclens(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fabriclens", *argv], capture_output=True,
                          text=True, timeout=60, env={**os.environ, **env})  # fmt: skip


def test_show_completion_prints_a_bash_script() -> None:
    proc = _fabriclens("--show-completion", "bash", **FIXED_SHELL)
    assert proc.returncode == 0, proc.stderr
    assert "_FABRICLENS_COMPLETE=complete_bash" in proc.stdout
    assert "complete -o default -F _fabriclens_completion fabriclens" in proc.stdout


def test_install_completion_writes_the_script(tmp_path: Path) -> None:
    proc = _fabriclens("--install-completion", "bash", HOME=str(tmp_path), **FIXED_SHELL)
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / ".bash_completions" / "fabriclens.sh"
    assert "_FABRICLENS_COMPLETE" in script.read_text()
    assert str(script) in (tmp_path / ".bashrc").read_text()


def _complete(words: str, cword: int) -> list[str]:
    proc = _fabriclens(
        _FABRICLENS_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(cword)
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_completion_offers_the_commands() -> None:
    offered = _complete("fabriclens ", 1)
    assert {"plan", "collective", "catalog", "doctor", "bench", "lab"} <= set(offered)
    assert _complete("fabriclens be", 1) == ["bench"]


def test_completion_offers_a_commands_options_and_subcommands() -> None:
    assert "--no-sequence-parallel" in _complete("fabriclens plan --no-s", 2)
    assert {"collective", "p2p", "import", "net", "serve"} <= set(_complete("fabriclens bench ", 2))
    assert _complete("fabriclens catalog n", 2) == ["networks"]
