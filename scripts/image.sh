#!/usr/bin/env bash
# Builds the OCI image of the `hookwire` command without a registry and
# without a base image: it assembles a root filesystem (the binary, the
# shared libraries `ldd` lists for it, the CA certificates, /etc/passwd and
# /etc/group with the non-root user `hookwire`, an empty /tmp and the user's
# home), imports it with `buildah from scratch`, sets the image's user,
# entrypoint, labels and exposed ports, and commits it to the local
# containers storage (podman and buildah share it). Debian's buildah and
# podman are installed by scripts/setup.sh; docs/kubernetes.md runs the
# image on a cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
Usage: scripts/image.sh [--binary PATH] [--tag TAG] [--output FILE]

Builds the OCI image of the hookwire command from a root filesystem this
script assembles (no base image is pulled) and commits it to the local
containers storage.

Options:
  --binary PATH   Package this hookwire binary instead of building one
                  (default: cargo build --release --locked -p hookwire-cli)
  --tag TAG       The image's name (default: localhost/hookwire:VERSION)
  --output FILE   Also write the image as an OCI archive to FILE
  -h, --help      Print this help

The packaged copy of the binary is stripped of its symbols; the user is
hookwire (uid and gid 10001), the entrypoint is the hookwire command.

Example:
  scripts/image.sh --tag localhost/hookwire:dev --output hookwire.oci.tar
  podman run --rm --network host localhost/hookwire:dev serve-demo
EOF
}

die() {
  echo "image: $*" >&2
  exit 1
}

BINARY=""
TAG=""
OUTPUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --binary | --tag | --output)
      [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value (see --help)"
      case "$1" in
        --binary) BINARY="$2" ;;
        --tag) TAG="$2" ;;
        --output) OUTPUT="$2" ;;
      esac
      shift 2
      ;;
    *) die "unknown argument \"$1\" (see --help)" ;;
  esac
done

command -v buildah >/dev/null 2>&1 || die "buildah is missing: run scripts/setup.sh as root, or apt-get install buildah"
command -v ldd >/dev/null 2>&1 || die "ldd is missing (Debian's libc-bin)"

# The user the image runs as: not root, a fixed id a Kubernetes
# securityContext can name (runAsUser: 10001).
USER_ID=10001
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
[ -f "${CA_BUNDLE}" ] || die "${CA_BUNDLE} is missing (Debian's ca-certificates)"

if [ -z "${BINARY}" ]; then
  nice -n 10 cargo build --release --locked -p hookwire-cli ||
    die "cargo build --release -p hookwire-cli failed"
  BINARY="${CARGO_TARGET_DIR:-target}/release/hookwire"
fi
[ -x "${BINARY}" ] || die "${BINARY} is not an executable file"
VERSION="$("${BINARY}" --version | awk '{print $2}')"
[ -n "${VERSION}" ] || die "${BINARY} --version printed no version"
TAG="${TAG:-localhost/hookwire:${VERSION}}"

ROOTFS="$(mktemp -d "${TMPDIR:-/tmp}/hookwire-rootfs.XXXXXX")"
CONTAINER=""
cleanup() {
  if [ -n "${CONTAINER}" ]; then
    buildah rm "${CONTAINER}" >/dev/null 2>&1 || true
  fi
  rm -rf "${ROOTFS}"
}
trap cleanup EXIT

# --- The root filesystem --------------------------------------------------
mkdir -p "${ROOTFS}/usr/local/bin" "${ROOTFS}/etc/ssl/certs" "${ROOTFS}/tmp" "${ROOTFS}/home/hookwire"
chmod 1777 "${ROOTFS}/tmp"
if command -v strip >/dev/null 2>&1; then
  strip --strip-unneeded -o "${ROOTFS}/usr/local/bin/hookwire" "${BINARY}" ||
    die "strip ${BINARY} failed"
else
  cp "${BINARY}" "${ROOTFS}/usr/local/bin/hookwire"
fi
chmod 0755 "${ROOTFS}/usr/local/bin/hookwire"
# Every library the dynamic loader resolves for the binary, and the loader
# itself, at the paths the binary names them by.
LIBS="$(ldd "${BINARY}")" || die "ldd ${BINARY} failed (not a dynamic executable of this machine?)"
if grep -q 'not found' <<<"${LIBS}"; then
  die "ldd cannot resolve every library of ${BINARY}: $(grep 'not found' <<<"${LIBS}" | tr -s ' \t' ' ')"
fi
for lib in $(grep -o '/[^ ]*' <<<"${LIBS}"); do
  mkdir -p "${ROOTFS}$(dirname "${lib}")"
  cp -L "${lib}" "${ROOTFS}${lib}"
done
cp -L "${CA_BUNDLE}" "${ROOTFS}${CA_BUNDLE}"
printf 'hookwire:x:%s:%s:hookwire:/home/hookwire:/sbin/nologin\n' "${USER_ID}" "${USER_ID}" >"${ROOTFS}/etc/passwd"
printf 'hookwire:x:%s:\n' "${USER_ID}" >"${ROOTFS}/etc/group"
# The rootfs is root's except the user's home.
chown -R 0:0 "${ROOTFS}"
chown "${USER_ID}:${USER_ID}" "${ROOTFS}/home/hookwire"

# --- The image --------------------------------------------------------------
CONTAINER="$(buildah from scratch)" || die "buildah from scratch failed (is the containers storage usable? see buildah info)"
# Ownership and modes as assembled (buildah copy would make everything root's).
buildah add --quiet --chown 0:0 "${CONTAINER}" "${ROOTFS}/usr" /usr >/dev/null
for dir in etc lib lib64 tmp; do
  [ -e "${ROOTFS}/${dir}" ] || continue
  buildah add --quiet --chown 0:0 "${CONTAINER}" "${ROOTFS}/${dir}" "/${dir}" >/dev/null
done
buildah add --quiet --chown "${USER_ID}:${USER_ID}" "${CONTAINER}" "${ROOTFS}/home" /home >/dev/null
# The ports of the manifests in deploy/kubernetes (every command is given
# its addresses explicitly there): policy serve gRPC and metrics, the
# approval service's gRPC, page and metrics, the gateway and its metrics.
buildah config \
  --user "${USER_ID}:${USER_ID}" \
  --workingdir /home/hookwire \
  --env HOME=/home/hookwire \
  --env SSL_CERT_FILE="${CA_BUNDLE}" \
  --entrypoint '["/usr/local/bin/hookwire"]' \
  --cmd '["--help"]' \
  --port 50153/tcp --port 9463/tcp \
  --port 50061/tcp --port 8443/tcp --port 9462/tcp \
  --port 8080/tcp --port 9464/tcp \
  --label org.opencontainers.image.title=hookwire \
  --label org.opencontainers.image.description="AGENT-HOOKS-0.1 hosts and interceptors over gRPC: the hookwire command" \
  --label org.opencontainers.image.version="${VERSION}" \
  --label org.opencontainers.image.licenses="$(awk -F'"' '/^license *=/ {print $2; exit}' Cargo.toml)" \
  "${CONTAINER}"
buildah commit --quiet --format oci --rm "${CONTAINER}" "${TAG}" >/dev/null ||
  die "buildah commit ${TAG} failed"
CONTAINER=""
if [ -n "${OUTPUT}" ]; then
  rm -f "${OUTPUT}"
  buildah push --quiet "${TAG}" "oci-archive:${OUTPUT}:${TAG}" || die "buildah push to ${OUTPUT} failed"
fi
SIZE=""
if command -v podman >/dev/null 2>&1; then
  SIZE="$(podman image inspect --format '{{.Size}}' "${TAG}" 2>/dev/null || true)"
fi
echo "image: ${TAG} (hookwire ${VERSION}${SIZE:+, ${SIZE} bytes unpacked})"
if [ -n "${OUTPUT}" ]; then
  echo "image: wrote ${OUTPUT}"
fi
