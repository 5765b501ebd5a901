"""The Snakemake pipeline's library: config resolution (`config`), the strict config-file reader (`yaml_loader`),
schema-guided re-typing (`schema`) and one-line schema errors (`schema_messages`), the compute job (`jobs`,
`tables`), which sources the compute jobs depend on (`sources`), atomic writers (`atomic`, `io`) and recovery after
interrupted runs (`housekeeping`). Rules and scripts call these; nothing here imports figures, report or cli."""
