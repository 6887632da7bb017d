"""The one training loop and what plugs into it: runs on disk, pre-training, fine-tuning, FLOPs."""
