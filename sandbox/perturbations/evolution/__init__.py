"""Evolution: the tool surface as real MCP servers change it from one release to the next.

Operators observed in public servers' version histories: parameters renamed by case style, a parameter added
(optional with a default, or required with its one accepted value documented), a tool deprecated with a named
successor, a tool split in two, an enum widened, descriptions rewritten, result fields renamed. Each keeps the
task solvable from what the agent sees. ``release_diff`` applies the change between two ``tools/list``
snapshots of a user's server (``openagent diff-test``).
"""

# The import order is the registration order, which is the catalogue's.
# isort: off
from sandbox.perturbations.evolution.params import EnumWidened, ParamAdded, ParamCaseStyle
from sandbox.perturbations.evolution.tools import DescriptionRelease, ToolDeprecated, ToolSplit
from sandbox.perturbations.evolution.results import ResultFieldRenamed
from sandbox.perturbations.evolution.diff import ReleaseDiff


# isort: on

__all__ = ["DescriptionRelease", "EnumWidened", "ParamAdded", "ParamCaseStyle", "ReleaseDiff", "ResultFieldRenamed",
           "ToolDeprecated", "ToolSplit"]  # fmt: skip
