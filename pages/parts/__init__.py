"""What the pages share: the sidebar, display helpers, text escaping, run files, calibration."""
