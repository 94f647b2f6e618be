"""Summarises one conformance-suite run (its `-o` directory) against the baseline.

Usage: python3 conformance_summary.py RESULTS_DIR BASELINE_YML EXPECTED

Prints `PASS|XFAIL|FAIL conformance <scenario>` per scenario, then `COUNTS <passed> <failed>
<baselined>`. A scenario passes when none of its checks is a FAILURE or WARNING (the suite's
own rule); it is baselined when the baseline names it, or names every check of it that failed.
EXPECTED names the scenarios the run must have results for, one a line: each one without a
result fails (so does a run that wrote none, or an empty EXPECTED). Standard library only.
"""

import json
import os
import re
import sys

results_dir, baseline_path, expected_path = sys.argv[1], sys.argv[2], sys.argv[3]

with open(expected_path) as f:
    expected = [line.strip() for line in f if line.strip()]

whole, checks = set(), {}
with open(baseline_path) as baseline:
    for line in baseline:
        match = re.match(r"\s*-\s*([^\s#]+)", line)
        if not match:
            continue
        scenario, _, check = match.group(1).partition(":")
        if check:
            checks.setdefault(scenario, set()).add(check)
        else:
            whole.add(scenario)

passed = failed = baselined = 0
seen = set()
entries = sorted(os.listdir(results_dir)) if os.path.isdir(results_dir) else []
for entry in entries:
    match = re.match(r"server-(.+)-\d{4}-\d{2}-\d{2}T", entry)
    path = os.path.join(results_dir, entry, "checks.json")
    if not match or not os.path.exists(path):
        continue
    scenario = match.group(1)
    seen.add(scenario)
    with open(path) as f:
        bad = [c for c in json.load(f) if c["status"] in ("FAILURE", "WARNING")]
    if not bad:
        passed += 1
        print(f"PASS conformance {scenario}")
    elif scenario in whole or {c["id"] for c in bad} <= checks.get(scenario, set()):
        baselined += 1
        print(f"XFAIL conformance {scenario} (baselined)")
    else:
        failed += 1
        for check in bad:
            reason = (check.get("errorMessage") or check["status"])[:300]
            print(f"FAIL conformance {scenario}: {check['id']}: {reason}")
if not expected:
    failed += 1
    print("FAIL conformance: no scenarios expected (the list of required scenarios is empty)")
for scenario in expected:
    if scenario not in seen:
        failed += 1
        print(f"FAIL conformance {scenario}: required, but the run wrote no result for it")
print(f"COUNTS {passed} {failed} {baselined}")
