"""The judging layer: the LLM judge and the helpers evaluators read results with."""
