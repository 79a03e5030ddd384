"""What one message says went wrong: the failure patterns of ``log_patterns`` applied to one
line's message (``detect``), NCCL's own and those of the programs beside it. Pure: a message in,
the events found out; ``nccl_log`` decides which lines to ask and keeps what they say."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from fabriclens.parse.cuda_errors import cuda_error
from fabriclens.parse.dmesg import XID_RE as XID_LINE_RE
from fabriclens.parse.log_patterns import (
    AIOHTTP_CONNECT_RE,
    ALGO_SET_RE,
    APT_NVIDIA_UPGRADE_RE,
    ARGCHECK_ROOT_RE,
    ASYNC_EVENT_RE,
    BF16_CC_RE,
    BOOTSTRAP_NRANKS_RE,
    BOOTSTRAP_TWICE_RE,
    BRACKET_PEER_RE,
    BTL_TCP_NO_ROUTE_RE,
    BUS_ERROR_RE,
    CHUNK_SIZE_RE,
    CLIENT_TIMEOUT_RE,
    CLOUD_QUOTA_RE,
    COLL_MISMATCH_RE,
    COMM_ABORT_RE,
    COMM_DESTROYED_RE,
    COMPLETION_RE,
    CONTAINER_FILE_EXISTS_RE,
    CONTAINER_NVML_RE,
    CONTAINERD_CONFIG_VERSION_RE,
    CTX_SIZE_RE,
    CUDA_RE,
    CURL_CONNECT_RE,
    CUSTOM_AR_ERROR_RE,
    CXI_VNI_RE,
    DDP_UNUSED_RE,
    DEFAULT_PLUGIN_RE,
    DESYNC_BEHIND_RE,
    DESYNC_NEVER_RE,
    DESYNC_RE,
    DESYNC_STUCK_RE,
    DEV_SHM_RE,
    DIRECTION_RE,
    DMABUF_TOPOLOGY_RE,
    DNF_RELEASEVER_RE,
    DOCA_RE,
    DS_SSH_CHECK_RE,
    DUPLICATE_GPU_RE,
    DUPLICATE_MAC_RE,
    EFA_ADMIN_RE,
    EL_RELEASE_RE,
    ENA_ALLOWANCE_RE,
    ENROOT_BY_RE,
    ENROOT_MKDIR_RE,
    ENV_PREFIX_RE,
    ENVOY_RE,
    ERRNO,
    ERRNO_RE,
    ERRNO_TEXTS,
    FABRIC_STATE_RE,
    FAMILY_RE,
    FI_GETINFO_RE,
    FM_DRIVER_MISMATCH_RE,
    FM_UMAD_RE,
    FR_COLLECTIVE_RE,
    FR_CULPRIT_RE,
    FR_MISSING_RE,
    FR_NOT_JOINED_RE,
    GAI_NAME_RE,
    GDR_DISTANCE_RE,
    GGML_HOST_ALLOC_RE,
    GGML_OOM_RE,
    GID_SELECTED_RE,
    GID_TABLE_RE,
    GIDS_RE,
    GLOO_ADDR_RE,
    GLOO_WAIT_TIMEOUT_RE,
    GO_DIAL_RE,
    GO_DIAL_REASONS,
    GO_LOOKUP_RE,
    GRAPH_IMPORT_RE,
    HCCL_AGENT_RE,
    HCCL_CMD_RE,
    HCCL_CODE_RE,
    HCCL_CQE_RE,
    HCCL_EXCEPTION_RE,
    HCCL_FAMILIES,
    HCCL_FAMILY_RE,
    HCCL_IFNAME_RE,
    HCCL_LISTEN_RE,
    HCCL_MISSING_RE,
    HCCL_RANKTABLE_IP_RE,
    HCCL_RANKTABLE_RE,
    HCCL_SUPERPOD_RE,
    HCCL_TASK_RE,
    HCCL_TIME_RE,
    HEADERS_MISSING_RE,
    HIP_DEVICE_RE,
    HIP_IPC_RE,
    HIP_KERNEL_ERRORS,
    HIP_STATIC_FUNC_RE,
    HOROVOD_MISSING_RE,
    HOROVOD_RANK_LINE_RE,
    HOROVOD_STALL_RE,
    HOST_IMPORT_RE,
    HOST_NOT_FOUND_RE,
    HTTP_CLIENT_ERRORS,
    HTTPX_LOCAL_502_RE,
    HUB_SERVER_ERROR_RE,
    IB_DEVICES_LIST_RE,
    IB_GDR_OFF_RE,
    IB_OPEN_RE,
    IBDEV2NETDEV_DOWN_RE,
    IBV_CREATE_RE,
    IBV_REG_RE,
    INCARNATION_RE,
    INIT_START_RE,
    INTERNAL_NET_RE,
    INVALID_RANK_RE,
    JAX_BARRIER_RE,
    JAX_TASK_RE,
    KERNEL_ARG_RE,
    LIBFABRIC_ERR_RE,
    LIBRARY_RE,
    LISTEN_RE,
    LLAMA_CUDA_ERROR_RE,
    LLAMA_N_CTX_RE,
    LLAMA_OFFLOADED_RE,
    MASTER_ADDR_EMPTY_RE,
    MISMATCH_AROUND_RE,
    MLOCK_FAILED_RE,
    MODULE_SYMBOL_RE,
    MONITORED_BARRIER_RE,
    MPI_PROCESS_RE,
    MPI_SIGNAL_RE,
    NATIVE_CRASH_RE,
    NCCL1_TESTS_RANK_RE,
    NCCL_ERRORS,
    NCCL_LIST_VAR_RE,
    NCCL_NATIVE_FRAME_RE,
    NCCL_SYMBOL_RE,
    NCCL_WHEEL_RE,
    NCCL_WORD_RE,
    NET_CONNECTED_RE,
    NET_ID_MISSING_RE,
    NET_PLUGIN_RE,
    NET_SYSFS,
    NGINX_UPSTREAM_TIMEOUT_RE,
    NIC_POLICY_RE,
    NIXL_ERR_RE,
    NO_ALGO_RE,
    NO_IFACE_RE,
    NVIDIA_OOPS_RE,
    NVLS_BIND_RE,
    NVML_ERRORS,
    NVML_INIT_RE,
    NVML_NOT_FOUND_RE,
    NVML_OPEN_RE,
    NVSHMEM_QP_RE,
    NVSHMEM_STATUS_RE,
    OFI_AV_OPEN_RE,
    OFI_CQ_OPEN_RE,
    OFI_INIT_FAILED,
    OFI_INITIALIZING,
    OFI_MR_REG_RE,
    OFI_NOT_CONNECTED_RE,
    OFI_PROTOCOL_RE,
    OFI_RAILS_RE,
    OFI_RE,
    OFI_REGISTER_RE,
    OLLAMA_CLIENT_PROXY_RE,
    OLLAMA_GFX_RE,
    OLLAMA_IGPU_RE,
    OLLAMA_KV_RE,
    OLLAMA_LIBDIRS_RE,
    OLLAMA_MORE_SYSTEM_RE,
    OLLAMA_OFFLOAD_RE,
    OLLAMA_PART_FAILED_RE,
    OLLAMA_REQUIRED_RE,
    OLLAMA_SYSTEM_MEMORY_RE,
    OLLAMA_TOO_LARGE_RE,
    OOM_INVOKED_RE,
    OOM_KILL_RE,
    P2P_UNAVAILABLE_RE,
    PEER_RE,
    PG_RANK_RE,
    PL_RANK_RE,
    PLUGIN_MISSING_RE,
    PLUGIN_PATH_RE,
    PLUGIN_VERSION_RE,
    PLUGIN_XID_RE,
    POD_SECURITY_RE,
    PROV_ERR_RE,
    PROXY_RE,
    PY_ERRNO_RE,
    PY_EXCEPTION_RE,
    PY_POOL_RE,
    PY_RESOLVE_RE,
    PYXIS_FAILED_RE,
    QP_GID_RE,
    QP_RE,
    QP_STATE_RE,
    RAS_COUNTS_RE,
    RAS_MISSING_DATA_RE,
    RAS_PROCESS_RE,
    RAY_GCS_FAILED_RE,
    RAY_NODE_REQUEST_RE,
    RAY_REDIS_FAILED_RE,
    RAY_START_ADDRESS_RE,
    RDMA_SYSFS_RE,
    RDZV_PORT_RE,
    RDZV_STORE_RE,
    REGISTRY_401_RE,
    RESOLVE_RE,
    RETRY_EXCEEDED_RE,
    RING_LOOP_RE,
    ROCM_NO_DEVICE_RE,
    RPC_SERVER_RE,
    RXDM_COUNT_RE,
    RXDM_PCI_RE,
    SANITIZER_ACCESS_RE,
    SANITIZER_NCCL_FRAME_RE,
    SHARP_INIT_RE,
    SHARP_LOCK_RE,
    SHM_RE,
    SHMEM_RE,
    SLURM_GPU_AFFINITY_RE,
    SOCKET_CREATE_RE,
    SOCKET_DEV_RE,
    SOCKET_ERRORS,
    SOCKET_TRUNCATED_RE,
    SOCKET_TYPE_RE,
    SOCKET_TYPES,
    SPACE_ALLOC_RE,
    SPEED_RE,
    SSH_CONNECT_RE,
    STORE_BIND_RE,
    STORE_CONNECT_RE,
    STORE_RE,
    STORE_TIMEOUT_RE,
    STREAM_CUT_WORDS,
    TEST_FAIL_RE,
    TESTS_DEVICE_RE,
    TOPO_FRAME_RE,
    TOPO_RE,
    TOPO_XML_FULL_RE,
    TOPO_XML_RE,
    TORCH_OOM_RE,
    TORCHRUN_EXIT_RE,
    TORCHRUN_TABLE_EXIT_RE,
    TRT_LEN_RE,
    TRT_VERSION_RE,
    TRUNCATED_RE,
    UCC_ERROR_RE,
    UCX_ERROR_RE,
    UCX_TLS_RE,
    UNIQUE_ID_WAIT_RE,
    USERNS_RE,
    VENDOR_RE,
    VERBS_ABI_RE,
    VERBS_PROVIDER_RE,
    VERSION_MISMATCH_RE,
    VLLM_BLOCK_SIZE_RE,
    VLLM_BLOCKS_RE,
    VLLM_CONCURRENCY_RE,
    VLLM_KV_SHORT_RE,
    VLLM_MAX_LEN_RE,
    WATCHDOG_STUCK_RE,
    WGET_PROXY_RE,
    WORK_LIST_SIZE_RE,
    WRONG_MAGIC_RE,
)


def int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


Detail = tuple[tuple[str, str | int | None], ...]


class Found(NamedTuple):
    """What the failure patterns found in one message (see ``detect``)."""

    events: tuple[tuple[str, Detail], ...] = ()  # (kind, details) in the order found
    completion: int | None = None  # an ibv_wc_status from a completion error
    gid_entry: tuple[int, str, int] | None = None  # (index, GID, RoCE version) of a GID table


NOTHING = Found()


def _cuda_failure_line(msg: str) -> bool:
    """NCCL's `Cuda failure '...'` or nccl-tests' `Test CUDA failure ... '...'`: the CUDA error
    read from it names what it implies (``detect``)."""
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
        add("collective_desync", rank_a=int_or_none(ds.group(1)) if ds else None,
            sequence=int_or_none(ds.group(2)) if ds else None, op_a=ds.group(3) if ds else None,
            shape_a=ds.group(4) if ds else None, rank_b=int_or_none(ds.group(5)) if ds else None,
            op_b=ds.group(6) if ds else None, shape_b=ds.group(7) if ds else None)  # fmt: skip
    if "Invalid config blocking attribute" in msg:
        add("nccl_config_invalid")
    if "/dev/shm has only" in msg and (ds_ := DEV_SHM_RE.search(msg)) is not None:
        add("dev_shm_small", bytes=int(ds_.group(1)))  # Ray's warning at its start
    if "Address already in use" in msg and STORE_RE.search(msg) is not None:
        port = STORE_BIND_RE.search(msg)
        add("store_port_in_use", port=int_or_none(port.group(1)) if port else None)
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
    elif "missing ranks:" in msg and (hm := HOROVOD_MISSING_RE.search(msg)) is not None:
        before = msg[: hm.start()].split()
        op = before[-1].removeprefix("ops:") if before else None
        add("horovod_missing_ranks", op=op, ranks=hm.group(1).replace(" ", ""))
    if "Horovod" in msg and (hr := HOROVOD_RANK_LINE_RE.match(msg.strip())) is not None:
        add("horovod_missing_ranks", op=hr.group(2), ranks=hr.group(1))
    if "waiting for remainder of ranks" in msg and (hs := HOROVOD_STALL_RE.search(msg)) is not None:
        add("horovod_stall", seconds=int(hs.group(1)))
    if (
        "Caught signal" in msg or "==== backtrace" in msg or "*** " in msg or "(core dumped)" in msg
    ) and (nc := NATIVE_CRASH_RE.search(msg)) is not None:
        add("native_crash", signal=nc.group(1) or nc.group(2) or nc.group(3) or nc.group(4))
    # (a frame names its function with `()` or ` (`; the name must hold NCCL's prefix)
    if "()" in msg and (nf := NCCL_NATIVE_FRAME_RE.match(msg.strip())) and "nccl" in nf.group(1):
        add("nccl_native_frame", function=nf.group(1))
    if "didn't join collective" in msg and (db := DESYNC_BEHIND_RE.search(msg)) is not None:
        add("desync_behind", ranks=db.group(1).replace(" ", ""), seq=int(db.group(2)))
    if "didn't finish collective" in msg and (dj := DESYNC_STUCK_RE.search(msg)) is not None:
        add("desync_stuck_in", ranks=dj.group(1).replace(" ", ""), seq=int(dj.group(2)))
    if "are the lagging ranks" in msg and (dn := DESYNC_NEVER_RE.search(msg)) is not None:
        add("desync_never_joined", ranks=dn.group(1).replace(" ", ""))
    if "Culprit rank" in msg:
        for cu in FR_CULPRIT_RE.finditer(msg):
            add("fr_culprit", culprit=int(cu.group(1)), error=cu.group(2))
    if "Heartbeat monitor timed out" in msg:
        pg, size = PG_RANK_RE.search(msg), WORK_LIST_SIZE_RE.search(msg)
        add("torch_heartbeat_timeout", pg=pg.group(1) if pg else "?", group_rank=pg.group(2) if pg else "?",
            pending=int(size.group(1)) if size else "?")  # fmt: skip
    if "watchdog got stuck" in msg and (ws := WATCHDOG_STUCK_RE.search(msg)) is not None:
        add("torch_watchdog_stuck", seconds=int(ws.group(1)))
    if "Wait timeout for key" in msg and (gw := GLOO_WAIT_TIMEOUT_RE.search(msg)) is not None:
        add("gloo_store_timeout", keys=gw.group(1) or "(none named)")
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
    # nccl-tests' header: `# nThread 1 nGpus 8 ...`, or NCCL 1's era `Rank  0 uses device  0 [0x05]`
    if "# nThread" in msg or (" uses device " in msg and NCCL1_TESTS_RANK_RE.match(msg)):
        add("nccl_tests_output")
    if " Pid " in msg and (td := TESTS_DEVICE_RE.search(msg)) is not None:
        add("tests_gpu", name=td.group(1).strip())
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
    if "ssh: connect to host" in msg and (sc := SSH_CONNECT_RE.match(msg.strip())) is not None:
        add("ssh_connect_failed", target=sc.group(1), port=int(sc.group(2)), reason=sc.group(3))
    if ("PasswordAuthentication=no" in msg or "not reachable via ssh" in msg) and (
        ds := DS_SSH_CHECK_RE.search(msg)
    ):
        add("ds_ssh_check_failed", target=ds.group(1) or ds.group(3),
            status=int(ds.group(2)) if ds.group(2) else None)  # fmt: skip
    if "communicator data from" in msg and (rm := RAS_MISSING_DATA_RE.search(msg)) is not None:
        add("ras_missing_data", ranks=int(rm.group(1)))
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
    if "operation counts" in msg and RAS_COUNTS_RE.search(msg):  # NCCL's RAS status: MISMATCH
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
    if "Barrier timed out" in msg and (jb := JAX_BARRIER_RE.search(msg)) is not None:
        add("jax_barrier_timeout", barrier=jb.group(1))
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
    elif "exitcode" in msg and (tt := TORCHRUN_TABLE_EXIT_RE.match(msg.strip())) is not None:
        add("torchrun_child_exit", code=int(tt.group(1)), pid=int(tt.group(2)))


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
                device=int_or_none(go.group(2)) if go else None)  # fmt: skip
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
        add("hccl_roce_cqe", status=int_or_none(cqe.group(1)) if cqe else None)
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


def detect(msg: str, line: str, rank: int | None, outside: bool = False) -> Found:
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

    # NVSHMEM's own lines: a source location (ibrc.cpp, ibgda.cpp) or IBGDA's bare messages
    # (`Unable to create ah.`, `ibgda_rc_init2rtr failed on RC #216.`)
    if ("ibrc.cpp" in msg or "ibgda" in msg or "Unable to create ah" in msg) and (
        nq := NVSHMEM_QP_RE.search(msg)
    ) is not None:
        status = NVSHMEM_STATUS_RE.search(msg)
        add("nvshmem_qp_failed", status=int(status.group(1)) if status else None, step=nq.group(0))
    if "not enumerated as an mlx5 device" in msg:  # NVSHMEM's IBGDA: mlx5 NICs only
        add("nvshmem_not_mlx5")
    if ("Rendezvous" in msg or "C10d store" in msg or "c10d_rendezvous_backend" in msg) and (
        RDZV_STORE_RE.search(msg) is not None
    ):
        add("rdzv_store_failed")
    if "No suitable space found" in msg and (sa := SPACE_ALLOC_RE.search(msg)) is not None:
        add("symmetric_space_exhausted", size_gib=f"{int(sa.group(1), 16) / 2**30:.1f}",
            limit_gib=f"{int(sa.group(2), 16) / 2**30:.1f}")  # fmt: skip
    if "Init START" in msg and (ist := INIT_START_RE.search(msg)) is not None:
        add("comm_init_rank", comm_rank=int(ist.group(1)), bus=ist.group(2), comm_id=ist.group(3))
    if "before the previous operation returned" in msg:  # init.cc, ncclCommEnsureReady
        add("comm_not_ready")
    if "invalid root" in msg and (ar := ARGCHECK_ROOT_RE.search(msg)) is not None:
        add("argcheck_invalid", op=ar.group(1), root=int(ar.group(2)), top=int(ar.group(3)))
    if "completion" in msg and (c := COMPLETION_RE.search(msg)) is not None:
        completion = int(c.group("status"))
        vendor = VENDOR_RE.search(msg)
        direction = DIRECTION_RE.search(msg)
        gids = GIDS_RE.search(msg)
        add("ib_completion", status=completion, vendor_err=int_or_none(vendor.group(1)) if vendor else None,
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
        errno = int_or_none(q.group("errno") or q.group("errno_after"))
        add("qp_error", errno=errno or ERRNO.get(text.lower()), text=text,
            gid_index=int_or_none(gid.group(1)) if gid else None,
            next_state=state.group(2) if state else None)  # fmt: skip
    if ("CUDA IPC" in msg or "Cuda failure" in msg or "CUDA failure" in msg) and (
        cu := CUDA_RE.search(msg)
    ) is not None:  # NCCL's own, and nccl-tests' `Test CUDA failure common.cu:1 '...'`
        code = int_or_none(cu.group("code"))
        text = cu.group("text").strip()
        where_text = line.lower()
        where = (
            "nvls" if "nvls" in where_text
            else "shm" if "shm" in where_text
            else ("p2p" if "p2p" in where_text or "IPC" in msg else None)
        )  # fmt: skip
        add("cuda_error", code=code, text=text, where=where,
            p2p_unsupported=int(code in (217, 64) or "peer access is not supported" in text))  # fmt: skip
        if text == "invalid argument" and "enqueue.cc" in line:  # NCCL's launch path refused
            add("launch_invalid_argument")
        if text == "invalid device ordinal":
            add("device_ordinal")
        elif text == "operation not permitted" and where == "p2p":  # CUDA 800 (MNNVL: IMEX)
            add("cumem_create_not_permitted")
        elif "busy or unavailable" in text:  # exclusive-process GPUs already taken
            add("gpu_busy_unavailable")
        elif (
            "driver version is insufficient" in text
            or "not supported in the installed CUDA" in text
        ):
            add("cuda_driver_old")  # CUDA 35, or 36: an API newer than the driver (nccl#496)
        elif text == "system not yet initialized":
            add("cuda_not_initialized")
    if "NVLS" in msg:
        if (nv := NVLS_BIND_RE.search(msg)) is not None:
            add("nvls_bind", size=int(nv.group(1)), code=int(nv.group(2)), error=nv.group(3))
        elif "NVLS Bind mem" in msg:  # transport/nvls.cc binding a multicast buffer: setup going on
            add("nvls_setup")
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
        add("ib_async_event", device=ae.group(1) or "the NIC", event=ae.group(2).strip())
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
    elif "message truncated" in msg and (st := SOCKET_TRUNCATED_RE.search(msg)) is not None:
        add(
            "collective_mismatch",
            local_size=int_or_none(st.group(2)),
            remote_size=int_or_none(st.group(1)),
        )
    elif "Mismatched collective" in msg and (ma := MISMATCH_AROUND_RE.search(msg)) is not None:
        add("collective_mismatch", local_size=None, remote_size=None, around_rank=int(ma.group(1)))
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
            size=int_or_none(sh.group("bytes") or sh.group("size")))  # fmt: skip
    if "ibv_reg_" in msg and (rg := IBV_REG_RE.search(msg)) is not None:
        add("ibv_reg_failed", call=rg.group(1), error=rg.group(2))
    if "ibv_create_" in msg and (cr := IBV_CREATE_RE.search(msg)) is not None:
        add("ibv_create_failed", call=cr.group(1), error=cr.group(2))
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
    elif "NET/Plugin" in msg and INTERNAL_NET_RE.search(msg) is not None:
        add("net_plugin_internal")  # no network plugin found: NCCL's own IB / socket transport
    if (" : Connected" in msg or " : Accepted" in msg) and (nc := NET_CONNECTED_RE.search(msg)):
        add("net_connected", module=nc.group(1))
    if ("incoming CPU" in msg or "Maximum retry reached" in msg) and "fastsocket" in line:
        add("fastsocket_steering_fallback", warning=msg.strip()[:120])
    if "Plugin Path" in msg and (pp := PLUGIN_PATH_RE.search(msg)) is not None:
        add("net_plugin", name=pp.group(1))  # the plugin library NCCL loads (2.2x)
    if "Attribute" in msg and (tx := TOPO_XML_RE.search(msg)) is not None:
        # MSCCL's algorithm files share the wording (msccl_parser.h), not the topology's
        kind = "msccl_xml" if "msccl_parser" in line else "topo_xml"
        add(kind, attribute=tx.group(1), node=tx.group(2))
    if "Socket creation failed" in msg and (sc := SOCKET_CREATE_RE.search(msg)) is not None:
        add("socket_create_failed", reason=sc.group(1))
    if "NET/OFI" in msg and (orr := OFI_REGISTER_RE.search(msg)) is not None:
        add("ofi_register_failed", hmem_type=int(orr.group(1)), device=int(orr.group(2)),
            rc=int(orr.group(3)), error=orr.group(4))  # fmt: skip
    if "family" in msg and (f := FAMILY_RE.search(msg)) is not None:
        add("bad_address_family", family=int(f.group(1)))
    # a network interface without a PCI device (lo, a bridge, a veth) has no sysfs device link:
    # NCCL says so at INFO and places it outside the PCI tree; only a GPU's or NIC's bus path is
    # the missing topology
    # ...nor has an RDMA device without a PCI function (Soft-RoCE's rxe, soft-iWARP's siw): NCCL
    # uses it anyway, outside the PCI tree
    if (
        "real path" in msg
        and (t := TOPO_RE.search(msg)) is not None
        and not t.group(1).startswith(NET_SYSFS)
    ):
        if (rd := RDMA_SYSFS_RE.search(msg)) is not None:
            add("rdma_device_no_pci", device=rd.group(1))
        else:
            add("topology_sysfs", path=t.group(1))
    if "Abort COMPLETE" in msg and (ca := COMM_ABORT_RE.search(msg)) is not None:
        add("comm_abort", comm_rank=int(ca.group(1)), nranks=int(ca.group(2)))
    if ("nvmlDeviceGetP2PStatus" in msg and "Not Supported" in msg) or (
        "Failed to find nvml device" in msg
    ):
        add("nvml_unanswered")
    if "couldn't stat '/sys/class/infiniband/" in msg:  # libibverbs: a listed device not readable
        add(
            "verbs_device_unreadable",
            device=msg.split("/sys/class/infiniband/", 1)[1].split("'")[0][:40],
        )
    if "Invalid rank requested" in msg and (ir := INVALID_RANK_RE.search(msg)) is not None:
        add("invalid_rank", requested=int(ir.group(1)), nranks=int(ir.group(2)))
    if "retrieving ncclUniqueId" in msg and (uw := UNIQUE_ID_WAIT_RE.search(msg)) is not None:
        add("unique_id_wait_failed", waiting=int(uw.group(1)), root=int(uw.group(2)),
            error=uw.group(3).strip())  # fmt: skip
    if "checked in" in msg and (bt := BOOTSTRAP_TWICE_RE.search(msg)) is not None:
        add("bootstrap_rank_twice", rank=int(bt.group(1)), nranks=int(bt.group(2)))
    if "mismatch in rank count" in msg and (bn := BOOTSTRAP_NRANKS_RE.search(msg)) is not None:
        add("bootstrap_nranks_mismatch", root=int(bn.group(1)), joined=int(bn.group(2)))
    if ("enable P2P" in msg or "peer query failed" in msg) and (
        pu := P2P_UNAVAILABLE_RE.search(msg)
    ) is not None:
        add("p2p_unavailable", pair=f"{pu.group(2)} (={pu.group(3)}) and {pu.group(4)} (={pu.group(5)})",
            query_failed=int(pu.group(1) == "peer query failed"))  # fmt: skip
    if "maxSharedMem" in msg and (s := SHMEM_RE.search(msg)) is not None:
        add("max_shared_mem", needed=int(s.group(1)), device=int(s.group(2)))
    if "fi_getinfo" in msg and (fg := FI_GETINFO_RE.search(msg)) is not None:
        add("ofi_no_provider", error=fg.group(1).strip(" :.") or None)
    elif "find any optimal provider" in msg:  # aws-ofi-nccl: "Could not" / "Couldn't find any ..."
        add("ofi_no_provider", error="no optimal provider")
    if "SHARP coll init error" in msg and (si := SHARP_INIT_RE.search(msg)) is not None:
        add("sharp_init_failed", error=si.group(1))
    if (
        "Cannot initialize CollNet" in msg
    ):  # transport.cc: `..., using point-to-point network instead`
        add("collnet_fallback")
    if "ncclTopo" in msg and TOPO_FRAME_RE.search(msg) is not None:  # a stack frame: crashed there
        add("topo_search_crash")
    if "NCCL_IB_HCA=" in msg or "NCCL_SOCKET_IFNAME=" in msg:
        for lv in NCCL_LIST_VAR_RE.finditer(msg):
            # '^' (exclude) and '=' (exact) prefix the whole list, once (nccl-tests#150)
            if any(e.startswith(("^", "=")) for e in lv.group(3).split(",")[1:]):
                add("nccl_list_prefix_misplaced", name=lv.group(1), value=lv.group(3))
    if "has already been destroyed" in msg and (cd := COMM_DESTROYED_RE.search(msg)) is not None:
        add("comm_destroyed_twice", comm=cd.group(1))
    if "Unable to open device" in msg and (uo := IB_OPEN_RE.search(msg)) is not None:
        add("ib_open_failed", device=uo.group(1))
    if "contiguousRanksPerHost 2147483647" in msg:  # NCCL 2.31: ranks uneven over the nodes
        add("uneven_ranks_per_host")
    if "SHARP" in msg and SHARP_LOCK_RE.search(msg) is not None:
        add("sharp_lock_failed")
    if ("from kernel command line" in msg or 'Missing "iommu=pt"' in msg) and (
        km := KERNEL_ARG_RE.search(msg)
    ):
        add("kernel_arg_missing", argument=km.group(1))
    if "NET/OFI" in msg and "completed with error" in msg and (o := OFI_RE.search(msg)) is not None:
        add("ofi_error", rc=int_or_none(o.group(1)), error=int_or_none(o.group(2)),
            name=o.group(3) or (o.group("text") or "").strip() or None)  # fmt: skip
    if "Couldn't open AV" in msg and (av := OFI_AV_OPEN_RE.search(msg)) is not None:
        add("ofi_av_open_failed", rc=int(av.group(1)) if av.group(1) else None)
    if "Couldn't open CQ" in msg and (cq := OFI_CQ_OPEN_RE.search(msg)) is not None:
        add("ofi_cq_open_failed", rc=int(cq.group(1)) if cq.group(1) else None)
    if OFI_INIT_FAILED in msg:
        add("ofi_init_failed")
    if OFI_INITIALIZING in msg:
        add("ofi_plugin")
    if "Failed to process command" in msg and (ea := EFA_ADMIN_RE.search(msg)) is not None:
        add("efa_admin_failed", device=ea.group(1), command=ea.group(2), err=int(ea.group(3)))
    if "rgroup and vni" in msg and (cv := CXI_VNI_RE.search(msg)) is not None:
        add("cxi_no_vni", nic=cv.group(1))
    if "NET/OFI" in msg and "nexpected" in msg and (op := OFI_PROTOCOL_RE.search(msg)) is not None:
        add("ofi_protocol_error", what=op.group(1))
    if "hipIpc" in msg and (hi := HIP_IPC_RE.search(msg)) is not None:
        add("hip_ipc_failed", error=(hi.group(1) or "").strip() or None)
    if ("Proxy Call" in msg or "Failed to execute" in msg) and (
        p := PROXY_RE.search(msg)
    ) is not None:
        add("proxy_failed", rank=int_or_none(p.group(1) or p.group(4)), op=p.group(2) or p.group(3))
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
    # (ssh's own `ssh: connect to host ...` is a launcher's failure, read as ssh_connect_failed)
    socket_words = ("connection" in lower or "broken pipe" in lower or "unreachable" in lower
                    or "no route" in lower) and not lower.lstrip().startswith("ssh:")  # fmt: skip
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
