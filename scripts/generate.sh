#!/usr/bin/env bash
# `npm run generate`: what buf writes from proto/, in the current directory. gen/ holds the
# TypeScript code of every proto and gen/openapi/openapi.json, the OpenAPI document of the public
# REST routes (scripts/protoc-gen-openapi, which reads the public services from envoy.yaml).
# deploy/envoy/api.binpb, the descriptor set Envoy's transcoder loads, leaves out the test-only
# edgetest proto, a service that only the tests implement.
# deploy/envoy/envoy.yaml is a byte-identical copy of the top-level envoy.yaml: kustomize reads
# files only from inside a kustomization's directory, and deploy/envoy/kustomization.yaml makes
# Envoy's ConfigMap from the files beside it. Edit envoy.yaml, then run this.
# scripts/check-generated.sh runs this same file in a scratch copy, so the two cannot drift apart.
set -euo pipefail
buf generate
buf build --as-file-descriptor-set --exclude-path proto/agentplane/edgetest -o deploy/envoy/api.binpb
cp envoy.yaml deploy/envoy/envoy.yaml
