# syntax=docker/dockerfile:1
# baremetal-exporter: multi-stage on the official Node.js 24 slim image (Debian bookworm).
# sharp ships its own libvips for linux-x64 and linux-arm64; the runtime adds one Debian package, libjemalloc2.
# BASE_IMAGE: CI builds on a local stand-in with the same layout (.ci/image-check); leave the default otherwise.
ARG BASE_IMAGE=node:24-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the only install script is the `node` devDependency's (it downloads a second Node 24 for
# npm scripts on machines whose Node is older); this image has its Node. No runtime dependency needs one.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
# The image context has no .git: `--build-arg BAREMETAL_REVISION=$(git rev-parse HEAD)` names the revision in
# baremetal_exporter_build_info (else `unknown`).
ARG BAREMETAL_REVISION="" BAREMETAL_BRANCH=""
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${BASE_IMAGE}
ENV NODE_ENV=production
# jemalloc for the process's native allocations (sharp's docs recommend it on glibc): at 10,000 servers it
# gives back what a cycle's garbage took, where glibc keeps it, and a small account's RSS stays flat
# (`npm run bench`, the small-account rows; docs/operations.md, "Sizing"). Debian's libjemalloc2, preloaded
# through one path on every architecture.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libjemalloc2 \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(dpkg -L libjemalloc2 | grep '/libjemalloc\.so\.2$')" /usr/local/lib/libjemalloc.so.2
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
# Freed pages go back to the system at once, not after jemalloc's default ten seconds: with the launcher's
# --max-semi-space-size=2, a busy small account's RSS peaks ~23 MB lower for ~1 point more of a core (issue 53;
# docs/operations.md, "Sizing"). bench/shipped.ts reads this line: the bench runs what the image ships.
ENV MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY LICENSE ./LICENSE
COPY dashboards ./dashboards
COPY alerts ./alerts
COPY examples ./examples
RUN mkdir -p /var/lib/baremetal-exporter /etc/baremetal-exporter \
 && sed 's#^state_dir: .*#state_dir: /var/lib/baremetal-exporter#; s#^  listen_address: .*#  listen_address: 0.0.0.0:9877#' examples/config.yml > /etc/baremetal-exporter/config.yml \
 && chown -R node:node /var/lib/baremetal-exporter
USER node
EXPOSE 9877
VOLUME ["/var/lib/baremetal-exporter"]
# OCI image labels. A release build passes BAREMETAL_VERSION (package.json's), BAREMETAL_REVISION (the commit)
# and BAREMETAL_CREATED (RFC 3339 UTC), as .ci/image-check does; without them they are empty.
ARG BAREMETAL_VERSION="" BAREMETAL_REVISION="" BAREMETAL_CREATED=""
LABEL org.opencontainers.image.title="baremetal-exporter" \
      org.opencontainers.image.description="Prometheus exporter for a bare-metal hosting provider's API: attacks, inventory, graphs and guarded remediation" \
      org.opencontainers.image.source="https://github.com/baremetal-exporter/baremetal-exporter" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${BAREMETAL_VERSION}" \
      org.opencontainers.image.revision="${BAREMETAL_REVISION}" \
      org.opencontainers.image.created="${BAREMETAL_CREATED}"
# /healthz answers while the process serves HTTP. The probe is bash's /dev/tcp (bash is in every Debian image):
# a few ms and ~4 MB per probe, against 0.1 s and 60 MB for a `node -e fetch(...)` probe (docs/deploying.md).
# With web.tls set, plain HTTP gets no answer: override HEALTHCHECK (docs/deploying.md).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9877 && printf 'GET /healthz HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n' >&3 && read -r -t 4 status <&3 && [[ $status == HTTP/1.?' 200 '* ]]"]
# The young-generation cap keeps RSS low for 10,000 servers (README, Benchmark).
ENTRYPOINT ["node", "--max-semi-space-size=2", "dist/main.js", "run"]
CMD ["--config.file=/etc/baremetal-exporter/config.yml"]
