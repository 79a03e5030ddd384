"""Golden tests for every diagnosis rule: a healthy subject fires nothing; each case below changes
the evidence of a healthy subject and must fire exactly its rule. The last test checks the cases
cover every rule in both rules files and every symptom walk names only rules that exist."""

from __future__ import annotations

from typing import Any

import pytest

from fabriclens.conditions import holds
from fabriclens.diagnose.engine import Finding, facts, rules
from fabriclens.diagnose.host import (
    affinity_facts,
    diagnose_host,
    endpoint_facts,
    gpu_facts,
    host_rules,
    limits_facts,
    nic_facts,
    nvswitch_facts,
    peer_facts,
    rdma_facts,
    service_facts,
    topology_facts,
)
from fabriclens.diagnose.symptoms import walk, walks
from fabriclens.parse.ethtool import EthtoolInfo, congestion_counters
from fabriclens.parse.nccl_log import NcclLog
from fabriclens.parse.netdev import NetInterface, RdmaPort
from fabriclens.parse.nvidia_smi import GpuReading, parse_topo
from fabriclens.parse.proc_net import Listener
from fabriclens.parse.torch_log import TorchLog

STATS = {
    k: 0 for k in ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_bytes", "tx_bytes")
}
NIC = NetInterface("eth9", "up", 25000, "full", 1500, "mlx5_core", True, STATS)
PORT = RdmaPort("mlx5_9", 1, "4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)", "Ethernet", {}, {})
GPU = GpuReading(0, "NVIDIA H100", 81559, 70000, 60, 450, 700, 5, 5, 16, 16, 0, 18)
CLEAN = congestion_counters({})
NVLINK_PAIR = (
    "\tGPU0\tGPU1\tNIC0\tCPU Affinity\nGPU0\t X \tNV18\tPIX\t0-55\nGPU1\tNV18\t X \tPIX\t0-55\n"
)
PEER = {"peer": "10.0.0.2", "ping_ok": True, "reachable": True, "icmp_answered": True, "sent": 20, "received": 20, "loss_pct": 0.0,
        "rtt_ms": 0.2, "rtt_avg_ms": 0.2, "jitter_ms": 0.02, "tcp_port": 22, "tcp_connect_ms": 0.3,
        "device": "eth9", "iface_mtu": 1500, "path_mtu": 1500}  # fmt: skip


# `fabriclens http` on a healthy endpoint: 1 ms of path, 180 ms of server, to the first token
ENDPOINT = {"requests": 5, "tls_version": None,
            "attribution": {"time_to_first_token_s": 0.182, "network_s": 0.001, "server_s": 0.180, "rtt_s": 0.0005}}  # fmt: skip


def healthy() -> dict[str, dict[str, Any]]:
    """One healthy subject per scope, built by the same functions doctor uses."""
    return {
        "nic": nic_facts(NIC, EthtoolInfo([10000, 25000], 25000, True), NIC, 2.0, CLEAN, CLEAN),
        "rdma": rdma_facts(PORT, PORT, 2.0),
        "gpu": gpu_facts(GPU, [GPU] * 10),
        "topology": topology_facts(parse_topo(NVLINK_PAIR)),
        "affinity": affinity_facts(parse_topo(NVLINK_PAIR))[0],
        "service": service_facts([Listener("0.0.0.0", 11434)])[0],
        "peer": peer_facts(PEER, 930e6, 941e6, 1e9),
        "endpoint": endpoint_facts("http://10.0.0.2:8000/v1/chat/completions", ENDPOINT),
        # scopes only captured output (doctor --from) gives, healthy values
        "xid": {
            "code": 45,
            "device": "0000:3b:00",
            "count": 1,
            "line": "NVRM: Xid ...",
            "meaning": "m",
            "action": "a",
            "xid_severity": "none",
            "known": True,
        },
        "kernel_nic": {
            "driver": "mlx5_core",
            "device": "0000:ab:00.0",
            "link_down": 0,
            "health": 0,
            "line": "l",
        },
        "pcie": {
            "address": "0000:19:00.0",
            "kind": "nic",
            "name": "ConnectX-7",
            "cap_speed_gts": 32.0,
            "cap_width": 16,
            "sta_speed_gts": 32.0,
            "sta_width": 16,
            "width_below": False,
            "speed_below": False,
        },
        "acs": {
            "address": "0000:17:00.0",
            "name": "PEX",
            "acs_on": 0,
            "acs_flags": "",
            "below": "GPU 0000:18:00.0",
        },
        "numa": {
            "gpu": "0000:18:00.0",
            "numa_node": 0,
            "nics_same_node": 1,
            "nics_other_node": 1,
            "other": "x",
        },
        "limits": limits_facts(None, 1 << 34, 8, 8),  # memlock unlimited, 16 GiB of /dev/shm
        "nvswitch": nvswitch_facts(4, "active"),
    }


def run_host(scope: str, change: dict[str, Any]) -> list[Finding]:
    subjects = healthy()
    subjects[scope] = subjects[scope] | change
    return diagnose_host(
        [subjects["nic"]], [subjects["rdma"]], [subjects["gpu"]], [subjects["topology"]],
        [subjects["service"]], [subjects["peer"]], [subjects["affinity"]], [subjects["endpoint"]],
        extra={k: [subjects[k]] for k in ("xid", "kernel_nic", "pcie", "acs", "numa", "limits", "nvswitch")},
    )  # fmt: skip


HOST_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "gpu-xid-critical": ("xid", {"code": 79, "xid_severity": "critical"}),
    "gpu-xid": ("xid", {"code": 13, "xid_severity": "warning"}),
    "gpu-xid-info": ("xid", {"code": 45, "xid_severity": "info"}),
    "nic-kernel-link-down": ("kernel_nic", {"link_down": 2}),
    "nic-kernel-health": ("kernel_nic", {"health": 1}),
    "pcie-link-downgraded": ("pcie", {"sta_width": 8, "width_below": True}),
    "pcie-nic-speed-downgraded": ("pcie", {"sta_speed_gts": 16.0, "speed_below": True}),
    "pcie-gpu-speed-downgraded": ("pcie", {"kind": "gpu", "speed_below": True}),
    "pcie-speed-downgraded": ("pcie", {"kind": "unnamed", "speed_below": True}),
    "pcie-acs-enabled": ("acs", {"acs_on": 3, "acs_flags": "SrcValid+ ReqRedir+ CmpltRedir+"}),
    "gpu-nic-numa-mismatch": ("numa", {"nics_same_node": 0}),
    "nic-pause-without-ecn": ("nic", {"pause_frames": 5000, "ecn_marked": 0}),
    "roce-mtu-mismatch": (
        "rdma",
        {"link_layer": "Ethernet", "mtu_off_fabric": True, "active_mtu": 1024},
    ),
    "roce-mtu-below-max": ("rdma", {"link_layer": "Ethernet", "mtu_below": True}),
    "nic-down": ("nic", {"nic_state": "down"}),
    "nic-speed-below-capability": ("nic", {"speed_mbps": 10000, "speed_below": True}),
    "nic-half-duplex": ("nic", {"duplex": "half", "speed_mbps": 1000}),
    "nic-errors": ("nic", {"errors": 3}),
    "nic-crc-errors": ("nic", {"crc_errors": 1}),
    "nic-errors-rising": ("nic", {"errors_new": 1}),
    "nic-drops-rising": ("nic", {"drops_new": 1000}),
    "nic-drops": ("nic", {"drops": 5000}),
    "nic-pause-storm": ("nic", {"pause_storms": 2}),
    "nic-discards": ("nic", {"discards": 40}),
    "nic-pause-rising": ("nic", {"pause_new": 50000}),
    "nic-rx-out-of-buffer": ("nic", {"out_of_buffer": 9}),
    "rdma-port-not-active": ("rdma", {"port_active": False}),
    "rdma-symbol-errors": ("rdma", {"symbol_errors": 7}),
    "rdma-link-flaps": ("rdma", {"link_downed": 1}),
    "rdma-ecn-without-cnp": ("rdma", {"ecn_marked": 10}),
    "rdma-ack-timeouts": ("rdma", {"ack_timeouts": 2}),
    "rdma-out-of-sequence": (
        "rdma",
        {"out_of_sequence": 120, "packet_seq_errors": 3, "retransmits": 40},
    ),
    "rdma-xmit-discards": ("rdma", {"xmit_discards": 4}),
    "rdma-errors-rising": ("rdma", {"errors_new": 1}),
    "rdma-link-flapping-now": ("rdma", {"flaps_new": 1}),
    "rdma-ack-timeouts-rising": ("rdma", {"ack_timeouts_new": 1}),
    "gpu-pcie-width-below": ("gpu", {"pcie_width": 8, "pcie_width_below": True}),
    "gpu-pcie-gen-below": ("gpu", {"pcie_gen": 3, "pcie_gen_below": True}),
    "gpu-busy-at-low-power": ("gpu", {"busy_low_power": True}),
    "gpu-utilisation-swinging": ("gpu", {"util_swinging": True}),
    "gpu-clocks-slowed": ("gpu", {"slowed": True, "slowdown": "hardware thermal slowdown"}),
    "gpus-without-nvlink": ("topology", {"nvlink_pairs": 0}),
    "gpu-nic-cross-socket": (
        "affinity",
        {"link": "SYS", "nic_far": True, "nic_cross_socket": True},
    ),
    "gpu-nic-other-bridge": ("affinity", {"link": "NODE", "nic_far": True}),
    "inference-server-localhost": ("service", {"loopback_only": True, "addresses": "127.0.0.1"}),
    "peer-unreachable": ("peer", {"reachable": False, "received": 0}),
    "peer-icmp-blocked": (
        "peer",
        {"icmp_answered": False, "received": 0, "loss_pct": None, "rtt_ms": None},
    ),
    "peer-loss": ("peer", {"loss_pct": 5.0}),
    "peer-jitter": ("peer", {"jitter_ms": 4.0, "jitter_share": 0.5}),
    "peer-latency-high": ("peer", {"rtt_ms": 20.4}),
    "peer-path-mtu-below-interface": ("peer", {"path_mtu_below": True}),
    "peer-throughput-low": ("peer", {"goodput_share": 0.1, "goodput_pct": 10}),
    "weights-load-slow": ("peer", {"weights_load_s": 1200.0}),
    "inference-endpoint-unreachable": (
        "endpoint",
        endpoint_facts("http://10.0.0.2:8000/", None, "Connection refused"),
    ),
    "inference-network-path-slow": (
        "endpoint",
        {"network_ms": 80.0, "network_share": 0.8, "ttft_ms": 100.0},
    ),
    "inference-server-slow": (
        "endpoint",
        {"server_ms": 2400.0, "server_share": 0.96, "ttft_ms": 2500.0},
    ),
    "memlock-limited": ("limits", limits_facts(64 << 20, 1 << 34, 8, 8)),
    "shm-small": ("limits", limits_facts(None, 64 << 20, 8, 8)),
    "fabric-manager-not-running": ("nvswitch", nvswitch_facts(4, "failed")),
}


def test_a_healthy_host_fires_nothing() -> None:
    assert run_host("nic", {}) == []


@pytest.mark.parametrize("rule", sorted(HOST_CASES))
def test_each_host_rule(rule: str) -> None:
    scope, change = HOST_CASES[rule]
    found = run_host(scope, change)
    assert [f.rule for f in found] == [rule]
    assert found[0].evidence[0] and "{" not in found[0].evidence[0]  # the template was filled
    assert found[0].severity == "info" or found[0].check  # warnings and worse say what to check


LOG_CASES: dict[str, dict[str, Any]] = {
    "nccl-socket-no-ib": {"transport": "Socket", "ib_no_device": True},
    "nccl-socket": {"transport": "Socket"},
    "libibverbs-missing": {"libibverbs_failed": True},
    "nccl-ib-in-use": {"transport": "IB"},
    "gdr-off": {"transport": "IB", "gdr": "off"},
    "ib-completion-error": {"completion_errors": 1},
    "ib-retry-exceeded": {"retry_exceeded": 1},
    "nccl-warnings": {"nccl_warnings": 2},
    "nccl-timeout": {"watchdog_timeouts": 1},
    "straggler-rank": {"stragglers": 1},
    "ib-disabled-by-env": {"ib_disabled_by_env": True},
    "p2p-disabled-by-env": {"p2p_disabled_by_env": True},
    "nothing-to-read": {"logs_read": 0},
    "nccl-timeout-single-node": {"watchdog_timeouts": 1, "single_node": True},
    "ib-local-protection": {"ib_local_protection": 1},
    "ib-wr-flush": {"ib_wr_flush": 1},
    "ibv-modify-qp-timeout": {"qp_timeout": 1},
    "ibv-modify-qp-no-device": {"qp_no_device": 1},
    "ibv-modify-qp-unreachable": {"qp_unreachable": 1},
    "roce-gid-link-local": {"roce_link_local_gid": 1},
    "connect-link-local": {"connect_link_local": 1},
    "socket-connect-failed": {"connect_failed": 1},
    "socket-peer-gone": {"peer_gone": 1},
    "nccl-remote-error": {"remote_error": 1},
    "ofi-undeliverable": {"ofi_unreachable": 1},
    "ofi-completion-error": {"ofi_failed": 1},
    "bootstrap-failed": {"bootstrap_failed": 1},
    "collectives-differ-between-ranks": {"collective_desync": 1},
    "nccl-library-older-than-torch": {"nccl_config_invalid": 1},
    "master-port-in-use": {"store_port_in_use": 1},
    "device-ordinal-invalid": {"device_ordinal": 1},
    "rank-process-exited": {"process_exit": 1},
    "cuda-system-not-initialized": {"cuda_not_initialized": 1},
    "ofi-no-provider": {"ofi_no_provider": 1},
    "sharp-tree-lock-failed": {"sharp_lock_failed": 1},
    "collnet-unavailable": {"collnet_fallback": 1},
    "ofi-peer-gone": {"ofi_peer_gone": 1},
    "cumem-alloc-unknown-error": {"cumem_alloc_unknown": 1},
    "comm-destroyed-twice": {"comm_destroyed_twice": 1},
    "nccl-argcheck-root": {"argcheck_root": 1},
    "ib-hca-catastrophic": {"ib_catastrophic": 1},
    "msccl-xml-invalid": {"msccl_xml_invalid": 1},
    "nvshmem-ib-connect-failed": {"nvshmem_qp_failed": 1},
    "nvshmem-ibgda-not-mlx5": {"nvshmem_not_mlx5": 1},
    "rendezvous-store-unreachable": {"rdzv_store_failed": 1},
    "nccl-argcheck-no-ranks": {"argcheck_no_ranks": 1},
    "nccl-error-trace-only": {"error_trace_only": 1},
    "ofi-av-open-failed": {"ofi_av_open_failed": 1},
    "ofi-cq-open-failed": {"ofi_cq_open_failed": 1},
    "ofi-init-failed-fallback": {"ofi_init_failed": 1},
    "cxi-no-vni": {"cxi_no_vni": 1},
    "ofi-protocol-error": {"ofi_protocol_error": 1},
    "rccl-ipc-handle-failed": {"hip_ipc_failed": 1},
    "nccl-list-prefix-misplaced": {"nccl_list_prefix_misplaced": 1},
    "topo-search-crash": {"topo_search_crash": 1},
    "vllm-worker-collective-hang": {"vllm_worker_timeouts": 1},
    "net-plugin-differs": {"net_plugin_split": 1},
    "nvls-setup-stalled": {"nvls_setup": 1},
    "dev-shm-small": {"dev_shm_small": 1},
    "nccl-launch-invalid-argument": {"launch_invalid_argument": 1},
    "mpirun-env-not-exported": {"mpirun_env_prefix": 1},
    "watchdog-graph-capture": {"watchdog_capture": 1},
    "ib-port-flap": {"ib_port_error": 1},
    "nccl-tests-output": {"nccl_tests_output": 1},
    "rccl-iommu-not-passthrough": {"kernel_arg_missing": 1},
    "hostname-unresolvable": {"host_unresolved": 1},
    "ib-no-device": {"ib_no_device": True, "ib_devices": 0, "transport": ""},
    "gpu-xid-in-log": {"gpu_xid": 1},
    "process-bus-error": {"bus_error": 1},
    "tcpstore-without-libuv": {"store_no_libuv": 1},
    "store-unreachable": {"store_connect_failed": 1},
    "ibv-modify-qp-invalid": {"qp_invalid": 1},
    "cuda-driver-too-old": {"cuda_driver_old": 1},
    "trtllm-world-size-mismatch": {"trtllm_world_size": 1},
    "mpi-collective-layer-error": {"ucc_error": 1},
    "ib-device-unopenable": {"ib_open_failed": 1},
    "uneven-ranks-per-node-deadlock": {"uneven_ranks_per_host": 1},
    "nccl-2.18-invalid-argument": {"nccl_218_invalid_argument": 1},
    "bad-address-family-ifname": {"bad_address_family": 1, "socket_ifname_set": True},
    "bad-address-family": {"bad_address_family": 1},
    "cuda-p2p-unsupported": {"p2p_unsupported": 1},
    "shm-cumem-no-p2p": {"shm_p2p_unsupported": 1},
    "topology-sysfs": {"topology_sysfs": 1},
    "gpu-arch-unsupported": {"max_shared_mem": 1},
    "socket-virtual-iface": {"socket_virtual_ifaces": 1},
    "socket-link-local-iface": {"socket_link_local_ifaces": 1},
    "usb-nic": {"usb_nic": 1},
    "log-shows-error": {"error_lines": 1},
    "nvls-fabric-manager": {"nvls_failed": 1},
    "nccl-version-mismatch": {"nccl_versions": 2},
    "net-transport-mismatch": {"socket_type_mismatch": 1},
    "bootstrap-message-truncated": {"message_truncated": 1},
    "collective-size-mismatch": {"collective_mismatch": 1},
    "shm-too-small": {"shm_failed": 1},
    "topology-xml-invalid": {"topo_xml_invalid": 1},
    "socket-create-failed": {"socket_create_failed": 1},
    "ofi-register-memory": {"ofi_register_failed": 1},
    "cuda-init-error": {"cuda_init_error": 1},
    "cuda-op-not-supported": {"cuda_not_supported": 1},
    "shm-attach-failed": {"shm_attach_failed": 1},
    "shm-cumem-host-mixed": {"shm_attach_failed": 1, "host_import_mixed": 1},
    "shm-permission-denied": {"shm_failed": 1, "shm_permission_denied": 1},
    "nvls-multicast-exhausted": {"nvls_failed": 1, "nvls_oom": 1},
    "nccl-no-algorithm-forced": {"no_algorithm": 1, "algo_forced": 1},
    "nccl-topo-xml-full": {"topo_xml_full": 1},
    "efa-memlock-limit": {"ofi_no_memory": 1},
    "rocm-no-device": {"hip_no_device": 1},
    "vllm-workers-stalled": {"vllm_workers_wait": 1},
    "bad-address-family-after-setup": {"bad_address_family": 1, "setup_complete": 1},
    "cuda-driver-stub": {"cuda_stub": 1},
    "nvml-missing": {"nvml_missing": 1},
    "mpi-ofi-mtl-abort": {"mpi_ofi_abort": 1},
    "mpi-ucx-error": {"ucx_error": 1},
    "engine-custom-allreduce-no-p2p": {"engine_custom_ar_no_p2p": 1},
    "hostname-shared-ipc": {"host_clash": 1, "cuda_ipc_failed": 1},
    "hostname-shared": {"host_clash": 1},
    "ray-version-mismatch": {"ray_version_mismatch": 1},
    "ofi-rails-mismatch": {"ofi_rails_mismatch": 1},
    "nccl-gin-doca-failure": {"gin_doca_failed": 1},
    "nccl-chunk-size-set": {"chunk_size_set": 1},
    "nccl-proxy-op-pool-hang": {"proxy_op_wait": 1},
    "mpi-orted-not-found": {"orted_not_found": 1},
    "orte-unpack-error": {"orte_unpack_error": 1},
    "python-spawn-no-main-guard": {"spawn_no_main_guard": 1},
    "cumem-fabric-not-permitted": {"cumem_create_not_permitted": 1},
    "rocm-tensile-load-failed": {"tensile_load_failed": 1},
    "ray-node-ip-mismatch": {"ray_node_request_unmet": 1},
    "nccl-topology-reverse-path": {"topo_reverse_path": 1},
    "gloo-ifname-exclusion": {"gloo_iface_missing": 1, "gloo_iface_exclusion": 1},
    "gloo-iface-missing": {"gloo_iface_missing": 1},
    "gloo-loopback-fallback": {"gloo_loopback_fallback": 1},
    "te-userbuffers-failed": {"te_userbuffers_failed": 1},
    "cumem-host-probe-crash": {"cumem_host_probe_frame": 1},
    "gdr-one-sided": {"gdr_receive_missing": 1},
    "ib-dmabuf-unsupported": {"ib_dmabuf_unsupported": 1},
    "ib-memlock-limit": {"ib_reg_no_memory": 1},
    "ib-queue-create-failed": {"ib_create_failed": 1},
    "roce-gid-table-change": {"ib_gid_change": 1},
    "ib-client-reregister": {"ib_client_reregister": 1},
    "rdma-device-without-pci": {"rdma_device_no_pci": 1},
    "bootstrap-rank-twice": {"bootstrap_rank_twice": 1},
    "bootstrap-rank-count-mismatch": {"bootstrap_nranks_mismatch": 1},
    "p2p-unavailable": {"p2p_unavailable": 1},
    "rank-left-before-timeout": {"aborted_peer_before_timeout": 1},
    "nccl-invalid-rank": {"invalid_rank": 1},
    "nccl-unique-id-store-timeout": {"unique_id_wait_failed": 1},
    "ucx-devx-create-failed": {"ucx_devx_failed": 1},
    "nvml-unanswered": {"nvml_unanswered": 1},
    "nccl-older-than-gpu": {"gpu_newer_than_nccl": 1},
    "shm-cuda-register-failed": {"shm_register_invalid": 1},
    "p2p-import-invalid-argument": {"p2p_import_invalid": 1},
    "verbs-device-unreadable": {"verbs_device_unreadable": 1},
    "verbs-no-provider": {"verbs_no_provider": 1},
    "mpi-not-enough-slots": {"mpi_not_enough_slots": 1},
    "mpi-ib-cq-failed": {"mpi_cq_create_failed": 1},
    "nccl-ras-process-unresponsive": {"ras_process_missing": 1},
    "monitored-barrier-rank-missing": {"monitored_barrier_missing": 1},
    "cray-mpich-gtl-not-linked": {"cray_gtl_not_linked": 1},
    "cray-mpich-nic-policy-numa": {"cray_nic_policy_unconfined": 1},
    "ompi-no-slurm-pmi": {"ompi_no_slurm_pmi": 1},
    "cxi-event-queue-overflow": {"cxi_eq_overflow": 1},
    "ompi-libnbc-gpu-buffers": {"ompi_libnbc_frame": 1, "error_lines": 1},
    "nccl-ras-count-mismatch": {"ras_mismatch": 1},
    "pmix-gds-ds12": {"pmix_gds_ds12": 1},
    "slurm-switch-plugin-in-container": {"slurm_switch_plugin_missing": 1},
    "gpu-busy-exclusive-process": {"gpu_busy_unavailable": 1},
    "container-lost-gpu-access": {"nvml_unknown_error": 1},
    "slurm-mpi-not-pmix": {"pmix_server_unreachable": 1},
    "shapes-differ-between-ranks": {"shapes_differ": 1},
    "ucx-signal-handler-hides-crash": {"ucx_signal_handler": 1},
    "container-driver-timeout": {"container_driver_timeout": 1},
    "nvswitch-fabric-not-ready": {"fabric_state_in_progress": 1},
    "jax-peer-task-died": {"jax_service_fatal": 1},
    "jax-coordinator-died": {"jax_coordinator_lost": 1},
    "jax-collective-peer-gone": {"jax_task_disconnected": 1},
    "spawn-pickle-error": {"spawn_pickle_error": 1},
    "pyxis-container-failed": {"pyxis_failed": 1},
    "enroot-dir-not-writable": {"enroot_dir_denied": 1},
    "enroot-user-namespace-refused": {"userns_failed": 1},
    "fabric-manager-ib-umad-missing": {"fm_ib_umad_missing": 1},
    "fabric-manager-no-nvswitch": {"fm_nothing_to_do": 1},
    "tcpxo-rxdm-gpu-count": {"rxdm_gpus_mismatch": 1},
    "tcpxo-rxdm-no-sysfs": {"rxdm_no_pci_gpus": 1},
    "hccl-socket-ifname-missing": {"hccl_ifname_missing": 1},
    "hccl-tls-inconsistent": {"hccl_tls_mismatch": 1},
    "hccl-collectives-differ": {"hccl_op_mismatch": 1},
    "hccl-ip-family-mismatch": {"hccl_ip_family_mismatch": 1},
    "container-nvml-library-missing": {"container_nvml_missing": 1},
    "impi-ofi-provider-unusable": {"mpi_ofi_addrinfo": 1},
    "too-many-open-files": {"open_files_exhausted": 1},
    "hccl-port-in-use": {"hccl_port_bound": 1},
    "hccl-root-unreachable": {"hccl_root_unreachable": 1},
    "hccl-ranks-missing": {"hccl_ranks_missing": 1},
    "hccl-device-oom": {"hccl_device_oom": 1},
    "hccl-sdma-error": {"hccl_sdma_error": 1},
    "hccl-roce-cqe": {"hccl_roce_cqe": 1},
    "hccl-ranktable-path": {"hccl_ranktable_path": 1},
    "hccl-task-ops-differ": {"hccl_task_ops": 2},
    "hccl-task-failed": {"hccl_task_failed": 1},
    "hccl-error-code": {"hccl_error_code": 1},
    "impi-ofi-iface-unreachable": {"mpi_ofi_not_connected": 1},
    "ompi-tcp-no-route": {"mpi_tcp_no_route": 1},
    "hccl-npu-port-in-use": {"hccl_npu_port_bound": 1},
    "hccl-link-timeout": {"hccl_link_timeout": 1},
    "hccl-superpod-split": {"hccl_superpod_split": 1},
    "hccl-heartbeat-lost": {"hccl_heartbeat_lost": 1},
    "hccl-ranktable-ip-mismatch": {"hccl_ranktable_ip": 1},
    "hccl-task-rank-late": {"hccl_task_late": 1, "hccl_task_ops": 1},
    "k8s-device-plugin-no-nvml": {"device_plugin_nvml": 1},
    "efa-cuda-sync-memops": {"efa_sync_memops": 1},
    "cloud-quota-exceeded": {"cloud_quota_exceeded": 1},
    "ena-allowance-exceeded": {"ena_allowance_exceeded": 1},
    "gdr-peer-module-symbol-mismatch": {"peermem_symbol_mismatch": 1},
    "ofi-mr-registration-no-memory": {"ofi_mr_no_memory": 1},
    "ib-kernel-stack-down": {"ib_devices_list_failed": 1},
    "verbs-kernel-abi-mismatch": {"verbs_kernel_abi": 1},
    "system-call-error-unexplained": {"errno_text": 1},
    "driver-container-os-version-stale": {"dnf_releasever_stale": 1},
    "driver-container-kernel-headers-missing": {"kernel_headers_unavailable": 1},
    "nvml-driver-library-mismatch": {"nvml_version_mismatch": 1},
    "kernel-module-symbol-mismatch": {"module_symbol_mismatch": 1},
    "cuda-kernel-fault": {"cuda_kernel_fault": 1},
    "socket-no-interface": {"no_socket_iface": 1},
    "fabric-manager-driver-mismatch": {"fm_driver_mismatch": 1},
    "container-image-ships-driver-files": {"container_file_exists": 1},
    "container-toolkit-containerd-config-unsupported": {"containerd_config_unsupported": 1},
    "nccl-library-older-than-build": {"nccl_symbol_missing": 1},
    "rdma-port-down-in-log": {"rdma_port_down": 1},
    "torch-cuda-out-of-memory": {"torch_cuda_oom": 1},
    "python-exception-unexplained": {"python_exception": 1},
    "ddp-unused-parameters": {"ddp_unused_params": 1},
    "rendezvous-endpoint-unset": {"rdzv_endpoint_invalid": 1},
    "master-address-empty": {"master_addr_missing": 1},
    "nccl-plugin-not-found": {"plugin_not_found": 1},
    "ofi-tuner-refused-algo-proto": {"ofi_tuner_refused": 1},
    "nccl-unknown-result-code": {"nccl_unknown_result": 1},
    "nccl-kernel-invalid-access": {"sanitizer_invalid_access": 1, "sanitizer_nccl_frame": 1},
    "sanitizer-invalid-access": {"sanitizer_invalid_access": 1},
    "gpu-memory-unbalanced": {"gpu_memory_unbalanced": 1},
    "nccl-devcomm-requirements": {"nccl_devcomm_failed": 1},
    "nccl-internal-error-unexplained": {"internal_error": 1},
    "nccl-cuda-invalid-handle": {"cuda_invalid_handle": 1},
    "flight-recorder-ranks-missing": {"fr_not_joined": 1},
    "horovod-stalled-ranks": {"horovod_missing_ranks": 1},
    "gloo-rendezvous-timeout": {"gloo_store_timeout": 1},
    "nccl-native-crash": {"native_crash": 1, "nccl_native_frame": 1},
    "cuda-peer-mappings-exhausted": {"cuda_too_many_peers": 1},
    "flight-recorder-mismatch": {"fr_culprit": 1},
    "desync-report-ranks-behind": {"desync_behind": 1},
    "desync-report-all-in-collective": {"desync_stuck_in": 1},
    "fastsocket-steering-fallback": {"fastsocket_steering_fallback": 1},
    "socket-timed-out": {"socket_timeout": 1},
    "ib-device-unopenable-others-used": {"ib_open_failed": 1, "ib_devices": 2},
    "torchrun-ranks-aborted": {"torchrun_sigabrt": 2},
    "jax-barrier-timeout": {"jax_barrier_timeout": 1},
    "ras-client-report-garbled": {"ras_client_garbled": 2},
    "nccl-symmetric-space-exhausted": {"symmetric_space_exhausted": 1},
    "nccl-comm-used-before-ready": {"comm_not_ready": 1},
    "deepspeed-ssh-check-failed": {"ds_ssh_check_failed": 1},
    "launcher-ssh-unreachable": {"ssh_connect_failed": 1},
    "duplicate-gpu-at-init": {"ranks_on_one_gpu": 1},
    "torch-heartbeat-monitor-timeout": {"torch_heartbeat_timeout": 1},
    "program-kernels-missing-for-gpu": {"program_arch_missing": 1},
    "nvidia-driver-kernel-oops": {"nvidia_driver_oops": 1},
    "cloud-init-duplicate-mac-ib": {"duplicate_mac": 1},
    "host-oom-killer-ended-rank": {"host_oom_killed": 1},
    "gpu-p2p-slower-than-host-copy": {"p2p_slower_than_host": 1},
    "ucx-tls-excludes-cuda": {"ucx_vram_as_host": 1, "ucx_tls_no_cuda": 1},
    "ucx-cuda-support-missing": {"ucx_vram_as_host": 1},
    "nixl-ucx-on-efa-flushed": {"nixl_error": 1, "ucx_efa_error": 1},
    "ucx-no-protocol-for-gpu-memory": {"ucx_no_protocol": 1},
    "nvshmem-ibgda-uar-exhausted": {"nvshmem_uar_failed": 1},
    "mooncake-gid-not-found": {"mooncake_gid_null": 1},
    "efa-address-vector-insert-failed": {"ofi_av_insert_failed": 1},
    "driver-dmabuf-topology-refused": {"dmabuf_topology_refused": 1},
    "ollama-rocm-gfx-unsupported": {"ollama_gfx_unsupported": 1},
    "ollama-no-gpu": {"ollama_no_gpu": 1},
    "llm-partial-offload": {"gpu_offload_partial": 1},
    "llama-cpp-gpu-out-of-memory": {"ggml_gpu_oom": 1},
    "ollama-rocm-igpu-memory-undercounted": {"ollama_igpu_undercounted": 1},
    "llama-cpp-kv-cache-allocation-failed": {"llama_kv_alloc_failed": 1},
    "bf16-on-gpu-before-ampere": {"bf16_unsupported": 1},
    "vllm-no-memory-for-kv-cache": {"vllm_no_kv_memory": 1},
    "vllm-kv-cache-shorter-than-max-len": {"vllm_kv_too_small": 1},
    "cuda-graph-capture-out-of-memory": {"cudagraph_oom": 1, "program_cuda_oom": 1},
    "program-cuda-out-of-memory": {"program_cuda_oom": 1},
    "ib-without-gdr": {"gdr_none_on_ib": 1},
    "nccl-socket-transport-set-up": {"socket_only_seen": 1},
    "llama-cpp-peer-access-unsupported": {"ggml_p2p_unsupported": 1},
    "trt-engine-from-another-tensorrt": {"trt_engine_version": 1},
    "trtllm-out-of-memory-loading-engine": {"trtllm_oom": 1},
    "trtllm-request-longer-than-engine": {"trt_length_over_engine": 1},
    "torch-without-nccl": {"torch_no_nccl": 1},
    "cuinit-driver-library-mismatch": {"cuinit_not_found": 1},
    "ollama-nvml-not-started": {"nvml_init_failed": 1},
    "vllm-wsl-no-pinned-memory": {"vllm_wsl_no_pin": 1},
    "ollama-host-memory-too-small": {"ollama_host_short": 1},
    "ollama-runner-killed": {"llama_runner_killed": 1},
    "ollama-host-memory-nearly-full": {"ollama_host_share_pct": 95},
    "llama-cpp-host-buffer-alloc-failed": {"ggml_host_alloc_failed": 1},
    "llama-cpp-mlock-limit": {"llama_mlock_failed": 1},
    "nvls-buffer-registration-failed": {"nvls_register_failed": 1},
    "nccl-bind-address-in-use": {"nccl_bind_in_use": 1},
    "vllm-custom-allreduce-cuda-error": {"vllm_custom_ar_error": 1},
    "http-connect-refused": {"http_refused": 1},
    "http-server-listens-on-loopback": {"http_refused_gateway": 1},
    "http-ipv6-loopback-refused": {"http_refused_ipv6": 1},
    "docker-host-internal-unresolved": {"docker_host_unresolved": 1},
    "http-proxy-answers-for-local-server": {"http_proxy_answered": 1},
    "http-loopback-timeout": {"http_loopback_timeout": 1},
    "http-connect-to-unspecified-address": {"connect_unspecified": 1},
    "client-local-ports-exhausted": {"http_no_local_port": 1},
    "gateway-timed-out": {"gateway_timeout": 1},
    "client-request-timeout": {"client_timeout": 1},
    "response-cut-mid-stream": {"stream_cut": 1},
    "llama-rpc-server-socket-failed": {"rpc_server_socket_failed": 1},
    "distributed-llama-peer-disconnected": {"dllama_socket_closed": 1},
    "exo-no-peers-discovered": {"exo_no_peers": 1},
    "model-download-dns-failed": {"download_host_unresolved": 1},
    "http-host-unreachable": {"http_unreachable": 1},
    "ollama-proxy-set-on-client": {"ollama_client_proxy": 1},
    "model-download-connection-cut": {"download_part_failed": 1},
    "model-hub-server-error": {"hub_server_error": 1},
    "model-hub-unreachable": {"hub_unreachable": 1},
    "ray-worker-joins-loopback": {"ray_address_loopback": 1},
    "ray-gcs-address-empty": {"ray_address_empty": 1},
    "ray-gcs-unreachable": {"ray_gcs_unreachable": 1},
    "ray-node-marked-dead": {"ray_node_dead": 1},
    "slurm-global-ranks-duplicated": {"pl_ranks_duplicated": 1},
    "slurm-tasks-not-started-by-srun": {"pl_slurm_handled": 1, "pl_ranks_seen": 1, "pl_world": 8},
    "nixl-transfer-failed-unexplained": {"nixl_error": 1},
    "service-mesh-sidecar-in-job": {"envoy_sidecar": 1},
    "nccl-operation-failed-no-cause": {"pg_nccl_aborted": 1},
    "mig-reconfigure-gpu-in-use": {"mig_in_use": 1},
    "k8s-pod-security-forbids-driver-pods": {"pod_security_forbidden": 1},
    "slurm-gpu-affinity-not-socket-aligned": {"slurm_gpu_affinity_socket": 1},
    "container-registry-unauthorized": {"registry_unauthorized": 1},
    "gloo-full-mesh-failed": {"gloo_full_mesh_failed": 1},
    "nccl-net-id-not-found": {"net_id_missing": 1},
    "nccl-cuda-error-unexplained": {"unhandled_cuda_error": 1},
    "nccl-system-error-unexplained": {"system_error": 1},
    "duplicate-gpu": {"duplicate_gpu": 1},
    "connect-loopback": {"connect_loopback": 1},
    "socket-loopback-interface": {"connect_failed": 1, "socket_iface_loopback": True},
    "ib-mixed-devices": {"transport": "IB", "ib_device_kinds": 2},
    "graph-file-mismatch": {"graph_import_failed": 1},
    "graph-file-set": {"graph_file_set": True},
    "graph-capture-unsupported": {"graph_capture_unsupported": 1},
    "usb-nic-topology": {"topo_xml_invalid": 1, "usb_nic": 1},
    "nccl-arch-missing": {"cuda_arch_missing": 1},
    "ring-mismatch": {"ring_mismatch": 1},
    "setup-done-no-failure": {"setup_complete": 1},
    "setup-stalled-no-failure": {"bootstrap_seen": True},
    "ib-access-violation-mtu": {"ib_access_violation": 1},
    "cuda-out-of-memory": {"cuda_oom": 1},
    "socket-foreign-connection": {"socket_wrong_magic": 1},
    "gdr-disabled-by-distance": {"gdr_distance_disabled": 1},
    "roce-connect-failed-gid": {"roce_connect_failed": 1},
    "watchdog-short-timeout": {"watchdog_short_timeout": 1},
    "watchdog-rank0-behind": {"watchdog_rank0_silent": True},
    "watchdog-timeout-stack-only": {"watchdog_stack_only": 1},
    "gdr-no-peer-memory-module": {"ib_gdr_no_module": 1},
    "nvml-gpu-hidden": {"nvml_gpu_hidden": 1},
}


@pytest.mark.parametrize("rule", sorted(LOG_CASES))
def test_each_log_rule(rule: str) -> None:
    base = facts(NcclLog(lines=10), TorchLog()) | {"logs_read": 1}
    assert [r.id for r in rules() if holds(r.when, base)] == []
    # a fallback rule speaks only when no warning or critical rule did (engine.diagnose)
    fired = {r.id for r in rules() if holds(r.when, base | LOG_CASES[rule])
             and (r.id == rule or not r.fallback)}  # fmt: skip
    assert rule in fired
    # gdr-off also reports that IB is in use; usb-nic-topology also names the USB NIC itself
    assert fired <= {rule, "nccl-ib-in-use"} | (
        {"usb-nic"} if rule == "usb-nic-topology" else set()
    )


def test_cases_cover_every_rule_and_walks_name_real_rules() -> None:
    host_ids = {r.id for r in host_rules()}
    log_ids = {r.id for r in rules()}
    assert set(HOST_CASES) == host_ids
    assert set(LOG_CASES) == log_ids
    assert len(host_ids | log_ids) >= 30
    named = {rule for w in walks().values() for s in w.steps for rule in s.rules}
    assert named <= host_ids | log_ids


def test_readme_states_how_many_rules_there_are() -> None:
    """The README's counts of host and log rules are the files' (they had gone stale)."""
    import re
    from pathlib import Path

    text = " ".join((Path(__file__).parents[2] / "README.md").read_text().split())
    m = re.search(r"host_rules\.toml` \((\d+) host rules.*?`rules\.toml` \((\d+) log rules", text)
    assert m is not None
    assert (int(m.group(1)), int(m.group(2))) == (len(host_rules()), len(rules()))


def test_walk_stops_at_the_first_step_with_a_problem() -> None:
    found = run_host("nic", {"nic_state": "down"}) + run_host("peer", {"loss_pct": 5.0})
    doc = walk("nccl-timeout", found, {"nics", "peer", "services"})
    assert [s["status"] for s in doc["steps"]] == [
        "found",
        "not reached",
        "not reached",
        "not reached",
    ]
    assert (
        doc["stopped_at"] == "link state" and "eth9: operstate down" in doc["steps"][0]["evidence"]
    )
    doc = walk("nccl-timeout", run_host("peer", {"loss_pct": 5.0}), {"nics", "peer"})
    assert [s["status"] for s in doc["steps"]] == ["ok", "ok", "found", "not reached"]
    doc = walk("nccl-timeout", [], {"nics"})
    assert [s["status"] for s in doc["steps"]] == [
        "ok",
        "not checked",
        "not checked",
        "not checked",
    ]
    assert doc["stopped_at"] is None and "by hand" in doc["summary"] and doc["steps"][3]["manual"]


def test_jitter_is_judged_against_the_round_trip() -> None:
    """1.1 ms of mdev on a 40 ms path is steady; on a 2 ms path it is not."""
    far = peer_facts(PEER | {"rtt_ms": 40.5, "jitter_ms": 1.13})
    near = peer_facts(PEER | {"rtt_ms": 2.0, "jitter_ms": 1.13})
    assert "peer-jitter" not in {f.rule for f in run_host("peer", far)}
    assert "peer-jitter" in {f.rule for f in run_host("peer", near)}


def test_a_step_with_evidence_is_found_even_when_its_run_was_partial() -> None:
    """A peer that is down gets no throughput test, yet its finding answers the path step."""
    down = run_host("peer", {"reachable": False, "received": 0, "goodput_bits_per_s": None})
    doc = walk("training-hangs", down, {"nics", "peer"})
    statuses = {s["step"]: s["status"] for s in doc["steps"]}
    assert statuses["the path and bandwidth between nodes"] == "found"
    assert statuses["GPU utilisation pattern"] == "not checked"
