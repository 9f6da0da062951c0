"""Sub-commands of ``hybrid-dynamics``: one module each (see :mod:`hybrid_dynamics.cli`)."""
