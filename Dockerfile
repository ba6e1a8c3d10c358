# shardis: built on debian:12, run on debian:12-slim under tini as the non-root user shardis.
#   docker build --pull=false -t shardis .
#   docker run -p 6379:6379 shardis [--threads 4 ...]   # arguments after the image go to shardis
# Only Debian packages are downloaded; the base images may be local (../shared/tools/docker-local).

FROM debian:12 AS build
WORKDIR /src
# The toolchain and libraries in their own layer, keyed on install-deps.sh alone, so that a source
# change rebuilds only the compile layer below.
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh build && apt-get clean && rm -rf /var/lib/apt/lists/*
COPY . .
# Only the server target (no tests, no micro-benchmarks), compiled without the DWARF that strip
# would drop anyway (the Release build type: the same -O2 code); keep symbols. A unity build
# (batches of files as one translation unit, see CMakeLists.txt): a build that runs once.
RUN CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DSHARDIS_UNITY=ON" bash scripts/build.sh release shardis \
 && strip --strip-debug -o /usr/local/bin/shardis build/release/shardis

FROM debian:12-slim
# The shared libraries the binary links (checked with ldd below) and tini, which as PID 1 forwards
# SIGTERM to shardis and reaps zombies.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      liburing2 libabsl20220623 libmimalloc2.0 libgflags2.2 libgoogle-glog0v6 \
      libboost-fiber1.74.0 libboost-context1.74.0 libssl3 tini \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/log/apt /var/log/dpkg.log
# A fixed uid/gid (999) so that Kubernetes' runAsUser/fsGroup can name it.
RUN groupadd --system --gid 999 shardis \
 && useradd --system --uid 999 --gid shardis --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin shardis \
 && mkdir -p /data && chown shardis:shardis /data
COPY --from=build /usr/local/bin/shardis /usr/local/bin/shardis
# Fail the build if a runtime library is missing from the list above.
RUN if ldd /usr/local/bin/shardis | grep 'not found'; then exit 1; fi
# Like Redis' official image: no protected mode, since publishing the port (docker run -p) is the
# access decision; clients through a published port come from the bridge, not loopback.
# A variable, not a flag, so that `--protected_mode=true` after the image name overrides it.
ENV SHARDIS_PROTECTED_MODE=false
USER shardis:shardis
WORKDIR /data
VOLUME /data
EXPOSE 6379
# PING over bash's /dev/tcp (no redis-cli in the image). NOAUTH also proves the server answers.
# The port follows SHARDIS_PORT when it is set.
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${SHARDIS_PORT:-6379} && printf 'PING\\r\\n' >&3 && read -r -t 2 reply <&3 && [[ $reply == +PONG* || $reply == -NOAUTH* ]]"]
# Drain for at most 8 s on SIGTERM: less than docker stop's default 10 s grace period.
# In redis-server's `--name value` form, so that the arguments after the image name win in either
# form (a `--name=value` flag wins over a `--name value` line, whatever their order).
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/shardis", "--bind", "0.0.0.0", "--logtostderr", "--shutdown_timeout_ms", "8000"]
