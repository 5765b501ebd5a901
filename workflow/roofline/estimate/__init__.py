"""Expected times: calibration tables of measured kernels, the estimator that maps the engine's bounds to expected
times (`calibration`, `expected.analyze`), and `measure`, the microbenchmarks that write a table on a real device
(needs torch). Uses the engine; the engine never calls it."""
