"""The small things every room imports: errors and their one-line form, write faults, locks,
atomic files, argument checks, entity markers, the checkpoint file reader, upstream patches."""
