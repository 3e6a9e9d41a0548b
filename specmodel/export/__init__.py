"""What leaves the tool for other systems: engine configs to deploy, Prometheus rules, a Grafana
dashboard, the runs report, and the all-or-nothing output file."""
