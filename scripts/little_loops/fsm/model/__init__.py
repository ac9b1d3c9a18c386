"""The bottom layer: records and fixed vocabularies every other layer may use.

`findings` is the record every loop check returns; `loop_vocabulary` the fixed key and
value sets of a loop file. Nothing here imports another `little_loops.fsm` module.
"""
