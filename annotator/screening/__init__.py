"""Prioritised screening: a model ranks the issues not yet screened, a stopping rule says when
the relevant ones have been found, and a simulation replays known labels before anyone screens."""
