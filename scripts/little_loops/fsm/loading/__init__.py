"""From a loop file to a validated `FSMLoop`, in one direction.

`pipeline` runs the stages in order (source, YAML text, dialect, then for a HEAD file
`from:`, `flow:` and fragments, shape checks, paradigm compilation or the HEAD model,
graph checks, file-level checks) and is the only module that calls them in
sequence; each other module here is one stage or a building block of one.
"""
