# One image for both processes: the API (default command) and the dialer.
#   docker build -t voice-agent-calls .
# docker-compose.yml shows how each one is started.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json nest-cli.json ./
COPY apps ./apps
COPY libs ./libs
# Compile both apps, then drop the compilers and test tools from node_modules.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
# The heap limit: see scripts/app-node-flags.js (the dialer's young generation is set in docker-compose.yml).
ENV NODE_ENV=production \
    NODE_OPTIONS="--max-old-space-size=1024" \
    ARTIFACTS_DIR=/app/var/artifacts
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# A named volume mounted on either starts with this owner, so the unprivileged user can write artifacts and the key.
RUN mkdir -p /app/var/artifacts /app/var/secrets && chown -R node:node /app/var
USER node
EXPOSE 3000
CMD ["node", "dist/apps/api/apps/api/src/main.js"]
