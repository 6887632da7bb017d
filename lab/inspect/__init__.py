"""Looking inside a trained model: explore (the human-facing API) and what it is made of."""
