"""Analysis results -> rich renderables, JSON, CSV, PNG and trace JSON. No parsing, no GPU."""
