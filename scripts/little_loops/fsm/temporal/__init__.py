"""Loops as Temporal workflows (`ll-loop --engine temporal`, `ll-loop worker`).

Optional: needs the `temporal` extra (temporalio); nothing imports this package unless
the Temporal engine is asked for. The workflow (`workflow.LoopWorkflow`) drives the same
run core as the local engine (`engine.core.RunCore`); the I/O it asks for runs as
activities (`activities`) on the worker of the host and checkout the run belongs to.

Layer: above `store` (it keeps its status in the state file's format, `LoopState`) and
below the faces and the CLI, which start workers and clients.
"""
