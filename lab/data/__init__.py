"""text -> documents -> instances -> batches: datasets, corpora, pre-training instances, SQuAD and tagged files."""
