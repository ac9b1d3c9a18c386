"""The bottom layer: records and fixed vocabularies every other layer may use.

`findings` is the record every loop check returns; `loop_vocabulary` the fixed key and
value sets of a loop file; `head_parts` and `head_loop` the records of a loop read in
little-loops' current dialect. Nothing here imports a module above this layer (`schema`,
whose records `head_loop` extends, is part of it).
"""
