"""Pure performance model: parameters, FLOPs, memory, collectives, communication, step time."""
