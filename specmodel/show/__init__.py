"""What the pages and reports display, without Streamlit: figures, readouts, the runs view, links."""
