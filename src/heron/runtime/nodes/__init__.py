"""The kernel: nodes and their runs (engine, workflow, durable steps, rows, node tools)."""
