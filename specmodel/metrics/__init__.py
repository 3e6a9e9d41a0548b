"""Live sources: the capped fetch and URL policy, Prometheus text to snapshots, each engine's metric
schema, one server's scrape, a Prometheus server's API, the live verdict and the fleet view."""
