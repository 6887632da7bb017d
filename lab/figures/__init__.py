"""Each figure's numbers once (numbers), drawn by plotly (the dashboard) and matplotlib (notebooks); bertviz offline."""
