#!/usr/bin/env bash
# validate_json.sh TAWSIM SCHEMA ARGS...: tawsim --format json output (single run and sweep)
# validates against the JSON Schema (Debian's python3-jsonschema).
set -euo pipefail
tawsim=$1
schema=$2
shift 2
check() {
  /usr/bin/python3 -c '
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(sys.stdin)
items = doc if isinstance(doc, list) else [doc]
for item in items:
    jsonschema.validate(item, schema)
print("valid:", len(items), "point(s)")
' "$schema"
}
"$tawsim" "$@" --format json | check
"$tawsim" "$@" --format json --sweep seq-len=32,64 --jobs 2 2>/dev/null | check
