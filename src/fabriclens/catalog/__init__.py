"""The built-in catalog: GPUs, intra-node links, networks and models, each entry with its source."""

from fabriclens.catalog.load import (
    engines,
    find_engine,
    find_gpu,
    find_link,
    find_model,
    find_network,
    find_switch,
    gpus,
    links,
    models,
    networks,
    switches,
)
from fabriclens.catalog.schema import Engine, Gpu, IntraLink, ModelSpec, Network, Switch

__all__ = [
    "Engine",
    "Gpu",
    "IntraLink",
    "ModelSpec",
    "Network",
    "Switch",
    "engines",
    "find_engine",
    "find_gpu",
    "find_link",
    "find_model",
    "find_network",
    "find_switch",
    "gpus",
    "links",
    "models",
    "networks",
    "switches",
]
