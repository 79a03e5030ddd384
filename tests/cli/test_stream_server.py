"""The reference streaming server speaks the OpenAI API as third-party clients read it: the
official ``openai`` Python client and the AIPerf load generator parse its answers, the text and the
token counts it was told to send; and its command line is documented and refuses bad input in
one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from fabriclens.bench.stream_server import TOKEN, main, parser, spawn

TOKENS = 7  # what each request asks for (max_tokens), so the answer and its usage must say 7
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    proc, base = spawn(["--ttft", "0.01", "--itl", "0.001", "--tokens-per-chunk", "2",
                        "--model", "ref-model", "--lifetime", "300"])  # fmt: skip
    yield base
    proc.kill()
    proc.wait(timeout=5)


@pytest.fixture(scope="module")
def client(url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=10) as c:
        yield c


PROMPT = [{"role": "user", "content": "how fast is the network"}]
PROMPT_TOKENS = len(json.dumps(PROMPT).split())  # the server counts the words of the messages


def test_openai_chat_stream(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(
        model="m", messages=PROMPT, max_tokens=TOKENS, stream=True,
        stream_options={"include_usage": True}))  # fmt: skip
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert len({c.id for c in chunks}) == 1 and {c.model for c in chunks} == {"m"}
    with_choices = [c for c in chunks if c.choices]
    assert with_choices[0].choices[0].delta.role == "assistant"
    assert all(c.choices[0].index == 0 for c in with_choices)
    text = "".join(c.choices[0].delta.content or "" for c in with_choices)
    assert text == TOKEN * TOKENS
    assert [c.choices[0].finish_reason for c in with_choices][-1] == "length"
    assert all(c.choices[0].finish_reason is None for c in with_choices[:-1])
    usage = chunks[-1].usage
    assert not chunks[-1].choices and usage is not None
    assert usage.completion_tokens == TOKENS and usage.prompt_tokens == PROMPT_TOKENS
    assert usage.total_tokens == TOKENS + PROMPT_TOKENS


def test_openai_chat_whole(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(model="m", messages=PROMPT, max_tokens=TOKENS)
    assert answer.object == "chat.completion" and answer.model == "m"
    (choice,) = answer.choices
    assert choice.message.role == "assistant" and choice.message.content == TOKEN * TOKENS
    assert choice.finish_reason == "length"
    assert answer.usage is not None and answer.usage.completion_tokens == TOKENS


def test_openai_completions_stream_and_whole(client: openai.OpenAI) -> None:
    chunks = list(client.completions.create(model="m", prompt="three short words", max_tokens=TOKENS,
                                            stream=True, stream_options={"include_usage": True}))  # fmt: skip
    assert {c.object for c in chunks} == {"text_completion"}
    assert "".join(c.choices[0].text for c in chunks if c.choices) == TOKEN * TOKENS
    assert chunks[-2].choices[0].finish_reason == "length"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == TOKENS
    assert chunks[-1].usage.prompt_tokens == 3
    whole = client.completions.create(model="m", prompt="three short words", max_tokens=TOKENS)
    assert whole.object == "text_completion" and whole.choices[0].text == TOKEN * TOKENS
    assert whole.usage is not None and whole.usage.completion_tokens == TOKENS


def test_openai_stream_without_usage_and_server_default_length(client: openai.OpenAI) -> None:
    """Without include_usage no usage chunk; without max_tokens the server's --tokens (32), and
    the answer ends on "stop", not on a limit the client set."""
    chunks = list(client.chat.completions.create(model="m", messages=PROMPT, stream=True))
    assert all(c.usage is None and c.choices for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == TOKEN * 32
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_openai_models(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["ref-model"]


def test_unknown_route_is_an_openai_error(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError, match="no route"):
        client.embeddings.create(model="m", input="x")


def _aiperf() -> str | None:
    """AIPerf lives in its own environment (``make loadgen``): it pins typer and rich versions
    fabriclens cannot use, and brings about 1 GB of dependencies."""
    for candidate in (os.environ.get("AIPERF"), str(ROOT / ".venv-aiperf/bin/aiperf")):
        if candidate and Path(candidate).is_file():
            return candidate
    return shutil.which("aiperf")


# A word-level tokenizer whose only real word is the server's token, so AIPerf counts the
# tokens of the text it received exactly and never fetches a tokenizer from a hub.
TOKENIZER = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
             "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
             "post_processor": None, "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
             "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, TOKEN.strip(): 1, "the": 2},
                       "unk_token": "[UNK]"}}  # fmt: skip


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_aiperf_parses_the_stream(url: str, tmp_path: Path, endpoint: str) -> None:
    aiperf = _aiperf()
    if aiperf is None:
        if os.environ.get("CI") == "true":
            pytest.fail("aiperf is missing under CI: make loadgen installs it in .venv-aiperf")
        pytest.skip("aiperf is not installed (make loadgen puts it in .venv-aiperf, ~1 GB)")
    tok = tmp_path / "tokenizer"
    tok.mkdir()
    (tok / "tokenizer.json").write_text(json.dumps(TOKENIZER))
    (tok / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]"}))  # fmt: skip
    art = tmp_path / "artifacts"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    done = subprocess.run(
        [aiperf, "profile", "--model", "m", "--url", url, "--endpoint-type", endpoint,
         "--streaming", "--tokenizer", str(tok), "--request-count", "4", "--concurrency", "2",
         "--output-tokens-mean", str(TOKENS), "--output-tokens-stddev", "0",
         "--synthetic-input-tokens-mean", "8", "--artifact-dir", str(art), "--ui-type", "none"],
        capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = [json.loads(line) for line in (art / "profile_export.jsonl").read_text().splitlines()]
    assert len(records) == 4
    for r in records:
        metrics = r["metrics"]
        assert "error" not in r or r["error"] is None, r
        # tokens AIPerf counted in the text it received, and the count from the usage chunk
        assert metrics["output_sequence_length"]["value"] == TOKENS
        assert metrics["usage_completion_tokens"]["value"] == TOKENS
        assert metrics["time_to_first_token"]["value"] > 0


def test_help_describes_every_option_with_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert "OpenAI" in text and "Ollama" in text and "/v1/models" in text
    options = [a for a in parser()._actions if a.option_strings != ["-h", "--help"]]
    blocks = text.split("\n  -")[2:]  # the entries after -h/--help
    assert len(blocks) == len(options)
    for action, block in zip(options, blocks, strict=True):
        assert block.startswith(action.option_strings[0][1:]), block
        assert action.help and "(default:" in " ".join(block.split()), block


@pytest.mark.parametrize(
    ("args", "named"),
    [(["--port", "70000"], "--port: 70000 is out of range"), (["--port", "-1"], "--port: -1"),
     (["--ttft", "soon"], "--ttft: 'soon' is not a number"), (["--tokens", "0"], "--tokens: 0"),
     (["--lifetime", "nan"], "--lifetime: nan is out of range"), (["--lifetime=-1"], "--lifetime: -1"),
     (["--ttft", "inf"], "--ttft: inf"), (["--max-body", "-5"], "--max-body: -5")],
)  # fmt: skip
def test_bad_option_is_one_line_and_exit_2(args: list[str], named: str) -> None:
    lifetime = [] if any(a.startswith("--lifetime") for a in args) else ["--lifetime", "1"]
    done = subprocess.run([sys.executable, "-m", "fabriclens.bench.stream_server", *lifetime, *args],
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and named in done.stderr, done.stderr


def _exchange(base: str, request: bytes) -> bytes:
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(base)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(request)
        out = b""
        while chunk := conn.recv(65536):
            out += chunk
    return out


def test_request_body_cap_and_connection_limit() -> None:
    """A body over --max-body is refused with 413 before it is read (1 GiB used to be buffered:
    1.8 GB resident); connections over --max-connections are answered 503."""
    import socket
    from urllib.parse import urlsplit

    proc, base = spawn(["--max-body", "1000", "--max-connections", "2", "--lifetime", "60"])
    try:
        big = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n{}"
        assert _exchange(base, big).startswith(b"HTTP/1.1 413 ")
        body = json.dumps({"prompt": "hi", "max_tokens": 1}).encode()
        ok = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (
            len(body),
            body,
        )
        assert _exchange(base, ok).startswith(b"HTTP/1.1 200 ")
        parts = urlsplit(base)
        idle = [
            socket.create_connection((parts.hostname, parts.port), timeout=10) for _ in range(2)
        ]
        try:
            import time

            time.sleep(0.3)  # both are being served (waiting for their heads)
            assert _exchange(base, ok).startswith(b"HTTP/1.1 503 ")
        finally:
            for c in idle:
                c.close()
    finally:
        proc.kill()
        proc.wait(timeout=5)
