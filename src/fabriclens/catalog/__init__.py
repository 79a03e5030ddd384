"""The built-in catalog: GPUs, intra-node links, networks, switches, engines, training frameworks and models, each entry with its source."""

from fabriclens.catalog.load import (
    engines,
    find_engine,
    find_framework,
    find_gpu,
    find_link,
    find_model,
    find_network,
    find_switch,
    frameworks,
    gpus,
    links,
    models,
    networks,
    switches,
)
from fabriclens.catalog.schema import Engine, Framework, Gpu, IntraLink, ModelSpec, Network, Switch

__all__ = [
    "Engine",
    "Framework",
    "Gpu",
    "IntraLink",
    "ModelSpec",
    "Network",
    "Switch",
    "engines",
    "find_engine",
    "find_framework",
    "find_gpu",
    "find_link",
    "find_model",
    "find_network",
    "find_switch",
    "frameworks",
    "gpus",
    "links",
    "models",
    "networks",
    "switches",
]
