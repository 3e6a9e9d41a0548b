"""The cost model: presets and the names people write for them, engines, acceptance, one forward
pass (roofline), memory, a scenario's prediction and the decisions built on it. Imports only
specmodel's base modules (errors, notes, bounds, text, files)."""
