# syntax=docker/dockerfile:1

# ---- build: compile TypeScript with the dev toolchain
FROM node:22-alpine AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the `prepare` script runs the build, and src/ is not copied yet.
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# ---- prod-deps: runtime dependencies only, in their own layer so a code change reuses it
FROM node:22-alpine AS prod-deps
WORKDIR /src
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# ---- runtime
FROM node:22-alpine
ENV NODE_ENV=production
# gateway_build_info's commit label: docker build --build-arg GATEWAY_COMMIT=$(git rev-parse HEAD) .
ARG GATEWAY_COMMIT=""
ENV GATEWAY_COMMIT=$GATEWAY_COMMIT
WORKDIR /app
# Files stay owned by root: the `node` user can read the code and the shipped config but not
# change them. config/ must sit beside dist/ (the loader finds default.yaml at dist/../config).
COPY package.json ./
COPY --from=prod-deps /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY config ./config
# The operator console (admin.console): static files the admin listener serves from dist/../console.
COPY console ./console
# The image's `node` user, by number: Kubernetes' runAsNonRoot can only verify a numeric user.
USER 1000:1000
# 8080: gateway (/healthz, /readyz, routes). 8081: admin API and /metrics (loopback unless
# admin.host is changed, which then needs ADMIN_TOKEN).
EXPOSE 8080 8081
# No curl in alpine; node's fetch does it. Any HTTP answer other than 2xx, or none, is unhealthy.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node runs as PID 1 and the CLI handles SIGTERM/SIGINT itself (graceful drain), so no init is needed.
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["serve"]
