"""Planning on top of the model: GPUs needed at a latency target, and a traffic mix of workloads."""
