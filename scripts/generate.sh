#!/usr/bin/env bash
# `npm run generate`: what buf writes from proto/, in the current directory. gen/ holds the
# TypeScript code of every proto; deploy/envoy/api.binpb, the descriptor set Envoy's transcoder
# loads, leaves out the test-only edgetest proto, a service that only the tests implement.
# scripts/check-generated.sh runs this same file in a scratch copy, so the two cannot drift apart.
set -euo pipefail
buf generate
buf build --as-file-descriptor-set --exclude-path proto/agentplane/edgetest -o deploy/envoy/api.binpb
