"""Training through the Lightning CLI and its harness: the CLI as a library call (``run``), its
one-line errors, checkpoints, the run lock, the wall clock, the predictions writer and the
shipped configs."""
