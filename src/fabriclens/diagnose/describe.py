"""One parsed event in words: what each event kind, CUDA error, system-call error and signal
means in a distributed job, and the next thing to look at."""

from __future__ import annotations

from fabriclens.diagnose.xid import xid_catalogue
from fabriclens.parse.cuda_errors import cuda_error
from fabriclens.parse.log_patterns import WC_STATUS
from fabriclens.parse.nccl_log import Event


def _not_a_host(address: str) -> bool:
    """A netmask, a broadcast or the unspecified address given where a host was meant."""
    ip = address.removeprefix("::ffff:")
    parts = ip.split(".")
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        return ip in ("::", "")
    octets = [int(p) for p in parts]
    return octets[0] >= 224 or ip == "0.0.0.0"  # 255.x: a netmask; 224+: multicast, reserved


# events whose words need no logic
EVENT_WORDS = {
    "host_unresolved": "the name {name} does not resolve",
    "collective_desync": "ranks ran different collectives (the line is cut before it names them)",
    "mpirun_env_prefix": "{names} set before mpirun, not passed with -x",
    "ib_async_event": "{device}: {event}",
    "rdma_device_no_pci": "the RDMA device {device} has no PCI device in sysfs",
    "bootstrap_rank_twice": "rank {rank} of {nranks} came to NCCL's bootstrap twice",
    "bootstrap_nranks_mismatch": "a process joined NCCL's bootstrap with {joined} ranks where the root has {root}",
    "invalid_rank": "a process asked NCCL for rank {requested} of a communicator of {nranks} ranks (0 to {nranks} - 1)",
    "unique_id_wait_failed": "rank {waiting} waited for rank {root}'s NCCL unique id in the c10d store: {error}",
    "verbs_device_unreadable": "libibverbs lists {device} but cannot read its sysfs entry",
    "nvml_unanswered": "NVML could not answer for this GPU",
    "comm_abort": "rank {comm_rank} of {nranks}: NCCL aborted its communicator (Abort COMPLETE)",
    "p2p_unavailable": "CUDA gives no peer-to-peer access between GPUs {pair}",
    "device_ordinal": "invalid device ordinal (CUDA error 101)",
    "no_algorithm": "NCCL has no algorithm and protocol for {function} ({datatype})",
    "algo_forced": "{variable} was set to {value}",
    "nvls_slots_exhausted": "Fabric Manager: every NVSwitch multicast slot is in use",
    "topo_xml_full": "NCCL's topology tree outgrew its buffer ({max_nodes} nodes)",
    "libfabric_error": "libfabric error {code}: {error}",
    "efa_rx_post_failed": "the EFA provider could not post its receive buffers",
    "hip_no_device": "HIP: {error} at {where}",
    "vllm_workers_wait": "vLLM's engine waited a minute for its workers",
    "nvml_missing": "NCCL could not load the driver's NVML library ({library})",
    "mpi_ofi_abort": "Open MPI's libfabric layer (OFI MTL) aborted the job",
    "ucx_error": "UCX: {error}",
    "engine_custom_ar_no_p2p": "the engine's own all-reduce kernel needs GPU peer access, which these GPUs lack",
    "ray_version_mismatch": "Ray refused a process whose Ray version differs from the cluster's",
    "ofi_rails_mismatch": "aws-ofi-nccl: NIC {nic} has {got} rails on the peer, {expected} here",
    "gin_doca_failed": "NCCL's GPU-initiated networking (GIN over DOCA) failed: DOCA failure {code}",
    "chunk_size_set": "NCCL_CHUNK_SIZE={value} on the command line",
    "proxy_op_wait": "a thread spins in ncclLocalOpAppend, waiting for a free proxy op",
    "orted_not_found": "a remote node cannot find Open MPI's orted",
    "orte_unpack_error": "Open MPI's runtime could not decode a peer's message",
    "spawn_no_main_guard": "Python refused to start a process before the main module finished importing",
    "cumem_create_not_permitted": "cuMemCreate was refused (operation not permitted)",
    "tensile_load_failed": "the BLAS library could not load its kernel file",
    "ray_node_request_unmet": "Ray's autoscaler: no node can take the request (a GPU pinned to a node address)",
    "topo_reverse_path": "NCCL's topology search found no path back between two devices",
    "gloo_iface_missing": "Gloo found no interface named {name}",
    "gloo_loopback_fallback": "Gloo: the host name resolves to no local address; it uses the loopback",
    "te_userbuffers_failed": "TransformerEngine's userbuffers (TP communication overlap) setup failed",
    "cumem_host_probe_frame": "a stack frame in ncclCuMemHostEnable (NCCL's cuMem host probe)",
    "verbs_no_provider": "libibverbs: no user-space driver (provider) for {what}",
    "mpi_not_enough_slots": "Open MPI: fewer slots on the hosts than processes asked for",
    "mpi_cq_create_failed": "MPI's InfiniBand channel could not create a completion queue",
    "ras_process_missing": "NCCL RAS: process {pid} on node {node} (GPU {gpu}) does not answer",
    "ras_process_dead": "NCCL RAS: a job process is considered dead (unreachable)",
    "monitored_barrier_missing": "rank(s) {ranks} did not reach the monitored barrier within {timeout_ms} ms",
    "cray_gtl_not_linked": "Cray MPICH: GPU support requested, but the GTL library is not linked",
    "cray_nic_policy_unconfined": "Cray MPICH: NIC policy {policy}, but rank {rank} is not confined to one NUMA node",
    "ompi_no_slurm_pmi": "Open MPI started by srun, without Slurm's PMI support",
    "cxi_eq_overflow": "the Slingshot NIC's event queue overflowed (libfabric cxi)",
    "ompi_libnbc_frame": "a stack frame in Open MPI's non-blocking collectives (libnbc)",
    "msccl_xml": "MSCCL's algorithm file: attribute {attribute} of node {node} not found",
    "nvshmem_not_mlx5": "NVSHMEM's IBGDA transport: a NIC that is not an mlx5 (ConnectX) device",
    "rdzv_store_failed": "torchrun's rendezvous: the c10d store could not be reached",
    "ofi_av_open_failed": "aws-ofi-nccl could not open the libfabric address vector (RC {rc})",
    "ofi_cq_open_failed": "aws-ofi-nccl could not open a libfabric completion queue (RC {rc})",
    "ofi_init_failed": "aws-ofi-nccl failed to initialise; NCCL went on without it",
    "ofi_plugin": "aws-ofi-nccl (the libfabric plugin) was loaded",
    "efa_admin_failed": "the EFA driver's {command} command failed on {device} (err {err})",
    "cxi_no_vni": "libfabric cxi: no Slingshot VNI for {nic}",
    "ofi_protocol_error": "aws-ofi-nccl's RDMA protocol: {what}",
    "hip_ipc_failed": "RCCL: hipIpcGetMemHandle failed ({error})",
    "argcheck_invalid": "NCCL's argument check: {op} named rank {root}, outside the communicator's 0..{top}",
    "ras_mismatch": "NCCL RAS: ranks have launched different numbers of collectives",
    "pmix_gds_ds12": "PMIx's shared-memory data store (gds/ds12) failed",
    "slurm_switch_plugin_missing": "srun could not load Slurm's Slingshot switch plugin",
    "gpu_busy_unavailable": "CUDA: the GPU is busy or unavailable to this process",
    "nvml_unknown_error": "NVML cannot be initialised in the container (Unknown Error)",
    "pmix_server_unreachable": "MPI found no PMIx server, only PMI-1/2",
    "shapes_differ": "a collective's tensors have different shapes on different processes",
    "ucx_signal_handler": "UCX's signal handler caught a crash (ucs_handle_error)",
    "container_driver_timeout": "the container runtime's call to the GPU driver timed out",
    "fabric_state_in_progress": "nvidia-smi: the GPU's NVLink fabric is still 'In Progress'",
    "jax_service_fatal": "JAX's distributed service ended this process: another task failed",
    "jax_task_named": "JAX's coordination service names task {task} as failed",
    "jax_coordinator_lost": "the connection to JAX's coordination service (process 0) closed",
    "jax_task_disconnected": "a JAX collective was cancelled: a participating task is no longer connected",
    "spawn_pickle_error": "a spawned worker's arguments could not be pickled",
    "enroot_dir_denied": "enroot cannot create {path} (Permission denied)",
    "userns_failed": "the container's user namespace was refused: {reason}",
    "pyxis_failed": "pyxis (Slurm's container plugin): {step}",
    "fm_ib_umad_missing": "Fabric Manager: the ib_umad kernel module is not loaded",
    "fm_nothing_to_do": "Fabric Manager found no NVSwitch to set up (NV_WARN_NOTHING_TO_DO)",
    "rxdm_gpus_mismatch": "TCPXO's receive-data-path manager found {detected} of {actual} GPUs",
    "rxdm_no_pci_gpus": "TCPXO's receive-data-path manager found no GPU in the PCI tree",
    "hccl_ifname_missing": "HCCL_SOCKET_IFNAME names {name}, an interface this host (or container) does not have",
    "hccl_tls_mismatch": "HCCL: the ranks' NPU TLS settings differ",
    "hccl_op_mismatch": "HCCL's parameter check: this rank issued {local}, its peer {remote}",
    "hccl_ip_family_mismatch": "HCCL: one rank's device address is {family}, the others' {others}",
    "container_nvml_missing": "the NVIDIA container hook could not load {library}",
    "mpi_ofi_addrinfo": "Intel MPI: OFI addrinfo() failed at MPI_Init",
    "open_files_exhausted": "a process ran out of file descriptors (Too many open files)",
    "hccl_port_bound": "HCCL could not listen on its host port: already bound",
    "hccl_root_unreachable": "HCCL: this rank could not connect to the root at {server}",
    "hccl_ranks_missing": "HCCL's root waited in vain for ranks {ranks}",
    "hccl_device_oom": "HCCL ran out of NPU memory setting up its links (EI0011)",
    "hccl_sdma_error": "an HCCL SDMA copy task failed (EI0012)",
    "hccl_roce_cqe": "an HCCL RoCE completion error (EI0013)",
    "hccl_ranktable_path": "HCCL's rank table path {path} does not exist or cannot be read",
    "hccl_task_failed": "an HCCL {op} task failed",
    "hccl_error_code": "HCCL error {code}: {name}",
    "mpi_ofi_not_connected": "Intel MPI's OFI send failed: Transport endpoint is not connected",
    "mpi_tcp_no_route": "Open MPI's TCP transport: connect() failed with errno 113 (No route to host)",
    "hccl_npu_port_bound": "HCCL could not listen on the NPU's port {port}: already in use",
    "hccl_link_timeout": "HCCL: a link's peer did not set up its end in time (EI0006)",
    "hccl_heartbeat_lost": "HCCL lost the heartbeat of the rank at {where}",
    "hccl_ranktable_ip": "the rank table gives device address {table}, the device has {device}",
    "hccl_superpod": "HCCL: logical superpod {logic} on physical superpod {physical}",
    "device_plugin_nvml": "the Kubernetes device plugin could not load NVML",
    "efa_sync_memops": "libfabric's EFA provider could not set CUDA sync memops on a buffer",
    "cloud_quota_exceeded": "the cloud's quota {quota} is used up",
    "ena_allowance_exceeded": "{counter}: {count} packets shaped at the instance's limit",
    "peermem_symbol_mismatch": "the kernel refused {module}: built against another kernel's RDMA symbols",
    "module_symbol_mismatch": "the kernel refused the module {module}: its {symbol} is another kernel's",
    "ofi_mr_no_memory": "libfabric could not register memory with the NIC (Cannot allocate memory)",
    "ib_devices_list_failed": "the verbs library could not list the RDMA devices: {error}",
    "verbs_kernel_abi": "libibverbs: driver {driver} does not support the kernel's RDMA ABI",
    "kernel_headers_unavailable": "the package repositories hold no {package}",
    "no_socket_iface": "NCCL found no interface for its sockets",
    "fm_driver_mismatch": "Fabric Manager {fm_version} against driver {driver_version}",
    "container_file_exists": "the image already holds {file}, which the NVIDIA runtime mounts from the host",
    "containerd_config_unsupported": "the toolkit cannot read containerd's config version {version}",
    "nccl_symbol_missing": "{library} needs {symbol}, which the libnccl.so.2 it loaded lacks",
    "nccl_wheel": "NCCL {version} installed for CUDA {cuda} (nvidia-nccl-cu{cuda})",
    "rdma_port_down": "{device} port {port} ({netdev}) is Down",
    "torch_cuda_oom": "PyTorch could not allocate {tried} more on the GPU",
    "python_exception": "a Python program raised {exception}",
    "rdzv_endpoint_invalid": "the launcher's rendezvous endpoint is '{endpoint}'",
    "master_addr_missing": "the launcher has no master address",
    "plugin_not_found": "NCCL could not find its {plugin} plugin as {names}",
    "ofi_tuner_refused": "aws-ofi-nccl's tuner refused to load: NCCL_ALGO or NCCL_PROTO is set",
    "ofi_sets_algo_proto": "aws-ofi-nccl set NCCL_ALGO/NCCL_PROTO itself",
    "nccl_unknown_result": "an NCCL result code this NCCL has no name for",
    "sanitizer_invalid_access": "compute-sanitizer: invalid {access} of {size} bytes",
    "sanitizer_nccl_frame": "in NCCL's kernel {function}",
    "gpu_memory_unbalanced": "free memory differs between the GPUs",
    "nccl_devcomm_failed": "ncclDevCommCreate failed",
    "fr_not_joined": "flight recorder: not every rank joined collective {collective}",
    "fr_missing_ranks": "flight recorder: ranks {ranks} missing",
    "fr_collective": "flight recorder: the collective is {backend}'s {op}",
    "horovod_missing_ranks": "Horovod's stall inspector: rank {ranks} has not submitted {op}",
    "horovod_stall": "Horovod's stall inspector: tensors have waited for the other ranks over {seconds} s",
    "native_crash": "a native crash report (a signal handler's or the shell's)",
    "nccl_native_frame": "a frame of the crash's backtrace in NCCL: {function}",
    "desync_behind": "desync report: ranks [{ranks}] finished collective #{seq} and never joined the next",
    "desync_never_joined": "desync report: ranks [{ranks}] never joined any collective",
    "desync_stuck_in": "desync report: ranks [{ranks}] joined collective #{seq} and did not finish it",
    "fr_culprit": "flight recorder: culprit rank {culprit} ({error})",
    "torch_heartbeat_timeout": "PyTorch's heartbeat monitor timed out (PG {pg}, group rank {group_rank}): {pending} collectives issued and not completed",
    "torch_watchdog_stuck": "ProcessGroupNCCL's watchdog made no progress for {seconds} s",
    "net_connected": "NET/{module} reports a connection it made",
    "fastsocket_steering_fallback": "GCP FastSocket: {warning}",
    "socket_timeout": "an established connection timed out (peer {peer})",
    "torchrun_child_exit": "torchrun: a rank's process ended with exit code {code} (pid {pid})",
    "jax_barrier_timeout": "JAX's coordination service: barrier {barrier} timed out",
    "ras_missing_data": "RAS: a communicator misses the data of {ranks} rank(s)",
    "symmetric_space_exhausted": "NCCL's symmetric address space: {size_gib} GiB asked within a limit of {limit_gib} GiB, no room left",
    "comm_not_ready": "a communicator used before its previous operation returned ncclSuccess",
    "ds_ssh_check_failed": "DeepSpeed's launcher: passwordless ssh to {target} failed",
    "ssh_connect_failed": "ssh to {target} port {port}: {reason}",
    "gloo_store_timeout": "Gloo's rendezvous store: key(s) {keys} did not arrive in time",
    "nvidia_driver_oops": "a kernel oops inside the NVIDIA driver ({module})",
    "duplicate_mac": "cloud-init: {iface_a} and {iface_b} have one MAC",
    "mig_in_use": "the MIG manager could not destroy an instance: in use by another client",
    "host_oom_killed": "the kernel's OOM killer ended process {pid} ({program})",
    "nixl_error": "NIXL reports NIXL_ERR_{code}",
    "ofi_av_insert_failed": "aws-ofi-nccl could not add a peer's EFA address to its address vector",
    "dmabuf_topology_refused": "the NVIDIA driver refused a dma-buf mapping: topology not supported ({mapping})",
    "pl_rank": "global rank {global_rank} starts (member {member} of {world})",
    "pl_slurm_handled": "Lightning: multi-processing is handled by SLURM",
    "nemo_slurm_not_handling": "NeMo: multi-node training without SLURM handling the processes",
    "ucx_vram_as_host": "UCX took GPU memory for host memory: it has no CUDA support loaded",
    "ucx_tls": "UCX_TLS={value}",
    "nvshmem_uar_failed": "NVSHMEM's IBGDA could not allocate a UAR (doorbell page) on the NIC",
    "mooncake_gid_null": "Mooncake found no GID for its RDMA device (MC_GID_INDEX)",
    "ollama_gfx_unsupported": "Ollama's ROCm libraries have no kernels for {gpu_type}",
    "ollama_no_gpu": "Ollama found no GPU it can use: models run on the CPU",
    "llama_ctx_size": "the runner's context is {ctx} tokens (num_ctx)",
    "download_part_failed": "a part of the download failed: {error}",
    "hub_server_error": "the Hugging Face Hub answered {code} (a server error)",
    "hub_unreachable": "no connection to https://huggingface.co and no cached copy",
    "ollama_client_proxy": "a proxy set on Ollama's client command line (ollama run / pull)",
    "ray_start_address": "a Ray node joins the head at '{address}:{port}'",
    "ray_gcs_unreachable": "Ray could not reach the head's GCS at '{address}:{port}'",
    "ray_node_dead": "Ray's GCS marked a node dead: it missed too many heartbeats",
    "http_connect_failed": "a client could not connect to {server}:{port} ({reason})",
    "docker_host_unresolved": "host.docker.internal does not resolve inside the container",
    "connect_unspecified": "a connection to an address that is not valid to connect to (WinError 10049: 0.0.0.0)",
    "http_proxy_answered": "an HTTP proxy answered {code} for the local server",
    "gateway_timeout": "a gateway gave up waiting for the server (504 Gateway Time-out{by})",
    "stream_cut": "the response ended before its end: {words}",
    "client_timeout": "the client's own time limit ran out ({exception})",
    "icmp_policy_unreachable": "Windows' firewall dropped the packet (Source address failed ingress/egress policy)",
    "server_listening": "the server listens on {address}:{port}",
    "rpc_server_start": "llama.cpp's rpc-server starts on {address}:{port}",
    "rpc_server_socket_failed": "llama.cpp's rpc-server could not open its listening socket",
    "dllama_socket_closed": "distributed-llama: the socket to the other node closed (ReadSocketException)",
    "exo_no_peers": "exo's discovery found no other node",
    "host_oom_invoked": "the kernel's out-of-memory report (started by {program})",
    "nvls_register_failed": "NCCL could not register a user buffer for NVLS",
    "nccl_bind_in_use": "NCCL could not bind a listening socket: the address is in use",
    "vllm_custom_ar_error": "vLLM's custom all-reduce: CUDA error '{error}' ({where})",
    "ollama_host_short": "Ollama: the model needs {requested} of host memory, more than the {available} available",
    "ollama_required": "Ollama's estimate: {full} for the whole model, {gpu} of it on the GPUs",
    "ollama_system_memory": "the host's free memory as Ollama reads it: {free}, swap {swap}",
    "llama_runner_killed": "the model runner was killed (SIGKILL)",
    "ggml_host_alloc_failed": "llama.cpp could not allocate the CPU's buffer{size}",
    "llama_no_mmap": "the runner reads the model into RAM whole (--no-mmap)",
    "llama_mlock_failed": "llama.cpp could not lock {size} bytes of the model in RAM (--mlock)",
    "ollama_igpu": "Ollama counts {available_gib} of the integrated GPU's {total_gib} GiB as free ({libdirs})",
    "llama_kv_alloc_failed": "llama.cpp could not allocate its KV cache",
    "vllm_no_kv_memory": "vLLM found no GPU memory left for its KV cache",
    "vllm_kv_short": "vLLM's KV cache holds {kv_tokens} tokens, fewer than one request of max_model_len {max_len}",
    "vllm_gpu_blocks": "vLLM's KV cache: {blocks} blocks",
    "vllm_concurrency": "vLLM's KV cache holds {times}x one request of {tokens} tokens",
    "cudagraph_capture_frame": "the traceback runs through CUDA-graph capture",
    "trt_engine_version": "TensorRT reads serialization version {current}; the engine was written as {engine}",
    "trt_length_over_engine": "a request of {inlen} in / {outlen} out tokens against an engine built for {max_inlen} / {max_outlen}",
    "torch_no_nccl": "this PyTorch build has no NCCL",
    "cuinit_not_found": "cuInit failed with CUDA_ERROR_NOT_FOUND: the driver library the process loaded lacks a symbol",
    "nvml_init_failed": "NVML failed to start (error {code}: {name})",
    "vllm_wsl_no_pin": "vLLM turned pinned host memory off: it runs under WSL",
    "hip_no_kernel": "HIP could not load a kernel: error {code} ({name}): no code object for this GPU",
    "envoy_sidecar": "an Envoy proxy (Istio's sidecar) logs the pod's connections",
    "pg_nccl_aborted": "PyTorch ended the process after an NCCL operation failed or timed out",
    "pod_security_forbidden": "Kubernetes Pod Security ({level}) refused the pod",
    "slurm_gpu_affinity_socket": "slurmd: the GPU's cores {cores} on {node} do not match Slurm's sockets",
    "registry_unauthorized": "the registry {registry} refused the pull of {image} (401)",
    "gloo_full_mesh_failed": "PyTorch's Gloo group could not connect every pair of ranks",
    "net_id_missing": "NCCL's topology search asked for a network device (NET {net_id}) it does not have",
    "nccl_version_mismatch": "rank {rank_a} runs NCCL {version_a}, rank {rank_b} NCCL {version_b}",
    "dnf_releasever_stale": "dnf asked for OS release {releasever}; the running kernel is release {kernel_release}'s",
    "nvml_version_mismatch": "NVML: the driver's kernel module and its libraries are of different releases",
    "apt_nvidia_upgrade": "the package manager upgraded {package}",
    "sharp_init_failed": "the SHARP CollNet plugin could not start: {error}",
    "collnet_fallback": "NCCL could not set up CollNet (SHARP) and uses the point-to-point network instead",
    "topo_search_crash": "a stack frame in NCCL's topology search (ncclTopoCompute)",
    "nvls_setup": "NVLS multicast buffers bound (NVLink SHARP setup under way)",
    "dev_shm_small": "/dev/shm of {bytes} bytes (Ray's start-up warning)",
    "net_plugin_internal": "no network plugin found: NCCL's internal network transport",
    "nccl_list_prefix_misplaced": "{name}={value}: a '^' or '=' prefix repeated inside the list",
    "comm_destroyed_twice": "communicator {comm} destroyed again (ncclCommDestroy on a destroyed communicator)",
    "launch_invalid_argument": "a CUDA call in NCCL's launch path (enqueue.cc) refused with 'invalid argument'",
}
# What each CUDA error (parse.cuda_errors) says, in a distributed job: the enum's description
# (CUDA Runtime API, cudaError), with the usual reason the rules here give
_LOST = "the process's CUDA context is lost: every later CUDA call fails the same way"
CUDA_HINTS = {
    "cudaErrorInvalidValue": "a call was given an invalid argument",
    "cudaErrorMemoryAllocation": "the GPU's memory is full",
    "cudaErrorTooManyPeers": "a GPU has no peer mappings left (without NVSwitch, eight peer connections a device)",
    "cudaErrorInitializationError": "CUDA could not start: the driver, the device files, or a process forked after CUDA started",
    "cudaErrorCudartUnloading": "the process was already shutting down: the first error before it is the cause",
    "cudaErrorInvalidDevicePointer": "an address that is not GPU memory where GPU memory was expected",
    "cudaErrorInsufficientDriver": "the driver is older than this CUDA runtime needs",
    "cudaErrorCallRequiresNewerDriver": "the call needs a newer driver than the one installed (a build for a newer CUDA)",
    "cudaErrorDevicesUnavailable": "the GPU is in exclusive mode and another process holds it",
    "cudaErrorNoDevice": "the process sees no GPU: the driver not loaded, CUDA_VISIBLE_DEVICES empty, or a container started without GPUs",
    "cudaErrorInvalidDevice": "a GPU index beyond the GPUs this process sees",
    "cudaErrorInvalidDeviceFunction": "no code built for this GPU's architecture (or the kernel is not one of this device's)",
    "cudaErrorNoKernelImageForDevice": "no code built for this GPU's architecture",
    "cudaErrorInvalidPtx": "the driver could not compile the program's PTX for this GPU",
    "cudaErrorUnsupportedPtxVersion": "the program's PTX comes from a CUDA toolkit newer than the driver",
    "cudaErrorSymbolNotFound": "no code built for this GPU's architecture",
    "cudaErrorECCUncorrectable": f"an uncorrectable memory error on the GPU (hardware: an Xid 48, 94 or 95 in dmesg); {_LOST}",
    "cudaErrorPeerAccessUnsupported": "these two GPUs cannot map each other's memory",
    "cudaErrorNvlinkUncorrectable": f"an uncorrectable NVLink error (hardware: an Xid 74 in dmesg); {_LOST}",
    "cudaErrorInvalidResourceHandle": "a stream, event or handle of another context, or one already destroyed",
    "cudaErrorIllegalAddress": f"a kernel read or wrote memory it does not own; {_LOST}",
    "cudaErrorLaunchOutOfResources": "a kernel asked for more registers or shared memory than the GPU has",
    "cudaErrorLaunchTimeout": "a kernel ran too long and was stopped (a GPU that also drives a display, or a hung kernel)",
    "cudaErrorContextIsDestroyed": "the CUDA context was already torn down: the first error before it is the cause",
    "cudaErrorAssert": f"an assertion in a kernel failed (often an index out of range); {_LOST}",
    "cudaErrorHardwareStackError": f"a kernel overran its stack; {_LOST}",
    "cudaErrorIllegalInstruction": f"a kernel ran an illegal instruction; {_LOST}",
    "cudaErrorMisalignedAddress": f"a kernel accessed a misaligned address; {_LOST}",
    "cudaErrorInvalidAddressSpace": f"a kernel used an address of the wrong memory space; {_LOST}",
    "cudaErrorInvalidPc": f"a kernel jumped to an invalid program counter; {_LOST}",
    "cudaErrorLaunchFailure": f"a kernel faulted while running (an invalid address, or the GPU failing: an Xid in dmesg); {_LOST}",
    "cudaErrorNotPermitted": "not permitted here (multi-node NVLink: the IMEX channels)",
    "cudaErrorNotSupported": "not supported by this GPU, driver or platform",
    "cudaErrorSystemNotReady": "the system is not ready (an NVSwitch system: Fabric Manager not running)",
    "cudaErrorSystemDriverMismatch": "the driver's libraries and its kernel module are of different releases",
    "cudaErrorUnknown": "the driver gave no reason: dmesg for an Xid, and nvidia-smi on the node",
}
# The usual reasons, in a distributed job, of the system-call errors another program's line may
# quote (parse.log_patterns.ERRNO_TEXTS), each the next thing to look at
ERRNO_HINTS = {
    "ENOMEM": "memory could not be allocated or locked: ulimit -l, free memory, an RDMA registration beyond the NIC's limits",
    "ENOSYS": "the kernel lacks the call: a module or feature missing (RDMA: ib_uverbs loaded, the openibd / rdma service running)",
    "EPERM": "not permitted: the process's privileges, a container's capabilities (IPC_LOCK, SYS_ADMIN) or --privileged",
    "EACCES": "permission denied: the device file's or directory's mode and the user's groups (/dev/infiniband, /dev/kfd, /dev/shm)",
    "ENODEV": "no such device: the driver not loaded, or the device not passed into the container",
    "ENOSPC": "a file system or /dev/shm full: df -h /dev/shm /tmp",
    "ECONNREFUSED": "nothing listens at the peer's address and port: the peer process not started or dead, or a firewall rejecting",
    "ETIMEDOUT": "no answer from the peer: a firewall dropping packets, the wrong interface or address, or the peer hung",
    "EHOSTUNREACH": "no route to the peer from the chosen interface: its address and the routes",
    "ENETUNREACH": "no route to the peer's network from the chosen interface: its address and the routes",
    "EBUSY": "the device is held by another process, or a GPU is in exclusive mode (nvidia-smi -q -d COMPUTE)",
    "EIO": "the device or file system reported an I/O error: dmesg for the device's errors",
    "EFAULT": "a bad address passed to the kernel: often a GPU buffer where host memory was expected",
    "EAGAIN": "a resource ran out for the moment (threads, locked memory, queue entries): ulimit -a",
    "ECONNRESET": "the peer closed the connection first: its own log holds the cause",
    "EPIPE": "the peer closed the connection first: its own log holds the cause",
}


def describe(event: Event) -> str:
    """One event in words, with where it happened and the line it came from."""
    d = event.detail
    where = " on ".join(
        x for x in (f"GPU {event.dev}" if event.dev is not None else "", event.host or "") if x
    )
    parts: list[str] = []
    if d.get("rank") is not None:
        where = f"rank{d['rank']}" + (f" {where}" if where else "")
    if event.kind == "ib_completion":
        status = int(d["status"] or 0)
        parts.append(f"IB completion error {status} ({WC_STATUS.get(status, 'see ibv_wc_status')})")
        parts += [f"vendor err {d['vendor_err']}"] if d["vendor_err"] is not None else []
        parts += [f"{d['direction']}"] if d["direction"] else []
        parts += [f"from peer {d['peer']}"] if d["peer"] else []
        parts += (
            [f"local GID {d['local_gid']}, remote GID {d['remote_gid']}"] if d["local_gid"] else []
        )
    elif event.kind == "qp_error":
        parts.append(f"ibv_modify_qp failed: {d['text']} (errno {d['errno']})")
        parts += [f"to state {d['next_state']}"] if d["next_state"] else []
        parts += [f"local GID index {d['gid_index']}"] if d["gid_index"] is not None else []
    elif event.kind == "cuda_error":
        meaning = cuda_meaning(str(d["text"]))
        parts.append(
            "CUDA error" + (f" {d['code']}" if d["code"] is not None else "") + f" '{d['text']}'"
            + (f" in the {str(d['where']).upper()} transport" if d["where"] else "")
            + (f" ({meaning})" if meaning else "")
        )  # fmt: skip
    elif event.kind == "errno_text":
        parts.append(
            f"a system call failed with {d['name']} ({d['text']}): "
            + ERRNO_HINTS.get(str(d["name"]), "see the line")
        )
    elif event.kind == "nvls_bind":
        parts.append(f"NVLS multicast bind failed: CUDA error {d['code']} '{d['error']}'")
    elif event.kind == "socket_type_mismatch":
        parts.append(
            f"a peer connected as {d['peer_type']} where this rank expected {d['expected_type']}"
        )
    elif event.kind == "socket_wrong_magic":
        text = f" (its first 8 bytes read '{d['ascii']}')" if d["ascii"] else ""
        parts.append(
            f"a connection that is not this communicator's: magic {d['got']}{text}, expected {d['expected']}"
        )
    elif event.kind == "gdr_distance":
        parts.append(
            f"GPU Direct RDMA off for GPU {d['gpu']} / HCA {d['hca']}: PCIe distance {d['distance']}, NCCL_NET_GDR_LEVEL {d['level']}"
        )
    elif event.kind == "collective_desync" and d["op_a"]:
        seq = f" (collective #{d['sequence']})" if d["sequence"] is not None else ""
        if d["op_a"] == d["op_b"] and d["shape_a"] != d["shape_b"]:
            parts.append(f"rank {d['rank_a']} ran {d['op_a']} on shape [{d['shape_a']}] where rank "
                         f"{d['rank_b']} ran it on [{d['shape_b']}]{seq}")  # fmt: skip
        else:
            parts.append(
                f"rank {d['rank_a']} ran {d['op_a']} where rank {d['rank_b']} ran {d['op_b']}{seq}"
            )
    elif event.kind == "ofi_error":
        name = f" ({d['name']})" if d["name"] else ""
        rc = f" RC {d['rc']}" if d["rc"] is not None else ""
        parts.append(f"NET/OFI completion error{rc}{name}")
    elif event.kind == "ofi_provider_error":
        parts.append(
            f"libfabric {d['provider']} provider: err {d['err']}, prov_err '{d['prov_err']}'"
        )
    elif event.kind == "nccl_config_invalid":
        parts.append("the NCCL loaded rejected PyTorch's communicator configuration")
    elif event.kind == "store_port_in_use":
        port = f"port {d['port']}" if d["port"] is not None else "its port"
        parts.append(f"the rendezvous store's {port} is already in use")
    elif event.kind == "gpu_xid":
        known = xid_catalogue().get(int(str(d["code"])))
        parts.append(
            f"Xid {d['code']}: "
            + (
                str(known["meaning"])
                if known
                else f"{d['message']} (not in the built-in catalogue)"
            )
        )
    elif event.kind == "store_connect_failed":
        parts.append(
            f"the rendezvous store at {d['address']}:{d['port']} did not answer (errno {d['errno']})"
            + (f"; {d['address']} is not a host address" if _not_a_host(str(d["address"])) else "")
        )
    elif event.kind == "process_exit":
        how = (f" on signal {d['signal']}" if d["signal"] else
               f" with status {d['code']}" if d["code"] is not None else "")  # fmt: skip
        code = d["code"]
        if isinstance(code, int) and -code in SIGNALS:  # torchrun's -N: ended by signal N
            how += " (signal {}, {}: {})".format(-code, *SIGNALS[-code])
        node = f" on {d['node']}" if d["node"] else ""
        parts.append(f"the launcher reports rank {d['process_rank']}'s process exited{how}{node}")
    elif event.kind == "nccl_symbol_missing" and not d["library"]:  # a wrapped paste's path
        parts.append(f"a library needs {d['symbol']}, which the libnccl.so.2 it loaded lacks")
    elif event.kind == "ddp_unused_params":
        on = f" on rank {d['on_rank']}" if d["on_rank"] is not None else ""
        names = f": {d['params']}" if d["params"] else ""
        parts.append(f"DDP: parameters without a gradient in the last iteration{on}{names}")
    elif event.kind == "host_buffer_import":
        how = "cuMem (NCCL_CUMEM_HOST_ENABLE)" if d["via"] == "cumem" else "a /dev/shm file (mmap)"
        parts.append(f"a local peer's host buffer imported through {how}")
    elif event.kind == "gpu_offload":
        on = "no layer" if d["gpu_layers"] == 0 else f"{d['gpu_layers']} of {d['layers']} layers"
        kv = f"; its KV cache alone needs {d['kv']}" if d["kv"] else ""
        parts.append(f"{on} on the GPUs, the rest on the CPU{kv}"
                     if int(str(d["gpu_layers"])) < int(str(d["layers"]))
                     else f"all {d['layers']} layers on the GPUs")  # fmt: skip
    elif event.kind == "bf16_unsupported":
        on = f": this {d['gpu']} has compute capability {d['cc']}" if d["gpu"] else ""
        parts.append(f"BF16 needs a GPU of compute capability 8.0 or more{on}")
    elif event.kind == "vllm_max_len":
        size = f", {d['block_size']} tokens a block" if d["block_size"] else ""
        parts.append(f"vLLM's longest request (max_seq_len) is {d['max_len']} tokens{size}")
    elif event.kind == "ggml_gpu_oom":
        size = f" of {d['mib']} MiB on device {d['device']}" if d["mib"] else ""
        parts.append(f"llama.cpp could not allocate a GPU buffer{size}: out of memory")
    elif event.kind == "nvshmem_qp_failed":
        code = f" (status {d['status']})" if d["status"] is not None else ""
        parts.append(f"NVSHMEM's InfiniBand transport: {d['step']}{code}")
    elif event.kind == "host_unresolved" and d["name"] is None:  # a message naming no host
        parts.append("a host name does not resolve")
    elif event.kind in EVENT_WORDS:
        parts.append(EVENT_WORDS[event.kind].format(**d))
    elif event.kind == "gid_selected":
        parts.append(
            f"GID index {d['index']} selected: {d['raw']}"
            + (" = fe80 link-local" if d["link_local"] else "")
        )
    else:
        shown = {k: v for k, v in d.items() if v is not None and k not in ("stage", "rank")}
        parts.append(
            event.kind.replace("_", " ")
            + (": " + ", ".join(f"{k} {v}" for k, v in shown.items()) if shown else "")
        )
    if d.get("stage") and event.kind != "ib_completion":
        parts.append(f"during {d['stage']}")
    return f"{'; '.join(parts)}{' (' + where + ')' if where else ''}  <- {event.line}"


def described(events: list[Event]) -> list[str]:
    """The first five distinct descriptions of ``events``."""
    return list(dict.fromkeys(describe(e) for e in events))[:5]


# the signals that end a rank's process, and what usually sends them (signal(7); torchrun reports
# a process ended by signal N as exit code -N, as Python's subprocess does)
SIGNALS = {
    2: ("SIGINT", "interrupted: Ctrl-C, or the launcher stopping the ranks"),
    6: ("SIGABRT", "native code aborted: a C++ exception nobody caught ('terminate called ...')"),
    7: ("SIGBUS", "a mapped file or shared memory with nothing behind it: /dev/shm full"),
    9: ("SIGKILL", "killed: the kernel's out-of-memory killer, or a scheduler or launcher"),
    11: ("SIGSEGV", "a segmentation fault in native code"),
    15: ("SIGTERM", "stopped: by the launcher after another rank failed, or by the scheduler"),
}


def cuda_meaning(text: str) -> str | None:
    """A CUDA error's text in words: its enum name and usual reason (CUDA_HINTS)."""
    named = cuda_error(text)
    return f"{named[2]}: {CUDA_HINTS[named[2]]}" if named and named[2] in CUDA_HINTS else None
