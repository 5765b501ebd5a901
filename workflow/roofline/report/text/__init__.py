"""Sentences written from the numbers: the executive summary (page 1), the diagnosis of each stage, what the
treatments buy, and the collectives of multi-device deployments.

Every sentence is a function of the tables (a different model, GPU or scenario gives different words); nothing
here is boilerplate that holds regardless of the data. All numbers pass through `units`; the report formats what
the engine computed (times per roof, shares, bound classes) and divides no bytes by a bandwidth.
"""
from .diagnosis import (  # noqa: F401
                        class_bound,
                        class_intensity,
                        class_sentence,
                        class_shares,
                        diagnose_decode,
                        diagnose_prefill,
                        footprint_note,
                        gemm_peak,
                        gemm_ridge,
                        largest_activation_op,
                        largest_fitting_batch,
                        memory_times,
                        traffic,
)
from .executive import (  # noqa: F401
                        deployment_names,
                        executive_summary,
                        fit_sentence,
                        footprint_parts,
                        speed_sentence,
                        stage_sentence,
)
from .network import COLLECTIVE_NAMES, NETWORK_SENTENCE_SHARE, network_sentence, network_summary  # noqa: F401
from .treatments import GAIN_GROUP, SHORTENS, balance_sentence, lever_sentence, slower_reason, treatment_sentence  # noqa: F401
from .words import CLASS_NAMES, GAIN, HELPS, SHORT, SLOWER, bound_phrase, is_throughput, short, step_bound  # noqa: F401
