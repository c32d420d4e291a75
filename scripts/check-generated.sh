#!/usr/bin/env bash
# Fails when gen/ or the Envoy descriptor set differ from what buf writes from proto/ (both
# are committed and never edited by hand). Generates into a scratch copy so the working tree is left alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/proto" "$root/buf.yaml" "$root/buf.gen.yaml" "$tmp/"
mkdir -p "$tmp/deploy/envoy"
ln -s "$root/node_modules" "$tmp/node_modules"
# The same script as `npm run generate`, so this check compares with exactly what it writes.
(cd "$tmp" && PATH="$root/node_modules/.bin:$PATH" bash "$root/scripts/generate.sh")
if ! diff -r "$root/gen" "$tmp/gen" >/dev/null; then
  echo "gen/ is stale: run 'npx buf generate' and commit the result" >&2
  diff -r "$root/gen" "$tmp/gen" | head -20 >&2
  exit 1
fi
if ! cmp -s "$root/deploy/envoy/api.binpb" "$tmp/deploy/envoy/api.binpb"; then
  echo "deploy/envoy/api.binpb is stale: run 'npm run generate' and commit the result" >&2
  exit 1
fi
echo "gen/ and deploy/envoy/api.binpb match proto/"
