"""The engine layer: how one run moves from state to state (`run_loop.FSMExecutor`)."""
