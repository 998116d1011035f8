#!/usr/bin/env bash
# Make the two base images the Docker recipes build FROM, on a machine that cannot pull from
# an image registry but reaches Debian's packages and PyPI (possibly through a TLS proxy):
#
#   local/debian:12      Debian 12 (bookworm) minbase, from debootstrap   (Batsim image base)
#   local/python:3.11    the same + Debian 12's Python 3.11 and venv      (scheduler image base)
#
# Both carry this machine's CA bundle, extra CAs and pip settings, so that apt and pip inside
# `docker build --network host` trust the same proxy the host does.
#
# Needs root (debootstrap makes device nodes), debootstrap (`apt-get install debootstrap`)
# and a running Docker engine:
#
#   sudo bash docker/local-base.sh            # ~1-4 min; skips images that already exist
#   FORCE=1 sudo bash docker/local-base.sh    # make them again
#
# (Already root, as in a container or CI job: drop the `sudo`.)
#
# Then build with --build-arg BASE=local/debian:12 (docker/batsim/Dockerfile) and
# --build-arg BASE=local/python:3.11 (docker/Dockerfile). Machines that can pull from Docker
# Hub need none of this: the recipes default to debian:12 and python:3.11-slim.
set -euo pipefail

MIRROR=${MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p; s/^deb \(http[^ ]*debian\) .*/\1/p' \
  /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list \
  2>/dev/null | head -n1 || true)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
ROOTFS=${ROOTFS:-/tmp/batpolicy-rootfs}
FORCE=${FORCE:-0}

log() { printf '=== %s\n' "$*" >&2; }
die() { printf 'local-base.sh: %s\n' "$*" >&2; exit 1; }

docker info >/dev/null 2>&1 || die "no Docker engine answers \`docker info\` (start dockerd)"
have() { [[ "$FORCE" != 1 ]] && docker image inspect "$1" >/dev/null 2>&1; }

if ! have local/debian:12; then
  if [[ "$FORCE" == 1 || ! -e "$ROOTFS/etc/debian_version" ]]; then
    log "debootstrap bookworm from $MIRROR into $ROOTFS"
    command -v debootstrap >/dev/null ||
      die "debootstrap is not installed: apt-get install debootstrap"
    [[ $(id -u) == 0 ]] || die "debootstrap needs root: sudo bash $0"
    rm -rf "$ROOTFS"
    debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR"
  fi
  log "CA certificates and pip settings of this machine"
  install -d "$ROOTFS/etc/ssl/certs" "$ROOTFS/usr/local/share/ca-certificates"
  [[ -f /etc/ssl/certs/ca-certificates.crt ]] &&
    cp /etc/ssl/certs/ca-certificates.crt "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
  # Extra CAs (e.g. a proxy's) survive update-ca-certificates when a build installs the
  # ca-certificates package.
  shopt -s nullglob
  for crt in /usr/local/share/ca-certificates/*.crt; do
    cp "$crt" "$ROOTFS/usr/local/share/ca-certificates/"
  done
  # pip's own settings, minus those naming folders of this machine (find-links, local
  # indexes), which do not exist inside an image.
  printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$ROOTFS/etc/pip.conf"
  timeout=$(pip config get global.default-timeout 2>/dev/null || echo "${PIP_DEFAULT_TIMEOUT:-}")
  [[ -n "$timeout" ]] && printf 'default-timeout = %s\n' "$timeout" >>"$ROOTFS/etc/pip.conf"
  printf 'disable-pip-version-check = 1\n' >>"$ROOTFS/etc/pip.conf"
  # Same apt suites as a Debian 12 image from Docker Hub.
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$MIRROR" "$MIRROR" \
    >"$ROOTFS/etc/apt/sources.list"
  rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/archives/*.deb
  log "docker import -> local/debian:12"
  tar -C "$ROOTFS" -c . | docker import \
    -c 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    -c 'ENV LANG=C.UTF-8' -c 'CMD ["bash"]' - local/debian:12
fi

if ! have local/python:3.11; then
  log "local/python:3.11 (Debian 12's python3 + venv)"
  docker build --network host -t local/python:3.11 - <<'EOF'
FROM local/debian:12
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
EOF
fi
docker images local/debian:12 --format '{{.Repository}}:{{.Tag}} {{.Size}}'
docker images local/python:3.11 --format '{{.Repository}}:{{.Tag}} {{.Size}}'
