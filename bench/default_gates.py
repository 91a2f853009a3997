"""Does the default run pass every diagnostic gate, seed after seed? (issue 28.4)

Runs ``selfmodel run data_raw --no-report --seed S`` for each seed (skipped when
``OUT/seed-S/results.json`` exists) and lists every fit results.json records a gate for: the
verdict fit, every model of the zoo, the training model, the robustness refits and
reweightings (prior variants, other scale variables, the family left out, strict accuracy).
Prints one JSON line per seed and writes ``OUT/gates.json``; exits 1 when any gate failed.

    python bench/default_gates.py --seeds 20261130,1,2,3,4 --out build/gates
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def gates(results: Any, path: str = "") -> Iterator[tuple[str, bool]]:
    """Every ``(where, passed)`` of a fit's gate in a results dictionary."""
    if isinstance(results, dict):
        for key, value in results.items():
            here = f"{path}.{key}" if path else key
            if key == "diagnostics_passed" and isinstance(value, bool):
                yield path, value
            elif key == "diagnostics" and isinstance(value, dict) and "passed" in value:
                yield here, bool(value["passed"])
            else:
                yield from gates(value, here)
    elif isinstance(results, list):
        for i, value in enumerate(results):
            yield from gates(value, f"{path}[{i}]")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="20261130,1,2,3,4")
    ap.add_argument("--out", type=Path, default=Path("build/gates"))
    ap.add_argument("--data", default="data_raw")
    a = ap.parse_args()
    summary: dict[str, Any] = {}
    for seed in a.seeds.split(","):
        out = a.out / f"seed-{seed}"
        if not (out / "results.json").exists():
            subprocess.run([str(Path(sys.executable).with_name("selfmodel")), "run", a.data, "--no-report", "--seed", seed,
                            "--out", str(out)], check=True)
        found = list(gates(json.loads((out / "results.json").read_text())))
        failed = [where for where, ok in found if not ok]
        summary[seed] = {"fits_with_a_gate": len(found), "failed": failed}
        print(json.dumps({"seed": seed, **summary[seed]}), flush=True)
    (a.out / "gates.json").write_text(json.dumps(summary, indent=1))
    return 1 if any(s["failed"] for s in summary.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
