# Image for landfall-api and landfall-worker (see docker-compose.yml).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-save --no-audit --no-fund
COPY . .
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app /app
RUN ln -s /app/bin/landfall /usr/local/bin/landfall
USER node
EXPOSE 8090
CMD ["landfall", "api"]
