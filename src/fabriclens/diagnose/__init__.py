"""Pure diagnosis: evidence in, findings out, from rules kept as data."""
