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


def _lab_doc(name: str) -> dict[str, object]:
    from fabriclens.lab.lab import Host, Lab

    hosts = [Host(f"h{i}", i, f"fl-{name}-h{i}", f"198.18.0.{i}", LinkSpec()) for i in (1, 2)]
    return Lab(name=name, subnet="198.18.0.0/24", impairment="netem", hosts=hosts).to_json()


def test_every_hint_after_lab_up_names_the_lab(capsys: pytest.CaptureFixture[str]) -> None:
    """`lab up --name x` used to print `fabriclens lab exec h1 -- ping ...`, which then failed:
    no lab named 'lab'. Every command it suggests must carry --name x."""
    from fabriclens.cli.lab_cmd import _show

    _show(_lab_doc("x"), json_out=False)
    out = capsys.readouterr().out
    hints = [line for line in out.splitlines() if "fabriclens lab " in line]
    assert len(hints) >= 2 and any("lab exec --name x h1 -- ping 198.18.0.2" in h for h in hints)
    assert all("--name x" in h for h in hints), hints


def test_hints_for_the_default_lab_need_no_name() -> None:
    from fabriclens.lab.spec import lab_command, lab_hints

    assert lab_command("lab", "down") == "fabriclens lab down"
    assert lab_command("t1", "up", "--hosts", "2") == "fabriclens lab up --name t1 --hosts 2"
    assert all("--name" not in h for h in lab_hints("lab", ["198.18.0.1", "198.18.0.2"]))
    assert all("--name t1" in h for h in lab_hints("t1", ["198.18.0.1"]))
