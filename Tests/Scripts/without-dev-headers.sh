#!/usr/bin/env bash
# Runs a command with libcurl's and OpenSSL's development headers out of reach (empty tmpfs
# mounts over their directories, in a private mount namespace), so that `make test`'s own build
# proves the package needs neither: libcurl is loaded with dlopen, and swift-crypto brings its own
# BoringSSL. Needs root and unshare(1); elsewhere it runs the command as it is and says so.
set -euo pipefail
hidden=()
for directory in /usr/include/curl /usr/include/openssl /usr/include/*-linux-gnu/curl /usr/include/*-linux-gnu/openssl; do
    [ -d "$directory" ] && hidden+=("$directory")
done
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null || ! unshare --mount true 2>/dev/null; then
    echo "without-dev-headers: cannot hide headers here (needs root and unshare); running as is" >&2
    exec "$@"
fi
echo "without-dev-headers: building with ${hidden[*]:-no curl/openssl headers present} out of reach" >&2
exec unshare --mount -- bash -c '
    for directory in "${@:2:$1}"; do mount -t tmpfs none "$directory" || exit 1; done
    shift $(($1 + 1))
    # A header left reachable would make this proof meaningless.
    for header in /usr/include/curl/curl.h /usr/include/*-linux-gnu/curl/curl.h /usr/include/openssl/ssl.h; do
        [ -e "$header" ] && { echo "without-dev-headers: $header is still reachable" >&2; exit 1; }
    done
    exec "$@"' hide "${#hidden[@]}" "${hidden[@]}" "$@"
