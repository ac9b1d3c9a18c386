"""Developer tools that are not tests (docs/testing.md): the mutation check."""
