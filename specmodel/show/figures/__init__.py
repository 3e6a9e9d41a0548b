"""Plotly figures, one module per page: plain functions from results to a go.Figure."""
