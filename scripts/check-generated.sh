#!/usr/bin/env bash
# Fails when gen/ (the TypeScript of every proto and gen/openapi/openapi.json), the Envoy descriptor set or deploy/envoy/envoy.yaml differ from what
# `npm run generate` writes from proto/ and envoy.yaml (all committed, never edited by hand).
# Generates into a scratch copy so the working tree is left alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/proto" "$root/buf.yaml" "$root/buf.gen.yaml" "$root/envoy.yaml" "$tmp/"
mkdir -p "$tmp/deploy/envoy"
ln -s "$root/node_modules" "$tmp/node_modules"
# The OpenAPI plugin (buf.gen.yaml) runs from scripts/protoc-gen-openapi and imports from services/.
ln -s "$root/scripts" "$root/services" "$tmp/"
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
if ! cmp -s "$root/deploy/envoy/envoy.yaml" "$tmp/deploy/envoy/envoy.yaml"; then
  echo "deploy/envoy/envoy.yaml is stale (it is a copy of envoy.yaml): run 'npm run generate' and commit the result" >&2
  exit 1
fi
echo "gen/, deploy/envoy/api.binpb and deploy/envoy/envoy.yaml match proto/ and envoy.yaml"
