"""Secrets out of what the tool shows: URLs with their userinfo and secret-looking query
parameters masked, in documents and in error lines alike.

Pure (regular expressions only, no URL library): ``redact_url`` masks one URL, ``redact_text``
every URL inside a line of text. Masking never raises and never changes a URL that holds no
secret.
"""

from __future__ import annotations

import re

MASK = "***"
# query (and fragment) parameter names that carry secrets, compared lower-case with "-" as "_"
SECRET_NAMES = frozenset({
    "key", "api_key", "apikey", "token", "access_token", "refresh_token", "id_token", "secret",
    "client_secret", "password", "passwd", "pwd", "pass", "signature", "sig", "auth",
    "authorization", "credential", "credentials", "x_amz_signature", "x_amz_credential",
    "x_amz_security_token", "x_goog_signature", "x_goog_credential", "session_token",
})  # fmt: skip
# names ending in one of these are secrets too (github_token, private_key, db_password, ...)
SECRET_SUFFIXES = ("key", "token", "secret", "password", "passwd", "signature", "credential")
URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")


def secret_name(name: str) -> bool:
    """Whether a query parameter's name says that its value is a secret."""
    plain = _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), name).strip().lower()
    plain = plain.replace("-", "_")
    return plain in SECRET_NAMES or plain.endswith(SECRET_SUFFIXES)


def _params(text: str) -> str:
    out = []
    for item in re.split(r"([&;])", text):
        name, eq, value = item.partition("=")
        out.append(f"{name}={MASK}" if eq and value and secret_name(name) else item)
    return "".join(out)


def redact_url(url: str) -> str:
    """``url`` with its userinfo (``user:password@``) and the values of secret-looking query
    and fragment parameters replaced by ``***``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    netloc, tail = rest[:end], rest[end:]
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rpartition("@")[2]
    path, qmark, query = tail.partition("?")
    if qmark:
        query, hash_, fragment = query.partition("#")
        tail = path + "?" + _params(query) + (hash_ + _params(fragment) if hash_ else "")
    elif "#" in tail:
        path, hash_, fragment = tail.partition("#")
        tail = path + hash_ + _params(fragment)
    return f"{scheme}://{netloc}{tail}"


def redact_text(text: str) -> str:
    """Every URL in ``text`` redacted (error lines that quote what the user typed)."""
    return URL_RE.sub(lambda m: redact_url(m.group(0)), text)
