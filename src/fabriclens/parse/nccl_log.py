"""NCCL_DEBUG=INFO/WARN output -> what transport NCCL chose, on which devices, and what went wrong.

Lines look like `host:pid:tid [dev] NCCL INFO <message>`; real posts also hold the source
location before the level (`transport/net_ib.cc:1296 NCCL WARN`, `ib_plugin.c:1615`), NCCL 2.2's
lines without the `NCCL` word (`host:1:2 [0] INFO`, `include/socket.h:360 WARN`), mangled or
redacted hosts, any of the prefixes in ``_prefix``, and NCCL's own messages nested inside
PyTorch exceptions (`ncclRemoteError ... Last error: NET/IB : Got completion ...`), sometimes
all on one line. Every line is therefore searched for the messages below whether or not it has
the NCCL layout. Unknown lines are counted, never fatal.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from typing import Any, NamedTuple, TypeVar

from fabriclens.parse._prefix import strip_prefixes, strip_prefixes_all
from fabriclens.parse.cuda_errors import cuda_error
from fabriclens.parse.dmesg import XID_RE as XID_LINE_RE
from fabriclens.parse.p2p_matrix import SlowestPair
from fabriclens.parse.p2p_matrix import carry as p2p_carry
from fabriclens.parse.p2p_matrix import lead as p2p_lead
from fabriclens.parse.p2p_matrix import note as note_p2p

_LOC = r"(?:(?P<loc>[\w./-]{1,255}\.(?:cc|cu|c|cpp|h|hpp):\d+)\s+)?"
# the level word is found first, then the head in front of it (see ``_split``)
LEVEL_RE = re.compile(r"NCCL\s+(INFO|WARN|TRACE|ERROR)\b\s?")
HEAD_RE = re.compile(
    r"(?:(?P<host>[^\s:\[\]<>]{0,255})\s?:(?P<pid>\w+):(?P<tid>\d+)\s+)?(?:\[(?P<dev>\d+)\]\s+)?"
    + _LOC
    + r"\Z"
)
HEAD_FAST_RE = re.compile(
    r"(?P<host>[^\s:\[\]<>]{1,255}):(?P<pid>\w+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
)
# NCCL 2.2 and older: no `NCCL` word, so the host:pid:tid [dev] layout must be there
OLD_LEVEL_RE = re.compile(r"(INFO|WARN|TRACE|ERROR)\b\s?")
OLD_HEAD_RE = re.compile(
    r"(?P<host>[^\s:\[\]<>]{0,255})\s?:(?P<pid>\w+):(?P<tid>\d+)\s+\[(?P<dev>\d+)\]\s+"
    + _LOC
    + r"\Z"
)
# Its end, searched first: it starts with a `[`, found fast, while the whole head is tried at
# every position before the level word (hundreds of microseconds on a long pasted line)
OLD_HEAD_END_RE = re.compile(r"\[\d+\]\s+" + _LOC + r"\Z")
VERSION_RE = re.compile(r"[NR]CCL version:?\s*(\d+\.\d+\.\d+[\w.+-]*)")  # RCCL prints its own
IB_USING_RE = re.compile(
    r"NET/IB\s*:\s*Using\s+(?P<devs>(?:\[\d+\]\S+\s*)+)(?:\[RO\])?\s*(?:;\s*OOB\s+(?P<oob>\S+))?"
)
IB_DEV_RE = re.compile(r"\[\d+\](\S+)")
USING_IFACES_RE = re.compile(r"(?:Bootstrap|NET/Socket|NET)\s*:\s*Using\s+(?:interface\s+)?(.*)")
IFACE_RE = re.compile(r"(?:\[\d+\])?([A-Za-z][\w.@-]*):(\S+?)<\d+>")
ENV_RE = re.compile(r"^(NCCL_\w+) set (?:by environment )?to (.*?)\.?\s*$")
VIA_RE = re.compile(
    r"\bvia\s+(P2P(?:/IPC|/CUMEM|/direct)?|SHM|NET/[\w/ ]+?(?=/\d|\s|$)|CollNet\S*)"
)
NET_DEV_RE = re.compile(r"\bvia\s+(NET/[\w ]+/\d+)")
SOCKET_DEV_RE = re.compile(r"NET/Socket\s*:\s*GPU Direct RDMA Disabled for HCA (\d+) '([^']+)'")
RANK_PREFIX_RE = re.compile(r"^\W{0,3}\[?rank(\d+)\]?:", re.I)
PEER_RE = re.compile(r"(?:from|to|peer)\s+(?:peer\s+)?(\S+?)<\d+>")
# Gloo's `connect [127.0.1.1]:3210: Connection refused` and c10d's `connect to [host]:29500`
BRACKET_PEER_RE = re.compile(r"connect (?:to )?\[([^\]\s]+)\]:\d+")

COMPLETION_RE = re.compile(
    r"Got completion (?:from peer (?P<peer>\S+?)(?:<\d+>)?\s+)?with (?:status=|error\s*)(?P<status>\d+)"
)
VENDOR_RE = re.compile(r"vendor err (\d+)")
DIRECTION_RE = re.compile(r"\((Send|Recv)\)")
GIDS_RE = re.compile(r"localGid\s*(?P<local>\S+)\s+remoteGids?\s*(?P<remote>\S+)")
# `failed with 110 Connection timed out, local GID ...`; older releases `failed with error
# Invalid argument errno 22`
QP_RE = re.compile(
    r"Call to ibv_modify_qp failed with (?:error\s+)?(?:(?P<errno>\d+)\s+)?(?P<text>[A-Za-z][\w ]*?)"
    r"(?:\s+errno\s+(?P<errno_after>\d+))?(?:[,_.]|$)"
)
QP_GID_RE = re.compile(r"local GID index (\d+)")
QP_STATE_RE = re.compile(r"curr state (\w+), next state (\w+)")
ERRNO = {"connection timed out": 110, "no such device": 19, "network is unreachable": 101,
         "no route to host": 113, "connection refused": 111, "invalid argument": 22}  # fmt: skip
# `Cuda failure 217 'peer access ...'` (driver calls, CUCHECK) or `Cuda failure 'invalid argument'`
# (runtime calls, CUDACHECK: the name alone, src/include/checks.h)
CUDA_RE = re.compile(
    r"(?:failed to open CUDA IPC handle\s*:\s*|Cuda failure\s+'?|Test CUDA failure \S+\s+')"
    r"(?:(?P<code>\d+)'?\s*)?'?(?P<text>[^']*)"
)
NVLS_BIND_RE = re.compile(
    r"Failed to bind NVLink SHARP \(NVLS\) Multicast memory of size (\d+) : CUDA error (\d+) '([^']*)'"
)
# socket.cc: `wrong type 4 != 3` (<= 2.2x), `wrong socket type (peer 4 != expected 3 ...` (later)
SOCKET_TYPE_RE = re.compile(
    r"socketFinalizeAccept\b.*?wrong (?:socket )?type \(?(?:peer )?(\d+) != (?:expected )?(\d+)"
)
SOCKET_TYPES = {1: "bootstrap", 2: "proxy", 3: "NET/Socket", 4: "NET/IB", 5: "RAS"}  # socket.h
# socket.cc: `socketFinalizeAccept: wrong magic %lx != %lx`: the first 8 bytes a connecting peer
# sent (as a little-endian number) against this socket's magic
WRONG_MAGIC_RE = re.compile(
    r"socketFinalizeAccept: wrong magic ([0-9a-fA-F]{1,16}) != ([0-9a-fA-F]{1,16})"
)
# net_ib.cc: `NET/IB : GPU Direct RDMA Disabled for HCA %d '%s'` (later `... (no module)`): no
# peer-memory module registered GPU memory with the NIC
IB_GDR_OFF_RE = re.compile(
    r"NET/IB\s*:\s*GPU Direct RDMA Disabled for HCA (\d{1,4}) '([^']{1,64})'"
)
# nvmlwrap.cc: `nvmlDeviceGetHandleByPciBusId() failed: Not Found`: a GPU of the node NCCL
# cannot see (this process sees only its own)
NVML_NOT_FOUND_RE = re.compile(r"nvmlDeviceGetHandleByPciBusId\(\) failed: Not Found")
# net_ib.cc: `NET/IB : %s:%d Got async event : %s` (the verbs async event of a device port)
ASYNC_EVENT_RE = re.compile(
    r"NET/IB\s*:\s*(\S{1,64}) Got async (?:error )?event\s*:\s*(\S[^\n]{0,199})"
)
# paths.cc / net.cc: `GPU Direct RDMA Disabled for GPU %d[%d] / HCA %d (distance %d >= %d)`, later
# `... for GPU %lx / HCA %d (distance %d > %d)`
GDR_DISTANCE_RE = re.compile(
    r"GPU Direct RDMA Disabled for GPU (\w{1,32})(?:\[\d{1,5}\])? / HCA (\w{1,32}) \(distance (\d{1,3}) >=? (\d{1,3})\)"
)
TRUNCATED_RE = re.compile(r"Message truncated : received ([\d,]+) bytes instead of ([\d,]+)")
COLL_MISMATCH_RE = re.compile(r"collective mismatch error, local size (\d+) remote size (\d+)")
SHM_RE = re.compile(
    r"Call to (?:posix_)?fallocate failed\s*:?\s*(?P<why>[^\n]*)|failed to extend (?P<path>\S+) to (?P<size>\d+) bytes(?:,\s*error:\s*(?P<ext_error>[^(\n]*))?"
    r"|Error while (?P<action>creating|attaching to) shared memory segment (?P<segment>\S+) \(size (?P<bytes>\d+)\)"
    r"(?:,\s*error:\s*(?P<error>[^(\n]*))?"
    r"|unlink shared memory (?P<unlinked>\S+) failed, error: (?P<unlink_error>[^(\n]*)"
    r"|Call to shm_open failed\s*:\s*(?P<open_why>[^\n]*)"
)
# NCCL's tuner when no algorithm and protocol remain for a collective (src/enqueue.cc, 2.19+;
# `nor symKernelId` from 2.28), and the variables it names (`NCCL_ALGO was set to ring.`)
NO_ALGO_RE = re.compile(
    r"No algorithm/protocol (?:nor symKernelId )?available for function (\w+) with datatype (\w+)"
)
ALGO_SET_RE = re.compile(r"(NCCL_(?:ALGO|PROTO|SYM_KERNEL\w*)) was set to (\S+?)\.?(?=\s|$)")
DOCA_RE = re.compile(r"DOCA failure (\d+)")
NVML_OPEN_RE = re.compile(r"Failed to open (libnvidia-ml\S*)")
GLOO_ADDR_RE = re.compile(r"Unable to find address for: (\S+)")
# NCCL's RAS status (ncclras): a job process that does not answer (docs: troubleshooting/ras)
RAS_PROCESS_RE = re.compile(r"Process (\d+) on node (\S+) managing GPU (\d+)")
# torch.distributed.monitored_barrier: "Rank 1 failed ..." or, waiting for all, "Ranks 1, 3 ..."
MONITORED_BARRIER_RE = re.compile(r"Ranks? ([\d, ]*\d) failed to pass monitoredBarrier in (\d+) ms")
# Kubernetes' NVIDIA device plugin (health.go): an Xid that takes a GPU out of service
PLUGIN_XID_RE = re.compile(r"XidCriticalError: Xid=(\d+) on Device=([\w-]+)")
JAX_TASK_RE = re.compile(
    r"^/job:[\w-]+/replica:\d+/task:(\d+)\s*$"
)  # the coordination service's list
INCARNATION_RE = re.compile(r"incarnation id \d+ is not connected")  # JAX: a task gone
# what pyxis prints from enroot's log (Slurm's container plugin): a directory enroot cannot make
ENROOT_MKDIR_RE = re.compile(r"mkdir: cannot create directory '([^']{1,200})': Permission denied")
ENROOT_BY_RE = re.compile(r"pyxis|enroot")  # before the mkdir: the runtime's log, not any mkdir
USERNS_RE = re.compile(r"failed to create user namespace: (\S[^\n]{0,60})")
PYXIS_FAILED_RE = re.compile(r"pyxis: (couldn't execute enroot command|couldn't start container|container start failed[^\n]{0,40}|failed to import docker image)")  # fmt: skip
# enroot's pull refused by a registry: `URL https://registry-1.docker.io/v2/public.ecr.aws/
# hpc-cloud/nccl-tests/manifests/latest returned error code: 401 Unauthorized`
REGISTRY_401_RE = re.compile(
    r"URL https://([^/\s]{1,255})/v2/(\S{1,300}?)/manifests/\S{1,128} returned error code: 401"
)
# Fabric Manager's start script on NVLink 5 systems, and NVLSM's umad_init, without ib_umad
FM_UMAD_RE = re.compile(r"ib_umad\W{0,2} (?:has not been loaded|module loaded\?)")
# GKE's TCPXO receive-data-path manager (RxDM) counting the GPUs it can pair with NICs
# (`Number of GPUs detected 7 is not equal to the actual number of GPUs 8`, and later `... detected in
# the PCI tree 7 is not equal to the actual number of GPUs reported by CUDA 8`; none at all is
# RXDM_PCI_RE's)
RXDM_COUNT_RE = re.compile(r"Number of GPUs detected (?:in the PCI tree )?([1-9]\d{0,3}) is not equal to the actual number of GPUs (?:reported by CUDA )?(\d{1,4})")  # fmt: skip
RXDM_PCI_RE = re.compile(r"Number of GPUs detected in the PCI tree 0\b")
# Huawei's HCCL (Ascend): its configuration and consistency checks
HCCL_IFNAME_RE = re.compile(r"set ifname to \[([^\]]{0,64})\] by HCCL_SOCKET_IFNAME, but not found")
HCCL_CMD_RE = re.compile(r"CMD information tag check fail\. local\[([A-Za-z]+)_[^\]]*\], remote\[([A-Za-z]+)_")  # fmt: skip
HCCL_FAMILY_RE = re.compile(r"device ip family\[(\d+)\] is not same as others\[(\d+)\]")
HCCL_FAMILIES = {"2": "IPv4", "10": "IPv6"}  # AF_INET, AF_INET6 as HCCL prints them
HCCL_LISTEN_RE = re.compile(r"socket type\[(\d)\], listen on ip\[[^\]]{0,80}\] and specific port\[(\d+)\] fail")  # fmt: skip
# the line's own time, to order a task's failures across ranks: `HCCL(pid,name):2025-10-24-22:03:14.946.261`
HCCL_TIME_RE = re.compile(r"HCCL\(\d+,[^)]{0,60}\):(\d{4})-(\d\d)-(\d\d)-(\d\d):(\d\d):(\d\d)")
HCCL_EXCEPTION_RE = re.compile(r"Cluster Exception Location\[IP/ID\]:\[([^\]]{1,80})\].{0,200}?ExceptionType:\[Heartbeat Lost")  # fmt: skip
HCCL_RANKTABLE_IP_RE = re.compile(r"the IP address\(([^)]{1,64})\) in the ranktable is inconsistent with the IP address\(([^)]{1,64})\)")  # fmt: skip
HCCL_SUPERPOD_RE = re.compile(r"logicSuperPodId\[([^\]]{1,64})\], phySuperPodId\[([^\]]{1,64})\]")
HCCL_AGENT_RE = re.compile(r"connect server\[([^\]]{1,80})\] failed")
HCCL_MISSING_RE = re.compile(r"Failed to connect agent\[([\d,]{1,200})\]")
HCCL_CQE_RE = re.compile(r"cqe error status\[(\d+)\]")
HCCL_RANKTABLE_RE = re.compile(r"path (\S{1,200}) is not a valid real path")
HCCL_TASK_RE = re.compile(r"Task run failed, base information is .{0,120}?tag\[([A-Za-z]+)_")
# HCCL's (and the Ascend runtime's) named error codes: `Communication_Error_Bind_IP_Port(EI0019)`
HCCL_CODE_RE = re.compile(r"([A-Z][A-Za-z]*(?:[_ ][A-Za-z]+){1,8})\((E[IJ]\d{4})\)")
OFI_NOT_CONNECTED_RE = re.compile(r"ofi\w*\.h:\d+:\w+:Transport endpoint is not connected", re.I)
# Open MPI's TCP BTL, older and newer wordings of EHOSTUNREACH
BTL_TCP_NO_ROUTE_RE = re.compile(r"btl_tcp\w*\.c:\d+:[\w\]]{0,80}:? connect\(\) (?:to \S+ )?failed(?: with errno=113|: No route to host \(113\))")  # fmt: skip
CLOUD_QUOTA_RE = re.compile(r"Quota '([A-Za-z0-9_-]{1,64})' exceeded")  # Google Cloud's
# an ENA counter of packets AWS shaped at the instance's limits (ethtool -S), above 0
ENA_ALLOWANCE_RE = re.compile(r"\b((?:bw_in|bw_out|pps|conntrack|linklocal)_allowance_exceeded): ([1-9]\d{0,18})\b")  # fmt: skip
CONTAINER_NVML_RE = re.compile(r"nvidia-container-cli: initialization error: load library failed: (libnvidia-ml\.so[.\d]*)")  # fmt: skip
FABRIC_STATE_RE = re.compile(r"^\s*State\s*:\s*In Progress\s*$")  # nvidia-smi -q, Fabric
NIC_POLICY_RE = re.compile(r"NIC_POLICY of '(\w+)'\. Rank (\d+) is not confined")  # Cray MPICH
# libibverbs (rdma-core libibverbs/init.c): an RDMA device no installed provider claims, or a
# provider library that would not load
VERBS_PROVIDER_RE = re.compile(
    r"no userspace device-specific driver found for (\S+)|couldn't load driver '([^']+)'"
)
NET_DIR_RE = re.compile(r"\[(send|receive)\] via NET/IB")
RAY_NODE_REQUEST_RE = re.compile(r"'node:([\d.]+)'")
OFI_RAILS_RE = re.compile(
    r"Unexpected number of remote rails for dev (\d+)\. Expected (\d+) but got (\d+)"
)
CHUNK_SIZE_RE = re.compile(r"NCCL_CHUNK_SIZE=(\d+)")
UCX_ERROR_RE = re.compile(r"UCX\s+ERROR\s+(\S(?:.*\S)?)")
HOST_IMPORT_RE = re.compile(r"\b(CUMEM|MMAP) imported shareable host buffer")
TOPO_XML_FULL_RE = re.compile(r"too many XML nodes \(max (\d+)\)")
LIBFABRIC_ERR_RE = re.compile(r"Libfabric error: \((-?\d+)\) (\S(?:.*\S)?)")
HIP_DEVICE_RE = re.compile(r"Test HIP failure (\S+) '(hipErrorInvalidDevice|hipErrorNoDevice)'")
# rccl-tests' and perftest's own words when no AMD GPU can be opened (amdgpu not loaded, or the
# user outside the video and render groups: ROCm's cluster networking troubleshooting guide)
ROCM_NO_DEVICE_RE = re.compile(
    r"No ROCm-capable device is detected|Couldn't initialize ROCm device"
)
# the kernel refusing a module whose symbol versions are another kernel's (dmesg, modversions):
# the GPUDirect peer-memory module built against another MLNX_OFED (Mellanox/nv_peer_memory#39),
# or any module after a kernel upgrade without its rebuild
# (the module's name is the word before the match, split off: a pattern that scanned for it
# would rescan a long run of words and dashes from every position)
MODULE_SYMBOL_RE = re.compile(
    r": (?:disagrees about version of symbol (\w++)$|Unknown symbol (\w++) \(err -?\d++\))"
)
OFI_MR_REG_RE = re.compile(r"Unable to register MR|fi_mr_reg\(")  # libfabric, its EFA provider
IB_DEVICES_LIST_RE = re.compile(r"Failed to get IB devices list: (\S(?:.*\S)?)")  # ibv_devinfo
VERBS_ABI_RE = re.compile(r"Driver (\S++) does not support the kernel ABI")  # rdma-core's verbs
# the verbs status string of IBV_WC_RETRY_EXC_ERR as MPI's and UCX's layers print it
RETRY_EXCEEDED_RE = re.compile(r"[Tt]ransport retry count(?:er)? exceeded")
# glibc's strerror() texts of the errors a distributed job's system calls meet, by errno name:
# any program's line that quotes one names what the kernel refused, rule or no rule (too common
# to mean anything alone, ENOENT and EINVAL are left out)
ERRNO_TEXTS = {
    "Cannot allocate memory": "ENOMEM", "Function not implemented": "ENOSYS",
    "Operation not permitted": "EPERM", "Permission denied": "EACCES", "No such device": "ENODEV",
    "No space left on device": "ENOSPC", "Connection refused": "ECONNREFUSED",
    "Connection timed out": "ETIMEDOUT", "No route to host": "EHOSTUNREACH",
    "Network is unreachable": "ENETUNREACH", "Device or resource busy": "EBUSY",
    "Input/output error": "EIO", "Bad address": "EFAULT",
    "Resource temporarily unavailable": "EAGAIN", "Connection reset by peer": "ECONNRESET",
    "Broken pipe": "EPIPE",
}  # fmt: skip
ERRNO_RE = re.compile("|".join(re.escape(t) for t in ERRNO_TEXTS))
# a GPU driver container (NVIDIA's GPU Operator) installing the running kernel's headers with
# dnf: the package it could not find, and the OS release it asked the repositories for
HEADERS_MISSING_RE = re.compile(r"Unable to find a match: (kernel-(?:headers|devel)-\S+)")
DNF_RELEASEVER_RE = re.compile(
    r"--releasever=(\d+(?:\.\d+)?) install (kernel-(?:headers|devel)-\S+)"
)
EL_RELEASE_RE = re.compile(r"\.el(\d+)_(\d+)")  # a RHEL kernel's release: el8_3 is RHEL 8.3
APT_NVIDIA_UPGRADE_RE = re.compile(r"^Upgrade: (\S*nvidia\S*)")  # /var/log/apt/history.log
# nv-fabricmanager refusing to start: `fabric manager NVIDIA GPU driver interface version
# 550.127.05 don't match with driver version 550.120`
FM_DRIVER_MISMATCH_RE = re.compile(
    r"driver interface version (\d[\w.-]{0,40}) don'?t match with driver version (\d[\w-]{0,20}(?:\.[\w-]{1,20}){0,4})"
)
# the NVIDIA container runtime's hook: a driver file it mounts from the host is in the image
CONTAINER_FILE_EXISTS_RE = re.compile(
    r"nvidia-container-cli: mount error: file creation failed: \S{0,400}?/([^/\s]{1,100}): file exists"
)
# the NVIDIA Container Toolkit reading containerd's config (containerd 2.x writes version 3)
CONTAINERD_CONFIG_VERSION_RE = re.compile(
    r"unable to load config: unsupported config version: (\d{1,3})"
)
# a library built against a newer NCCL than the libnccl.so.2 loaded (`import torch`)
NCCL_SYMBOL_RE = re.compile(r"nccl\w{1,60}")  # after `: undefined symbol: ` (found first)
NCCL_WHEEL_RE = re.compile(r"nvidia-nccl-cu(\d{1,3})==(\d[\w.]{0,20})")  # pip list, collect_env
# ibdev2netdev: `mlx5_3 port 1 ==> net1 (Down)`
IBDEV2NETDEV_DOWN_RE = re.compile(r"^(\S{1,64}) port (\d{1,3}) ==> (\S{1,64}) \(Down\)")
# (a capture from its first non-space to its last, `(\S(?:.*\S)?)`, not `(.+?)\s*$`: a lazy
# capture before trailing spaces is quadratic on a hostile line of spaces)
IBV_REG_RE = re.compile(r"Call to (ibv_reg_\w+) failed with error (\S(?:.*\S)?)")
# bootstrap.cc / socket.cc: no interface for NCCL's sockets (the filter matched none, or none
# has an address): `Bootstrap : no socket interface found`, `NET/Socket : No usable listening
# interface found`, `no device found matching =eth9, verify NCCL_OOB_NET_IFNAME`, `Net : No
# interface found in the same subnet as remote address 10.0.0.2<1234>`; NCCL 2.3's `NET/Socket :
# no interface found`
NO_IFACE_RE = re.compile(
    r"no socket interface found|No usable listening interface found|NET/Socket : no interface found"
    r"|no NCCL_SOCKET_IFNAME interface found|(?P<subnet>No interface found in the same subnet)"
    r"|(?P<oob>no device found (?:matching|after excluding) \S{0,64}?,? verify NCCL_OOB_NET_IFNAME)"
)
# init.cc: `Mismatched NCCL version detected : rank 0 version 22105 rank 8 version 21803` (the
# versions as NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 before)
VERSION_MISMATCH_RE = re.compile(
    r"Mismatched NCCL version detected : rank (\d+) version (\d{1,6}) rank (\d+) version (\d{1,6})"
)
DUPLICATE_GPU_RE = re.compile(
    r"Duplicate GPU detected : rank (\d+) and rank (\d+) both on CUDA device (\w+)"
)
RING_LOOP_RE = re.compile(r"ring (\d+) does not loop back to start \((\d+) != (\d+)\)")
GRAPH_IMPORT_RE = re.compile(r"XML Import Channel\s*:\s*dev (\d+) not found")
# a `NET/Socket : Using` interface list wrapped onto lines of its own (as posts quote it)
# (an entry's address holds no "<": each entry ends at its own <port>, so a line of many entries
# is matched in one pass, never by trying where one entry might end)
IFACE_LIST_RE = re.compile(r"(?:\[\d+\][A-Za-z][\w.@-]*:[^\s<]+<\d+>\s*)+")
NET_PLUGIN_RE = re.compile(r"NET/Plugin\s*:\s*Loaded (?:net )?plugin (\S(?:.*\S)?)")
PLUGIN_VERSION_RE = re.compile(r"\(v\d+\)$")
TOPO_XML_RE = re.compile(r"Attribute (\w+) of node (\w+) not found")
SOCKET_CREATE_RE = re.compile(r"Socket creation failed\s*:\s*(\S(?:.*\S)?)")
OFI_REGISTER_RE = re.compile(
    r"NET/OFI Unable to register memory \(type = (\d+)\) for device (\d+)\.?\s*RC:\s*(-?\d+),?\s*Error:\s*(\S(?:.*\S)?)"
)
FAMILY_RE = re.compile(r"family (\d+) is neither AF_INET")
TOPO_RE = re.compile(r"Could not find real path of (\S+)")
SHMEM_RE = re.compile(r"ncclMaxSharedMem (\d+) exceeds device/fn maxSharedMem (\d+)")
OFI_RE = re.compile(
    r"NET/OFI .*?completed with error\.?\s*RC:\s*(\d+)\.?\s*Error:\s*(?:(\d+)\s*\((\w+)\)|(?P<text>[^.,]+))"
)
# libfabric's own provider line: `libfabric:35:1668017255::efa:cq:rxr_cq_write_tx_error():243<warn>
# rxr_cq_write_tx_error: err: 20, prov_err: Not a directory (20)`
PROV_ERR_RE = re.compile(r"::(\w+):\w+:.*?\berr:\s*(\d+),\s*prov_err:\s*([^(]*?)\s*\((-?\d+)\)")
# PyTorch's collective check (TORCH_DISTRIBUTED_DEBUG=DETAIL): two ranks' fingerprints differ
DESYNC_RE = re.compile(
    r"Rank (\d+) is running (?:inconsistent )?collective: CollectiveFingerPrint\((?:SequenceNumber=(\d+),\s*)?OpType=(\w+)"
    r"(?:,\s*TensorShape=\[([^\]]{0,80})\])?"
    r".*?but Rank (\d+) is running (?:inconsistent )?collective: CollectiveFingerPrint\((?:SequenceNumber=\d+,\s*)?OpType=(\w+)"
    r"(?:,\s*TensorShape=\[([^\]]{0,80})\])?"
)
# PyTorch's rendezvous store (TCPStore) cannot listen: `failed to bind to [::]:29500 (errno: 98`
STORE_BIND_RE = re.compile(r"failed to bind to \S*?:(\d+) \(errno: 98")
STORE_RE = re.compile(r"server socket|TCPStore|errno: 98")  # the store's, not NCCL's own sockets
# a launcher saying a rank's process ended: mpirun (`Process name: [[11192,1],8]`, `process rank
# 3 with PID 0 on node n1 exited on signal 11 (Segmentation fault)`), torchrun (`failed
# (exitcode: 1) local_rank: 0 (pid: 170581)`)
MPI_PROCESS_RE = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]")
MPI_SIGNAL_RE = re.compile(
    r"process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)(?: \(([^)]+)\))?"
)
TORCHRUN_EXIT_RE = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+)")
FI_GETINFO_RE = re.compile(r"fi_getinfo\(?\)? call failed(.*)")  # aws-ofi-nccl: no provider
SHARP_LOCK_RE = re.compile(r"lock failed")  # the SHARP plugin's `Streaming Tree lock failed (-18)`
# ssh (DeepSpeed's and pdsh's launchers, mpirun): `ssh: Could not resolve hostname node-0: Name or
# service not known`; c10d: `getaddrinfo failed ... for host X`
RESOLVE_RE = re.compile(
    r"[Cc]ould not resolve hostname (\S+?):|getaddrinfo\S* failed.*?host[:\s]+\[?([\w.-]+)"
)
HOST_NOT_FOUND_RE = re.compile(
    r"host not found: (?:Name or service not known|Temporary failure in name)"
)
GAI_NAME_RE = re.compile(r"addresses of \(([^,\s]+), \d+\) cannot be retrieved \(gai error: -[23] ")
# c10d's store client: `The client socket has failed to connect to [::ffff:255.255.0.0]:29500
# (errno: 110 - Connection timed out)`
STORE_CONNECT_RE = re.compile(
    r"client socket has failed to connect to \[?([^\]\s]+?)\]?:(\d+) \(errno: (\d+)(?: - ([^)]*))?"
)
# PyTorch 2.x's wording when the store does not answer in time: `The client socket has timed out
# after 1800s while trying to connect to (10.0.0.1, 29500)` (or `after 600000ms`)
STORE_TIMEOUT_RE = re.compile(
    r"client socket has timed out after (\d{1,12})(ms|s) while trying to connect to \(([^,\s()]{1,255}), (\d{1,5})\)"
)
# PyTorch's caching allocator: `CUDA out of memory. Tried to allocate 2.00 GiB` (then the GPU,
# its capacity and what is free, in one of two wordings)
TORCH_OOM_RE = re.compile(r"CUDA out of memory\. Tried to allocate (\d[\d.]{0,12} [KMGT]?i?B)")
# the last line of a Python traceback: the exception's (qualified) class and its message,
# `RuntimeError: Expected to have finished reduction ...`,
# `torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError`; a class name ends in Error
# or Exception, a colon or the line's end follows it (a KeyboardInterrupt is someone's Ctrl-C,
# often on a hung job: not the failure)
PY_EXCEPTION_RE = re.compile(
    r"((?:[A-Za-z_]\w{0,80}\.){0,12}[A-Z]\w{0,80}?(?:Error|Exception))(?::[ \t]*+(.{0,240})|[ \t]*+$)"
)
# parse_rendezvous_endpoint's ValueError (torch/distributed/elastic/rendezvous/utils.py):
# `The port number of the rendezvous endpoint 'None:None' must be an integer between 0 and 65536.`
RDZV_PORT_RE = re.compile(
    r"port number of the rendezvous endpoint '([^'\n]{0,300})' must be an integer"
)
# a launcher's empty master address: DeepSpeed's runner (`Using IP address of  for node node1`
# when `hostname -I` printed nothing, then `--master_addr= --master_port=29500`), or PyTorch's
# env:// init without it (`environment variable MASTER_ADDR expected, but not set`)
MASTER_ADDR_EMPTY_RE = re.compile(
    r"--master[_-]addr=(?=\s|$)|Using IP address of {1,4}for node|variable MASTER_ADDR expected, but not set"
)
# DDP's reducer: a parameter without a gradient in the last iteration (the names, or indices,
# with TORCH_DISTRIBUTED_DEBUG; the message alone without it)
DDP_UNUSED_RE = re.compile(
    r"Parameter(?:s| indices) which did not receive grad for rank (\d{1,7}): ?(.{0,200})"
)
# NCCL's plugin loader (src/plugin/plugin_open.cc): `PROFILER/Plugin: Could not find: <names>.`
# then, for the network, `. Using internal net plugin.`; the names are what it tried
PLUGIN_MISSING_RE = re.compile(r"\b([A-Z]{2,12})/Plugin\s?: Could not find: ?([^\n]{1,1020})")
# the default names NCCL tries when no plugin is asked for: not finding them is the normal case
DEFAULT_PLUGIN_RE = re.compile(r"libnccl-(?:net|tuner|profiler|env|gin|rma)(?:-none)?\.so")
# compute-sanitizer's memcheck: `========= Invalid __global__ write of size 16 bytes` and the
# kernel under it, `=========     at ncclDevFunc_AllReduce_Sum_bf16_RING_SIMPLE()+0x14440`
SANITIZER_ACCESS_RE = re.compile(
    r"Invalid __(?:global|shared|local)__ (read|write) of size (\d{1,6}) bytes"
)
SANITIZER_NCCL_FRAME_RE = re.compile(r"=+\s{1,12}at (nccl\w{1,120})")
NCCL_WORD_RE = re.compile(r"NCCL")
# PyTorch's flight recorder analyser (torchfrtrace / fr_trace.py): `Not all ranks joining
# collective 5 at entry 4`, then `missing ranks: {1}`
FR_NOT_JOINED_RE = re.compile(r"Not all ranks joining collective (\d{1,12}) at entry \d{1,12}")
FR_MISSING_RE = re.compile(r"missing ranks: \{([\d, ]{1,200})\}")
# a kernel oops inside the NVIDIA driver: `IP: [<ffffffffc0740f8f>] _nv011740rm+0x1f/0x170 [nvidia]`
# (`RIP: 0010:_nv...+0x1f/0x170 [nvidia]` on newer kernels)
NVIDIA_OOPS_RE = re.compile(
    r"\bR?IP: (?:\d{4}:)?(?:\[<[0-9a-f]{1,16}>\] {1,2}){0,2}[\w.$]{1,120}\+0x[0-9a-f]{1,16}/0x[0-9a-f]{1,16} \[(nvidia(?:_uvm|_drm|_modeset|_peermem)?)\]"
)
# NIXL's status codes (ai-dynamo/nixl: `NIXL_ERR_REMOTE_DISCONNECT`, `NIXL_ERR_BACKEND` ...)
NIXL_ERR_RE = re.compile(r"\bNIXL_ERR_([A-Z_]{2,32})")
# UCX's transport list as a line shows it (an environment dump, NIXL's agent init)
UCX_TLS_RE = re.compile(r"\bUCX_TLS=([\w,^.+-]{0,120})")
# Lightning (and NeMo through it): `initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8` (older),
# `Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/8`
PL_RANK_RE = re.compile(
    r"(?:initializing ddp|Initializing distributed): GLOBAL_RANK: (\d{1,7}), MEMBER: (\d{1,7})/(\d{1,7})"
)
# Ollama's GPU discovery: `msg="amdgpu is not supported (supported types:[gfx1030 ...])"
# gpu_type=gfx1031`
OLLAMA_GFX_RE = re.compile(
    r"amdgpu is not supported \(supported types:\[[^\]\n]{0,400}\]\)\"? gpu_type=(gfx[0-9a-f]{3,5})"
)
# llama.cpp's `llm_load_tensors: offloaded 31/33 layers to GPU` (the output layer counted) and
# Ollama's `msg=offload ... layers.model=81 layers.offload=44 ... memory.required.kv="19.5 GiB"`
LLAMA_OFFLOADED_RE = re.compile(r"offloaded (\d{1,4})/(\d{1,4}) layers to GPU")
OLLAMA_OFFLOAD_RE = re.compile(r"layers\.model=(\d{1,4}) layers\.offload=(\d{1,4})")
# a size as Ollama prints it (format.HumanBytes2: "19.5 GiB", "215.1 MiB")
_GIB = r"([0-9.]{1,10} [KMGT]?i?B)"
OLLAMA_KV_RE = re.compile(rf"memory\.required\.kv=\"{_GIB}\"")
# what Ollama's estimate puts where (`memory.required.full="68.3 GiB" memory.required.partial=
# "10.9 GiB"`: the whole model, and the GPUs' part) and the host's memory (`msg="system memory"
# total="62.6 GiB" free="59.1 GiB" free_swap="215.1 MiB"`), server.go
OLLAMA_REQUIRED_RE = re.compile(
    rf"memory\.required\.full=\"{_GIB}\" memory\.required\.partial=\"{_GIB}\""
)
OLLAMA_SYSTEM_MEMORY_RE = re.compile(rf"free=\"{_GIB}\" free_swap=\"{_GIB}\"")
# its refusal: `msg="model request too large for system" requested="75.2 GiB" available=66355601408
# total="31.2 GiB" free="29.8 GiB" swap="32.0 GiB"`, and the error the client gets: `model requires
# more system memory (15.3 GiB) than is available (11.2 GiB)`
OLLAMA_TOO_LARGE_RE = re.compile(rf"requested=\"{_GIB}\".{{0,160}}?free=\"{_GIB}\" swap=\"{_GIB}\"")
OLLAMA_MORE_SYSTEM_RE = re.compile(
    rf"requires more system memory \({_GIB}\) than is available \({_GIB}\)"
)
# ggml's host buffer: `ggml_aligned_malloc: insufficient memory (attempted to allocate 236119.06 MB)`
GGML_HOST_ALLOC_RE = re.compile(r"insufficient memory \(attempted to allocate ([0-9.]{1,14}) MB\)")
# llama.cpp's --mlock under a lower RLIMIT_MEMLOCK: `warning: failed to mlock 139264000-byte buffer
# (after previously locking 0 bytes): Cannot allocate memory`
MLOCK_FAILED_RE = re.compile(r"failed to mlock (\d{1,15})-byte buffer")
# vLLM's (and SGLang's) custom all-reduce kernel: `Cuda error /workspace/csrc/custom_all_reduce.cuh:143
# 'invalid resource handle'`
CUSTOM_AR_ERROR_RE = re.compile(r"Cuda error \S*custom_all_reduce\.cuh:(\d{1,6}) '([^'\n]{1,80})'")
# A client of an LLM server that cannot reach it: curl's `curl: (7) Failed to connect to
# host.docker.internal port 11434 after 0 ms: Couldn't connect to server`; Go's (Ollama's CLI and
# most gateways) `dial tcp 127.0.0.1:11434: connect: connection refused` / `: i/o timeout` /
# `: can't assign requested address`; Python's `HTTPConnectionPool(host='localhost', port=11434)
# ... [Errno 111] Connection refused`, aiohttp's `Cannot connect to host localhost:8000`
CURL_CONNECT_RE = re.compile(r"curl: \(7\) Failed to connect to (\S{1,253}) port (\d{1,5})")
GO_DIAL_RE = re.compile(
    r"dial tcp \[?([0-9A-Za-z.:%-]{1,253}?)\]?:(\d{1,5}): (?:connect: )?"
    r"(connection refused|i/o timeout|no route to host|network is unreachable"
    r"|can't assign requested address|cannot assign requested address)"
)
GO_DIAL_REASONS = {"connection refused": "refused", "i/o timeout": "timeout",
                   "no route to host": "unreachable", "network is unreachable": "unreachable",
                   "can't assign requested address": "no local port",
                   "cannot assign requested address": "no local port"}  # fmt: skip
GO_LOOKUP_RE = re.compile(
    r"dial tcp: lookup ([\w.-]{1,253})(?: on [^\s:]{1,64}(?::\d{1,5})?)?: "
    r"(no such host|server misbehaving|i/o timeout|read udp [^\n]{0,80}?i/o timeout)"
)
# urllib3 2.x: `NameResolutionError(... Failed to resolve 'huggingface.co' ([Errno -3] ...))`
PY_RESOLVE_RE = re.compile(r"Failed to resolve '([\w.-]{1,253})'")
# Ollama's download of a model's parts (server/download.go): `60e05f210007 part 5 attempt 0
# failed: EOF, retrying in 1s`, and the client's `Error: max retries exceeded: EOF`
OLLAMA_PART_FAILED_RE = re.compile(
    r"part \d{1,4} attempt \d{1,3} failed: ([^,\n]{1,120}), retrying"
)
# the Hugging Face Hub: `HfHubHTTPError: 504 Server Error: Gateway Time-out for url:
# https://huggingface.co/...`; transformers' `We couldn't connect to 'https://huggingface.co' to
# load this file`
HUB_SERVER_ERROR_RE = re.compile(r"HfHubHTTPError: (5\d\d) Server Error")
# a proxy given on the command line of Ollama's client, not to the server that downloads
OLLAMA_CLIENT_PROXY_RE = re.compile(
    r"\b(?:HTTPS?_PROXY|https?_proxy)=\S{1,200} +ollama (?:run|pull)\b"
)
# Ray: `ray start --address=10.0.0.1:6379`; `Failed to connect to GCS at address :6379 within 5
# seconds.`; `Could not establish connection to redis 161.97.0.1:12662`; GCS marking a node
# dead: `has been marked dead because the detector has missed too many heartbeats`
RAY_START_ADDRESS_RE = re.compile(
    r"ray start\b[^\n]{0,200}?--address[= ]'?\"?([^\s:'\"]{0,253}):(\d{1,5})"
)
RAY_GCS_FAILED_RE = re.compile(r"Failed to connect to GCS at address ([^\s:]{0,253}):(\d{1,5})")
RAY_REDIS_FAILED_RE = re.compile(
    r"Could not establish connection to redis ([^\s:]{1,253}):(\d{1,5})"
)
PY_POOL_RE = re.compile(r"HTTPS?ConnectionPool\(host=\\?'([^'\s\\]{1,253})\\?', port=(\d{1,5})\)")
AIOHTTP_CONNECT_RE = re.compile(
    r"Cannot connect to host \[?([^\]\s:]{1,253}|[0-9a-fA-F:]{2,39})\]?:(\d{1,5})"
)
HTTP_CLIENT_ERRORS = (
    "ConnectError",
    "ClientConnectorError",
    "NewConnectionError",
    "Max retries exceeded",
)
PY_ERRNO_RE = re.compile(r"\[Errno (111|110|113|101|99|-2|-3|-5)\] ([A-Za-z][^\]'\"\n]{2,60})")
# an HTTP proxy answering for a local server: wget's `Proxy request sent, awaiting response... 502
# Bad Gateway`, httpx's `HTTP Request: POST http://127.0.0.1:11434/v1/chat/completions
# "HTTP/1.1 502 Bad Gateway"`
WGET_PROXY_RE = re.compile(r"Proxy request sent, awaiting response\.\.\. (\d{3})")
HTTPX_LOCAL_502_RE = re.compile(
    r"HTTP Request: [A-Z]{3,7} https?://(?:localhost|127\.0\.0\.1|\[::1\])[:/]\S*"
    r" \"HTTP/[\d.]{1,3} (502) "
)
# what a server listens on: Ollama's `Listening on 127.0.0.1:11434 (version 0.1.0)`,
# llama-server's `server is listening on http://127.0.0.1:8080`, Uvicorn's (vLLM, SGLang)
# `Uvicorn running on http://0.0.0.0:8000`
LISTEN_RE = re.compile(
    r"(?:Listening on|server is listening on https?://|Uvicorn running on https?://)"
    r"\[?([0-9A-Za-z.:-]{1,253}?)\]?:(\d{1,5})\b"
)
# a gateway in front of the server that gave up: nginx's `upstream timed out (110: ...) while
# reading response header from upstream`; the 504 pages of nginx and HAProxy (`The server didn't
# respond in time.`)
NGINX_UPSTREAM_TIMEOUT_RE = re.compile(
    r"upstream timed out \(110: [^)]{1,40}\) while (reading|connecting|sending)"
)
# a response cut before its end: httpx's `peer closed connection without sending complete message
# body`, aiohttp's `Response payload is not completed`, curl's `(18) transfer closed with
# outstanding read data remaining`
STREAM_CUT_WORDS = ("peer closed connection without sending complete message body",
                    "Response payload is not completed",
                    "transfer closed with outstanding read data remaining")  # fmt: skip
# a client's own time limit: asyncio's and aiohttp's TimeoutError, httpx's ReadTimeout
CLIENT_TIMEOUT_RE = re.compile(
    r"\b(asyncio\.(?:exceptions\.)?TimeoutError|aiohttp\.[\w.]{0,40}TimeoutError|ServerTimeoutError"
    r"|httpx\.(?:ReadTimeout|TimeoutException)|Exception:TimeoutError\(\))"
)
# llama.cpp's rpc-server: `Starting RPC server on 0.0.0.0:50052, ...` then `Failed to create
# server socket`
RPC_SERVER_RE = re.compile(r"Starting RPC server on \[?([0-9A-Za-z.:-]{1,253}?)\]?:(\d{1,5})")
# the runner Ollama starts: `ollama runner --model ... --ctx-size 64000 --batch-size 512 ...`
CTX_SIZE_RE = re.compile(r"--ctx-size (\d{1,9})\b")
# ggml's CUDA buffer: `allocating 2508.00 MiB on device 0: cudaMalloc failed: out of memory`
GGML_OOM_RE = re.compile(
    r"allocating ([0-9.]{1,12}) MiB on device (\d{1,3}): cudaMalloc failed: out of memory"
)
# Ollama's inference compute line of an integrated GPU: `library=ROCm ... libdirs=ollama,rocm_v7_2
# ... type=iGPU total="24.0 GiB" available="5.6 GiB"`
OLLAMA_IGPU_RE = re.compile(
    r"type=iGPU total=\"([0-9.]{1,8}) GiB\" available=\"([0-9.]{1,8}) GiB\""
)
OLLAMA_LIBDIRS_RE = re.compile(r"libdirs=([^\s\"]{1,120})")
# aws-ofi-nccl: `NET/OFI Unable to insert remote address into address vector for device 1. RC: 0`
# llama.cpp's CUDA check of 2023: `CUDA error 217 at ggml-cuda.cu:6292: peer access is not supported`
LLAMA_CUDA_ERROR_RE = re.compile(r"CUDA error \d{1,4} at [^\s:]{1,300}:\d{1,7}: ")
# TensorRT's engine from another release: `Version tag does not match. Note: Current Version: 226,
# Serialized Engine Version: 228`
TRT_VERSION_RE = re.compile(r"Current Version: (\d{1,6}), Serialized Engine Version: (\d{1,6})")
# TensorRT-LLM's benchmark against the engine's build-time limits: `check inlen(128) <=
# max_inlen(512) and outlen(512) <= max_outlen(200) failed, skipping.`
TRT_LEN_RE = re.compile(
    r"check inlen\((\d{1,9})\) <= max_inlen\((\d{1,9})\) and outlen\((\d{1,9})\) <= max_outlen\((\d{1,9})\) failed"
)
# HIP's runtime without a code object for the GPU: `Cannot retrieve Static function, error: 218`
HIP_STATIC_FUNC_RE = re.compile(r"Cannot retrieve Static function, error: (\d{1,4})")
HIP_KERNEL_ERRORS = {
    209: "hipErrorNoBinaryForGpu",
    218: "hipErrorInvalidKernelFile",
    98: "hipErrorInvalidDeviceFunction",
}
# Ollama's early NVML probe: `CUDA not detected: nvml vram init failure: 9`
NVML_INIT_RE = re.compile(r"nvml vram init failure: (\d{1,3})")
NVML_ERRORS = {
    9: "NVML_ERROR_DRIVER_NOT_LOADED",
    12: "NVML_ERROR_LIBRARY_NOT_FOUND",
    13: "NVML_ERROR_FUNCTION_NOT_FOUND",
    18: "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
}
# the first line of the kernel's out-of-memory report: `main invoked oom-killer: gfp_mask=...`
OOM_INVOKED_RE = re.compile(r"(?:\]|^|\s)([^\s\]]{1,64}) invoked oom-killer: ")
# llama.cpp's context: `llama_new_context_with_model: n_ctx      = 163840`
LLAMA_N_CTX_RE = re.compile(r"\bn_ctx {1,16}= (\d{1,9})\b")
# vLLM on a GPU before Ampere: `Bfloat16 is only supported on GPUs with compute capability of at
# least 8.0. Your Tesla T4 GPU has compute capability 7.5.`
BF16_CC_RE = re.compile(r"Your ([^\n]{1,60}?) GPU has compute capability (\d{1,2}\.\d)")
# vLLM's KV cache against the longest request: `The model's max seq len (4096) is larger than the
# maximum number of tokens that can be stored in KV cache (3664)`; V0's `# GPU blocks: 229` (16
# tokens a block by default) beside its config's `max_seq_len=4096`; V1's `Maximum concurrency for
# 4,096 tokens per request: 0.89x`
VLLM_KV_SHORT_RE = re.compile(
    r"max seq len \((\d{1,9})\) is larger than the maximum number of tokens that can be stored in KV cache \((\d{1,9})\)"
)
VLLM_BLOCKS_RE = re.compile(r"# GPU blocks: (\d{1,9})")
VLLM_MAX_LEN_RE = re.compile(r"\bmax_seq_len=(\d{1,9})\b")
VLLM_BLOCK_SIZE_RE = re.compile(r"\bblock_size=(\d{1,5})\b")
VLLM_CONCURRENCY_RE = re.compile(
    r"Maximum concurrency for ([\d,]{1,12}) tokens per request: ([0-9.]{1,10})x"
)
# the NVIDIA driver refusing a dma-buf mapping (R595's PCIe topology check):
# `NVRM: dma-buf attach failed: topology not supported for mapping type FORCE_PCIE`
DMABUF_TOPOLOGY_RE = re.compile(
    r"dma-buf attach failed: topology not supported(?: for mapping type (\w{1,32}))?"
)
# the kernel's out-of-memory killer (dmesg): `Out of memory: Killed process 410126 (python)
# total-vm:79905000kB, anon-rss:22957108kB, ...`; in a container `Memory cgroup out of memory: ...`
OOM_KILL_RE = re.compile(
    r"(?:(Memory cgroup) out|Out) of memory: Killed process (\d{1,10}) \(([^)\n]{1,64})\)"
    r"(?:[^\n]{0,80}?anon-rss:(\d{1,12})kB)?"
)
# an Envoy proxy's own log lines (Istio's sidecar): `2022-07-19T18:01:59.173796Z	debug	envoy
# connection	[C72] remote early close`
ENVOY_RE = re.compile(
    r"\b(?:trace|debug|info|warning|error|critical)\s+envoy "
    r"(?:connection|upstream|main|conn_handler|filter|http|pool|router|config|client)\s"
)
# cloud-init stopping on two interfaces of one MAC (an IPoIB interface beside Ethernet):
# `RuntimeError: duplicate mac found! both 'eth1' and 'ib0' have mac`
DUPLICATE_MAC_RE = re.compile(r"duplicate mac found! both '([^'\n]{1,40})' and '([^'\n]{1,40})'")
# Kubernetes' Pod Security Admission refusing a pod: `violates PodSecurity "baseline:latest"`
POD_SECURITY_RE = re.compile(r'violates PodSecurity "(\w{1,20}):[^"\n]{0,20}"')
# slurmd: `gres/gpu GRES autodetected core affinity 0-7 on node node0 doesn't match socket
# boundaries. (Socket 0 is cores 0-1)`
SLURM_GPU_AFFINITY_RE = re.compile(
    r"gres/gpu GRES autodetected core affinity (\S{1,60}) on node (\S{1,255}) doesn't match socket boundaries"
)
NET_ID_MISSING_RE = re.compile(r"Could not find NET with id (\d{1,6})")  # graph/topo.h
FR_COLLECTIVE_RE = re.compile(r"collective: (\w{1,40}):(\w{1,60})")  # `collective: nccl:all_reduce`
BUS_ERROR_RE = re.compile(r"\b[Bb]us error\b(?!s)")  # SIGBUS, not a counter of PCIe bus errors
# vLLM's pynccl: `Loading nccl from library /root/.config/vllm/nccl/cu12/libnccl.so.2.18.1`
LIBRARY_RE = re.compile(r"Loading \w+ from library (\S+)")
IB_OPEN_RE = re.compile(r"NET/IB\s*:\s*Unable to open device (\S{1,64})")
# MPI's collective layer (UCC, under Open MPI / HPC-X): `tl_shm_team.c:617 TL_SHM ERROR ...`
UCC_ERROR_RE = re.compile(r"\btl_\w+\.c:\d+\s+(TL_\w+) ERROR")
# RCCL (init.cc): `Missing "iommu=pt" from kernel command line which can lead to system ...`
KERNEL_ARG_RE = re.compile(r'Missing "([\w=.-]{1,40})" from kernel command line')
# `NCCL_DEBUG=INFO NCCL_SHM_DISABLE=1 mpirun -H a,b ...`: variables set for the local shell only
ENV_PREFIX_RE = re.compile(r"^[^=]*?(?:^|[\s$#>])((?:[A-Z_][A-Z0-9_]*=\S*\s+)+)(?:\S*/)?mpirun\b")
PROXY_RE = re.compile(
    r"Proxy Call to rank (\d+) failed \((\w+)\)|Failed to execute operation (\w+) from rank (\d+)"
)
GID_SELECTED_RE = re.compile(r"\bGID (\d+) \(([0-9A-Fa-f]+)/")
GID_TABLE_RE = re.compile(r"GID\[\s*(\d+)\]:\s*([0-9A-Fa-f:.]+),\s*RoCE v(\d)")
SPEED_RE = re.compile(r"Could not get speed from /sys/class/net/([\w.@-]+)/speed")
TRACE_RE = re.compile(r"^(?:[\w.-]+/)*([\w.-]+?)\.(?:cc|cu|c|cpp|h):\d+ -> \d+")
STAGES = ("bootstrap", "net_ib", "net_socket", "ib_plugin", "p2p", "shm", "proxy")
TEST_FAIL_RE = re.compile(r"Test NCCL failure \S+ '([^'/]*)")

# The failure patterns below are matched against the lower-cased message: a case-blind
# regular expression cannot skip ahead to its first letter and costs ~10x more per line.
SOCKET_ERRORS = (  # (event kind, what the line says), first match wins
    ("connect_abort", re.compile(r"software caused connection abort")),
    ("connect_refused", re.compile(r"connection refused")),
    ("peer_reset", re.compile(r"connection reset by peer|broken pipe")),
    ("peer_closed", re.compile(r"connection closed by (?:remote peer|localrank)")),
    ("connect_timeout", re.compile(r"connect\w*\b.*?(?:failed|returned)\s*:?\s*connection timed out")),
    ("unreachable", re.compile(r"(?:connect|recv|send)\w*\b.*?(?:network is unreachable|no route to host)")),
)  # fmt: skip
# NCCL result codes as PyTorch and nccl-tests spell them
NCCL_ERRORS = (
    ("ncclUnhandledCudaError", re.compile(r"ncclunhandledcudaerror|unhandled cuda error")),
    ("ncclSystemError", re.compile(r"ncclsystemerror|unhandled system error")),
    ("ncclRemoteError", re.compile(r"ncclremoteerror|remote process exited or there was a network error")),
    ("ncclInternalError", re.compile(r"ncclinternalerror|nccl error.*internal error|test nccl failure .*internal error")),
    ("ncclInvalidUsage", re.compile(r"ncclinvalidusage|invalid usage")),
)  # fmt: skip
CRASH_WORDS = (  # lower-cased: a line holding one shows a failure
    "distbackenderror", "terminate called", "nccl error in:", "test nccl failure", "test cuda failure",
    "runtimeerror: nccl", "segmentation fault", "ncclcomminitrank failed", "nccl check failed",
    "process received signal",  # Open MPI's signal handler: `*** Process received signal ***`
    # glibc's allocator aborting on a corrupted heap (`free(): corrupted unsorted chunks`)
    "double free or corruption", "free(): corrupted", "malloc(): corrupted", "corrupted size vs. prev_size",
    "[error] hccl(", "[error]hccl(",  # HCCL's ERROR level (Ascend)
)  # fmt: skip
# WARN lines that say nothing is wrong (NCCL falls back on its own)
# WARNs NCCL goes on past (lower-cased): kept as warnings, never as errors. The harmless ones do
# not count as a warning either: NCCL_CUDA_PATH naming a folder without libcuda.so (cudawrap.cc;
# NCCL reaches the driver through the CUDA runtime, and the thread's hang had another cause:
# NVIDIA/nccl-tests#115)
HARMLESS_WARNINGS = ("failed to find cuda library in",)
BENIGN_WARNINGS = ("failed to open libibverbs", "could not get speed", *HARMLESS_WARNINGS)


def harmless_warning(msg: str) -> bool:
    """A WARN that says nothing about a failure (see HARMLESS_WARNINGS)."""
    lower = msg.lower()
    return any(words in lower for words in HARMLESS_WARNINGS)


VIRTUAL_IFACE_RE = re.compile(
    r"^(?:veth|docker|br-|virbr|cni|flannel|cali|ip6tnl|tunl|tun|tap|wg|vxlan|gre|CloudflareWARP|utun|enx|lo$)",
    re.I,
)

# ibv_wc_status values (libibverbs verbs.h) and what they usually mean on a cluster
WC_STATUS = {
    4: "IBV_WC_LOC_PROT_ERR: local protection error — on GPUs usually PCIe ACS/IOMMU breaking GPUDirect RDMA",
    5: "IBV_WC_WR_FLUSH_ERR: work request flushed after an earlier error on the queue pair",
    10: "IBV_WC_REM_ACCESS_ERR: remote access error",
    12: "IBV_WC_RETRY_EXC_ERR: transport retry counter exceeded — the NICs cannot reach each other (GID, routing, lossy link) or the peer died",
    13: "IBV_WC_RNR_RETRY_EXC_ERR: receiver-not-ready retries exceeded",
}


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


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


Detail = tuple[tuple[str, str | int | None], ...]


class Found(NamedTuple):
    """What the failure patterns found in one message (see ``_detect``)."""

    events: tuple[tuple[str, Detail], ...] = ()  # (kind, details) in the order found
    completion: int | None = None  # an ibv_wc_status from a completion error
    gid_entry: tuple[int, str, int] | None = None  # (index, GID, RoCE version) of a GID table


NOTHING = Found()


def _cuda_failure_line(msg: str) -> bool:
    """NCCL's `Cuda failure '...'` or nccl-tests' `Test CUDA failure ... '...'`: the CUDA error
    read from it names what it implies (``_detect``)."""
    return "Cuda failure" in msg or "CUDA failure" in msg


# CUDA errors whose rules read them as NCCL's own calls failing (invalid argument: NCCL 2.18's
# cudaMemcpyAsync; invalid resource handle: its allocation; not supported: cuMem), so another
# program's line quoting one is not taken for them
_NCCL_ONLY_CUDA_CODES = frozenset({1, 400, 801})


def _nccl_symbol_missing(msg: str) -> tuple[str, str] | None:
    """`<path>/libtorch_cuda.so: undefined symbol: ncclMemFree`: (the library's file name, the
    symbol; "" where a pasted message wrapped the path onto the line before). The literal is found
    first and the path read back from it (a pattern for the path would try every position of a
    long line)."""
    at = msg.find(": undefined symbol: nccl")
    if at < 0 and msg.lstrip().startswith("undefined symbol: nccl"):  # the path on the line before
        sym = NCCL_SYMBOL_RE.match(msg.lstrip(), len("undefined symbol: "))
        return ("", sym.group(0)) if sym is not None else None
    if at < 0 or (sym := NCCL_SYMBOL_RE.match(msg, at + len(": undefined symbol: "))) is None:
        return None
    before = msg[max(0, at - 200) : at].split()
    return (before[-1].rsplit("/", 1)[-1] if before else ""), sym.group(0)


def _release_of_code(code: int) -> str:
    """NCCL_VERSION_CODE as a release: 22105 -> 2.21.5 (since 2.9), 2804 -> 2.8.4 (before)."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _cuda_error_quoted(msg: str) -> tuple[str, int, str] | None:
    """The CUDA error a line quotes after `CUDA error: ` (PyTorch, most CUDA programs) or after
    a driver enum's name (`CUDA_ERROR_ILLEGAL_ADDRESS: an illegal ...`): (its text as the line
    has it, code, name), for the errors ``cuda_errors`` lists."""
    at = msg.find("CUDA error: ")
    if at >= 0:
        rest = msg[at + len("CUDA error: ") :]
    elif (
        ll := LLAMA_CUDA_ERROR_RE.search(msg)
    ) is not None:  # llama.cpp 2023: `CUDA error 217 at f:1: `
        rest = msg[ll.end() :]
    elif (at := msg.find("CUDA runtime error in ")) >= 0 and (end := msg.find("): ", at)) >= 0:
        rest = msg[end + 3 :]  # TensorRT-LLM: `CUDA runtime error in ::cudaMallocAsync(...): `
    elif (at := msg.find(": ", msg.find("CUDA_ERROR_"))) >= 0:
        rest = msg[at + 2 :]
    else:
        return None
    rest = rest.lstrip()
    if (known := cuda_error(rest)) is None:
        return None
    return rest[: len(known[0])], known[1], known[2]


def _detect_outside(msg: str, add: Any) -> None:
    """What a job prints beside NCCL's own lines (PyTorch, the launcher, libfabric): read only
    on lines without NCCL's layout, so a large log's NCCL lines do not pay for them."""
    if "prov_err" in msg and (pe := PROV_ERR_RE.search(msg)) is not None:
        add("ofi_provider_error", provider=pe.group(1), err=int(pe.group(2)),
            prov_err=pe.group(3).strip(), code=int(pe.group(4)))  # fmt: skip
    if "Detected mismatch between collectives" in msg:
        ds = DESYNC_RE.search(msg)
        add("collective_desync", rank_a=_int(ds.group(1)) if ds else None,
            sequence=_int(ds.group(2)) if ds else None, op_a=ds.group(3) if ds else None,
            shape_a=ds.group(4) if ds else None, rank_b=_int(ds.group(5)) if ds else None,
            op_b=ds.group(6) if ds else None, shape_b=ds.group(7) if ds else None)  # fmt: skip
    if "Invalid config blocking attribute" in msg:
        add("nccl_config_invalid")
    if "Address already in use" in msg and STORE_RE.search(msg) is not None:
        port = STORE_BIND_RE.search(msg)
        add("store_port_in_use", port=_int(port.group(1)) if port else None)
    if "invalid device ordinal" in msg and "Cuda failure" not in msg:  # else the CUDA error's
        add("device_ordinal")
    # PyTorch's `CUDA error: <text>`, the driver API's `CUDA_ERROR_X: <text>`
    quoted = (_cuda_error_quoted(msg) if "CUDA error" in msg or "CUDA_ERROR_" in msg
              or "CUDA runtime error in" in msg else None)  # fmt: skip
    if quoted is not None and quoted[1] not in _NCCL_ONLY_CUDA_CODES:
        add("cuda_error", code=quoted[1], text=quoted[0], where=None, by_program=1,
            p2p_unsupported=int(quoted[1] == 217))  # fmt: skip
        if quoted[1] == 222:  # PTX from a newer toolkit than the driver: the driver is too old
            add("cuda_driver_old")
    if "Process name:" in msg and (mp := MPI_PROCESS_RE.search(msg)) is not None:
        add("process_exit", process_rank=int(mp.group(1)), code=None, signal=None, node=None)
    if "exited on signal" in msg and (ms := MPI_SIGNAL_RE.search(msg)) is not None:
        add("process_exit", process_rank=int(ms.group(1)), code=None,
            signal=f"{ms.group(3)}" + (f" ({ms.group(4)})" if ms.group(4) else ""), node=ms.group(2))  # fmt: skip
    if ("resolve hostname" in msg or "getaddrinfo" in msg) and (
        rs := RESOLVE_RE.search(msg)
    ) is not None:
        add("host_unresolved", name=rs.group(1) or rs.group(2))
    if "NVRM: Xid" in msg and (xm := XID_LINE_RE.search(msg)) is not None:
        add(
            "gpu_xid",
            code=int(xm.group(2)),
            device=xm.group(1).strip(),
            message=xm.group(3).strip()[:160],
        )
    if "us error" in msg and BUS_ERROR_RE.search(msg) is not None:
        add("bus_error")
    if "from library" in msg and (ll := LIBRARY_RE.search(msg)) is not None:
        add("library_loaded", path=ll.group(1))
    if "use_libuv" in msg and "without libuv" in msg:
        add("store_no_libuv")
    if (
        "client socket has failed to connect" in msg
        and (sc := STORE_CONNECT_RE.search(msg)) is not None
    ):
        add("store_connect_failed", address=sc.group(1), port=int(sc.group(2)),
            errno=int(sc.group(3)), error=sc.group(4))  # fmt: skip
    if "client socket has timed out" in msg and (st := STORE_TIMEOUT_RE.search(msg)) is not None:
        add("store_connect_failed", address=st.group(3), port=int(st.group(4)), errno=110,
            error=f"timed out after {st.group(1)} {st.group(2)}")  # fmt: skip
    if "Error" in msg or "Exception" in msg:
        pe = PY_EXCEPTION_RE.match(msg.strip())
        # after a logger's own prefix too: vLLM's `ERROR 11-18 18:07:28 engine.py:366] ValueError:`
        if pe is None and (cut := msg.rfind("] ")) >= 0:
            pe = PY_EXCEPTION_RE.match(msg[cut + 2 :].strip())
        if pe is not None:
            add("python_exception", exception=pe.group(1), message=(pe.group(2) or "").strip())
    unknown_result = "unknown result code" in msg  # ncclGetErrorString's default
    if unknown_result and NCCL_WORD_RE.search(msg) is not None:
        add("nccl_unknown_result")
    if "Invalid __" in msg and (sa := SANITIZER_ACCESS_RE.search(msg)) is not None:
        add("sanitizer_invalid_access", access=sa.group(1), size=int(sa.group(2)))
    if "at nccl" in msg and (sf := SANITIZER_NCCL_FRAME_RE.match(msg)) is not None:
        add("sanitizer_nccl_frame", function=sf.group(1))
    if "match socket boundaries" in msg and (sg := SLURM_GPU_AFFINITY_RE.search(msg)) is not None:
        add("slurm_gpu_affinity_socket", cores=sg.group(1), node=sg.group(2))
    if "IP: " in msg and (oo := NVIDIA_OOPS_RE.search(msg)) is not None:
        add("nvidia_driver_oops", module=oo.group(1))
    if "duplicate mac found" in msg and (dm := DUPLICATE_MAC_RE.search(msg)) is not None:
        add("duplicate_mac", iface_a=dm.group(1), iface_b=dm.group(2))
    _detect_llama_cpp(msg, add)
    _detect_serving(msg, add)
    _detect_clients(msg, add)
    if "dma-buf attach failed" in msg and (db := DMABUF_TOPOLOGY_RE.search(msg)) is not None:
        add("dmabuf_topology_refused", mapping=db.group(1))
    if "GLOBAL_RANK: " in msg and (pr := PL_RANK_RE.search(msg)) is not None:
        add(
            "pl_rank", global_rank=int(pr.group(1)), member=int(pr.group(2)), world=int(pr.group(3))
        )
    if "Multi-processing is handled by Slurm" in msg:  # Lightning found SLURM's environment
        add("pl_slurm_handled")
    if "without SLURM handling the processes" in msg:  # NeMo's exp_manager
        add("nemo_slurm_not_handling")
    if "NIXL_ERR_" in msg and (nx := NIXL_ERR_RE.search(msg)) is not None:
        add("nixl_error", code=nx.group(1))
    if "VRAM memory is detected as host" in msg or "UCX CUDA support was not found" in msg:
        add("ucx_vram_as_host")  # NIXL's UCX backend: UCX opened no CUDA memory domain
    if "UCX_TLS=" in msg and (tl := UCX_TLS_RE.search(msg)) is not None:
        add("ucx_tls", value=tl.group(1))
    if "mlx5dv_devx_uar" in msg or "ibgda_alloc_and_map_qp_uar failed" in msg:
        add("nvshmem_uar_failed")  # NVSHMEM's IBGDA transport (DeepEP) out of NIC doorbell pages
    if "GID is NULL" in msg and "MC_GID_INDEX" in msg:  # Mooncake's transfer engine
        add("mooncake_gid_null")
    if "Killed process" in msg and (ok := OOM_KILL_RE.search(msg)) is not None:
        rss = ok.group(4)
        add("host_oom_killed", pid=int(ok.group(2)), program=ok.group(3),
            rss_gb=round(int(rss) / 1e6, 1) if rss else None,
            cgroup=ok.group(1) is not None)  # fmt: skip
    if "invoked oom-killer" in msg and (oi := OOM_INVOKED_RE.search(msg)) is not None:
        add("host_oom_invoked", program=oi.group(1))  # the report's first line: who asked
    if "envoy " in msg and ENVOY_RE.search(msg) is not None:
        add("envoy_sidecar")
    # PyTorch's ProcessGroupNCCL ending the process after a failed or timed-out NCCL operation
    if "Some NCCL operations have failed or timed out" in msg:
        add("pg_nccl_aborted")
    if "In use by another client" in msg and "MigConfig" in msg:  # the GPU Operator's MIG manager
        add("mig_in_use")
    if "violates PodSecurity" in msg and (ps := POD_SECURITY_RE.search(msg)) is not None:
        add("pod_security_forbidden", level=ps.group(1))
    if "same CUDA device for multiple distinct roles" in msg:  # TRL: trainer and vLLM server
        add("duplicate_gpu", rank_a=None, rank_b=None, device=None)
    if (
        "Not all ranks joining collective" in msg
        and (fr := FR_NOT_JOINED_RE.search(msg)) is not None
    ):
        add("fr_not_joined", collective=int(fr.group(1)))  # PyTorch's flight recorder analyser
    if "missing ranks:" in msg and (fm := FR_MISSING_RE.match(msg.strip())) is not None:
        add("fr_missing_ranks", ranks=fm.group(1))
    if "collective: " in msg and (fc := FR_COLLECTIVE_RE.fullmatch(msg.strip())) is not None:
        add("fr_collective", backend=fc.group(1), op=fc.group(2))
    if "memory capacity is unbalanced" in msg:  # SGLang's check of free memory across its GPUs
        add("gpu_memory_unbalanced")
    if "ncclDevCommCreate failed" in msg:  # PyTorch's symmetric memory on NCCL's device API
        add("nccl_devcomm_failed")
    if "rendezvous endpoint" in msg and (rp := RDZV_PORT_RE.search(msg)) is not None:
        add("rdzv_endpoint_invalid", endpoint=rp.group(1))
    if ("master_addr=" in msg or "master-addr=" in msg or "Using IP address of" in msg
            or "MASTER_ADDR expected" in msg) and MASTER_ADDR_EMPTY_RE.search(msg) is not None:  # fmt: skip
        add("master_addr_missing")
    if "did not receive grad" in msg and (du := DDP_UNUSED_RE.search(msg)) is not None:
        add("ddp_unused_params", on_rank=int(du.group(1)), params=du.group(2).strip())
    elif "Expected to have finished reduction in the prior iteration" in msg:
        add("ddp_unused_params", on_rank=None, params=None)
    if "CUDA out of memory" in msg and (oom := TORCH_OOM_RE.search(msg)) is not None:
        add("torch_cuda_oom", tried=oom.group(1))
    if "driver version is insufficient" in msg and not _cuda_failure_line(msg):
        add("cuda_driver_old")  # (else the CUDA error's)
    if "mpiSize == tp * pp" in msg:  # TensorRT-LLM's WorldConfig
        add("trtllm_world_size")
    if "TL_" in msg and (ue := UCC_ERROR_RE.search(msg)) is not None:
        add("ucc_error", layer=ue.group(1))
    if "system not yet initialized" in msg and not _cuda_failure_line(msg):
        add("cuda_not_initialized")  # (else the CUDA error's)
    if "watchdog thread terminated with exception" in msg:
        add("watchdog_exception", error=msg.split("with exception:", 1)[-1].strip()[:200])
    if "mpirun" in msg and (pre := ENV_PREFIX_RE.search(msg)) is not None:
        names = [a.split("=", 1)[0] for a in pre.group(1).split()]
        if not any(f"-x {n}" in msg for n in names):
            add("mpirun_env_prefix", names=" ".join(names))
    if "# nThread" in msg:
        add("nccl_tests_output")
    if "slot ids are used" in msg and "multicast" in msg:  # Fabric Manager's log
        add("nvls_slots_exhausted")
    if "Libfabric error" in msg and (lf := LIBFABRIC_ERR_RE.search(msg)) is not None:
        add("libfabric_error", code=int(lf.group(1)), error=lf.group(2)[:120])
    if "Failure to post internal receive buffers" in msg:  # the EFA provider's own
        add("efa_rx_post_failed")
    if "Test HIP failure" in msg and (hd := HIP_DEVICE_RE.search(msg)) is not None:
        add("hip_no_device", error=hd.group(2), where=hd.group(1))
    if ("ROCm-capable" in msg or "initialize ROCm" in msg) and (
        rn := ROCM_NO_DEVICE_RE.search(msg)
    ) is not None:
        add("hip_no_device", error=rn.group(0), where="start-up")
    if " symbol " in msg and (ms := MODULE_SYMBOL_RE.search(msg.rstrip())) is not None:
        before = msg[: ms.start()].split()
        symbol = ms.group(1) or ms.group(2)
        kind = "peermem_symbol_mismatch" if symbol == "ib_register_peer_memory_client" else "module_symbol_mismatch"  # fmt: skip
        if before and before[-1].replace("_", "").replace("-", "").isalnum():
            add(kind, module=before[-1][:64], symbol=symbol)
    if "allocate memory" in msg and OFI_MR_REG_RE.search(msg) is not None:
        add("ofi_mr_no_memory")  # ENOMEM registering memory with the NIC
    if "IB devices list" in msg and (dl := IB_DEVICES_LIST_RE.search(msg)) is not None:
        add("ib_devices_list_failed", error=dl.group(1)[:120])
    if "kernel ABI" in msg and (ka := VERBS_ABI_RE.search(msg)) is not None:
        add("verbs_kernel_abi", driver=ka.group(1)[:80])
    if "Unable to find a match" in msg and (hm := HEADERS_MISSING_RE.search(msg)) is not None:
        add("kernel_headers_unavailable", package=hm.group(1).strip("*")[:120])
    if "--releasever=" in msg and (rv := DNF_RELEASEVER_RE.search(msg)) is not None:
        el = EL_RELEASE_RE.search(rv.group(2))
        if el is not None and f"{el.group(1)}.{el.group(2)}" != rv.group(1):
            add("dnf_releasever_stale", releasever=rv.group(1), kernel_release=f"{el.group(1)}.{el.group(2)}")  # fmt: skip
    if "Driver/library version mismatch" in msg:  # NVML: modules and libraries of two releases
        add("nvml_version_mismatch")
    if "Upgrade: " in msg and (au := APT_NVIDIA_UPGRADE_RE.search(msg.strip())) is not None:
        add("apt_nvidia_upgrade", package=au.group(1)[:80])
    if "driver interface version" in msg and (fm := FM_DRIVER_MISMATCH_RE.search(msg)) is not None:
        add("fm_driver_mismatch", fm_version=fm.group(1), driver_version=fm.group(2).rstrip("."))
    if "file creation failed" in msg and (fe := CONTAINER_FILE_EXISTS_RE.search(msg)) is not None:
        add("container_file_exists", file=fe.group(1))
    if "unsupported config version" in msg and (cv := CONTAINERD_CONFIG_VERSION_RE.search(msg)) is not None:  # fmt: skip
        add("containerd_config_unsupported", version=int(cv.group(1)))
    if "undefined symbol: nccl" in msg and (us := _nccl_symbol_missing(msg)) is not None:
        add("nccl_symbol_missing", symbol=us[1], library=us[0])
    if "nvidia-nccl-cu" in msg and (nw := NCCL_WHEEL_RE.search(msg)) is not None:
        add("nccl_wheel", cuda=int(nw.group(1)), version=nw.group(2))
    if "(Down)" in msg and (pd := IBDEV2NETDEV_DOWN_RE.search(msg.strip())) is not None:
        add("rdma_port_down", device=pd.group(1), port=int(pd.group(2)), netdev=pd.group(3))
    if (en := ERRNO_RE.search(msg)) is not None:  # (every text of ERRNO_TEXTS is a screen word)
        add("errno_text", name=ERRNO_TEXTS[en.group(0)], text=en.group(0))
    if "No available shared memory broadcast" in msg:  # vLLM's engine waiting on its workers
        add("vllm_workers_wait")
    if "OFI MTL is aborting" in msg or "Mismatched address format" in msg:  # Open MPI, libfabric
        add("mpi_ofi_abort")
    if "UCX" in msg:
        if _ucx_no_locked_memory(msg):  # read as MVAPICH2's `cannot create cq`
            add("mpi_cq_create_failed")
        elif (ux := UCX_ERROR_RE.search(msg)) is not None:
            add("ucx_error", error=ux.group(1)[:160])
    if ("custom_all_reduce" in msg or "TensorRT-LLM][ERROR]" in msg) and "peer access is not supported" in msg:  # fmt: skip
        add("engine_custom_ar_no_p2p")  # vLLM's / SGLang's / TensorRT-LLM's own all-reduce kernel
    elif "custom_all_reduce" in msg and (ca := CUSTOM_AR_ERROR_RE.search(msg)) is not None:
        add("vllm_custom_ar_error", error=ca.group(2), where=f"custom_all_reduce.cuh:{ca.group(1)}")
    if "Version mismatch: The cluster was started with" in msg:  # Ray's check_version_info
        add("ray_version_mismatch")
    if "NCCL_CHUNK_SIZE=" in msg and (cs := CHUNK_SIZE_RE.search(msg)) is not None:
        add("chunk_size_set", value=cs.group(1))  # a launcher's -x / env prefix
    if "ncclLocalOpAppend" in msg:  # a stack frame: the rank waits for a free proxy op
        add("proxy_op_wait")
    if "orted: command not found" in msg:
        add("orted_not_found")
    if "Data unpack would read past end of buffer" in msg:  # Open MPI's ORTE
        add("orte_unpack_error")
    if "finished its bootstrapping phase" in msg:  # Python multiprocessing, spawn
        add("spawn_no_main_guard")
    if "cuMemCreate" in msg and "operation not permitted" in msg:  # fabric handles need IMEX
        add("cumem_create_not_permitted")
    if "Could not load" in msg and "TensileLibrary" in msg:  # hipBLASLt / rocBLAS kernels
        add("tensile_load_failed")
    if "Unable to find address for" in msg and (ga := GLOO_ADDR_RE.search(msg)) is not None:
        add("gloo_iface_missing", name=ga.group(1))  # Gloo's device.cc: GLOO_SOCKET_IFNAME
    if "Unable to resolve hostname to a (local) address" in msg:  # Gloo falls back to loopback
        add("gloo_loopback_fallback")
    if "userbuffers" in msg and "NCCL error" in msg:  # TransformerEngine's TP overlap
        add("te_userbuffers_failed")
    if "ncclCuMemHostEnable" in msg:  # a stack frame: the cuMem host probe (misc/cudawrap.cc)
        add("cumem_host_probe_frame")
    if "can fulfill resource request" in msg:  # Ray's autoscaler; the request may wrap
        rq = RAY_NODE_REQUEST_RE.search(msg)
        add("ray_node_request_unmet", address=rq.group(1) if rq else None)
    if "libibverbs: Warning" in msg and (vp := VERBS_PROVIDER_RE.search(msg)) is not None:
        add("verbs_no_provider", what=vp.group(1) or f"driver '{vp.group(2)}'")
    if "not enough slots available" in msg:  # Open MPI's mapper: -np over the hosts' slots
        add("mpi_not_enough_slots")
    if "cannot create cq" in msg:  # MVAPICH2's InfiniBand channel (rdma_iba_hca_init)
        add("mpi_cq_create_failed")
    if "managing GPU" in msg and (rp := RAS_PROCESS_RE.search(msg)) is not None:
        add("ras_process_missing", pid=int(rp.group(1)), node=rp.group(2), gpu=int(rp.group(3)))
    if "considered dead (unreachable via the RAS network)" in msg:
        add("ras_process_dead")
    if "monitoredBarrier" in msg and (mb := MONITORED_BARRIER_RE.search(msg)) is not None:
        add("monitored_barrier_missing", ranks=mb.group(1), timeout_ms=int(mb.group(2)))
    if "GTL library is not linked" in msg:  # Cray MPICH: GPU support asked, not linked
        add("cray_gtl_not_linked")
    if "NIC_POLICY" in msg and (nicp := NIC_POLICY_RE.search(msg)) is not None:
        add("cray_nic_policy_unconfined", policy=nicp.group(1), rank=int(nicp.group(2)))
    if "OMPI was not built with SLURM" in msg:  # Open MPI started by srun (either wording)
        add("ompi_no_slurm_pmi")
    if "Event Queue overflow" in msg:  # libfabric's cxi provider (Slingshot's Cassini NIC)
        add("cxi_eq_overflow")
    if "NBC_Progress" in msg or "ompi_coll_libnbc_progress" in msg:  # a stack frame
        add("ompi_libnbc_frame")
    if "different collective operation counts" in msg:  # NCCL's RAS status: MISMATCH
        add("ras_mismatch")
    if "gds_ds12" in msg:  # PMIx's shared-memory data store (open-mpi/ompi#7516)
        add("pmix_gds_ds12")
    if "plugin for switch/hpe_slingshot" in msg:  # srun: Slurm's Slingshot plugin did not load
        add("slurm_switch_plugin_missing")
    if "fi_getinfo: -61" in msg:  # fi_info's own: no provider matches (ENODATA)
        add("ofi_no_provider")
    if "busy or unavailable" in msg and not _cuda_failure_line(msg):  # (else the CUDA error's)
        add("gpu_busy_unavailable")
    if "Failed to initialize NVML: Unknown Error" in msg:  # a container that lost its GPUs
        add("nvml_unknown_error")
    if "No PMIx server was reachable" in msg:  # Open MPI under srun without --mpi=pmix
        add("pmix_server_unreachable")
    if "due to shape mismatches" in msg:  # Accelerate's debug check before a collective
        add("shapes_differ")
    if "ucs_handle_error" in msg:  # a stack frame: UCX's signal handler caught the crash
        add("ucx_signal_handler")
    if "driver rpc error: timed out" in msg:  # nvidia-container-cli could not reach the driver
        add("container_driver_timeout")
    if "XidCriticalError" in msg and (px := PLUGIN_XID_RE.search(msg)) is not None:
        add("gpu_xid", code=int(px.group(1)), device=px.group(2),
            message="the device plugin marked the GPU unhealthy")  # fmt: skip
    if "In Progress" in msg and FABRIC_STATE_RE.match(msg) is not None:
        add("fabric_state_in_progress")
    if "JAX distributed service detected fatal errors" in msg:  # JAX's processes share fate
        add("jax_service_fatal")
    if "/job:" in msg and (jt := JAX_TASK_RE.match(msg)) is not None:  # a task it names
        add("jax_task_named", task=int(jt.group(1)))
    if "remote target coordination_service" in msg:  # process 0's service is gone
        add("jax_coordinator_lost")
    if "incarnation id" in msg and INCARNATION_RE.search(msg) is not None:  # a collective cancelled
        add("jax_task_disconnected")
    if "UCX worker address" in msg or "resolve UCX endpoint" in msg:  # Open MPI's pml_ucx
        add("ucx_error", error=msg.strip()[:160])
    if "cannot create directory" in msg and (ed := ENROOT_MKDIR_RE.search(msg)) is not None and ENROOT_BY_RE.search(msg, 0, ed.start()):  # fmt: skip
        add("enroot_dir_denied", path=ed.group(1))  # in what pyxis prints of enroot's log
    if "failed to create user namespace" in msg and (un := USERNS_RE.search(msg)) is not None:
        add("userns_failed", reason=un.group(1).strip())  # enroot-nsenter, and others
    if "pyxis" in msg and (px := PYXIS_FAILED_RE.search(msg)) is not None:
        add("pyxis_failed", step=px.group(1))
    if "returned error code: 401" in msg and (rg := REGISTRY_401_RE.search(msg)) is not None:
        add("registry_unauthorized", registry=rg.group(1), image=rg.group(2))
    if "connectFullMesh failed" in msg:  # PyTorch's Gloo group: every pair of ranks over TCP
        add("gloo_full_mesh_failed")
    if "ib_umad" in msg and FM_UMAD_RE.search(msg) is not None:
        add("fm_ib_umad_missing")
    if "NV_WARN_NOTHING_TO_DO" in msg:  # Fabric Manager, with no NVSwitch to set up
        add("fm_nothing_to_do")
    if "Number of GPUs detected" in msg:  # GKE TCPXO's RxDM
        if (rc := RXDM_COUNT_RE.search(msg)) is not None:
            add("rxdm_gpus_mismatch", detected=int(rc.group(1)), actual=int(rc.group(2)))
        elif RXDM_PCI_RE.search(msg) is not None:
            add("rxdm_no_pci_gpus")
    if "HCCL_SOCKET_IFNAME" in msg and (hi := HCCL_IFNAME_RE.search(msg)) is not None:
        add("hccl_ifname_missing", name=hi.group(1))
    if 'for config "tls" is invalid' in msg:  # HCCL's rank-table check
        add("hccl_tls_mismatch")
    if "CMD information" in msg and (hc := HCCL_CMD_RE.search(msg)) is not None:
        add("hccl_op_mismatch", local=hc.group(1), remote=hc.group(2))
    if "device ip family" in msg and (hf := HCCL_FAMILY_RE.search(msg)) is not None:
        add("hccl_ip_family_mismatch", family=HCCL_FAMILIES.get(hf.group(1), hf.group(1)),
            others=HCCL_FAMILIES.get(hf.group(2), hf.group(2)))  # fmt: skip
    _detect_hccl(msg, add)
    if "Transport endpoint is not connected" in msg and OFI_NOT_CONNECTED_RE.search(msg) is not None:  # fmt: skip
        add("mpi_ofi_not_connected")  # Intel MPI's OFI netmod
    if ("errno=113" in msg or "No route to host (113)" in msg) and BTL_TCP_NO_ROUTE_RE.search(msg) is not None:  # fmt: skip
        add("mpi_tcp_no_route")
    if "Failed to start nvml with error" in msg:  # the Kubernetes device plugin's
        add("device_plugin_nvml")
    if "load library failed" in msg and (cn := CONTAINER_NVML_RE.search(msg)) is not None:
        add("container_nvml_missing", library=cn.group(1))
    if "OFI addrinfo() failed" in msg or "OFI fi_getinfo() failed" in msg:  # Intel MPI, MPI_Init
        add("mpi_ofi_addrinfo")
    if (
        "cuda_set_sync_memops" in msg or "unable to set memops for cuda ptr" in msg
    ):  # EFA's libfabric
        add("efa_sync_memops")
    if "' exceeded" in msg and (ql := CLOUD_QUOTA_RE.search(msg)) is not None:
        add("cloud_quota_exceeded", quota=ql.group(1))
    if "allowance_exceeded" in msg and (al := ENA_ALLOWANCE_RE.search(msg)) is not None:
        add("ena_allowance_exceeded", counter=al.group(1), count=int(al.group(2)))
    if "Too many open files" in msg:  # EMFILE, in any program's words
        add("open_files_exhausted")
    if "DNS resolution failed" in msg:  # MindSpore's msrun, and others, in their own words
        add("host_unresolved", name=None)
    # PyTorch's TCPStore before 1.11 and torchelastic: `ValueError: host not found: Name or
    # service not known`; c10d's socket.cpp: `The IPv6 network addresses of (node1, 29500) cannot
    # be retrieved (gai error: -3 - Temporary failure in name resolution)` (EAI_NONAME -2 too)
    if "host not found: " in msg and HOST_NOT_FOUND_RE.search(msg) is not None:
        add("host_unresolved", name=None)
    if "cannot be retrieved (gai error: -" in msg and (gn := GAI_NAME_RE.search(msg)) is not None:
        add("host_unresolved", name=gn.group(1))
    if "Can't pickle" in msg:  # a spawned worker's arguments (multiprocessing spawn)
        add("spawn_pickle_error")
    if "exitcode" in msg and (te := TORCHRUN_EXIT_RE.search(msg)) is not None:
        add("process_exit", process_rank=int(te.group(2)), code=int(te.group(1)), signal=None,
            node=None)  # fmt: skip
        if te.group(1) == "-7":  # a negative status is the signal that ended it: 7 is SIGBUS
            add("bus_error")


def _detect_llama_cpp(msg: str, add: Any) -> None:
    """Ollama's and llama.cpp's own lines: GPU discovery, the layers placed on the GPUs, the
    buffers they could not allocate. (Grouped under a shorter word each: most lines that reach
    here hold none, and one test instead of three is a few percent of a distinct line's cost.)"""
    if "GPU" in msg:
        if "no compatible GPUs were discovered" in msg:
            add("ollama_no_gpu")
        if "layers to GPU" in msg and (ol := LLAMA_OFFLOADED_RE.search(msg)) is not None:
            add("gpu_offload", gpu_layers=int(ol.group(1)), layers=int(ol.group(2)), kv=None)
        if "type=iGPU" in msg and "library=ROCm" in msg and (ig := OLLAMA_IGPU_RE.search(msg)) is not None:  # fmt: skip
            libdirs = OLLAMA_LIBDIRS_RE.search(msg)
            add("ollama_igpu", total_gib=float(ig.group(1)), available_gib=float(ig.group(2)),
                libdirs=libdirs.group(1) if libdirs else None)  # fmt: skip
        if "# GPU blocks" in msg and (gb := VLLM_BLOCKS_RE.search(msg)) is not None:  # vLLM V0
            add("vllm_gpu_blocks", blocks=int(gb.group(1)))
    if "amdgpu is not supported" in msg and (gx := OLLAMA_GFX_RE.search(msg)) is not None:
        add("ollama_gfx_unsupported", gpu_type=gx.group(1))
    # Ollama's CUDA probe: the driver's library lacks an entry point its runtime needs
    if "nvidia driver is too old" in msg or "cuCtxCreate_v3 failed" in msg:
        add("cuda_driver_old")
    if "layers.offload=" in msg and (oo := OLLAMA_OFFLOAD_RE.search(msg)) is not None:
        kv = OLLAMA_KV_RE.search(msg)
        add("gpu_offload", gpu_layers=int(oo.group(2)), layers=int(oo.group(1)),
            kv=kv.group(1) if kv else None)  # fmt: skip
    if "ctx" in msg:
        if "--ctx-size" in msg and (cs := CTX_SIZE_RE.search(msg)) is not None:
            add("llama_ctx_size", ctx=int(cs.group(1)))
        if "n_ctx" in msg and (nc := LLAMA_N_CTX_RE.search(msg)) is not None:
            add("llama_ctx_size", ctx=int(nc.group(1)))
    if "alloc" in msg:
        if "cudaMalloc failed: out of memory" in msg:
            go = GGML_OOM_RE.search(msg)
            add("ggml_gpu_oom", mib=go.group(1) if go else None,
                device=_int(go.group(2)) if go else None)  # fmt: skip
        elif "failed to allocate compute buffers" in msg:
            add("ggml_gpu_oom", mib=None, device=None)
        if "failed to allocate buffer for kv cache" in msg:
            add("llama_kv_alloc_failed")
        if "insufficient memory" in msg and (ha := GGML_HOST_ALLOC_RE.search(msg)) is not None:
            add("ggml_host_alloc_failed", size=f" of {ha.group(1)} MB")
        elif "unable to allocate CPU buffer" in msg:
            add("ggml_host_alloc_failed", size="")
    if "--no-mmap" in msg:  # the runner's command line: the host's layers read into RAM whole
        add("llama_no_mmap")
    if "mlock" in msg and (mf := MLOCK_FAILED_RE.search(msg)) is not None:
        add("llama_mlock_failed", size=int(mf.group(1)))
    if "memory" in msg:
        if "memory.required.full=" in msg and (rq := OLLAMA_REQUIRED_RE.search(msg)) is not None:
            add("ollama_required", full=rq.group(1), gpu=rq.group(2))
        if "free_swap=" in msg and (sm := OLLAMA_SYSTEM_MEMORY_RE.search(msg)) is not None:
            add("ollama_system_memory", free=sm.group(1), swap=sm.group(2))
        if "more system memory" in msg and (ms := OLLAMA_MORE_SYSTEM_RE.search(msg)) is not None:
            add("ollama_host_short", requested=ms.group(1), available=ms.group(2))
    if "too large for system" in msg and (tl := OLLAMA_TOO_LARGE_RE.search(msg)) is not None:
        add("ollama_host_short", requested=tl.group(1),
            available=f"{tl.group(2)} free + {tl.group(3)} of swap")  # fmt: skip
    # Ollama's runner ended by SIGKILL (`llama runner process has terminated: signal: killed`;
    # `llama-server process ...` in newer releases): the kernel's OOM killer or a memory limit
    if "process has terminated: signal: killed" in msg:
        add("llama_runner_killed")


def _detect_clients(msg: str, add: Any) -> None:
    """A client of an LLM server and what stands between them: connections that fail (refused,
    a name that does not resolve, the wrong address), a proxy or gateway answering instead, a
    response cut or timed out; what the server listens on; servers that split a model over
    several machines (llama.cpp's RPC, distributed-llama, exo)."""
    if "dial tcp" in msg and (gd := GO_DIAL_RE.search(msg)) is not None:
        add("http_connect_failed", server=gd.group(1), port=int(gd.group(2)),
            reason=GO_DIAL_REASONS[gd.group(3)])  # fmt: skip
    if "onnect" in msg:  # curl's, Python's and aiohttp's connect errors (Connect, connect)
        if "Failed to connect to" in msg and (cu := CURL_CONNECT_RE.search(msg)) is not None:
            add("http_connect_failed", server=cu.group(1), port=int(cu.group(2)), reason="refused")
        target = PY_POOL_RE.search(msg) or (
            AIOHTTP_CONNECT_RE.search(msg) if "Cannot connect to host" in msg else None
        )
        errno = PY_ERRNO_RE.search(msg) if "[Errno " in msg else None
        # an HTTP client's: httpx's ConnectError, aiohttp's ClientConnectorError, requests' and
        # urllib3's NewConnectionError (a bare ConnectionRefusedError may be any program's)
        http = target is not None or any(w in msg for w in HTTP_CLIENT_ERRORS)
        if errno is not None and http:
            code = int(errno.group(1))
            reason = ("refused" if code == 111 else "timeout" if code == 110 else "no local port" if code == 99
                      else "unresolved" if code in (-2, -3, -5) else "unreachable")  # fmt: skip
            host = target.group(1) if target else None
            if reason == "unresolved":
                add("host_unresolved", name=host)
            else:
                add("http_connect_failed", server=host, port=int(target.group(2)) if target else None,
                    reason=reason)  # fmt: skip
    if "dial tcp: lookup" in msg and (gl := GO_LOOKUP_RE.search(msg)) is not None:
        if gl.group(1) == "host.docker.internal":
            add("docker_host_unresolved")
        else:
            add("host_unresolved", name=gl.group(1))
    if "Failed to resolve '" in msg and (pr := PY_RESOLVE_RE.search(msg)) is not None:
        add("host_unresolved", name=pr.group(1))
    # model downloads: Ollama's parts, the Hugging Face Hub
    if "attempt " in msg and (op := OLLAMA_PART_FAILED_RE.search(msg)) is not None:
        add("download_part_failed", error=op.group(1))
    elif "max retries exceeded: EOF" in msg:
        add("download_part_failed", error="EOF")
    if "HfHubHTTPError: 5" in msg and (hs := HUB_SERVER_ERROR_RE.search(msg)) is not None:
        add("hub_server_error", code=int(hs.group(1)))
    if "couldn't connect to 'https://huggingface.co'" in msg:
        add("hub_unreachable")
    if "ollama " in msg and "_PROXY=" in msg.upper() and OLLAMA_CLIENT_PROXY_RE.search(msg):
        add("ollama_client_proxy")
    # Ray's cluster: the head's address a node joins, and what fails to reach it
    if "ray start" in msg and (ra := RAY_START_ADDRESS_RE.search(msg)) is not None:
        add("ray_start_address", address=ra.group(1), port=int(ra.group(2)))
    if "Failed to connect to GCS" in msg and (rg := RAY_GCS_FAILED_RE.search(msg)) is not None:
        add("ray_gcs_unreachable", address=rg.group(1), port=int(rg.group(2)))
    if "connection to redis" in msg and (rr := RAY_REDIS_FAILED_RE.search(msg)) is not None:
        add("ray_gcs_unreachable", address=rr.group(1), port=int(rr.group(2)))
    if "missed too many heartbeats" in msg:
        add("ray_node_dead")
    # ping's ICMP answer when Windows' (Hyper-V's) firewall drops a packet, as under WSL2's
    # mirrored networking: `Destination unreachable: Source address failed ingress/egress policy`
    if "failed ingress/egress policy" in msg:
        add("icmp_policy_unreachable")
    # Windows: a connection to 0.0.0.0 (a listen address, OLLAMA_HOST=0.0.0.0 read by a client)
    if "WinError 10049" in msg or "requested address is not valid in its context" in msg:
        add("connect_unspecified")
    wp = WGET_PROXY_RE.search(msg) if "Proxy request sent" in msg else None
    if wp is not None and wp.group(1)[0] == "5":
        add("http_proxy_answered", code=int(wp.group(1)))
    if "Bad Gateway" in msg and (hx := HTTPX_LOCAL_502_RE.search(msg)) is not None:
        add("http_proxy_answered", code=int(hx.group(1)))
    listens = "istening on" in msg or "Uvicorn running on" in msg
    if listens and (ls := LISTEN_RE.search(msg)) is not None:
        add("server_listening", address=ls.group(1), port=int(ls.group(2)))
    if "upstream timed out" in msg and (nu := NGINX_UPSTREAM_TIMEOUT_RE.search(msg)) is not None:
        add("gateway_timeout", by=f": nginx's upstream timeout while {nu.group(1)}")
    if "504 Gateway Time" in msg:  # the page nginx, HAProxy and most gateways return
        add("gateway_timeout", by="")
    if "respond in time" in msg and "The server didn't respond in time" in msg:  # HAProxy's page
        add("gateway_timeout", by=": HAProxy's page")
    if "complete" in msg or "closed" in msg:
        for words in STREAM_CUT_WORDS:
            if words in msg:
                add("stream_cut", words=words)
                break
    if "Timeout" in msg and (ct := CLIENT_TIMEOUT_RE.search(msg)) is not None:
        add("client_timeout", exception=ct.group(1))
    # servers that split a model over machines
    if "Starting RPC server on" in msg and (rp := RPC_SERVER_RE.search(msg)) is not None:
        add("rpc_server_start", address=rp.group(1), port=int(rp.group(2)))
    if "Failed to create server socket" in msg:
        add("rpc_server_socket_failed")
    if "ReadSocketException" in msg or "WriteSocketException" in msg:  # distributed-llama
        add("dllama_socket_closed")
    if "known peers: 0" in msg or "No new peers discovered" in msg:  # exo's discovery
        add("exo_no_peers")


def _detect_serving(msg: str, add: Any) -> None:
    """A serving engine's start-up on one machine: the GPU's capability, the memory its KV cache
    gets against the longest request it must hold, CUDA-graph capture."""
    if "Bfloat16 is only supported" in msg:
        bc = BF16_CC_RE.search(msg)
        add("bf16_unsupported", gpu=bc.group(1) if bc else None, cc=bc.group(2) if bc else None)
    if "cache" in msg:
        if "No available memory for the cache blocks" in msg:
            add("vllm_no_kv_memory")
        if "stored in KV cache" in msg and (ks := VLLM_KV_SHORT_RE.search(msg)) is not None:
            add("vllm_kv_short", max_len=int(ks.group(1)), kv_tokens=int(ks.group(2)))
    if "max_seq_len=" in msg and (ml := VLLM_MAX_LEN_RE.search(msg)) is not None:
        bs = VLLM_BLOCK_SIZE_RE.search(msg)
        add("vllm_max_len", max_len=int(ml.group(1)), block_size=int(bs.group(1)) if bs else None)
    if "Maximum concurrency for" in msg and (mc := VLLM_CONCURRENCY_RE.search(msg)) is not None:
        add("vllm_concurrency", tokens=int(mc.group(1).replace(",", "")), times=float(mc.group(2)))
    if "graph" in msg and ("capture_end()" in msg or "torch.cuda.graph(" in msg):
        add("cudagraph_capture_frame")  # a traceback through CUDA-graph capture
    if "doesn't have NCCL built in" in msg:  # PyTorch's Windows and macOS wheels
        add("torch_no_nccl")
    if "CUDA_ERROR_NOT_FOUND" in msg and "cuInit" in msg:
        add("cuinit_not_found")
    if "nvml vram init failure" in msg and (nv := NVML_INIT_RE.search(msg)) is not None:
        code = int(nv.group(1))
        add("nvml_init_failed", code=code, name=NVML_ERRORS.get(code, "see nvml.h"))
    if "as WSL is detected" in msg:
        add("vllm_wsl_no_pin")
    if (
        "Cannot retrieve Static function" in msg
        and (hs := HIP_STATIC_FUNC_RE.search(msg)) is not None
    ):
        code = int(hs.group(1))
        if code in HIP_KERNEL_ERRORS:
            add("hip_no_kernel", code=code, name=HIP_KERNEL_ERRORS[code])
    if "Serialized Engine Version" in msg and (tv := TRT_VERSION_RE.search(msg)) is not None:
        add("trt_engine_version", current=int(tv.group(1)), engine=int(tv.group(2)))
    if "max_outlen(" in msg and (tl := TRT_LEN_RE.search(msg)) is not None:
        add("trt_length_over_engine", inlen=int(tl.group(1)), max_inlen=int(tl.group(2)),
            outlen=int(tl.group(3)), max_outlen=int(tl.group(4)))  # fmt: skip


def _ucx_no_locked_memory(msg: str) -> bool:
    """UCX's completion queue without locked memory (ibv_create_cq / mlx5dv_create_cq: Cannot
    allocate memory), or UCX 1.14's own words for it; found without a pattern that could
    rescan a long line from every `create_cq` in it."""
    if "max locked memory" in msg:
        return True
    at = msg.find("create_cq")
    return at >= 0 and msg.find("Cannot allocate memory", at) >= 0


def _detect_hccl(msg: str, add: Any) -> None:
    """Huawei's HCCL (Ascend NPUs): the failures its fault-diagnosis guide names."""
    port = HCCL_LISTEN_RE.search(msg) if "specific port[" in msg else None
    if port is not None and port.group(1) != "2":  # the device's (parameter plane) port
        add("hccl_npu_port_bound", port=int(port.group(2)))
    elif port is not None or "EI0019" in msg:  # the host's: the root's listening port
        add("hccl_port_bound", port=int(port.group(2)) if port else None)
    if "wait socket establish timeout" in msg or "CONNECT TIMEOUT DETECT RESULT" in msg:
        add("hccl_link_timeout")  # EI0006: the peer did not set up its end in time
    if "Heartbeat Lost" in msg and (hb := HCCL_EXCEPTION_RE.search(msg)) is not None:
        add("hccl_heartbeat_lost", where=hb.group(1))
    if "in the ranktable is inconsistent" in msg and (ri := HCCL_RANKTABLE_IP_RE.search(msg)) is not None:  # fmt: skip
        add("hccl_ranktable_ip", table=ri.group(1), device=ri.group(2))
    if "logicSuperPodId[" in msg and (sp := HCCL_SUPERPOD_RE.search(msg)) is not None:
        add("hccl_superpod", logic=sp.group(1), physical=sp.group(2))
    if "TopoExchangeAgent" in msg and (ha := HCCL_AGENT_RE.search(msg)) is not None:
        add("hccl_root_unreachable", server="".join(ha.group(1).split()))
    if "Failed to connect agent" in msg and (hm := HCCL_MISSING_RE.search(msg)) is not None:
        add("hccl_ranks_missing", ranks=hm.group(1).strip(","))
    if "EI0011" in msg:
        add("hccl_device_oom")
    if "EI0012" in msg or "fftsplus sdma error" in msg:
        add("hccl_sdma_error")
    if "EI0013" in msg or "ROCE CQE ERROR" in msg:
        cqe = HCCL_CQE_RE.search(msg)
        add("hccl_roce_cqe", status=_int(cqe.group(1)) if cqe else None)
    if "is not a valid real path" in msg and (rt := HCCL_RANKTABLE_RE.search(msg)) is not None:
        add("hccl_ranktable_path", path=rt.group(1))
    if "Task run failed, base information" in msg and (tk := HCCL_TASK_RE.search(msg)) is not None:  # fmt: skip
        t = HCCL_TIME_RE.search(msg)
        when = None
        if t is not None:
            y, mo, d, h, mi, sec = (int(x) for x in t.groups())
            when = ((y * 12 + mo) * 31 + d) * 86400 + h * 3600 + mi * 60 + sec  # ordering only
        add("hccl_task_failed", op=tk.group(1), at_s=when)
    if "(EI" in msg or "(EJ" in msg:  # the name just before the code: looked for there alone
        at = max(msg.find("(EI"), msg.find("(EJ"))
        if (hc := HCCL_CODE_RE.search(msg, max(0, at - 120), at + 8)) is not None:
            add("hccl_error_code", code=hc.group(2), name=hc.group(1).strip())


def _detect(msg: str, line: str, rank: int | None, outside: bool = False) -> Found:
    """Search one message for the failures NCCL and its callers print. Each pattern runs only
    where a word it cannot match without is in the message (``in`` is ~50x cheaper than a
    regular expression's search, and most lines of a large log hold none of them)."""
    events: list[tuple[str, Detail]] = []
    completion: int | None = None
    gid_entry: tuple[int, str, int] | None = None

    def add(kind: str, **detail: str | int | None) -> None:
        if rank is not None:
            detail["rank"] = rank
        events.append((kind, tuple(detail.items())))

    if 'Missing "iommu=pt"' in msg:  # RCCL on a host booted without IOMMU passthrough
        add("rccl_iommu_pt_missing")
    if "completion" in msg and (c := COMPLETION_RE.search(msg)) is not None:
        completion = int(c.group("status"))
        vendor = VENDOR_RE.search(msg)
        direction = DIRECTION_RE.search(msg)
        gids = GIDS_RE.search(msg)
        add("ib_completion", status=completion, vendor_err=_int(vendor.group(1)) if vendor else None,
            peer=c.group("peer"), direction=direction.group(1) if direction else None,
            local_gid=gids.group("local") if gids else None,
            remote_gid=gids.group("remote") if gids else None)  # fmt: skip
    elif "retry count" in msg and RETRY_EXCEEDED_RE.search(msg) is not None:
        # error 12 in the verbs' own words, from a layer that does not print NCCL's status=
        completion = 12
        add("ib_completion", status=12, vendor_err=None, peer=None, direction=None,
            local_gid=None, remote_gid=None)  # fmt: skip
    if "ibv_modify_qp" in msg and (q := QP_RE.search(msg)) is not None:
        text = q.group("text").strip()
        gid = QP_GID_RE.search(msg)
        state = QP_STATE_RE.search(msg)
        errno = _int(q.group("errno") or q.group("errno_after"))
        add("qp_error", errno=errno or ERRNO.get(text.lower()), text=text,
            gid_index=_int(gid.group(1)) if gid else None,
            next_state=state.group(2) if state else None)  # fmt: skip
    if ("CUDA IPC" in msg or "Cuda failure" in msg or "CUDA failure" in msg) and (
        cu := CUDA_RE.search(msg)
    ) is not None:  # NCCL's own, and nccl-tests' `Test CUDA failure common.cu:1 '...'`
        code = _int(cu.group("code"))
        text = cu.group("text").strip()
        where_text = line.lower()
        where = (
            "nvls" if "nvls" in where_text
            else "shm" if "shm" in where_text
            else ("p2p" if "p2p" in where_text or "IPC" in msg else None)
        )  # fmt: skip
        add("cuda_error", code=code, text=text, where=where,
            p2p_unsupported=int(code in (217, 64) or "peer access is not supported" in text))  # fmt: skip
        if text == "invalid device ordinal":
            add("device_ordinal")
        elif text == "operation not permitted" and where == "p2p":  # CUDA 800 (MNNVL: IMEX)
            add("cumem_create_not_permitted")
        elif "busy or unavailable" in text:  # exclusive-process GPUs already taken
            add("gpu_busy_unavailable")
        elif "driver version is insufficient" in text:
            add("cuda_driver_old")
        elif text == "system not yet initialized":
            add("cuda_not_initialized")
    if "NVLS" in msg:
        if (nv := NVLS_BIND_RE.search(msg)) is not None:
            add("nvls_bind", size=int(nv.group(1)), code=int(nv.group(2)), error=nv.group(3))
        # a user buffer NCCL could not register for NVLS (transport/nvls.cc: `rank 0 failed to
        # NVLS register sendbuff 0x... sendbuffSize 1073741824 ...`): it falls back, unregistered
        if "failed to NVLS register" in msg:
            add("nvls_register_failed")
    # NCCL's listening socket (misc/socket.cc: `Call to bind failed: Address already in use`):
    # on port 0 no ephemeral port was free; else a fixed port (NCCL_COMM_ID) is held
    if "Call to bind failed: Address already in use" in msg:
        add("nccl_bind_in_use")
    if "socketFinalizeAccept" in msg and (st := SOCKET_TYPE_RE.search(msg)) is not None:
        got, expected = int(st.group(1)), int(st.group(2))
        add("socket_type_mismatch", peer_type=SOCKET_TYPES.get(got, str(got)),
            expected_type=SOCKET_TYPES.get(expected, str(expected)))  # fmt: skip
    if "socketFinalizeAccept" in msg and (wm := WRONG_MAGIC_RE.search(msg)) is not None:
        add(
            "socket_wrong_magic",
            got=wm.group(1),
            expected=wm.group(2),
            ascii=_magic_text(wm.group(1)),
        )
    if "Got async" in msg and (ae := ASYNC_EVENT_RE.search(msg)) is not None:
        add("ib_async_event", device=ae.group(1), event=ae.group(2).strip())
    if "GPU Direct RDMA Disabled" in msg and (go := IB_GDR_OFF_RE.search(msg)) is not None:
        add("ib_gdr_no_module", hca=go.group(2))
    if "nvmlDevice" in msg and NVML_NOT_FOUND_RE.search(msg) is not None:
        add("nvml_gpu_hidden")
    if "GPU Direct RDMA Disabled" in msg and (gd := GDR_DISTANCE_RE.search(msg)) is not None:
        add("gdr_distance", gpu=gd.group(1), hca=gd.group(2), distance=int(gd.group(3)),
            level=int(gd.group(4)))  # fmt: skip
    if "Message truncated" in msg and (tm := TRUNCATED_RE.search(msg)) is not None:
        add("message_truncated", received=tm.group(1), expected=tm.group(2))
    if "mismatch" in msg and (cm := COLL_MISMATCH_RE.search(msg)) is not None:
        add("collective_mismatch", local_size=int(cm.group(1)), remote_size=int(cm.group(2)))
    if (
        "fallocate" in msg
        or "shared memory" in msg
        or "failed to extend" in msg
        or "shm_open" in msg
    ) and (sh := SHM_RE.search(msg)) is not None:
        action = ("unlink" if sh.group("unlinked") else
                  "attach" if sh.group("action") == "attaching to" else "create")  # fmt: skip
        why = (sh.group("why") or sh.group("error") or sh.group("unlink_error")
               or sh.group("ext_error") or sh.group("open_why") or "").strip()  # fmt: skip
        add("shm_failed", why=why or None,
            action=action, segment=sh.group("segment") or sh.group("path") or sh.group("unlinked"),
            size=_int(sh.group("bytes") or sh.group("size")))  # fmt: skip
    if "ibv_reg_" in msg and (rg := IBV_REG_RE.search(msg)) is not None:
        add("ibv_reg_failed", call=rg.group(1), error=rg.group(2))
    if ("interface found" in msg or "OOB_NET_IFNAME" in msg) and (ni := NO_IFACE_RE.search(msg)) is not None:  # fmt: skip
        add("no_socket_iface", subnet=int(ni.group("subnet") is not None),
            oob=int(ni.group("oob") is not None))  # fmt: skip
    if "insert remote address into address vector" in msg:  # aws-ofi-nccl's WARN, or quoted
        add("ofi_av_insert_failed")  # as PyTorch's "Last error:"
    if "Duplicate GPU" in msg and (dg := DUPLICATE_GPU_RE.search(msg)) is not None:
        add("duplicate_gpu", rank_a=int(dg.group(1)), rank_b=int(dg.group(2)), device=dg.group(3))
    if "Multiple Ranks are using the same GPU" in msg:  # the same check's words since 2.23
        add("duplicate_gpu", rank_a=None, rank_b=None, device=None)
    if "Mismatched NCCL version" in msg and (vm := VERSION_MISMATCH_RE.search(msg)) is not None:
        add("nccl_version_mismatch", rank_a=int(vm.group(1)), version_a=_release_of_code(int(vm.group(2))),
            rank_b=int(vm.group(3)), version_b=_release_of_code(int(vm.group(4))))  # fmt: skip
    if "XML Import" in msg and (gi := GRAPH_IMPORT_RE.search(msg)) is not None:
        add("graph_import_failed", device=int(gi.group(1)))
    if "Init COMPLETE" in msg or "Connected all trees" in msg:
        add("setup_complete")
    if "loop back" in msg and (rl := RING_LOOP_RE.search(msg)) is not None:
        add("ring_mismatch", ring=int(rl.group(1)))
    if "cannot be captured in a graph" in msg:
        add("graph_capture_unsupported")
    if "Could not find NET with id" in msg and (ni := NET_ID_MISSING_RE.search(msg)) is not None:
        add("net_id_missing", net_id=int(ni.group(1)))
    if "Could not find:" in msg and (pm := PLUGIN_MISSING_RE.search(msg)) is not None:
        # the names, then ". " and what NCCL does instead (`Using internal net plugin.`)
        names = [n.rstrip(".") for n in pm.group(2).split(". ", 1)[0].split()]
        if not all(DEFAULT_PLUGIN_RE.fullmatch(n) for n in names):  # a plugin that was asked for
            add("plugin_not_found", plugin=pm.group(1), names=" ".join(names))
    if "tuner plugin can not be loaded when explicitly choosing" in msg:  # aws-ofi-nccl's tuner
        add("ofi_tuner_refused")
    if "NET/OFI Adding NCCL_PROTO=" in msg or "NET/OFI Adding NCCL_ALGO=" in msg:
        add("ofi_sets_algo_proto")
    if "NET/Plugin" in msg and (pl := NET_PLUGIN_RE.search(msg)) is not None:
        add("net_plugin", name=PLUGIN_VERSION_RE.sub("", pl.group(1)).rstrip())
    if "Attribute" in msg and (tx := TOPO_XML_RE.search(msg)) is not None:
        add("topo_xml", attribute=tx.group(1), node=tx.group(2))
    if "Socket creation failed" in msg and (sc := SOCKET_CREATE_RE.search(msg)) is not None:
        add("socket_create_failed", reason=sc.group(1))
    if "NET/OFI" in msg and (orr := OFI_REGISTER_RE.search(msg)) is not None:
        add("ofi_register_failed", hmem_type=int(orr.group(1)), device=int(orr.group(2)),
            rc=int(orr.group(3)), error=orr.group(4))  # fmt: skip
    if "family" in msg and (f := FAMILY_RE.search(msg)) is not None:
        add("bad_address_family", family=int(f.group(1)))
    if "real path" in msg and (t := TOPO_RE.search(msg)) is not None:
        add("topology_sysfs", path=t.group(1))
    if "maxSharedMem" in msg and (s := SHMEM_RE.search(msg)) is not None:
        add("max_shared_mem", needed=int(s.group(1)), device=int(s.group(2)))
    if "fi_getinfo" in msg and (fg := FI_GETINFO_RE.search(msg)) is not None:
        add("ofi_no_provider", error=fg.group(1).strip(" :.") or None)
    if "Unable to open device" in msg and (uo := IB_OPEN_RE.search(msg)) is not None:
        add("ib_open_failed", device=uo.group(1))
    if "contiguousRanksPerHost 2147483647" in msg:  # NCCL 2.31: ranks uneven over the nodes
        add("uneven_ranks_per_host")
    if "SHARP" in msg and SHARP_LOCK_RE.search(msg) is not None:
        add("sharp_lock_failed")
    if "from kernel command line" in msg and (km := KERNEL_ARG_RE.search(msg)) is not None:
        add("kernel_arg_missing", argument=km.group(1))
    if "NET/OFI" in msg and (o := OFI_RE.search(msg)) is not None:
        add("ofi_error", rc=int(o.group(1)), error=_int(o.group(2)),
            name=o.group(3) or o.group("text").strip())  # fmt: skip
    if ("Proxy Call" in msg or "Failed to execute" in msg) and (
        p := PROXY_RE.search(msg)
    ) is not None:
        add("proxy_failed", rank=_int(p.group(1) or p.group(4)), op=p.group(2) or p.group(3))
    if "GID" in msg:
        if "GID " in msg and (g := GID_SELECTED_RE.search(msg)) is not None:
            raw = g.group(2).upper()
            add("gid_selected", index=int(g.group(1)), raw=raw, link_local=int(raw.startswith("80FE")))  # fmt: skip
        if "GID[" in msg and (gt := GID_TABLE_RE.search(msg)) is not None:
            gid_entry = (int(gt.group(1)), gt.group(2), int(gt.group(3)))
    if "Could not get speed" in msg and (sp := SPEED_RE.search(msg)) is not None:
        add("speed_unknown", iface=sp.group(1))
    if "GPU Direct RDMA Disabled" in msg and (sd := SOCKET_DEV_RE.search(msg)) is not None:
        add("socket_dev", index=int(sd.group(1)), iface=sd.group(2))
    if "is not a PCI device (usb)" in msg:
        add("usb_nic")
    lower = msg.lower()
    socket_words = ("connection" in lower or "broken pipe" in lower or "unreachable" in lower
                    or "no route" in lower)  # fmt: skip
    for kind, pattern in SOCKET_ERRORS if socket_words else ():
        if pattern.search(lower):
            peer = PEER_RE.search(msg) or BRACKET_PEER_RE.search(msg)
            closed = re.search(r"remote peer\s+(\S+?)(?:<\d+>|$)", msg)
            add(kind, peer=peer.group(1) if peer else (closed.group(1) if closed else None))
            break
    for name, pattern in NCCL_ERRORS if ("error" in lower or "invalid" in lower) else ():
        if pattern.search(lower):
            add("nccl_error", code=name)
    if "Test NCCL failure" in msg and (tf := TEST_FAIL_RE.search(msg)) is not None:
        add("test_failure", text=tf.group(1).strip())
    if "available for function" in msg and (na := NO_ALGO_RE.search(msg)) is not None:
        add("no_algorithm", function=na.group(1), datatype=na.group(2))
    if "was set to" in msg:
        for var, value in ALGO_SET_RE.findall(msg):
            add("algo_forced", variable=var, value=value)
    if "shareable host buffer" in msg and (hi := HOST_IMPORT_RE.search(msg)) is not None:
        add("host_buffer_import", via=hi.group(1).lower())  # how a local peer's buffer came
    if "too many XML nodes" in msg and (xm := TOPO_XML_FULL_RE.search(msg)) is not None:
        add("topo_xml_full", max_nodes=int(xm.group(1)))
    if "libnvidia-ml" in msg and (nv := NVML_OPEN_RE.search(msg)) is not None:  # nvmlwrap.cc
        add("nvml_missing", library=nv.group(1))
    if "DOCA failure" in msg and (dc := DOCA_RE.search(msg)) is not None:  # GIN over GDAKI
        add("gin_doca_failed", code=int(dc.group(1)))
    if "find reverse path" in msg:  # NCCL's topology search (graph/paths.cc)
        add("topo_reverse_path")
    if "remote rails" in msg and (rr := OFI_RAILS_RE.search(msg)) is not None:  # aws-ofi-nccl
        add(
            "ofi_rails_mismatch",
            nic=int(rr.group(1)),
            expected=int(rr.group(2)),
            got=int(rr.group(3)),
        )
    if outside:
        _detect_outside(msg, add)
    if not events and completion is None and gid_entry is None:
        return NOTHING
    return Found(tuple(events), completion, gid_entry)


def _magic_text(magic: str) -> str | None:
    """The 8 bytes behind a wrong magic as text when they are printable ASCII (`GET /met`: an
    HTTP client), else None."""
    raw = int(magic, 16).to_bytes(8, "little")
    return raw.decode("ascii") if all(32 <= b < 127 for b in raw) else None


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
        found = _detect(line, line, rank, outside=True)
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
        lower = msg.lower()
        fields["error"] = not any(words in lower for words in BENIGN_WARNINGS)
    if msg.startswith("Using network") or msg.startswith("Using internal Network"):
        fields["transport"] = msg.split()[-1]
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
    found = _detect(msg, line, rank)
    libibverbs = "Failed to open libibverbs" in msg
    simple = (version is None and not libibverbs and "gdr" not in fields
              and not any(v for k, v in fields.items() if k not in _FLAGS))  # fmt: skip
    plain = simple and found is NOTHING and not any(fields.values())
    return Line(
        _cut(line), rank, version, layout=True, msg=_cut(msg), host=head.group("host") or None,
        dev=_int(head.group("dev")), libibverbs_failed=libibverbs, found=found, plain=plain,
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
        add_nccl_lines(out, batch)
    return out


# Words without which a line says nothing beyond its layout: each gate of ``_read`` and
# ``_detect`` holds one (tests/parse/test_logs.py checks their source against this list). The
# lower-cased ones are looked for in the lower-cased text.
# NCCL prints each line through a 1,024-byte buffer (src/debug.cc, ncclDebugLog: `char
# buffer[1024]`; RCCL likewise): text past twice that on a line with NCCL's layout, and no
# other NCCL line joined to it, was not printed by NCCL, and its messages are not searched
NCCL_LINE_BYTES = 2048
SCREEN_WORDS = (
    "version", " -> ", "WARN", "Using", "NET/", "NCCL_", "GPU Direct", "GDRDMA", "via",
    "libibverbs", "completion", "ibv_modify_qp", "CUDA IPC", "Cuda failure", "family",
    "real path", "maxSharedMem", "Proxy Call", "Failed to execute", "GID", "Could not get speed",
    "PCI device", "Test NCCL failure", "NVLS", "socketFinalizeAccept", "Message truncated",
    "mismatch", "fallocate", "shared memory", "Attribute", "Socket creation failed", "ibv_reg_",
    "Duplicate GPU", "XML Import", "cannot be captured in a graph", "<0>", "loop back",
    "failed to extend", "Init COMPLETE", "Connected all trees", "async event", "nvmlDevice",
    "prov_err", "Address already in use", "Process name:", "exited on signal", "exitcode",
    "Got async", "fi_getinfo", "SHARP", "not yet initialized", "watchdog thread terminated",
    "mpirun", "# nThread", "from kernel command line", "resolve hostname", "getaddrinfo",
    "NVRM: Xid", "us error", "use_libuv", "client socket has failed to connect", "from library",
    "driver version is insufficient", "mpiSize", "TL_", "Unable to open device",
    "contiguousRanksPerHost", "available for function", "shm_open", "shareable host buffer",
    "too many XML nodes", "was set to", "libnvidia-ml", "CUDA failure", "DOCA failure",
    "remote rails", "find reverse path",
    # _detect_outside's (lines without NCCL's layout: in a batch without a screen word they are
    # only counted, like the layout's plain lines)
    "Could not load", "Data unpack", "Failure to post", "Mismatched address format", "OFI MTL",
    "Test HIP failure", "UCX", "Unable to find address", "can fulfill resource request",
    "cuMemCreate", "custom_all_reduce", "bootstrapping phase", "ncclCuMemHostEnable",
    "ncclLocalOpAppend", "orted", "slot ids are used", "not enough slots", "cannot create cq",
    "managing GPU", "considered dead", "monitoredBarrier", "GTL library is not linked",
    "NIC_POLICY", "Event Queue overflow", "NBC_Progress",
    "ompi_coll_libnbc_progress", "different collective operation counts", "gds_ds12",
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
    "NET/OFI Adding NCCL_", "unknown result code", "Invalid __", "at nccl",
    "memory capacity is unbalanced", "ncclDevCommCreate failed", "CUDA out of memory",
    "same CUDA device for multiple distinct roles", "Not all ranks joining collective", "missing ranks:",
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
# channel's transport and NCCL 2.31's `contiguousRanksPerHost 2147483647` (INT_MAX: ranks uneven
# over the nodes, where a number is normal), so a line holding either is never read by its shape.
_DIGIT_SENSITIVE_RE = re.compile(r"2[Pp]|contiguousRanksPerHost")
_SAME_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_PLAIN_SHAPES: dict[bytes, tuple[int, int]] = {}  # shape of a plain line -> its host's span
# What each recent raw line was: its Line, or the host of a plain line ("" for none)
_RAW_LINES: dict[str, Line | str] = {}
# The same for lines without their prefixes, keyed by that text and the rank prefix it had: a
# log whose every line carries its own timestamp repeats these
_LINES: dict[str, Line | str] = {}
MEMO_ENTRIES = 4096  # lines and shapes remembered, each (then forgotten all at once)


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
    """``value``, kept under ``key`` in ``memo`` (up to MEMO_ENTRIES, then all forgotten)."""
    if len(memo) >= MEMO_ENTRIES:
        memo.clear()
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
