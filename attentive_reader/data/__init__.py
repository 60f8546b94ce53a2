"""Cloze dataset -> tensors and batches. Imports torch and datasets, never spaCy."""
