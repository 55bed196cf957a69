"""Two sources side by side: comparison (compare, Comparison), side (Side, the type the parts
share), stats (per-component statistics), figures (each side's run figures), verdict (the
sentence naming the winner), sources (two Sources in, a Comparison out)."""
