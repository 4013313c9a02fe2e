"""Audits of the catalogue on the worlds: how hard each perturbation bites the static baseline (``strength``),
and the generated catalogue and perturbation × domain matrix in ``docs/`` (``catalogue``)."""
