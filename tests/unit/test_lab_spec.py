"""Lab inputs: link settings, names, hosts; and the root check (no root needed to test it)."""

from __future__ import annotations

import pytest

from fabriclens.cli.app import run
from fabriclens.errors import InputError
from fabriclens.lab.spec import LinkSpec, check_name, parse_link_override, with_settings


def test_link_override_parses() -> None:
    host, settings = parse_link_override("h2:bandwidth=100mbit,loss=2%", hosts=3)
    spec = with_settings(LinkSpec(), settings)
    assert host == "h2"
    assert spec.bandwidth_bits_per_s == 100e6 and spec.loss == pytest.approx(0.02)
    assert spec.impaired


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("h9:loss=1%", "no host 'h9'"),
        ("h1", "no settings"),
        ("h1:loss", "not key=value"),
        ("h1:speed=1g", "unknown link setting"),
        ("h1:loss=120%", "outside 0..100%"),
        ("h1:delay=-1ms", "as a duration"),
        ("h1:mtu=100", "outside 576..9000"),
        ("h1:delay=1ms,jitter=2ms", "exceeds delay"),
        ("h1:bandwidth=10bit", "too low"),
        ("h1:state=sideways", "up or down"),
    ],
)
def test_bad_link_settings(text: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        _host, settings = parse_link_override(text, hosts=2)
        with_settings(LinkSpec(), settings)
    assert message in info.value.message


@pytest.mark.parametrize("name", ["", "Lab", "a-b", "toolongname", "1lab", "a b"])
def test_bad_lab_names(name: str) -> None:
    with pytest.raises(InputError):
        check_name(name)


def test_without_root_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert run(["lab", "up", "--hosts", "2"]) == 2
    err = capsys.readouterr().err
    assert "needs root" in err and "sudo" in err and err.count("\n") == 1
