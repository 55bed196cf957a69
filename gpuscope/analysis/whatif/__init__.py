"""What-if: inputs (what the prediction rests on, per tenure) and predict (predict_pinned, the
replay of a run with pinned uploads)."""
