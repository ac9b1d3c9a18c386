"""`ll-loop schema`: print the JSON Schema of loop files that the package ships.

One schema covers both dialects (spec/ll-head-dialect.md §9e); its HEAD part is generated
by `little_loops.fsm.loading.head_schema` from the loader's own tables.

Editors use it through a first line such as
`# yaml-language-server: $schema=<path or URL of the schema>` (see docs/user-guide.md).
"""

from __future__ import annotations

from importlib import resources

from little_loops.cli.exit_codes import OK
from little_loops.cli.output import write_line

SCHEMA_RESOURCE = "fsm-loop-schema.json"


def schema_text() -> str:
    """The schema file `little_loops.fsm` ships, as written."""
    return resources.files("little_loops.fsm").joinpath(SCHEMA_RESOURCE).read_text("utf-8")


def schema_command() -> int:
    """Print the schema (one JSON document on stdout); exit 0."""
    write_line(schema_text().rstrip("\n"))
    return OK
