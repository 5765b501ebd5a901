"""Housekeeping of the Snakemake workflow (pipeline glue, not engine: imports no engine module and no Snakemake).

- `locks`: a lock left by a run that died without unlocking (SIGKILL, a closed terminal, a power cut) is detected and
  removed before Snakemake checks it; a lock held by a live run is respected.
- `watchdog`: jobs a killed Snakemake leaves behind (figure and report processes) are stopped.
- `stale`: outputs of models, GPUs and stages no longer in the config are moved aside, out of results/ and reports/.
"""
