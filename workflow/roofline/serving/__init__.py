"""Serving: the deployment search (`planner`: devices x parallel plans x dtypes x batches, Pareto frontier) and the
plan table's parquet form (`plan_io`). Uses the estimate layer and the engine."""
