"""The phases of an HTTP request, in order, with their labels."""

PHASES = ("dns", "connect", "tls", "request", "wait", "first_token", "transfer")
PHASE_LABELS = {
    "dns": "DNS lookup",
    "connect": "TCP connect",
    "tls": "TLS handshake",
    "request": "request sent",
    "wait": "waiting for the first byte",
    "first_token": "first byte to first token",
    "transfer": "rest of the response",
}
