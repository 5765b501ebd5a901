"""The Snakemake pipeline's library: config resolution (`config`), the compute job (`jobs`, `tables`), which sources
the compute jobs depend on (`sources`), atomic writers (`atomic`, `io`) and recovery after interrupted runs
(`housekeeping`). Rules and scripts call these; nothing here imports figures, report or cli."""
