"""Plain-dict documents for `--json`: stable keys, SI units in the key names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabriclens.catalog.schema import split_release

if TYPE_CHECKING:  # annotations only: `plan --json` need not import capacity and transfer
    from fabriclens.catalog.schema import Host, ModelSpec
    from fabriclens.model.collectives import CollectiveEstimate, Fabric
    from fabriclens.model.layout import TrainConfig
    from fabriclens.model.memory import MemoryLedger
    from fabriclens.model.offload import Offload
    from fabriclens.plan.capacity import CapacityPlan
    from fabriclens.plan.planner import Plan
    from fabriclens.plan.transfer import TransferPlan


def _r(x: float, digits: int = 6) -> float:
    return float(f"{x:.{digits}g}")


def _lora_doc(spec: ModelSpec, cfg: TrainConfig) -> dict[str, Any]:
    """A LoRA plan's adapters: where they sit and what they move (model/lora.py)."""
    from fabriclens.model.lora import adapter_bytes_per_token
    from fabriclens.model.memory import config_adapter_params

    fwd, bwd = adapter_bytes_per_token(
        spec, cfg.tp, cfg.sequence_parallel, cfg.expert_tp, cfg.lora_targets, cfg.projections
    )
    return {
        "rank": cfg.lora_rank,
        "targets": cfg.lora_targets,
        "base_bits": cfg.lora_base_bits,
        "trainable_params": round(config_adapter_params(spec, cfg)),
        # per token of a micro-batch and decoder layer, on one GPU
        "adapter_bytes_per_token_layer": {"forward": _r(fwd), "backward": _r(bwd)},
    }


def _memory_doc(mem: MemoryLedger, min_gpus: int | None) -> dict[str, Any]:
    return {
        "per_gpu_bytes": {k: round(v) for k, v in mem.per_gpu_bytes.items()},
        "total_per_gpu_bytes": round(mem.total_per_gpu_bytes),
        "capacity_bytes": mem.capacity_bytes,
        "fits": mem.fits,
        "min_gpus": min_gpus,
    }


def _range_doc(
    band: tuple[float, float, int] | None,
    why: str,
    source: str,
    speeds: dict[str, float],
    times: dict[str, float] | None = None,
) -> dict[str, Any]:
    """A likely range: each speed times the band's low and high ratio of measured / planned
    speed, each time divided by them; or why there is none."""
    if band is None:
        return {"known": False, "why": why}
    low, high, runs = band
    doc: dict[str, Any] = {"known": True}
    doc |= {key: [_r(v * low), _r(v * high)] for key, v in speeds.items()}
    doc |= {key: [_r(v / high), _r(v / low)] for key, v in (times or {}).items()}
    return doc | {"speed_ratio": [low, high], "share_of_runs": 0.9, "published_runs": runs,
                  "source": f"5th-95th percentile of measured / planned speed over {runs} {source} "
                  "(reference/, its calibration rows)"}  # fmt: skip


def _likely_doc(plan: Plan) -> dict[str, Any]:
    """Where published runs of the plan's framework fell around its planned speed (its spread),
    applied to this plan."""
    est, fw, moe = plan.training, plan.framework, plan.model.is_moe
    assert est is not None
    kind = "MoE " if moe else ""
    name = fw.title if fw is not None else "this framework"
    return _range_doc(
        fw.likely_range(moe) if fw is not None else None,
        f"fewer than 10 published {kind}runs of {name} in reference/ to measure the plan against",
        f"published {kind}runs of {name}",
        {"tokens_per_s": est.tokens_per_s},
        {"step_s": est.time_s},
    )


def _decode_likely_doc(plan: Plan) -> dict[str, Any]:
    """Where published decode runs on the plan's engine fell around the speed the model plans
    for them (its spread), applied to this plan."""
    from fabriclens.catalog import find_engine

    inf = plan.inference
    assert inf is not None
    engine = find_engine(plan.request.engine)
    return _range_doc(
        engine.likely_range(),
        f"fewer than 10 published decode runs of {engine.title} in reference/ to measure the "
        "plan against",
        f"published decode runs of {engine.title}",
        {
            "decode_tokens_per_s": inf.decode_tokens_per_s,
            "batch_tokens_per_s": inf.batch_tokens_per_s,
        },
    )


def plan_doc(plan: Plan) -> dict[str, Any]:
    """The JSON object for one plan (one network choice)."""
    doc: dict[str, Any] = {
        "network": plan.network_name,
        "model": {
            "name": plan.model.name,
            "params": plan.counts.total,
            "active_params": plan.counts.active,
            "moe": plan.model.is_moe,
            "source": plan.model.source,
            "reading": plan.model.reading,
        },
        "workload": plan.workload,
        # the one verdict (exit status 1 when false): GPU memory, and a split's host part
        "fits": plan.fits,
        "gpu": plan.gpu.name,
        "gpus": plan.request.gpus,
        # the GPUs given, where the engine serves on fewer of them (Ollama: one when it fits)
        "gpus_given": plan.request.gpus_given_count or plan.request.gpus,
        "gpus_per_node": plan.gpus_per_node,
        "nodes": plan.nodes,
        "intra_link": plan.intra.name,
        "nics_per_node": plan.nics_per_node if plan.network else 0,
        "network_cost_relative": _r(plan.network_cost),
    }
    if plan.training is not None and plan.config is not None:
        est, cfg = plan.training, plan.config
        mem = est.memory
        doc["layout"] = {
            "tp": cfg.tp,
            "pp": cfg.pp,
            "dp": cfg.dp,
            "cp": cfg.cp,
            "ep": cfg.ep,
            "etp": cfg.expert_tp,
            "zero": cfg.zero,
            "recompute": cfg.recompute,
            "sequence_parallel": cfg.sequence_parallel,
            "micro_batch": cfg.micro_batch,
            "global_batch": cfg.global_batch,
            "seq_len": cfg.seq_len,
            "interleave": cfg.interleave,
            "precision": cfg.precision,
            "microbatches": cfg.microbatches,
            "framework": plan.framework.name if plan.framework else "",
        }
        if not cfg.trains_base:
            doc["lora"] = _lora_doc(plan.model, cfg)
        if plan.framework is not None:
            kernel = plan.kernel_level or est
            doc["framework"] = {
                "name": plan.framework.name,
                "title": plan.framework.title,
                "efficiency": _r(cfg.framework_efficiency, 4),
                "attention": cfg.attention_kernel,
                "elementwise": cfg.elementwise,
                "projections": cfg.projections,
                "layer_host_ms": _r(cfg.layer_host_s * 1e3, 4),
                # every MoE layer's, whatever the framework (model/moe.py); 0 for a dense model
                "moe_layer_host_ms": _r(cfg.moe_layer_host_s * 1e3, 4) if plan.model.is_moe else 0,
                "grad_reduce": cfg.grad_reduce,
                "grad_buckets": cfg.grad_buckets,
                "zero3_calls": cfg.zero3_calls,
                "moe_dispatch": cfg.moe_dispatch,
                "ep_overlap": cfg.ep_overlap,
                "expert_tp": plan.framework.expert_tp,
                "source": plan.framework.efficiency_source,
                "kernel_level_tokens_per_s": _r(kernel.tokens_per_s),
                "kernel_level_mfu": _r(kernel.mfu, 4),
            }
        doc["memory"] = _memory_doc(mem, plan.min_gpus)
        doc["step"] = {
            "time_s": _r(est.time_s),
            "compute_s": _r(est.compute_s),
            "comm_exposed_s": _r(est.comm_exposed_s),
            "bubble_s": _r(est.bubble_s),
            "optimizer_s": _r(est.optimizer_s),
        }
        doc["throughput"] = {
            "tokens_per_s": _r(est.tokens_per_s),
            "tflops_per_gpu": _r(est.tflops_per_gpu),
            "hw_tflops_per_gpu": _r(est.hw_tflops_per_gpu),
            "mfu": _r(est.mfu, 4),
            "mfu_full_square": _r(est.mfu_full_square, 4),
            "hfu": _r(est.hfu, 4),
            "gpu_utilisation": _r(est.compute_s / est.time_s, 4),
            "comm_share": _r(est.comm_share, 4),
        }
        doc["throughput"]["likely"] = _likely_doc(plan)
        doc["bottleneck"] = est.bottleneck
        doc["comm"] = [
            {
                "group": c.group,
                "op": c.op,
                "size_bytes": round(c.size_bytes),
                "count": c.count,
                "bytes_per_step": round(c.bytes_per_step),
                "link": c.link,
                "busbw_GBps": _r(c.busbw_bytes_per_s / 1e9, 4),
                "time_s": _r(c.time_s),
                "exposed_s": _r(c.exposed_s),
                "note": c.note,
            }
            for c in est.comm
        ]
        doc["assumptions"] = list(plan.defaults) + list(est.assumptions)
        doc["warnings"] = list(plan.warnings)
    elif plan.inference is not None:
        inf = plan.inference
        mem = inf.memory
        doc["layout"] = {
            "tp": plan.tp,
            "pp": plan.pp,
            "ep": plan.request.ep or 1,
            "dp": plan.request.dp or 1,
            "batch": plan.request.batch,
            "prompt_tokens": plan.request.prompt_tokens,
            "output_tokens": plan.request.output_tokens,
            "engine": plan.request.engine,
            "precision": inf.precision,
            "kv_precision": inf.kv_precision,
        }
        doc["memory"] = _memory_doc(mem, plan.min_gpus)
        comm_s = sum(c.time_per_token_s for c in inf.comm)
        doc["step"] = {
            "time_s": _r(inf.decode_step_s),
            "compute_s": _r(inf.decode_step_s - comm_s),
            "comm_exposed_s": _r(comm_s),
            "bubble_s": 0.0,
        }
        doc["throughput"] = {"tokens_per_s": _r(inf.batch_tokens_per_s)}
        doc["inference"] = {
            "kv_cache_bytes_per_token": round(inf.kv_cache_bytes_per_token),
            "kv_cache_bytes_per_gpu": round(inf.kv_cache_bytes_per_gpu),
            "state_bytes_per_sequence": round(inf.state_bytes_per_sequence),
            "ttft_s": _r(inf.ttft_s),
            "decode_step_s": _r(inf.decode_step_s),
            "decode_tokens_per_s": _r(inf.decode_tokens_per_s),
            "batch_tokens_per_s": _r(inf.batch_tokens_per_s),
            "tpot_under_load_s": _r(inf.tpot_under_load_s),
            "e2e_s": _r(inf.e2e_s),
            "weights_read_per_step_bytes": round(inf.weights_read_per_step_bytes),
            "decode_bound": inf.decode_bound,
            "engine_caveat": inf.engine_caveat,
            "host_step_hidden_s": _r(inf.host_step_hidden_s),
            "host_step_hidden_since": inf.overlap_since,
        }
        if inf.spec_tokens:
            doc["inference"]["speculative"] = {
                "spec_tokens": inf.spec_tokens,
                "accept_length": inf.accept_length,
                "draft": inf.draft,
                "draft_topk": inf.draft_topk,
                "verify_tokens": inf.verify_tokens,
                "step_s": _r(inf.spec_step_s),
                "draft_s": _r(inf.draft_s),
                "plain_decode_step_s": _r(inf.plain_decode_step_s),
            }
        if plan.offload is None:  # layers in host memory: the host-memory rows judge that
            doc["inference"]["likely"] = _decode_likely_doc(plan)
        doc["bottleneck"] = "memory capacity" if not mem.fits else inf.decode_bound
        if plan.offload is not None and plan.host is not None:
            doc["offload"] = offload_doc(
                plan.offload, plan.request.engine, plan.host, plan.host_ram_bytes, plan.host_fits
            )
        doc["comm"] = [
            {
                "group": c.group,
                "op": c.op,
                "size_bytes": round(c.size_bytes),
                "count_per_token": c.count_per_token,
                "link": c.link,
                "time_per_token_s": _r(c.time_per_token_s),
            }
            for c in inf.comm
        ]
        doc["assumptions"] = list(plan.defaults) + list(inf.assumptions)
        doc["warnings"] = list(plan.warnings)
    return doc


def collective_doc(
    est: CollectiveEstimate, fabric: Fabric, assumptions: list[str]
) -> dict[str, Any]:
    """The JSON object for `fabriclens collective`."""
    return {
        "op": est.op,
        "size_bytes": round(est.size_bytes),
        "ranks": est.ranks,
        "nodes": est.nodes,
        "gpus_per_node": fabric.gpus_per_node,
        "intra_link": fabric.intra.name,
        "network": fabric.network.name if fabric.network else "none",
        "nics_per_node": fabric.nics_per_node if fabric.network else 0,
        "time_s": _r(est.time_s),
        "algbw_GBps": _r(est.algbw_bytes_per_s / 1e9, 5),
        "busbw_GBps": _r(est.busbw_bytes_per_s / 1e9, 5),
        "latency_s": _r(est.latency_s),
        "algorithm": est.algorithm,
        "protocol": est.protocol or None,
        "bottleneck": est.bottleneck,
        "link": est.link,
        "assumptions": assumptions,
    }


def transfer_doc(plan: TransferPlan) -> dict[str, Any]:
    """The JSON object for `fabriclens transfer`."""
    return {
        "size_bytes": round(plan.size_bytes),
        "link": plan.link,
        "protocol": plan.protocol,
        "goodput_bits_per_s": _r(plan.goodput_bits_per_s),
        "goodput_source": plan.goodput_source,
        "hosts": plan.hosts,
        "time_s": _r(plan.time_one_s),
        "strategies": [
            {"name": s.name, "time_s": _r(s.time_s), "note": s.note} for s in plan.strategies
        ],
        "best": plan.best.name,
        "advice": list(plan.advice),
    }


def _engine_limits_doc(plan: CapacityPlan) -> dict[str, Any]:
    lim = plan.limits

    def item(value: Any, source: str) -> dict[str, Any]:
        return {"value": value, "source": source}

    return {
        "name": lim.engine,
        "gpu_memory_utilization": item(
            lim.gpu_memory_utilization, lim.gpu_memory_utilization_source
        ),
        "reserved_bytes": item(round(lim.reserved_bytes), lim.reserved_bytes_source),
        "usable_bytes_per_gpu": round(lim.usable_bytes_per_gpu),
        "max_parallel": item(lim.max_parallel or None, lim.max_parallel_source),
        "precision": lim.precision,
        "bits_per_weight": item(_r(lim.bits_per_weight), lim.bits_per_weight_source),
        "caveat": plan.estimate.engine_caveat,
    }


def offload_doc(
    off: Offload, engine: str, host: Host, host_ram_bytes: int | None, host_fits: bool | None
) -> dict[str, Any]:
    """Where an engine that keeps layers in host memory puts them, and what a token costs."""
    shown, of = off.reported_layers
    return {
        "engine": split_release(engine)[0],  # as named, a release (@0.5.7) aside
        "gpu_layers": off.gpu_layers,
        "layers": off.layers,
        "output_on_gpu": off.output_on_gpu,
        "reported": f"{shown}/{of}",
        "host": host.name,
        "host_title": host.title,
        "host_bw_GBps": _r(off.host_bw_bytes_per_s / 1e9, 4),
        "host_bytes": round(off.host_bytes),
        "gpu_bytes_per_gpu": round(off.gpu_bytes_per_gpu),
        "gpu_layers_requested": off.requested,
        "max_gpu_layers": off.max_gpu_layers,
        "fits": off.fits,
        "capacity_bytes": round(off.capacity_bytes),
        "host_ram_bytes": host_ram_bytes,
        "host_fits": host_fits,
        "ttft_s": _r(off.prefill_s),
        "decode_step_s": _r(off.decode_step_s),
        "decode_host_s": _r(off.decode_host_s),
        "decode_tokens_per_s": _r(off.decode_tokens_per_s),
    }


def capacity_doc(plan: CapacityPlan, team: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON object for `fabriclens capacity`; ``team`` is the team block (--team), if any."""
    est = plan.estimate
    return {
        "model": plan.model,
        "gpu": plan.gpu,
        "team": team,
        "users": plan.users,
        "prompt_tokens": plan.prompt_tokens,
        "output_tokens": plan.output_tokens,
        "tpot_slo_s": plan.tpot_slo_s,
        "ttft_slo_s": plan.ttft_slo_s,
        "slo_met": plan.slo_met,
        "replica": {
            "tp": plan.tp,
            "pp": plan.pp,
            "ep": plan.ep,
            "dp": plan.dp,
            "gpus": plan.gpus_per_replica,
            "max_batch_kv": plan.max_batch_kv,
            "batch": plan.batch,
            "decode_step_s": _r(est.decode_step_s),
            "spec_tokens": est.spec_tokens,
            "accept_length": est.accept_length,
            "draft": est.draft,
            "draft_topk": est.draft_topk,
            "verify_tokens": est.verify_tokens,
            "spec_step_s": _r(est.spec_step_s),
            "tpot_s": _r(plan.tpot_s),
            "tokens_per_s_per_user": _r(plan.tokens_per_s_per_user),
            "tokens_per_s": _r(plan.replica_tokens_per_s),
            "ttft_s": _r(plan.ttft_s),
            "comm_per_token_s": _r(sum(c.time_per_token_s for c in est.comm)),
            "kv_cache_bytes_per_token": round(est.kv_cache_bytes_per_token),
        },
        "tp_choice": {
            "reason": plan.tp_reason,
            "options": [
                {
                    "tp": o.tp,
                    "pp": o.pp,
                    "gpus": o.gpus,
                    "replicas": o.replicas,
                    "slo_met": o.slo_met,
                    "decode_step_s": _r(o.decode_step_s),
                    "tpot_s": _r(o.tpot_s),
                    "ttft_s": _r(o.ttft_s),
                }
                for o in plan.options
            ],
        },
        "engine": _engine_limits_doc(plan),
        "offload": offload_doc(
            plan.offload, plan.limits.engine, plan.host, plan.host_ram_bytes, plan.host_fits
        )
        if plan.offload is not None and plan.host is not None
        else None,
        "replicas": plan.replicas,
        "gpus": plan.gpus,
        "required_tokens_per_s": _r(plan.required_tokens_per_s),
        "provided_tokens_per_s": _r(plan.provided_tokens_per_s),
        "egress_bits_per_s": _r(plan.egress_bits_per_s),
        "weights_bytes": round(plan.weights_bytes),
        "weights_load_s": _r(plan.weights_load_s) if plan.weights_load_s is not None else None,
        "network": plan.network,
        "advice": list(plan.advice),
        "assumptions": list(plan.assumptions),
    }
