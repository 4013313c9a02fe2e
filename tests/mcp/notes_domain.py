"""The notes server in memory as a domain, for tests that name it as ``notes_domain:NOTES``."""

import notes_server
from notes_tasks import TASKS

from sandbox.domains.mcp import mcp_domain

NOTES = mcp_domain(notes_server.build(), TASKS, name="notes", inspect="tool:list_notes")
