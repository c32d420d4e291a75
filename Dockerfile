# syntax=docker/dockerfile:1
# The agentplane image: compiled JavaScript on Node 20, production dependencies only, running as
# an unprivileged user. One image for every service module (SERVICES=...) and for `migrate`.
#   docker build -t agentplane:dev .
#   docker run --rm -p 8080:8080 -e HOST=0.0.0.0 agentplane:dev            (everything, embedded DB)
#   docker run --rm -e SERVICES=sessions -e DATABASE_URL=... -e REDIS_URL=... agentplane:dev
ARG NODE_IMAGE=node:20.19-bookworm-slim

# 1. Compile TypeScript (tsc keeps the source layout: dist/services/..., dist/gen/...).
# Then build the dashboard (web/ into web/dist) that the web module serves. npm ci's prepare
# script skips that build here: web/ is copied after the install, so that a change to the page
# does not invalidate the installed dependencies' layer.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY clients/typescript/package.json ./clients/typescript/package.json
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY gen ./gen
COPY services ./services
RUN npx tsc -p . && test -f dist/services/cli/main.js
COPY web ./web
RUN npm run build:web && test -f web/dist/index.html

# 2. Production dependencies alone.
# (The client package is a workspace of the lockfile: its package.json must be there for npm ci.)
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY clients/typescript/package.json ./clients/typescript/package.json
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# 3. The runtime: no compiler, no sources, no npm cache; files owned by root, run as uid 1000.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json ./
COPY bin ./bin
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/services ./dist/services
COPY --from=build /app/dist/gen ./dist/gen
COPY --from=build /app/web/dist ./web/dist
USER 1000:1000
# 8080: the REST edge (SERVICES=all or edge); 8081: the public services over h2c (gRPC, gRPC-Web,
# Connect); 8082: the internal services (workloads with service-account tokens).
EXPOSE 8080 8081 8082
ENTRYPOINT ["node", "bin/agentplane.js"]
CMD ["serve"]
