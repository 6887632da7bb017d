"""Experiments the notebooks run: feature-based tagging (Table 7), BERT vs GPT vs ELMo, contextual vectors."""
