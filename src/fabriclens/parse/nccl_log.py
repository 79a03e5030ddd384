"""NCCL_DEBUG=INFO/WARN output -> what transport NCCL chose, on which devices, and what went wrong.

Lines look like `host:pid:tid [dev] NCCL INFO <message>`; real posts also hold the source
location before the level (`transport/net_ib.cc:1296 NCCL WARN`, `ib_plugin.c:1615`), NCCL 2.2's
lines without the `NCCL` word (`host:1:2 [0] INFO`, `include/socket.h:360 WARN`), mangled or
redacted hosts, any of the prefixes in ``_prefix``, and NCCL's own messages nested inside
PyTorch exceptions (`ncclRemoteError ... Last error: NET/IB : Got completion ...`), sometimes
all on one line. Every line is therefore searched for the messages ``log_patterns`` knows
(``log_detect`` says what one message shows) whether or not it has the NCCL layout. Unknown
lines are counted, never fatal. This module reads the lines, in batches, and keeps what they
say: the transport, devices, interfaces and variables, events, warnings and errors.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from typing import Any, NamedTuple, TypeVar

from fabriclens.parse._prefix import strip_prefixes, strip_prefixes_all, unlinked
from fabriclens.parse.log_detect import (
    NOTHING,
    Found,
    detect,
    int_or_none,
)
from fabriclens.parse.log_patterns import (
    CRASH_WORDS,
    ENV_RE,
    ERRNO_TEXTS,
    HEAD_FAST_RE,
    HEAD_RE,
    IB_DEV_RE,
    IB_USING_RE,
    IFACE_LIST_RE,
    IFACE_RE,
    LEVEL_RE,
    NCCL_RESULT_NAMES,
    NET_DEV_RE,
    NET_DIR_RE,
    OLD_HEAD_END_RE,
    OLD_HEAD_RE,
    OLD_LEVEL_RE,
    RANK_PREFIX_RE,
    STAGES,
    TRACE_CODE_RE,
    TRACE_RE,
    USING_IFACES_RE,
    VERSION_RE,
    VIA_RE,
    benign_warning,
)
from fabriclens.parse.p2p_matrix import SlowestPair
from fabriclens.parse.p2p_matrix import carry as p2p_carry
from fabriclens.parse.p2p_matrix import lead as p2p_lead
from fabriclens.parse.p2p_matrix import note as note_p2p

MAX_RECORDS = 10_000  # per list of events, warnings, errors: beyond it only counted
MAX_HOST_ADDRS = 4  # distinct socket addresses kept per host name
MAX_KEYS = 10_000  # distinct hosts, interfaces, variables, paths...: beyond it only counted
MAX_KEPT_CHARS = 500  # a line kept as evidence is cut here (NCCL's own lines are far shorter)
# lines up to this long are remembered once read (NCCL prints at most 1,024 bytes a line; a
# Python traceback's lines repeated by every rank run to several hundred); longer ones, rare and
# unlikely to repeat, are read each time, so the memory of lines stays a few MB (a memo holds
# MEMO_ENTRIES keys, each line's record at most MAX_KEPT_CHARS)
MEMO_MAX_CHARS = 2048


@dataclass(frozen=True)
class Event:
    """One thing that went wrong (or matters), with its details and the line it came from."""

    kind: str
    detail: dict[str, str | int | None]
    line: str
    host: str | None = None
    dev: int | None = None


@dataclass
class NcclLog:
    """What one or more NCCL logs say."""

    lines: int = 0
    transport: str | None = None  # IB, Socket, or a plugin name
    ib_devices: list[str] = field(default_factory=list)  # e.g. mlx5_0:1/IB, mlx5_1:1/RoCE
    oob: str | None = None
    socket_ifaces: list[str] = field(default_factory=list)
    # whether this log (part) started the list afresh: a `Using` line or a wrapped list's [0]
    # entry replaces it, the wrapped list's later entries add to it (see ``extend``)
    socket_ifaces_fresh: bool = False
    ifaces: dict[str, str] = field(default_factory=dict)  # interface -> address (Bootstrap/Socket)
    # host -> the distinct `interface:address` its bootstrap sockets start on (`Bootstrap :
    # Using` or NET/IB's `OOB`), in order, a few (the first is ``host_oob``'s)
    host_addrs: dict[str, list[str]] = field(default_factory=dict)
    ib_no_device: bool = False
    libibverbs_failed: bool = False
    env: dict[str, str] = field(default_factory=dict)
    version: str | None = None
    # every NCCL version the log shows (x.y.z, build suffix dropped) -> the first line saying it
    versions: dict[str, str] = field(default_factory=dict)
    gdr: bool | None = None
    via: Counter[str] = field(default_factory=Counter)
    net_devs: Counter[str] = field(default_factory=Counter)  # e.g. NET/Socket/1 -> channels
    # (direction, GDRDMA) of InfiniBand channel lines -> how many
    net_dirs: Counter[tuple[str, bool]] = field(default_factory=Counter)
    completion_errors: list[tuple[int, str]] = field(default_factory=list)  # (status, line)
    events: list[Event] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # lines that show a failure
    hosts: list[str] = field(default_factory=list)
    gid_table: dict[int, tuple[str, int]] = field(default_factory=dict)  # index -> (GID, RoCE v)
    evidence: dict[str, str] = field(default_factory=dict)  # fact -> the line it came from
    _by_kind: tuple[int, dict[str, list[Event]]] | None = field(
        default=None, repr=False, compare=False
    )
    unparsed_lines: int = 0
    found_other_lines: int = 0  # lines without NCCL's layout in which something was found
    dropped_records: int = 0  # events, warnings and errors past MAX_RECORDS (a huge log)
    # trace lines read before this log's first event: (host, stage); a part of a log read on
    # its own hands them to the event that ends the part before it (see ``extend``)
    orphan_traces: list[tuple[str | None, str]] = field(default_factory=list)
    # the last event read came past MAX_RECORDS and was not kept: the trace lines after it
    # name its stage, not the last kept event's
    events_cut: bool = False
    # pasted p2pBandwidthLatencyTest matrices: the slowest pairs by direction; the lines carried
    # into the next batch or part, and this log's first lines, which may continue the part before
    p2p_slowest: dict[str, SlowestPair] = field(default_factory=dict)
    p2p_carry: str = ""
    p2p_lead: str = ""
    p2p_lead_whole: bool = False  # the lead is all this log (part) holds
    p2p_read: bool = False  # a batch was read
    seen_hosts: set[str] = field(default_factory=set, repr=False)  # ``hosts``, for lookups

    def room(self, mapping: Collection[Any], key: object) -> bool:
        """Whether ``key`` is in ``mapping`` or may be added (below MAX_KEYS distinct keys: a
        hostile log cannot grow memory without end); a refused key is counted as dropped."""
        if key in mapping or len(mapping) < MAX_KEYS:
            return True
        self.dropped_records += 1
        return False

    def note_oob(self, host: str, oob: str) -> None:
        """``host`` starts its sockets on ``oob`` (`eth0:10.0.0.1`): the first few distinct are
        kept in order (``host_oob``, ``host_clash``)."""
        if not self.room(self.host_addrs, host):
            return
        seen = self.host_addrs.setdefault(host, [])
        if oob not in seen and len(seen) < MAX_HOST_ADDRS:
            seen.append(oob)

    @property
    def host_oob(self) -> dict[str, str]:
        """host -> the interface its bootstrap sockets use: the first seen."""
        return {host: addrs[0] for host, addrs in self.host_addrs.items() if addrs}

    @property
    def host_clash(self) -> dict[str, str]:
        """Hosts whose lines give one interface two addresses (`eth1:10.0.0.1 and
        eth1:10.0.0.2`): two machines that share a host name."""
        out: dict[str, str] = {}
        for host, (first, *rest) in ((h, a) for h, a in self.host_addrs.items() if a):
            name = first.partition(":")[0]  # the rest are distinct: the same name, another address
            other = next((o for o in rest if o.partition(":")[0] == name), None)
            if other is not None:
                out[host] = f"{first} and {other}"
        return out

    def add_host(self, host: str) -> None:
        """Remember a host once, in the order first seen."""
        if host not in self.seen_hosts and self.room(self.seen_hosts, host):
            self.seen_hosts.add(host)
            self.hosts.append(host)

    def keep(self, records: list[Any], item: Any) -> None:
        """Append to one of the lists above, up to MAX_RECORDS: memory stays bounded."""
        if len(records) < MAX_RECORDS:
            records.append(item)
        else:
            self.dropped_records += 1

    def _extend_p2p(self, later: NcclLog) -> None:
        """A matrix cut between the two parts is read from this one's carried lines and the
        later one's first; then the later part's slowest pairs and its carried lines."""
        if not later.p2p_read:
            return
        carried = later.p2p_carry
        if self.p2p_carry and later.p2p_lead:
            joined = f"{self.p2p_carry}\n{later.p2p_lead}"
            note_p2p(self.p2p_slowest, joined)
            if later.p2p_lead_whole:  # the later part was all rows: the matrix may go on
                carried = p2p_carry(joined)
        for direction, pair in later.p2p_slowest.items():
            mine = self.p2p_slowest.get(direction, SlowestPair())
            self.p2p_slowest[direction] = mine.merged(pair)
        self.p2p_carry = carried
        if not self.p2p_read:
            self.p2p_read, self.p2p_lead = True, later.p2p_lead
            self.p2p_lead_whole = later.p2p_lead_whole

    def extend(self, later: NcclLog) -> None:
        """Add what the next part of the same log says (read on its own, e.g. by another
        process): the result is what reading both parts in one pass gives."""
        had_events = bool(self.events)
        for host, stage in later.orphan_traces:
            if self.events:
                if not self.events_cut:
                    _add_stage(self.events[-1], host, stage)
            elif len(self.orphan_traces) < MAX_RECORDS:
                self.orphan_traces.append((host, stage))
        self._extend_p2p(later)
        self.lines += later.lines
        self.unparsed_lines += later.unparsed_lines
        self.found_other_lines += later.found_other_lines
        self.dropped_records += later.dropped_records
        if later.events:  # whether the last event read was kept
            room = max(0, MAX_RECORDS - len(self.events))
            self.events_cut = later.events_cut or len(later.events) > room
        for name in ("completion_errors", "events", "warnings", "errors"):
            mine: list[Any] = getattr(self, name)
            theirs: list[Any] = getattr(later, name)
            room = max(0, MAX_RECORDS - len(mine))
            mine.extend(theirs[:room])
            self.dropped_records += max(0, len(theirs) - room)
        # facts the later lines overwrite
        if later.transport is not None:
            self.transport = later.transport
        if later.ib_devices:
            self.ib_devices, self.oob = later.ib_devices, later.oob
        if later.socket_ifaces_fresh:
            self.socket_ifaces = later.socket_ifaces
            self.socket_ifaces_fresh = True
        else:
            room = max(0, MAX_KEYS - len(self.socket_ifaces))
            self.socket_ifaces.extend(later.socket_ifaces[:room])
        for key in ("transport", "ib_devices", "ib_no_device"):
            if key in later.evidence:
                self.evidence[key] = later.evidence[key]
        pairs: tuple[tuple[dict[Any, Any], dict[Any, Any]], ...] = (
            (self.env, later.env), (self.gid_table, later.gid_table))  # fmt: skip
        for mapping, their_map in pairs:
            for key, value in their_map.items():
                if self.room(mapping, key):
                    mapping[key] = value
        # facts the first line that says them decides
        self.version = self.version if self.version is not None else later.version
        for number, line in later.versions.items():
            if self.room(self.versions, number):
                self.versions.setdefault(number, line)
        for key, line in later.evidence.items():
            if key == "bootstrap_trace" and had_events:
                continue  # its traces went to this part's last event, as one pass gives
            if self.room(self.evidence, key):
                self.evidence.setdefault(key, line)
        for name, addr in later.ifaces.items():
            if self.room(self.ifaces, name):
                self.ifaces.setdefault(name, addr)
        for host, addrs in later.host_addrs.items():
            for oob in addrs:
                self.note_oob(host, oob)
        for host in later.hosts:
            self.add_host(host)
        # flags, counts
        self.ib_no_device = self.ib_no_device or later.ib_no_device
        self.libibverbs_failed = self.libibverbs_failed or later.libibverbs_failed
        self.net_dirs.update(later.net_dirs)  # four keys at most
        for counter, their_counts in ((self.via, later.via), (self.net_devs, later.net_devs)):
            for key, n in their_counts.items():
                if self.room(counter, key):
                    counter[key] += n
        if later.gdr is True or (later.gdr is False and self.gdr is None):
            self.gdr = later.gdr

    def net_transport(self) -> str | None:
        """The network transport: the `Using network` line's, else the one most channels name
        (`via NET/AWS Libfabric/1/GDRDMA`: a log that starts after the `Using network` line),
        else the network module that says it connected."""
        if self.transport is not None:
            return self.transport
        nets = [via for via, _ in self.via.most_common() if via.startswith("NET/")]
        if nets:
            return nets[0][4:]
        # else the module that says it connected (`NET/FastSocket : Connected ...`)
        modules = Counter(str(e.detail["module"]) for e in self.of("net_connected"))
        return modules.most_common(1)[0][0] if modules else None

    def of(self, kind: str) -> list[Event]:
        """The events of one kind, in log order."""
        return list(self.by_kind().get(kind, ()))

    def by_kind(self) -> dict[str, list[Event]]:
        """The events grouped by kind, each group in log order: built once for the rules, which
        ask for one kind after another (a large log keeps up to MAX_RECORDS events), and again
        only if events were added since."""
        if self._by_kind is None or self._by_kind[0] != len(self.events):
            groups: dict[str, list[Event]] = {}
            for e in self.events:
                groups.setdefault(e.kind, []).append(e)
            self._by_kind = (len(self.events), groups)
        return self._by_kind[1]


def batched(items: Iterable[str], size: int) -> Iterator[list[str]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def release(version: str) -> str:
    """An NCCL version's release, x.y.z: `2.18.3+cuda12.2` and PyTorch's `2.18.3` are one."""
    m = re.match(r"\d+\.\d+\.\d+", version)
    return m.group(0) if m else version


def is_link_local(address: str) -> bool:
    """An IPv6 fe80::/10 or IPv4 169.254/16 address (not routed between hosts)."""
    a = address.lower().split("%")[0]
    return a.startswith(("fe8", "fe9", "fea", "feb", "169.254."))


class Line(NamedTuple):
    """What one line says on its own, before the lines around it are taken into account. A
    large log repeats its lines (every rank, every step), so each distinct line is read once
    (``_read`` is memoised, after the prefixes are stripped) and only ``add_nccl_line``'s
    bookkeeping runs per line."""

    line: str  # without prefixes, cut at MAX_KEPT_CHARS (what the records keep)
    rank: int | None  # from a `[rank3]:` prefix
    version: str | None = None
    layout: bool = False  # has the `host:pid:tid [dev] NCCL LEVEL` layout (else searched only)
    msg: str = ""
    host: str | None = None
    dev: int | None = None
    warning: bool = False  # a WARN or ERROR line
    error: bool = False  # a line that shows a failure
    trace_stage: str | None = None  # `stage.cc:123 -> 2` while NCCL unwinds an error
    transport: str | None = None
    ib_devices: tuple[str, ...] | None = None
    oob: str | None = None
    ib_no_device: bool = False
    env: tuple[str, str] | None = None
    gdr: bool | None = None  # True: enabled; False: disabled (unless enabled elsewhere)
    ifaces: tuple[tuple[str, str], ...] = ()
    ifaces_kind: str | None = None  # socket_ifaces or bootstrap
    libibverbs_failed: bool = False
    via: tuple[str, ...] = ()
    net_devs: tuple[str, ...] = ()
    net_dir: tuple[str, bool] | None = None  # an IB channel's direction, and whether GDRDMA
    found: Found = NOTHING
    unparsed: bool = False
    plain: bool = False  # the layout and nothing else a reader keeps: counted, its host noted
    host_span: tuple[int, int] = (0, 0)  # where ``host`` stands in the line (before cutting)
    # at most a warning, an error, what ``found`` holds and (a line without the layout) being
    # unparsed, beyond the layout if it has one: most lines a reader keeps. Added without a
    # look at the other fields, all at their defaults
    simple: bool = False


def _split(line: str) -> tuple[re.Match[str], int, str] | None:
    """The layout of an NCCL line: (the head's match, where the message starts, the level).
    The level word is found first and only the text before it is matched against the head:
    a regular expression searching for an optional head in front of it would try every
    position of the line."""
    first = line.find("NCCL")
    if first >= 0:
        if line.startswith("NCCL INFO ", first):  # nearly every line: no expression needed
            at, level = first + len("NCCL INFO "), "INFO"
        elif (lv := LEVEL_RE.search(line, first)) is not None:
            first, at, level = lv.start(), lv.end(), lv.group(1)
        else:
            first = -1
    if first >= 0:
        # `host:pid:tid [dev] ` exactly, as NCCL prints it, else the general head
        head = HEAD_FAST_RE.fullmatch(line, 0, first) or HEAD_RE.search(line, 0, first)
        if head is not None:
            return head, at, level
    if "]" in line and ("INFO" in line or "WARN" in line or "TRACE" in line or "ERROR" in line):
        for lv in OLD_LEVEL_RE.finditer(line):
            if OLD_HEAD_END_RE.search(line, 0, lv.start()) is None:
                continue
            head = OLD_HEAD_RE.search(line, 0, lv.start())
            if head is not None:
                return head, lv.end(), lv.group(1)
    return None


# the fields a simple line (``Line.simple``) may have beyond its layout
_FLAGS = ("warning", "error", "trace_stage")


@lru_cache(maxsize=4096)
def _read(line: str, rank: int | None) -> Line:
    """One line of NCCL debug output, its prefixes gone, read on its own (memoised: a large
    log repeats its lines)."""
    version = None
    if "version" in line and (v := VERSION_RE.search(line)) is not None:
        version = v.group(1)
    split = _split(line)
    if split is None and "<0>" in line and IFACE_LIST_RE.fullmatch(line.strip()):
        # the entries of a wrapped `NET/Socket : Using` list: the sockets' interfaces
        return Line(_cut(line), rank, version, ifaces=tuple(IFACE_RE.findall(line)),
                    ifaces_kind="socket_ifaces")  # fmt: skip
    if split is None:
        lower = line.lower()
        error = any(word in lower for word in CRASH_WORDS) or (
            "ncclRemoteError" in line or "ncclSystemError" in line or "ncclInternalError" in line
             or "Last error" in line
        )  # fmt: skip
        found = detect(line, line, rank, outside=True)
        net_dir = _net_dir(line)  # a channel line pasted without NCCL's layout
        libibverbs = "Failed to open libibverbs" in line
        return Line(
            _cut(line), rank, version, error=error, found=found, libibverbs_failed=libibverbs,
            net_dir=net_dir,
            unparsed=not found.events and "NCCL version" not in line and net_dir is None,
            simple=version is None and net_dir is None and not libibverbs,
        )  # fmt: skip
    head, msg_at, level = split
    msg = line[msg_at:].strip().strip("_`")
    if len(msg) > NCCL_LINE_BYTES and msg.find("NCCL", NCCL_LINE_BYTES) < 0:
        msg = msg[:NCCL_LINE_BYTES]  # what follows is not NCCL's (nor another NCCL line's)
    fields: dict[str, Any] = {}
    if " -> " in msg and (tr := TRACE_RE.match(msg)) is not None:
        fields["trace_stage"] = tr.group(1)
    if level in ("WARN", "ERROR"):
        fields["warning"] = True
        fields["error"] = not benign_warning(msg)
    if msg.startswith("Using network") or msg.startswith("Using internal Network"):
        # the rest of the line: a plugin's name may be two words (`AWS Libfabric`)
        name = msg.removeprefix("Using network").removeprefix("Using internal Network")
        fields["transport"] = name.strip() or None
    elif "NET/IB" in msg and (ib := IB_USING_RE.search(msg)) is not None:
        fields["ib_devices"] = tuple(IB_DEV_RE.findall(ib.group("devs")))
        fields["oob"] = ib.group("oob")
    elif "NET/IB" in msg and "No device found" in msg:
        fields["ib_no_device"] = True
    elif msg.startswith("NCCL_") and (env := ENV_RE.match(msg)) is not None:
        fields["env"] = (env.group(1), env.group(2).strip())
    elif "GPU Direct RDMA Enabled" in msg or "GDRDMA" in msg:
        fields["gdr"] = True
    elif "GPU Direct RDMA Disabled" in msg and "NET/Socket" not in msg:
        fields["gdr"] = False
    if "Using" in msg and (using := USING_IFACES_RE.search(msg)) is not None:
        found_ifaces = tuple(IFACE_RE.findall(using.group(1)))
        fields["ifaces"] = found_ifaces
        if found_ifaces:
            fields["ifaces_kind"] = "socket_ifaces" if msg.startswith("NET/Socket") else "bootstrap"
    if "via" in msg:
        via = []
        for found_via in VIA_RE.findall(msg):
            parts = found_via.strip().split("/")
            via.append(parts[0] + ("/" + parts[1] if len(parts) > 1 else ""))
        fields["via"] = tuple(via)
        if via and "GDRDMA" in msg:
            fields["gdr"] = True
        fields["net_devs"] = tuple(NET_DEV_RE.findall(msg))
        fields["net_dir"] = _net_dir(msg)
    found = detect(msg, line, rank)
    libibverbs = "Failed to open libibverbs" in msg
    simple = (version is None and not libibverbs and "gdr" not in fields
              and not any(v for k, v in fields.items() if k not in _FLAGS))  # fmt: skip
    plain = simple and found is NOTHING and not any(fields.values())
    return Line(
        _cut(line), rank, version, layout=True, msg=_cut(msg), host=head.group("host") or None,
        dev=int_or_none(head.group("dev")), libibverbs_failed=libibverbs, found=found, plain=plain,
        host_span=head.span("host") if head.group("host") else (0, 0), simple=simple, **fields,
    )  # fmt: skip


def _cut(text: str) -> str:
    """``text`` as a record keeps it: at most MAX_KEPT_CHARS, marked where cut."""
    return text if len(text) <= MAX_KEPT_CHARS else text[: MAX_KEPT_CHARS - 1] + "…"


def parse_nccl_log(lines: str | Iterable[str], log: NcclLog | None = None) -> NcclLog:
    """Parse NCCL debug output: its text, or its lines one by one, as a file streams them
    (adds to ``log`` when given)."""
    out = log or NcclLog()
    for batch in batched(lines.splitlines() if isinstance(lines, str) else lines, BATCH_LINES):
        add_nccl_lines(out, *unlinked(batch, "\n".join(batch)))
    return out


# Words without which a line says nothing beyond its layout: each gate of ``_read`` and
# ``detect`` holds one (tests/parse/test_logs.py checks their source against this list). The
# lower-cased ones are looked for in the lower-cased text.
# NCCL prints each line through a 1,024-byte buffer (src/debug.cc, ncclDebugLog: `char
# buffer[1024]`; RCCL likewise): text past twice that on a line with NCCL's layout, and no
# other NCCL line joined to it, was not printed by NCCL, and its messages are not searched
NCCL_LINE_BYTES = 2048
SCREEN_WORDS = (
    "version", " -> ", "WARN", "Using", "NET/", "NCCL_", "GPU Direct", "GDRDMA", "via", "ncclTopo",
    "libibverbs", "completion", "ibv_modify_qp", "CUDA IPC", "Cuda failure", "family",
    "real path", "maxSharedMem", "Proxy Call", "Failed to execute", "GID", "Could not get speed",
    "PCI device", "Test NCCL failure", "NVLS", "socketFinalizeAccept", "Message truncated",
    "mismatch", "fallocate", "shared memory", "Attribute", "Socket creation failed", "ibv_reg_", "ibv_create_",
    "Duplicate GPU", "XML Import", "cannot be captured in a graph", "<0>", "loop back",
    "failed to extend", "Init COMPLETE", "Connected all trees", "async event", "nvmlDevice",
    "prov_err", "Address already in use", "Process name:", "exited on signal", "exitcode",
    "Got async", "fi_getinfo", "SHARP", "not yet initialized", "watchdog thread terminated",
    "mpirun", "# nThread", " uses device ", "from kernel command line", "resolve hostname", "getaddrinfo",
    "NVRM: Xid", "us error", "use_libuv", "client socket has failed to connect", "from library",
    "driver version is insufficient", "mpiSize", "TL_", "Unable to open device",
    "contiguousRanksPerHost", "available for function", "shm_open", "shareable host buffer",
    "too many XML nodes", "was set to", "libnvidia-ml", "CUDA failure", "DOCA failure",
    "remote rails", "find reverse path", "CollNet", "optimal provider", "already been destroyed",
    "message truncated", "Mismatched collective", "Plugin Path", "/dev/shm has only", "invalid root",
    "Couldn't open AV", "Couldn't open CQ", "initialization failed", "Initializing aws-ofi-nccl", "Failed to process command", "rgroup and vni", "nexpected", "hipIpc",
    "ibrc.cpp", "ibgda.cpp", "not enumerated as an mlx5 device", "Rendezvous", "C10d store",
    "c10d_rendezvous_backend", "msccl_parser",
    # _detect_outside's (lines without NCCL's layout: in a batch without a screen word they are
    # only counted, like the layout's plain lines)
    "Could not load", "Data unpack", "Failure to post", "Mismatched address format", "OFI MTL",
    "Test HIP failure", "UCX", "Unable to find address", "can fulfill resource request",
    "cuMemCreate", "custom_all_reduce", "bootstrapping phase", "ncclCuMemHostEnable",
    "ncclLocalOpAppend", "orted", "slot ids are used", "not enough slots", "cannot create cq",
    "managing GPU", "considered dead", "monitoredBarrier", "GTL library is not linked",
    "NIC_POLICY", "Event Queue overflow", "NBC_Progress",
    "ompi_coll_libnbc_progress", "operation counts", "gds_ds12",
    "switch/hpe_slingshot", "busy or unavailable", "Failed to initialize NVML: Unknown Error",
    "No PMIx server was reachable", "due to shape mismatches", "ucs_handle_error",
    "driver rpc error: timed out", "XidCriticalError", "In Progress",
    "JAX distributed service detected fatal errors", "/job:", "remote target coordination_service",
    "incarnation id", "Can't pickle", "OMPI was not built with SLURM", "UCX worker address",
    "resolve UCX endpoint", "DNS resolution failed", "Failed to connect to", "dial tcp",
    "ConnectionPool(", "Cannot connect to host", "[Errno ", "WinError 10049", "not valid in its context",
    "Proxy request sent", "Bad Gateway", "istening on", "Uvicorn running on", "upstream timed out",
    "504 Gateway Time", "respond in time", "complete message body", "payload is not completed",
    "outstanding read data", "TimeoutError", "ReadTimeout", "TimeoutException", "Starting RPC server on",
    "Failed to create server socket", "SocketException", "failed ingress/egress policy", "known peers: 0", "No new peers discovered",
    "invoked oom-killer", "Failed to resolve '", "failed: EOF", "max retries exceeded: EOF",
    "HfHubHTTPError: 5", "couldn't connect to 'https://huggingface.co'", "_PROXY=", "_proxy=", "ray start",
    "Failed to connect to GCS", "connection to redis", "missed too many heartbeats", "attempt ", "Call to bind failed", "--no-mmap", "process has terminated",
    "mlock", "free_swap=", "memory.required.full=", "too large for system", "more system memory",
    "insufficient memory", "unable to allocate CPU buffer", "host not found: ", "(gai error: -", "cannot create directory",
    "failed to create user namespace", "pyxis", "ib_umad", "NV_WARN_NOTHING_TO_DO",
    "Number of GPUs detected", "HCCL_SOCKET_IFNAME", 'for config "tls" is invalid',
    "CMD information", "device ip family", "load library failed", "OFI addrinfo() failed",
    "Too many open files", "EI0019", "specific port[", "TopoExchangeAgent",
    "Failed to connect agent", "EI0011", "EI0012", "fftsplus sdma error", "EI0013", "ROCE CQE ERROR",
    "is not a valid real path", "Task run failed, base information", "(EI", "(EJ",
    "Transport endpoint is not connected", "errno=113", "wait socket establish timeout",
    "CONNECT TIMEOUT DETECT RESULT", "Heartbeat Lost", "in the ranktable is inconsistent",
    "logicSuperPodId[", "Failed to start nvml with error", 'Missing "iommu=pt"',
    "OFI fi_getinfo() failed", "cuda_set_sync_memops", "unable to set memops for cuda ptr",
    # ("exceeded" alone folds to 0x000000, the shape of every hex address: COLL traces would
    # no longer be screened out by their folded shapes)
    "' exceeded", "allowance_exceeded", "retry count", "ROCm-capable", "initialize ROCm", " symbol ",
    "allocate memory", "IB devices list", "interface found", "driver interface version",
    "file creation failed", "unsupported config version", "undefined symbol: nccl", "nvidia-nccl-cu",
    "(Down)", "client socket has timed out", "Exception", "rendezvous endpoint",
    "master_addr=", "master-addr=", "MASTER_ADDR expected", "did not receive grad",
    "Expected to have finished reduction", "Could not find:", "tuner plugin can not be loaded",
    "NET/OFI Adding NCCL_", "unknown result code", "Invalid __", "at nccl", "checked in",
    "enable P2P", "peer query failed", "mismatch in rank count", "Abort COMPLETE",
    "Unable to create ah", "ibgda", "Invalid rank requested", "retrieving ncclUniqueId",
    "mlx5dv_devx_obj_create", "nvmlDeviceGetP2PStatus", "Failed to find nvml device", " Pid ",
    "couldn't stat '/sys/class/infiniband/",
    "memory capacity is unbalanced", "ncclDevCommCreate failed", "CUDA out of memory",
    "same CUDA device for multiple distinct roles", "Not all ranks joining collective", "missing ranks:",
    "Horovod", "waiting for remainder of ranks", "Wait timeout for key",
    " : Connected", " : Accepted", "incoming CPU", "Maximum retry reached",
    "Caught signal", "==== backtrace", "*** ", "(core dumped)", "()",
    "Culprit rank", "Heartbeat monitor timed out", "watchdog got stuck", "Barrier timed out", "communicator data from",
    "No suitable space found", "before the previous operation returned", "PasswordAuthentication=no",
    "not reachable via ssh", "ssh: connect to host",
    "Init START",
    "didn't join collective", "didn't finish collective", "are the lagging ranks",
    "collective: ", "IP: ", "duplicate mac found", "In use by another client", "MigConfig",
    "violates PodSecurity", "match socket boundaries", "returned error code: 401",
    "connectFullMesh failed", "Could not find NET with id", "Multiple Ranks are using", "Mismatched NCCL", "OOB_NET_IFNAME", "kernel ABI", "Unable to find a match", "--releasever=",
    "Driver/library version mismatch", "Upgrade: ", "Killed process", "envoy ",
    "Some NCCL operations have failed or timed out", "NIXL_ERR_", "VRAM memory is detected as host",
    "mlx5dv_devx_uar", "ibgda_alloc_and_map_qp_uar failed", "GID is NULL", "GLOBAL_RANK: ",
    "Multi-processing is handled by Slurm", "without SLURM handling the processes",
    "insert remote address into address vector", "dma-buf attach failed", "amdgpu is not supported",
    "no compatible GPUs were discovered", "nvidia driver is too old", "cuCtxCreate_v3 failed",
    "layers to GPU", "layers.offload=", "--ctx-size", "cudaMalloc failed",
    "failed to allocate compute buffers", "type=iGPU", "n_ctx", "failed to allocate buffer for kv cache",
    "Bfloat16 is only supported", "CUDA runtime error in", "Serialized Engine Version", "max_outlen(",
    "doesn't have NCCL built in", "CUDA_ERROR_NOT_FOUND", "nvml vram init failure", "as WSL is detected",
    "Cannot retrieve Static function", "No available memory for the cache blocks",
    "stored in KV cache", "# GPU blocks", "max_seq_len=", "Maximum concurrency for", "capture_end()",
    "torch.cuda.graph(", *ERRNO_TEXTS,
)  # fmt: skip
# (and the crash words that mark another program's line as an error, those "error" misses)
SCREEN_LOWER = ("error", "invalid", "connection", "broken pipe", "unreachable", "no route",
                *(w for w in CRASH_WORDS if "error" not in w))  # fmt: skip
BATCH_LINES = 256
# A batch whose distinct line shapes hold none of the screen words holds none of them: the
# shapes fold case and the characters of numbers (digits and a-f, as in hex addresses) to one,
# so that a COLL trace's 256 lines come to a few shapes, searched in a few microseconds
_FOLD = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789", "000000ghijklmnopqrstuvwxyz" + "0" * 16
)
_SCREEN_FOLDED = tuple({w.translate(_FOLD) for w in SCREEN_WORDS + SCREEN_LOWER})


def _screened(text: str) -> bool:
    """Whether ``text`` (a batch's lines) holds a screen word."""
    if "WARN" in text or "NCCL_" in text:  # the commonest, where there are any
        return True
    if text.isascii():  # ASCII folds character by character (so does its lower case)
        shapes = "\n".join(set(text.translate(_FOLD).split("\n")))
        if not any(w in shapes for w in _SCREEN_FOLDED):
            return False
    if any(w in text for w in SCREEN_WORDS):
        return True
    lower = text.lower()  # once for the batch, not once per word
    return any(w in lower for w in SCREEN_LOWER)


def _note_p2p(out: NcclLog, text: str) -> None:
    """A batch's part in reading pasted p2pBandwidthLatencyTest matrices (parse/p2p_matrix.py):
    its first lines kept where it is a log's first batch (they may continue a matrix an earlier
    part cut), its matrices, with the lines carried from the batch before, folded into the
    slowest pairs, and the lines to carry into the next."""
    if not out.p2p_read or out.p2p_lead_whole:  # all read so far may continue a matrix
        out.p2p_lead, out.p2p_lead_whole = p2p_lead(
            f"{out.p2p_lead}\n{text}" if out.p2p_read else text
        )
        out.p2p_read = True
    if out.p2p_carry or "P2P=" in text:  # CUDA's p2pBandwidthLatencyTest pasted into the log
        joined = f"{out.p2p_carry}\n{text}" if out.p2p_carry else text
        note_p2p(out.p2p_slowest, joined)
        out.p2p_carry = p2p_carry(joined)


def add_nccl_lines(out: NcclLog, lines: Sequence[str], text: str | None = None) -> None:
    """Add a batch of lines to ``out``. When none of them holds a screen word (a COLL trace:
    `AllReduce: opCount ... count ... datatype ...`, a training log's iteration lines), each
    line is only matched against the layout, counted and its host noted; otherwise each is added
    as ``add_nccl_line`` does. The batch's prefixes are stripped in one pass. ``text``: the
    lines joined by newlines, where the caller has it."""
    text = "\n".join(lines) if text is None else text
    _note_p2p(out, text)
    if _screened(text):
        # a line seen before as it is (every rank, every step) is known at once; the others
        # lose their prefixes in one pass and are looked up without them, else read
        raw_lines, misses = _RAW_LINES, _RAW_MISSES
        if not misses.looking():  # stamped lines: none comes back as it was
            misses.note(False)
            _add_known(out, _known_all(lines, _stripped_all(lines)))
            return
        known = [raw_lines.get(raw) for raw in lines]
        if None in known:
            fresh = [i for i, k in enumerate(known) if k is None]
            raws = [lines[i] for i in fresh]
            found = _known_all(raws, _stripped_all(raws))
            misses.note(len(fresh) < len(lines))
            for raw, k in zip(raws, found, strict=True):
                if len(raw) <= MEMO_MAX_CHARS:
                    _remember(raw_lines, raw, k)
            for i, k in zip(fresh, found, strict=True):
                known[i] = k
        else:
            misses.note(True)
        _add_known(out, known)  # type: ignore[arg-type]
        return
    for line in _stripped_all(lines):
        split = _split(line) if line else None
        if split is None:
            # another program's line holding no screen word says nothing a reader keeps
            out.unparsed_lines += bool(line)
            continue
        out.lines += 1
        if (host := split[0].group("host")) and host not in out.seen_hosts:
            out.add_host(host)


# Lines that differ only in their digits (`opCount 1a2b`, `count 1048576`, addresses, ranks)
# read alike: every pattern here treats the ten digits as one class, but for the `P2P` in a
# channel's transport, NCCL 2.31's `contiguousRanksPerHost 2147483647` (INT_MAX: ranks uneven
# over the nodes, where a number is normal) and the `0x` of a hexadecimal number, which the
# patterns of addresses, communicators and frames spell out: a line holding either of the first
# two, or another digit before an `x` and a hex digit (it would fold to `0x`), is never read by
# its shape.
_DIGIT_SENSITIVE_RE = re.compile(r"2[Pp]|contiguousRanksPerHost|[1-9]x[0-9a-fA-F]")
_SAME_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_PLAIN_SHAPES: dict[bytes, tuple[int, int]] = {}  # shape of a plain line -> its host's span
# What each recent raw line was: its Line, or the host of a plain line ("" for none)
_RAW_LINES: dict[str, Line | str] = {}
# The same for lines without their prefixes, keyed by that text and the rank prefix it had: a
# log whose every line carries its own timestamp repeats these
_LINES: dict[str, Line | str] = {}
MEMO_ENTRIES = 8192  # lines and shapes remembered, each (then every other one forgotten)


class _Misses:
    """Whether a batch's raw lines are worth looking up (and its new ones remembering) as they
    are. A log whose every line carries its own time stamp never repeats a raw line: after
    PROBE_AFTER batches in a row without one seen before, only every PROBE_EVERY-th batch is
    looked up and remembered, so that lines which do come back are found again within a few
    batches and looking up resumes. What a line is does not depend on it, only the cost of
    reading the log."""

    PROBE_AFTER = 4
    PROBE_EVERY = 8

    def __init__(self) -> None:
        self.batches = 0  # batches in a row without a raw line seen before (or not looked up)

    def looking(self) -> bool:
        """Whether the next batch's raw lines are looked up and its new ones remembered."""
        return self.batches < self.PROBE_AFTER or self.batches % self.PROBE_EVERY == 0

    def note(self, hit: bool) -> None:
        """Note whether the batch met a raw line seen before."""
        self.batches = 0 if hit else self.batches + 1


_RAW_MISSES = _Misses()
_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(memo: dict[_K, _V], key: _K, value: _V) -> _V:
    """``value``, kept under ``key`` in ``memo`` (up to MEMO_ENTRIES; then every other one, in
    the order they came, is forgotten: a log cycling through more distinct lines than the memo
    holds still finds half of them, where forgetting all, or the oldest, would find none)."""
    if len(memo) >= MEMO_ENTRIES:
        for old in list(memo)[::2]:
            del memo[old]
    memo[key] = value
    return value


def add_nccl_line(out: NcclLog, raw: str) -> None:
    """Add one line of NCCL debug output to ``out``. A line seen before is not read again; a
    plain line (the layout and nothing a reader keeps) is counted and its host noted, and a line
    of the same shape as an earlier plain one is known plain without being read."""
    _note_p2p(out, raw)
    known = _RAW_LINES.get(raw)
    if known is None:
        (known,) = _known_all([raw], [_stripped(raw)])
        if len(raw) <= MEMO_MAX_CHARS:
            _remember(_RAW_LINES, raw, known)
    _add_known(out, [known])


def _add_known(out: NcclLog, known: Sequence[Line | str]) -> None:
    """Add what each line is (``_known_all``) to ``out``, in order. A plain line and a simple
    one (``Line.simple``) are added here, the others by ``_add_read``. The bounded appends are
    ``NcclLog.keep`` written out, and the counts summed once per batch: this runs for every
    line of a large log."""
    lines, unparsed, dropped = 0, 0, 0
    seen_hosts, warnings, errors = out.seen_hosts, out.warnings, out.errors
    for k in known:
        if k is _UNPARSED:
            unparsed += 1
        elif isinstance(k, str):  # a plain line: its host, or "" for none
            lines += 1
            if k and k not in seen_hosts:
                out.add_host(k)
        elif k is _BLANK:
            continue
        elif not k.simple:
            _add_read(out, k)
        elif not k.layout:
            if k.error:
                if len(errors) < MAX_RECORDS:
                    errors.append(k.line)
                else:
                    dropped += 1
            if k.found is not NOTHING:
                _add_found(out, k, None, None)
                out.found_other_lines += 1
            unparsed += k.unparsed
        else:
            lines += 1
            if (host := k.host) and host not in seen_hosts:
                out.add_host(host)
            if k.trace_stage is not None:
                _add_trace(out, k)
            if k.warning:
                if len(warnings) < MAX_RECORDS:
                    warnings.append(k.msg)
                else:
                    dropped += 1
                if k.error:
                    if len(errors) < MAX_RECORDS:
                        errors.append(k.line)
                    else:
                        dropped += 1
            if k.found is not NOTHING:
                _add_found(out, k, host, k.dev)
    out.lines += lines
    out.unparsed_lines += unparsed
    out.dropped_records += dropped


_BLANK = Line("", None)  # what an empty line is: nothing to add
# what another program's line is that holds nothing a reader keeps: only counted as unparsed
_UNPARSED = Line("", None, unparsed=True, simple=True)


def _known_all(raws: Sequence[str], lines: Sequence[str]) -> list[Line | str]:
    """What each raw line is, given its text without prefixes (``_stripped``): the host of a
    plain line ("" for none), else its Line. It depends on that text and the rank prefix alone,
    so lines that differ only in another prefix (a timestamp per line) are read once."""
    memo = _LINES
    # the key: the text, after its rank where a rank prefix leads the raw line
    match = RANK_PREFIX_RE.match
    keys = [
        line if (m := match(raw)) is None else f"{m.group(1)}\0{line}"
        for raw, line in zip(raws, lines, strict=True)
    ]
    known: list[Line | str | None] = [memo.get(key) for key in keys]
    if None in known:
        for i, key in enumerate(keys):
            if known[i] is not None:
                continue
            if not (line := lines[i]):
                known[i] = _BLANK
                continue
            rank = int(key[: key.index("\0")]) if key is not line else None
            seen = known[i] = _read_stripped(line, rank)
            if len(line) <= MEMO_MAX_CHARS:
                _remember(memo, key, seen)
    return known  # type: ignore[return-value]


def _net_dir(text: str) -> tuple[str, bool] | None:
    """`[send] via NET/IB/0/GDRDMA`: an InfiniBand channel's direction and whether it moves
    GPU memory directly (GPUDirect RDMA)."""
    if "via NET/IB" not in text or (nd := NET_DIR_RE.search(text)) is None:
        return None
    return nd.group(1), "GDRDMA" in text


def _read_stripped(line: str, rank: int | None) -> Line | str:
    """``_known`` of a line without its prefixes: a plain shape seen before, else read."""
    shape = None if _DIGIT_SENSITIVE_RE.search(line) else line.encode("utf-8", "surrogatepass").translate(_SAME_DIGITS)  # fmt: skip
    span = _PLAIN_SHAPES.get(shape) if shape is not None else None
    if span is None:
        r = (_read if len(line) <= MEMO_MAX_CHARS else _read.__wrapped__)(line, rank)
        if not r.plain:
            if r.simple and not r.layout and not r.error and r.found is NOTHING:
                return _UNPARSED if r.unparsed else _BLANK  # counted at most
            return r
        span = r.host_span
        if shape is not None:
            _remember(_PLAIN_SHAPES, shape, span)
    return line[span[0] : span[1]]


def _stripped(raw: str) -> str:
    """A raw line without its prefixes (``_prefix``), spaces, and a post's `_`/`` ` `` marks."""
    return strip_prefixes(raw.rstrip()).strip().strip("_`")


def _stripped_all(lines: Sequence[str]) -> list[str]:
    """``_stripped`` of each line of a batch, its prefixes found in one pass."""
    return [line.strip().strip("_`") for line in strip_prefixes_all(lines)]


def _add_read(out: NcclLog, r: Line) -> None:
    """Add a line that says more than its layout (see ``_read``) to ``out``."""
    line = r.line
    if r.net_dir is not None:
        out.net_dirs[r.net_dir] += 1
        out.evidence.setdefault(f"net_{r.net_dir[0]}_{'gdr' if r.net_dir[1] else 'host'}", line)
    if r.version is not None:
        if out.version is None:
            out.version = r.version
        number = release(r.version)
        if out.room(out.versions, number):
            out.versions.setdefault(number, line)
    if not r.layout:
        if r.ifaces_kind == "socket_ifaces":  # a wrapped interface list: one entry per line
            if line.lstrip().startswith("[0]"):  # its first entry starts the list afresh
                out.socket_ifaces = []
                out.socket_ifaces_fresh = True
            for name, addr in r.ifaces:
                if out.room(out.ifaces, name):
                    out.ifaces.setdefault(name, addr)
                if len(out.socket_ifaces) < MAX_KEYS:
                    out.socket_ifaces.append(f"{name}:{addr}<0>")
            out.evidence.setdefault("socket_ifaces", line)
            return
        if r.libibverbs_failed:
            out.libibverbs_failed = True
            out.evidence.setdefault("libibverbs_failed", line)
        if r.error:
            out.keep(out.errors, line)
        _add_found(out, r, None, None)
        out.unparsed_lines += r.unparsed
        out.found_other_lines += r.found is not NOTHING
        return
    out.lines += 1
    host = r.host
    if r.trace_stage is not None:
        _add_trace(out, r)
    if host and host not in out.seen_hosts:
        out.add_host(host)
    if r.warning:
        out.keep(out.warnings, r.msg)
        if r.error:
            out.keep(out.errors, line)
    if r.transport is not None:
        out.transport = r.transport
        out.evidence["transport"] = line
    elif r.ib_devices is not None:
        out.ib_devices = list(r.ib_devices)
        out.oob = r.oob
        out.evidence["ib_devices"] = line
        if host and r.oob:
            out.note_oob(host, r.oob.removesuffix("<0>"))
    elif r.ib_no_device:
        out.ib_no_device = True
        out.evidence["ib_no_device"] = line
    elif r.env is not None and out.room(out.env, r.env[0]):
        out.env[r.env[0]] = r.env[1]
        out.evidence.setdefault(f"env:{r.env[0]}", line)
    if r.gdr is not None:
        out.gdr = True if r.gdr else (False if out.gdr is None else out.gdr)
    for name, addr in r.ifaces:
        if out.room(out.ifaces, name):
            out.ifaces.setdefault(name, addr)
    if r.ifaces_kind == "socket_ifaces":
        out.socket_ifaces = [f"{n}:{a}<0>" for n, a in r.ifaces]
        out.socket_ifaces_fresh = True
        out.evidence.setdefault("socket_ifaces", line)
    elif r.ifaces_kind == "bootstrap":
        out.evidence.setdefault("bootstrap", line)
        if host and r.ifaces:
            out.note_oob(host, ":".join(r.ifaces[0]))
    if r.libibverbs_failed:
        out.libibverbs_failed = True
        out.evidence.setdefault("libibverbs_failed", line)
    for via in r.via:
        if out.room(out.via, via):
            out.via[via] += 1
    for net in r.net_devs:
        if out.room(out.net_devs, net):
            out.net_devs[net] += 1
    _add_found(out, r, host, r.dev)


def _add_trace(out: NcclLog, r: Line) -> None:
    """A line of NCCL unwinding an error (``Line.trace_stage``): its stage goes to the last
    event, or is kept (up to MAX_RECORDS) when none came before it."""
    stage = r.trace_stage
    if "error_trace" not in out.evidence and (code := TRACE_CODE_RE.search(r.line)) is not None:
        # the first: where the failure was returned (`graph/paths.cc:312 -> 3`), named by code
        name = NCCL_RESULT_NAMES.get(int(code.group(1)), "an unknown result")
        out.evidence["error_trace"] = f"{_cut(r.line)}  [{code.group(1)}: {name}]"
    if out.events:
        if not out.events_cut:  # else it names a dropped event's stage
            _add_stage(out.events[-1], r.host, stage)  # type: ignore[arg-type]
    elif len(out.orphan_traces) < MAX_RECORDS:
        out.orphan_traces.append((r.host, stage))  # type: ignore[arg-type]
        if stage == "bootstrap":
            out.evidence.setdefault("bootstrap_trace", r.line)


def _add_stage(last: Event, host: str | None, stage: str) -> None:
    """NCCL unwinds an error through `file.cc:line -> code` lines: the first known stage
    (bootstrap, net_ib, net_socket ...) after an event names where its failure happened."""
    if last.host == host and stage in STAGES and (stage == "bootstrap" or "stage" not in last.detail):  # fmt: skip
        last.detail["stage"] = stage


def _add_found(out: NcclLog, r: Line, host: str | None, dev: int | None) -> None:
    """The events, completion errors and GID table entries one line holds (fresh details:
    a later trace line may add its stage to them)."""
    found = r.found
    if found is NOTHING:
        return
    if found.completion is not None:
        out.keep(out.completion_errors, (found.completion, r.line))
    for kind, detail in found.events:
        if len(out.events) < MAX_RECORDS:
            out.events.append(Event(kind, dict(detail), r.line, host, dev))
        else:
            out.dropped_records += 1
            out.events_cut = True
    if found.gid_entry is not None and out.room(out.gid_table, found.gid_entry[0]):
        index, gid, version = found.gid_entry
        out.gid_table[index] = (gid, version)
