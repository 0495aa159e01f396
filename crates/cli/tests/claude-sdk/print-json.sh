#!/bin/sh
# Print mode as a CI job uses it: one task, its JSON result read by a script, an error result
# stopping the job. CODECODER names the binary (default: codecoder on PATH).
# Run by crates/cli/tests/it/claude_sdk.rs against the fake model; it prints what it read.
set -eu
codecoder="${CODECODER:-codecoder}"

result=$("$codecoder" -p "say hi" --output-format json)
printf '%s\n' "$result" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["type"] == "result" and r["subtype"] == "success" and r["is_error"] is False, r
print("answer:", r["result"])
print("session:", "yes" if r["session_id"] else "no")
print("turns:", r["num_turns"])
print("cost:", "yes" if r["total_cost_usd"] > 0 else "no")
'

# The prompt on stdin; the default output is the final text alone.
echo "say it again" | "$codecoder" -p

# A run that ends in an error result exits 1; its JSON says why.
code=0
"$codecoder" -p "list the files, then explain" --max-turns 1 --output-format json >error.json || code=$?
python3 -c '
import json, sys
r = json.load(open("error.json"))
assert r["type"] == "result" and r["is_error"] is True, r
print(r["subtype"] + ":", len(r["errors"]), "error(s)")
'
echo "exit: $code"
