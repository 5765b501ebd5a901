# Recovery after an interrupted run, and outputs of keys no longer in the config. Logic lives in roofline.pipeline.housekeeping;
# this file only wires it to Snakemake's hooks.
import os

from snakemake.logging import logger

from roofline.pipeline.housekeeping import locks, procs, stale, watchdog

# Before Snakemake checks .snakemake/locks (after parsing): remove a lock no live run can hold (kill -9, SIGHUP, a
# power cut), so that a plain rerun recovers; a live run's lock stands. Job subprocesses of a run skip this.
if workflow.is_main_process:
    _cleared = locks.clear_stale_locks(Path.cwd())
    if _cleared:
        logger.warning(_cleared)


onstart:
    refuse_replaced_config_on_a_cluster()  # before any job is submitted
    # this run now holds the lock: record it, stop its jobs if it is killed, and move aside the outputs of models,
    # GPUs and stages the config no longer lists (unless another run works in this directory)
    locks.record_run(Path.cwd())
    watchdog.start()
    if not procs.snakemake_runs_in(Path.cwd(), exclude=os.getpid()):
        _stale = stale.stale_outputs(
            Path.cwd(),
            MODELS,
            GPUS,
            STAGES,
            TABLES,
            RESOLVED.measured_models(),
            RESOLVED.unasked_outputs(),
        )
        if stale.narrowed_for_one_run(workflow.config_settings.config):
            # a one-off run (--config overrides) narrows the grid for itself: the outputs of the config file's own
            # grid stay where they are (moved aside by a run without overrides that no longer lists them)
            if _stale:
                logger.warning(
                    f"Left in place {len(_stale)} outputs of models, GPUs, stages or measurements that this run's "
                    "--config overrides leave out"
                )
        else:
            _aside = stale.move_aside(Path.cwd(), _stale)
            if _aside:
                logger.warning(
                    f"Moved the outputs of models, GPUs, stages or measurements no longer in the config to {_aside}"
                )


onsuccess:
    locks.forget_run(Path.cwd())


onerror:
    locks.forget_run(Path.cwd())
