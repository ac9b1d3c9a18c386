"""The process layer: starting actions, reading their output, process groups, checkpoints."""
