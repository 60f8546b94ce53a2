"""Raw news stories -> anonymized cloze dataset. Imports spaCy and datasets, never torch."""
