# syntax=docker/dockerfile:1
# shardis: build on Debian 12, run on debian:12-slim with only the runtime libraries.
#   docker build -t shardis .
#   docker run -p 6379:6379 shardis [--threads 4 ...]

FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh build && rm -rf /var/lib/apt/lists/*
COPY . .
# Only the server target (no tests, no micro-benchmarks); keep symbols, drop DWARF.
RUN bash scripts/build.sh release shardis \
 && strip --strip-debug -o /usr/local/bin/shardis build/release/shardis

FROM debian:12-slim
# The shared libraries the binary links (checked with ldd below), and redis-cli for the
# health check.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      liburing2 libabsl20220623 libmimalloc2.0 libgflags2.2 libgoogle-glog0v6 \
      libboost-fiber1.74.0 libboost-context1.74.0 redis-tools \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system shardis \
 && useradd --system --gid shardis --home-dir /data --no-create-home --shell /usr/sbin/nologin shardis \
 && mkdir -p /data && chown shardis:shardis /data
COPY --from=build /usr/local/bin/shardis /usr/local/bin/shardis
# Fail the build if a runtime library is missing from the list above.
RUN if ldd /usr/local/bin/shardis | grep 'not found'; then exit 1; fi
USER shardis
WORKDIR /data
VOLUME /data
EXPOSE 6379
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD redis-cli -p 6379 ping | grep -q PONG || exit 1
ENTRYPOINT ["/usr/local/bin/shardis", "--bind=0.0.0.0", "--logtostderr"]
