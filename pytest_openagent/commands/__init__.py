"""The ``openagent`` commands that need no training stack, one module each (``configure`` and ``run``)."""
