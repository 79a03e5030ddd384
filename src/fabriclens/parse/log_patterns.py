"""The shapes of the lines the log reader knows: NCCL's own messages, and those of the programs
printed beside it (PyTorch, launchers, MPI, libfabric, HCCL, serving engines and their clients),
as compiled patterns and word lists. Pure data: ``log_detect`` applies them to one message,
``nccl_log`` reads a log with them."""

from __future__ import annotations

import re

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
    r"\bvia\s+(P2P(?:/IPC|/CUMEM|/direct)?|SHM|NET/\w[\w ]*?(?=/\d)|NET/\w+|CollNet\S*)"
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
# `NET/IB : mlx5_1:1 Got async event : port error`; before NCCL 2.19 without the device:
# `NET/IB : Got async event : GID table change`
ASYNC_EVENT_RE = re.compile(
    r"NET/IB\s*:\s*(?:(?!Got\b)(\S{1,64}) )?Got async (?:error )?event\s*:\s*(\S[^\n]{0,199})"
)
# paths.cc / net.cc: `GPU Direct RDMA Disabled for GPU %d[%d] / HCA %d (distance %d >= %d)`, later
# `... for GPU %lx / HCA %d (distance %d > %d)`
GDR_DISTANCE_RE = re.compile(
    r"GPU Direct RDMA Disabled for GPU (\w{1,32})(?:\[\d{1,5}\])? / HCA (\w{1,32}) \(distance (\d{1,3}) >=? (\d{1,3})\)"
)
TRUNCATED_RE = re.compile(r"Message truncated : received ([\d,]+) bytes instead of ([\d,]+)")
# (`collective mismatch error, local size 4096 remote size 8192` to 2.18; `NET/IB : collective
# mismatch error local size 32768 remote 1048576 addr 0 rkey 3beac3 seq adf/adf` in later ones)
COLL_MISMATCH_RE = re.compile(
    r"collective mismatch error,? local size (\d+) remote(?: size)? (\d+)"
)
# the same disagreement as other releases and transports word it: NET/Socket's `message truncated :
# receiving 1048576 bytes instead of 65536`, a data transfer, not set-up (a paste that wraps it
# keeps the words without the sizes), and NCCL 2.4's
# `Mismatched collective detected, please check your collective calls at and around rank 39`
SOCKET_TRUNCATED_RE = re.compile(
    r"message truncated(?:\s*:\s*receiving (\d+) bytes instead of (\d+))?"
)
MISMATCH_AROUND_RE = re.compile(
    r"Mismatched collective detected, please check your collective calls at and around rank (\d+)"
)
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
# NCCL's symmetric-memory windows (2.27+, ncclCommWindowRegister): `(ncclSpaceAlloc) NCCL WARN
# Allocation failed. No suitable space found to accommodate size=0x2171600000 within limit=0x2d00000000`
SPACE_ALLOC_RE = re.compile(
    r"No suitable space found to accommodate size=(0x[0-9a-fA-F]{1,16}) within limit=(0x[0-9a-fA-F]{1,16})"
)
# DeepSpeed's launcher checking passwordless ssh to the hostfile's first host (launcher/runner.py):
# `Command 'ssh -o PasswordAuthentication=no 10.0.0.1 hostname' returned non-zero exit status 255`,
# or its own `... but host=node01 was not reachable via ssh`
DS_SSH_CHECK_RE = re.compile(
    r"ssh -o PasswordAuthentication=no (\S{1,200}) hostname'? returned non-zero exit status (\d{1,3})"
    r"|host=(\S{1,200}) was not reachable via ssh"
)
# a rank joining a communicator: `ncclCommInitRank comm 0x7a12257c8780 rank 0 nranks 2 cudaDev 0
# nvmlDev 0 busId 100000 commId 0xaa9becea043c4e6c - Init START`
INIT_START_RE = re.compile(
    r"comm 0x[0-9a-fA-F]{1,16} rank (\d{1,7}) nranks \d{1,7} cudaDev \d{1,4}(?: nvmlDev \d{1,4})? "
    r"busId ([0-9a-fA-F]{1,16}) commId (0x[0-9a-fA-F]{1,16})"
)
# a communicator's entry in its INCOMPLETE list: `Missing communicator data from 1 rank`
RAS_MISSING_DATA_RE = re.compile(r"Missing communicator data from (\d{1,9}) ranks?\b")
# its MISMATCH warning: "different collective operation counts", per operation type from 2.26
# ("different AllGather operation counts")
RAS_COUNTS_RE = re.compile(r"ranks have different (?:collective|\w+) operation counts")
# torch.distributed.monitored_barrier: "Rank 1 failed ..." or, waiting for all, "Ranks 1, 3 ..."
MONITORED_BARRIER_RE = re.compile(r"Ranks? ([\d, ]*\d) failed to pass monitoredBarrier in (\d+) ms")
# Kubernetes' NVIDIA device plugin (health.go): an Xid that takes a GPU out of service
PLUGIN_XID_RE = re.compile(r"XidCriticalError: Xid=(\d+) on Device=([\w-]+)")
JAX_TASK_RE = re.compile(
    r"^/job:[\w-]+/replica:\d+/task:(\d+)\s*$"
)  # the coordination service's list
INCARNATION_RE = re.compile(r"incarnation id \d+ is not connected")  # JAX: a task gone
# JAX's coordination service: `DEADLINE_EXCEEDED: Barrier timed out. Barrier_id:
# PjRT_Client_Connect. Timed out task names:` (jax.distributed.initialize), or a program's own
JAX_BARRIER_RE = re.compile(r"Barrier timed out\. Barrier_id: ([\w.-]{0,119}[\w-])")
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
# ibvwrap.cc: `Call to ibv_create_qp failed with error Cannot allocate memory` (2.19+), or the
# older `Call to ibv_create_qp failed` (also ibv_create_cq, _srq, _comp_channel)
IBV_CREATE_RE = re.compile(r"Call to (ibv_create_\w+) failed(?: with error (\S(?:.*\S)?))?")
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
# Ray at start-up, in a container (vLLM's workers run under it): `The object store is using /tmp
# instead of /dev/shm because /dev/shm has only 67108864 bytes available.`
DEV_SHM_RE = re.compile(r"/dev/shm has only (\d{1,20}) bytes available")
# NCCL found no network plugin and runs its own transports: `NET/Plugin : No plugin found
# (libnccl-net.so), using internal implementation`, `NET/Plugin: Could not find: libnccl-net.so.
# Using internal network plugin.`
INTERNAL_NET_RE = re.compile(r"[Uu]sing internal (?:implementation|net(?:work)? plugin)")
# the network plugin library NCCL opens: `Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so`
PLUGIN_PATH_RE = re.compile(r"Plugin Path\s*:\s*(\S*libnccl-net\S*)")
# a network module's own line on a connection it made: `NET/FastSocket : Connected after 1000
# retries.`, `NET/FastSocket : Accepted data socket 3` (the transport, where no `Using network`
# or channel line survives)
NET_CONNECTED_RE = re.compile(r"NET/(\w[\w-]{0,40}) : (?:Connected|Accepted)\b")
PLUGIN_VERSION_RE = re.compile(r"\(v\d+\)$")
TOPO_XML_RE = re.compile(r"Attribute (\w+) of node (\w+) not found")
# NVSHMEM's transports (DeepEP's): `ibrc.cpp:418: non-zero status: 110 ibv_modify_qp failed`,
# `ibgda.cpp:3005: non-zero status: 7 ibgda_rc_init2rtr failed on RC #0.`, `Unable to create ah`
NVSHMEM_QP_RE = re.compile(
    r"ibv_modify_qp failed|init2rtr failed|INIT2RTR_QP|Unable to create ah|ibv_create_ah failed",
    re.I,
)
NVSHMEM_STATUS_RE = re.compile(r"non-zero status:\s*(\d+)")
# torchrun's rendezvous store (c10d): `RendezvousConnectionError: The connection to the C10d store
# has failed`, or a traceback through the store's client (`c10d_rendezvous_backend.py", line 155, in
# _create_tcp_store`: the store could not be created or reached)
RDZV_STORE_RE = re.compile(
    r"RendezvousConnectionError|connection to the C10d store has failed"
    r"|c10d_rendezvous_backend\.py\"?, line \d+, in _(?:create_tcp_store|call_store)"
)
SOCKET_CREATE_RE = re.compile(r"Socket creation failed\s*:\s*(\S(?:.*\S)?)")
OFI_REGISTER_RE = re.compile(
    r"NET/OFI Unable to register memory \(type = (\d+)\) for device (\d+)\.?\s*RC:\s*(-?\d+),?\s*Error:\s*(\S(?:.*\S)?)"
)
FAMILY_RE = re.compile(r"family (\d+) is neither AF_INET")
TOPO_RE = re.compile(r"Could not find real path of (\S+)")
# an RDMA device's sysfs link: `Could not find real path of rxe0 (/sys/class/infiniband/rxe0/device)`
# (net_ib.cc since NCCL 2.4), or the path alone (older releases, the UCX and RCCL plugins)
RDMA_SYSFS_RE = re.compile(r"/sys/class/infiniband/([^/\s()]{1,64})/device")
# bootstrap.cc's root: two processes came in as one rank, or with different rank counts
BOOTSTRAP_TWICE_RE = re.compile(
    r"Bootstrap Root : rank (\d+) of (\d+) ranks has already checked in"
)
BOOTSTRAP_NRANKS_RE = re.compile(
    r"Bootstrap Root : mismatch in rank count from procs (\d+) : (\d+)"
)
# init.cc (INFO): a communicator torn down by ncclCommAbort (PyTorch aborts a process group's
# communicators when the process exits without destroying it, or after an error)
COMM_ABORT_RE = re.compile(r"comm 0x[0-9a-fA-F]+ rank (\d+) nranks (\d+) .{0,80}- Abort COMPLETE")
# init.cc: a rank at or past the communicator's size (`Invalid rank requested : 2/2`)
INVALID_RANK_RE = re.compile(r"Invalid rank requested : (-?\d+)/(\d+)")
# PyTorch's ProcessGroupNCCL (broadcastUniqueNCCLID): a rank waiting in the c10d store for the
# NCCL unique id the root rank publishes
UNIQUE_ID_WAIT_RE = re.compile(
    r"\[(\d+)\] is setting up NCCL communicator and retrieving ncclUniqueId from \[(\d+)\] via c10d"
    r" key-value store.{0,160}?got error: ([^,\n]{1,120})"
)
# p2p.cc (INFO): cudaDeviceCanAccessPeer said no, or failed, for a pair of local GPUs
P2P_UNAVAILABLE_RE = re.compile(
    r"(Could not enable P2P|peer query failed) between dev (\d+)\(=([0-9a-fA-F]+)\) and dev (\d+)\(=([0-9a-fA-F]+)\)"
)
# nccl-tests' device lines name each rank's GPU: `#  Rank  0 Group  0 Pid 12225 on node01 device  0
# [0000:16:00] NVIDIA GeForce RTX 5090` (spacing collapsed in some pastes)
TESTS_DEVICE_RE = re.compile(
    r"#\s*Rank\s+\d{1,6}\s+Group\s+\d{1,6}\s+Pid\s+\d{1,10}\s+on\s+\S{1,128}\s+device\s+\d{1,3}\s+"
    r"\[[0-9a-fA-Fx:.]{1,20}\]\s+(\S[^\n]{0,80})"
)
# nccl-tests of NCCL 1's era list their ranks as `   Rank  0 uses device  0 [0x05] Tesla M40 24GB`
NCCL1_TESTS_RANK_RE = re.compile(
    r"\s*Rank\s+\d{1,5}\s+uses device\s+\d{1,3}\s+\[0x[0-9a-fA-F]{1,16}\]"
)
NET_SYSFS = "/sys/class/net/"  # a network interface's sysfs directory (TOPO_RE's path for a NIC)
SHMEM_RE = re.compile(r"ncclMaxSharedMem (\d+) exceeds device/fn maxSharedMem (\d+)")
# (searched from its fixed words, in a line that holds NET/OFI: a lazy scan from NET/OFI would
# rescan the line from each of its repeats)
OFI_RE = re.compile(
    r"completed with error(?:\.?\s*RC:\s*(\d+)\.?\s*Error:\s*(?:(\d+)\s*\((\w+)\)|(?P<text>[^.,]+)))?"
)
# aws-ofi-nccl: `create_nccl_ofi_component:459 NCCL WARN NET/OFI Couldn't open AV. RC: -22`
OFI_AV_OPEN_RE = re.compile(r"NET/OFI Couldn't open AV\.?\s*(?:RC:\s*(-?\d+))?")
# aws-ofi-nccl: `nccl_ofi_ofiutils_init_connection:274 NCCL WARN NET/OFI Couldn't open CQ. RC: -22,
# ERROR: Invalid argument` (aws/aws-ofi-nccl#715, after EFA's `Unable to create extended CQ: Cannot
# allocate memory`)
OFI_CQ_OPEN_RE = re.compile(r"NET/OFI Couldn't open CQ\.?\s*(?:RC:\s*(-?\d+))?")
# aws-ofi-nccl's plugin failing as a whole (`nccl_net_ofi_create_plugin:259 NCCL WARN NET/OFI
# aws-ofi-nccl initialization failed`), after which NCCL loads its internal transports, and the
# plugin's first line (`NET/OFI Initializing aws-ofi-nccl 1.11.0-aws`)
OFI_INIT_FAILED = "aws-ofi-nccl initialization failed"
OFI_INITIALIZING = "NET/OFI Initializing aws-ofi-nccl"
# the EFA driver in the kernel log: `infiniband efa_0: Failed to process command ALLOC_PD (opcode
# 14) comp_status 1 err -12`
EFA_ADMIN_RE = re.compile(
    r"(efa_\d+): Failed to process command (\w+)(?: \(opcode \d+\))?(?: comp_status \d+)? err (-?\d+)"
)
# libfabric's cxi provider (Slingshot): `cxip_nic_get_rgroup_vni():253<warn> : Failed to find valid
# default rgroup and vni for cxi0`
CXI_VNI_RE = re.compile(r"Failed to find valid default rgroup and vni for (\w+)")
# aws-ofi-nccl's RDMA protocol meeting a completion its state does not expect
OFI_PROTOCOL_RE = re.compile(
    r"NET/OFI (Unexpected status \(\d+\) for message \d+|Write complete from unexpected request type"
    r"|Received unexpected message type)"
)
# RCCL's P2P transport exporting a buffer: `p2p.cc:256 NCCL WARN hipIpcGetMemHandle failed : invalid argument`
HIP_IPC_RE = re.compile(r"hipIpc(?:Get|Open)MemHandle failed\s*:?\s*([\w ]+)?")
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
# torchrun's failure summary (torch.distributed.elastic's ChildFailedError table): a block per
# rank, `  rank      : 7 (local_rank: 7)` then `  exitcode  : -6 (pid: 3438)`
TORCHRUN_TABLE_EXIT_RE = re.compile(r"^exitcode\s{0,8}: (-?\d{1,4}) \(pid: (\d{1,10})\)")
FI_GETINFO_RE = re.compile(r"fi_getinfo\(?\)? call failed(.*)")  # aws-ofi-nccl: no provider
SHARP_LOCK_RE = re.compile(r"lock failed")  # the SHARP plugin's `Streaming Tree lock failed (-18)`
# the SHARP CollNet plugin's `NET/IB : SHARP coll init error: Cannot create SHARP job(-11)`
SHARP_INIT_RE = re.compile(r"SHARP coll init error:\s*(\S(?:.*\S)?)?")
# NCCL's init.cc: `comm 0x55ec10690820 has already been destroyed` (ncclCommDestroy called again)
# a stack frame in NCCL's topology search (`ncclTopoCompute()`, gdb's `in ncclTopoSearchRec (`);
# TRACE lines name the function as `ncclTopoCompute:987`, which this does not match
TOPO_FRAME_RE = re.compile(r"\bncclTopo(?:Compute|Search\w*) ?\(")
# NCCL_IB_HCA / NCCL_SOCKET_IFNAME as a launch line or an environment dump sets them
NCCL_LIST_VAR_RE = re.compile(r"\b(NCCL_IB_HCA|NCCL_SOCKET_IFNAME)=(['\"]?)([^\s'\"]{1,200})\2")
COMM_DESTROYED_RE = re.compile(r"comm (0x[0-9a-fA-F]+|\(nil\)) has already been destroyed")
# ssh (DeepSpeed's and pdsh's launchers, mpirun): `ssh: Could not resolve hostname node-0: Name or
# service not known`; c10d: `getaddrinfo failed ... for host X`
RESOLVE_RE = re.compile(
    r"[Cc]ould not resolve hostname (\S+?):|getaddrinfo\S* failed.*?host[:\s]+\[?([\w.-]+)"
)
# ssh failing to reach a node before anything runs there: `ssh: connect to host 10.0.0.1 port
# 50000: Connection refused` (mpirun's, pdsh's, DeepSpeed's launchers)
SSH_CONNECT_RE = re.compile(
    r"^ssh: connect to host (\S{1,200}) port (\d{1,5}): (Connection refused|Connection timed out|No route to host)"
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
# a native crash's report: UCX's (`Caught signal 11 (Segmentation fault: ...)`, `==== backtrace
# (tid:  92543) ====`), glog's and TensorFlow's (`*** SIGSEGV (@0x0) received by PID`, `*** Received
# signal 11 ***`), a shell's (`Segmentation fault (core dumped)`)
NATIVE_CRASH_RE = re.compile(
    r"Caught signal (\d{1,2})|==== backtrace \(tid|\*\*\* (SIG[A-Z]{2,6}) \(@|\*\*\* Received signal (\d{1,2}) \*\*\*"
    r"|(Segmentation fault|Bus error|Aborted) \(core dumped\)"
)
# a frame of a native backtrace in NCCL (or a plugin's copy of its code): UCX's ` 1
# 0x000000000000bac5 ncclGetSocketState()  /build-result/...`, gdb's `#11 0x00007f0118d91075 in
# ncclBarrierEnq ()`; a mangled C++ name is kept whole (`_ZL16ncclProxyServicePv`)
NCCL_NATIVE_FRAME_RE = re.compile(
    r"#?\d{1,3}\s{1,4}0x[0-9a-fA-F]{4,16}\s{1,4}(?:in\s{1,4})?(\w{1,160})\s?\("
)
# PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG=1; TraceUtils.h, retrieveDesyncReport): the
# ranks at the oldest collective any rank is in, those that `[7] finished collective #182, but
# didn't join collective #183` (behind the others) and those that `[0, 1] joined but didn't finish
# collective #730` (in it), or `ranks [47] are the lagging ranks that caused this timeout. They
# never joined any collectives`
DESYNC_BEHIND_RE = re.compile(
    r"\[([\d, ]{1,4000})\] finished collective #(\d{1,12}), but didn't join collective #(\d{1,12})"
)
DESYNC_STUCK_RE = re.compile(
    r"\[([\d, ]{1,4000})\] joined but didn't finish collective #(\d{1,12})"
)
DESYNC_NEVER_RE = re.compile(
    r"ranks \[([\d, ]{1,4000})\] are the lagging ranks that caused this timeout"
)
# the flight recorder analyser's verdict on a collective (fr_trace, MatchInfo): `Culprit rank 22;
# Error type: SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: ...`
FR_CULPRIT_RE = re.compile(r"Culprit rank (\d{1,7}); Error type: ([A-Z_]{1,40})")
# PyTorch's heartbeat monitor: `[PG 0 Rank 1] Heartbeat monitor timed out! Process will be terminated
# after dumping debug info. workMetaList_.size()=103` (`[PG ID 0 PG GUID 0(default_pg) Rank 1]` in
# later releases), then `ProcessGroupNCCL's watchdog got stuck for 600 seconds`
PG_RANK_RE = re.compile(r"\[PG (?:ID )?(\w{1,40})(?: PG GUID \S{1,80})? Rank (\d{1,7})\]")
WORK_LIST_SIZE_RE = re.compile(r"workMetaList_\.size\(\)\s?=\s?(\d{1,9})")
WATCHDOG_STUCK_RE = re.compile(r"watchdog got stuck for (\d{1,9}) seconds")
# Horovod's stall inspector (horovod/common/operations.cc to 0.19, stall_inspector.cc after):
# `HorovodBroadcast_dense_bias_0 [missing ranks: 1]` per tensor, or, from 0.20, `Stalled ranks:`
# (`Missing ranks:`) then a line per rank that has not submitted: `1: [HorovodAllreduce_grads_0,
# ...]` (`1!:` when the stall shutdown will end it); the preamble names the wait
HOROVOD_MISSING_RE = re.compile(r"\[missing ranks: ?(\d{1,6}(?:, ?\d{1,6}){0,500})\]")
HOROVOD_RANK_LINE_RE = re.compile(r"(\d{1,6})!?: \[([\w/.-]{0,400}Horovod\w{0,200})")
HOROVOD_STALL_RE = re.compile(r"waiting for remainder of ranks for more than (\d{1,9}) seconds")
# Gloo's rendezvous store (gloo/rendezvous/*store.cc, Horovod's http_store.cc): `Wait timeout for
# key(s): 0` when the other ranks' keys did not arrive within the store's timeout
GLOO_WAIT_TIMEOUT_RE = re.compile(r"Wait timeout for key\(s\): ?\[?([^\]\s]{0,200})")
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
# (RCCL's `Missing "iommu=pt" from kernel command line ...`, its tail cut in some pastes)
KERNEL_ARG_RE = re.compile(r'Missing "([\w=.-]{1,40})"(?: from kernel command line|\s*$)')
# `NCCL_DEBUG=INFO NCCL_SHM_DISABLE=1 mpirun -H a,b ...`: variables set for the local shell only
ENV_PREFIX_RE = re.compile(r"^[^=]*?(?:^|[\s$#>])((?:[A-Z_][A-Z0-9_]*=\S*\s+)+)(?:\S*/)?mpirun\b")
PROXY_RE = re.compile(
    r"Proxy Call to rank (\d+) failed \((\w+)\)|Failed to execute operation (\w+) from rank (\d+)"
)
GID_SELECTED_RE = re.compile(r"\bGID (\d+) \(([0-9A-Fa-f]+)/")
GID_TABLE_RE = re.compile(r"GID\[\s*(\d+)\]:\s*([0-9A-Fa-f:.]+),\s*RoCE v(\d)")
SPEED_RE = re.compile(r"Could not get speed from /sys/class/net/([\w.@-]+)/speed")
TRACE_RE = re.compile(r"^(?:[\w.-]+/)*([\w.-]+?)\.(?:cc|cu|c|cpp|h):\d+ -> \d+")
# misc/argcheck.cc: `Send : invalid root 3 (root should be in the 0..0 range)` (the range's top
# is the communicator's size - 1: -1 for one with no ranks left)
ARGCHECK_ROOT_RE = re.compile(
    r"(\w{1,40}) : invalid root (-?\d+) \(root should be in the 0\.\.(-?\d+) range"
)
TRACE_CODE_RE = re.compile(r":\d+ -> (\d{1,3})\b")
# ncclResult_t (nccl.h): what a trace line's code means
NCCL_RESULT_NAMES = {1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError",
                     4: "ncclInvalidArgument", 5: "ncclInvalidUsage", 6: "ncclRemoteError",
                     7: "ncclInProgress"}  # fmt: skip
STAGES = ("bootstrap", "net_ib", "net_socket", "ib_plugin", "p2p", "shm", "proxy")
TEST_FAIL_RE = re.compile(r"Test NCCL failure \S+ '([^'/]*)")

# The failure patterns below are matched against the lower-cased message: a case-blind
# regular expression cannot skip ahead to its first letter and costs ~10x more per line.
SOCKET_ERRORS = (  # (event kind, what the line says), first match wins
    ("connect_abort", re.compile(r"software caused connection abort")),
    ("connect_refused", re.compile(r"connection refused")),
    ("peer_reset", re.compile(r"connection reset by peer|broken pipe")),
    # (not NCCL's proxy service thread's `Connection closed by localRank N`: an INFO line a
    # communicator's teardown prints, a local rank leaving, not a peer gone)
    ("peer_closed", re.compile(r"connection closed by remote peer")),
    ("connect_timeout", re.compile(r"connect\w*\b.*?(?:failed|returned)\s*:?\s*connection timed out")),
    # (an established connection's receive or send timing out: `Call to recv from 10.0.0.1<41468>
    # failed : Connection timed out`, not a connect that never got through)
    ("socket_timeout", re.compile(r"\b(?:recv|send)\w*\b.*?(?:failed|returned)\s*:?\s*connection timed out")),
    ("unreachable", re.compile(r"(?:connect|recv|send)\w*\b.*?(?:network is unreachable|no route to host)")),
)  # fmt: skip
# NCCL result codes as PyTorch and nccl-tests spell them
NCCL_ERRORS = (
    ("ncclUnhandledCudaError", re.compile(r"ncclunhandledcudaerror|unhandled cuda error")),
    # PyTorch 1.1's c10d spelled it "unhanled system error" (ProcessGroupNCCL.cpp, 2019)
    ("ncclSystemError", re.compile(r"ncclsystemerror|unhand?led system error")),
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
# GCP's FastSocket plugin (google/nccl-fastsocket, net_fastsocket.cc) warns when it cannot read a
# socket's SO_INCOMING_CPU or runs out of tries to land its sockets on distinct flow queues, then
# connects anyway (the queues taken in order): read as fastsocket_steering_fallback
FASTSOCKET_FALLBACK = ("cannot get incoming cpu", "maximum retry reached for accept",
                       "maximum retry reached for connect")  # fmt: skip
# RCCL's MSCCL++ integration on a system it does not serve (`MSCCL++: Cannot enable MSCCL++;
# environment is not MSCCL compatible`): RCCL goes on with its own algorithms (ROCm/rccl-tests#163,
# a healthy MI50 init)
MSCCLPP_NOT_ENABLED = "cannot enable msccl++"
# NVML cannot answer for this GPU (an integrated Jetson or DGX Spark GPU at bus 0000:00:00.0, WSL,
# a container's NVML apart from the driver): NCCL goes on with what CUDA tells it (misc/nvmlwrap.cc,
# init.cc: `Failed to find nvml device for busId ... This may affect performance.`)
NVML_UNANSWERED = (
    "nvml_p2p_caps_index_read) failed: not supported",
    "failed to find nvml device for busid",
)
HARMLESS_WARNINGS = (
    "failed to find cuda library in",
    MSCCLPP_NOT_ENABLED,
    *FASTSOCKET_FALLBACK,
    *NVML_UNANSWERED,
)
BENIGN_WARNINGS = ("failed to open libibverbs", "could not get speed", *HARMLESS_WARNINGS)


def _mentions(msg: str, phrases: tuple[str, ...]) -> bool:
    lower = msg.lower()
    return any(words in lower for words in phrases)


def benign_warning(msg: str) -> bool:
    """A WARN that reports a set-up choice, not a failure (see BENIGN_WARNINGS)."""
    return _mentions(msg, BENIGN_WARNINGS)


def harmless_warning(msg: str) -> bool:
    """A WARN that says nothing about a failure (see HARMLESS_WARNINGS)."""
    return _mentions(msg, HARMLESS_WARNINGS)


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
