"""The store layer: state and event files, locks, history, logs, `PersistentExecutor`."""
