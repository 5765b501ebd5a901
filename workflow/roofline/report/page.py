"""What every page shares: the header (title, date, configuration hash, scenario), the caveats, the accelerators
of results/specs.json (the one route by which an accelerator's specs reach the report), and how names are cut."""
from __future__ import annotations

import os
from datetime import datetime, timezone

from ..display import weights_label
from ..engine.hardware import Accelerator

#: the caveats of the model reports (the summary shows the first two)
CAVEATS = (
    "A roofline bound is a lower bound on time: real kernels reach 60-90% of peak bandwidth and less of peak FLOP/s, "
    "and each kernel pays a launch; the expected times of these reports add both back.",
    "Operators do not overlap: each operator's time is the slower of its compute and its memory time, and the "
    "stage time is their sum (collectives too: a server that overlaps them can beat the bound by their share).",
    "Bytes are compulsory DRAM traffic of unfused kernels (inputs read once, outputs written once); caches, tiling "
    "re-reads and fusion inside a framework change them.",
    "Peaks are dense datasheet values; rows flagged as estimates in the hardware table were derived rather than "
    "printed by the vendor.",
    "Several devices: rows are one device's share; collectives run at the link's datasheet bandwidth plus a latency "
    "each, not overlapped with computation (an all-reduce as a ring, or its tensor once where the switch reduces in "
    "flight: NVLink SHARP); no offloading; pipeline stages run without micro-batching. A setup that does not fit is "
    "timed as if it did and marked ✗.",
)


def generated_at() -> datetime:
    """Now, or SOURCE_DATE_EPOCH when set (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return datetime.fromtimestamp(int(epoch), tz=timezone.utc)
    return datetime.now(tz=timezone.utc)


def plural(n: int, word: str) -> str:
    """'1 GPU', '2 GPUs'."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def accelerators(specs: dict) -> dict[str, Accelerator]:
    """The configured accelerators of results/specs.json, config order: every spec value the report shows (name,
    peaks, bandwidth, ridges, memory, links) comes from here, every computed value from the tables."""
    return {key: Accelerator(**entry) for key, entry in specs["gpus"].items()}


#: what the hash in a page's header digests: the grid-wide results/specs.json (summary, index) or a model report's
#: own inputs, results/models/{model}/specs.json (so that editing another model leaves that report unchanged)
HASH_NAMES = {"config": ("config hash", "SHA-256 of the resolved configuration (results/specs.json)"),
              "inputs": ("model inputs hash", "SHA-256 of this report's inputs (this model, every GPU, the scenario "
                                              "and the stages: results/models/{model}/specs.json); the config hash "
                                              "of the whole grid is in the summary")}


def title_block(specs: dict, title: str, subtitle: str, hash_kind: str = "config") -> dict:
    """The page header: title, subtitle, date, the hash of what the page was built from, the scenario."""
    when = generated_at()
    scenario = specs["scenario"]
    hash_name, hash_what = HASH_NAMES[hash_kind]
    return {
        "title": title, "subtitle": subtitle, "date": when.strftime("%Y-%m-%d"),
        "hash_name": hash_name, "hash_what": hash_what,
        "config_hash": specs["config_sha256"][:12], "config_hash_full": specs["config_sha256"],
        "scenario": [
            ("batch", str(scenario["batch"])), ("sequence length", f"{scenario['seq_len']} tokens"),
            ("weights", weights_label(scenario)), ("activations", scenario["act_dtype"]),
            ("KV cache", scenario["kv_dtype"]), ("attention", scenario["attention"]),
            ("logits", scenario["logits"]),
            *([("MoE routing", scenario["expert_routing"])] if _any(specs, "n_experts") else []),
            *([("MLA", scenario["mla_mode"])] if _any(specs, "kv_lora_rank") else []),
        ],
        "stages": ", ".join(specs["stages"]),
    }


def _any(specs: dict, field: str) -> bool:
    """Whether a model of the page has `field` (MoE experts, an MLA latent): the scenario keys that only such
    models read are shown for them alone."""
    return any(model.get(field) for model in specs.get("models", {}).values())


#: a part of a model name longer than this may break anywhere in the summary (else it would widen the column)
NAME_PART_MAX = 24


def name_parts(name: str) -> list[dict]:
    """A model name cut after each '/' ('meta-llama/', 'Llama-2-7b-hf'): the summary lets a line break only there,
    never at a hyphen inside a part, unless a part is longer than NAME_PART_MAX characters (it may then break
    anywhere: {"text": part, "nowrap": False})."""
    parts = name.split("/")
    parts = [part + "/" for part in parts[:-1]] + [parts[-1]]
    return [{"text": part, "nowrap": len(part) <= NAME_PART_MAX} for part in parts]
