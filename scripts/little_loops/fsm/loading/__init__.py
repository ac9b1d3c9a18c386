"""From a loop file to a validated `FSMLoop`, in one direction.

`pipeline` runs the stages in order (source, YAML text, shape checks, paradigm
compilation, graph checks, file-level checks) and is the only module that calls them in
sequence; each other module here is one stage or a building block of one.
"""
