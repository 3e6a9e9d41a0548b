"""What leaves the tool for other systems: engine configs to deploy, Prometheus rules, a Grafana
dashboard and the runs report."""
