"""Pure planning on top of the model: resolve defaults, validate layouts, compare networks."""
