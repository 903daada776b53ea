#!/usr/bin/env bash
# Checks that dist/<handler>.zip can run on Lambda's provided.al2023 (glibc 2.34, GCC 11's
# libstdc++): symbol versions, shared libraries, no Foundation at run time, a stripped
# `bootstrap` that answers an event in stdin mode and asks the Runtime API for its first event
# with no HTTP library loaded, and a zip of at most 7 MB. Exits non-zero when any zip fails,
# after printing every violation it found. Usage: Infra/check-package.sh [DIST_DIR]
#        Infra/check-package.sh --self-test   (proves the checker rejects a bad binary)
set -euo pipefail

# Newest versions provided.al2023 has (glibc 2.34; libstdc++ and libgcc_s of GCC 11).
MAX_GLIBC=2.34
MAX_GLIBCXX=3.4.29
MAX_CXXABI=1.3.13
MAX_GCC=11.0.0
# What the minimal al2023 image has (glibc's own parts included).
ALLOWED_LIBRARIES='^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libz\.so\.1|libcurl\.so\.4|libssl\.so\.3|libcrypto\.so\.3|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$'
# Each zip's ceiling (7,000,000 bytes since this round's features): what Lambda downloads and unpacks at a cold start; the figure that matters is the cold start to the first /next (make bench's floor section, under 1.6 ms).
MAX_ZIP_BYTES=7000000
# Libraries that mean the Swift runtime or Foundation were linked dynamically.
FORBIDDEN_AT_RUN_TIME='libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime'

newer_than() { # VERSION LIMIT: true when VERSION > LIMIT
    [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1)" = "$1" ]
}

# Prints one line per violation; returns non-zero when there is any.
check_binary() {
    local binary=$1 violations=0 tag name version limit library
    while read -r tag; do
        name=${tag%%_[0-9]*}
        version=${tag#*_}
        case $name in
            GLIBC) limit=$MAX_GLIBC ;;
            GLIBCXX) limit=$MAX_GLIBCXX ;;
            CXXABI) limit=$MAX_CXXABI ;;
            GCC) limit=$MAX_GCC ;;
            *) continue ;;
        esac
        if newer_than "$version" "$limit"; then
            echo "  symbol version $tag is newer than ${name}_$limit:" \
                "$(objdump -T "$binary" | grep -E "[( ]${tag//./\\.}[) ]" | awk '{print $NF}' | sort -u | tr '\n' ' ')"
            violations=$((violations + 1))
        fi
    done < <(objdump -T "$binary" | grep -oE '\b(GLIBC|GLIBCXX|CXXABI|GCC)_[0-9][0-9.]*' | sort -u)

    while read -r library; do
        if ! [[ $library =~ $ALLOWED_LIBRARIES ]]; then
            echo "  needs $library, which provided.al2023 does not have"
            violations=$((violations + 1))
        fi
    done < <(objdump -p "$binary" | awk '$1 == "NEEDED" {print $2}')

    local resolved
    resolved=$(ldd "$binary" 2>&1 || true)
    if grep -qE "$FORBIDDEN_AT_RUN_TIME" <<<"$resolved"; then
        echo "  loads the Swift runtime or Foundation at run time:" \
            "$(grep -oE "($FORBIDDEN_AT_RUN_TIME)[^ ]*" <<<"$resolved" | sort -u | tr '\n' ' ')"
        violations=$((violations + 1))
    fi
    if grep -q 'not found' <<<"$resolved"; then
        echo "  unresolved libraries: $(grep 'not found' <<<"$resolved" | tr -s ' \t' ' ')"
        violations=$((violations + 1))
    fi
    return $((violations > 0))
}

# Runs BINARY under a loopback Runtime API that never answers and prints the shared libraries
# mapped when it asks for its first event; fails when it does not ask, or has an HTTP/TLS library
# mapped by then (the Runtime API client is a plain socket; libcurl waits for the first HTTPS call),
# or the C++ runtime or the unwinder (the release link copies both in: Infra/static-cxx).
first_event_libraries() {
    python3 - "$1" <<'PY'
import os, socket, subprocess, sys, tempfile
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
listener.settimeout(10)
store = tempfile.mkdtemp()
process = subprocess.Popen([sys.argv[1]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={"PATH": "/usr/bin:/bin", "AUTH_STORE": store,
                                "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:%d" % listener.getsockname()[1]})
try:
    connection, _ = listener.accept()
    connection.settimeout(10)
    request = b""
    while b"\r\n\r\n" not in request:
        chunk = connection.recv(4096)
        if not chunk:
            break
        request += chunk
    if not request.startswith(b"GET /2018-06-01/runtime/invocation/next HTTP/1.1\r\n"):
        print("asked %r instead of /invocation/next" % request[:60])
        sys.exit(1)
    with open("/proc/%d/maps" % process.pid) as maps:
        names = sorted({line.split()[-1].rsplit("/", 1)[-1] for line in maps if ".so" in line.split()[-1]})
except socket.timeout:
    print("never asked for an event")
    sys.exit(1)
finally:
    process.kill()
    process.wait()
unwanted = [name for name in names if name.startswith(("libcurl", "libssl", "libcrypto", "libnghttp", "libstdc++", "libgcc_s"))]
print("%d libraries at the first /next: %s" % (len(names), " ".join(names)))
sys.exit(1 if unwanted else 0)
PY
}

self_test() {
    local work
    work=$(mktemp -d)
    trap 'rm -rf "$work"' RETURN
    cat >"$work/uses_hypotf.c" <<'EOF'
#include <math.h>
int main(void) {
    volatile float three = 3, four = 4, big = 3e38f, nan = NAN, inf = INFINITY;
    return !(hypotf(three, four) == 5.0f && hypotf(big, big) == INFINITY && hypotf(nan, inf) == INFINITY
             && isnan(hypotf(nan, four)) && hypotf(-three, 0.0f) == 3.0f);
}
EOF
    gcc -O1 -fno-builtin -o "$work/plain" "$work/uses_hypotf.c" -lm
    gcc -O1 -fno-builtin -o "$work/wrapped" "$work/uses_hypotf.c" "$(dirname "$0")/../Sources/CGlibcCompat/glibc_compat.c" \
        -I "$(dirname "$0")/../Sources/CGlibcCompat/include" -Wl,--wrap=hypotf -lm
    if objdump -T "$work/plain" | grep -q 'GLIBC_2.35.*hypotf' && check_binary "$work/plain" >/dev/null; then
        echo "self-test FAILED: a binary needing hypotf@GLIBC_2.35 passed the check" >&2
        return 1
    fi
    if ! check_binary "$work/wrapped"; then
        echo "self-test FAILED: the --wrap=hypotf shim did not bind an old hypotf" >&2
        return 1
    fi
    if ! timeout 5 "$work/wrapped"; then
        echo "self-test FAILED: the wrapped hypotf computes wrong results (or never returns)" >&2
        return 1
    fi
    # The static unwinder's _dl_find_object (glibc 2.35), the same way, when this glibc has it.
    cat >"$work/finds_object.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
int main(void) { struct dl_find_object found; return _dl_find_object((void *)main, &found) != -1; }
EOF
    if gcc -O1 -o "$work/plain_find" "$work/finds_object.c" 2>/dev/null; then
        if check_binary "$work/plain_find" >/dev/null; then
            echo "self-test FAILED: a binary needing _dl_find_object@GLIBC_2.35 passed the check" >&2
            return 1
        fi
        gcc -O1 -o "$work/wrapped_find" "$work/finds_object.c" "$(dirname "$0")/../Sources/CGlibcCompat/glibc_compat.c" \
            -I "$(dirname "$0")/../Sources/CGlibcCompat/include" -Wl,--wrap=_dl_find_object -lm
        if ! check_binary "$work/wrapped_find" || ! timeout 5 "$work/wrapped_find"; then
            echo "self-test FAILED: the --wrap=_dl_find_object shim did not avoid GLIBC_2.35 or did not answer 'not found'" >&2
            return 1
        fi
    fi
    echo "self-test passed: the checker rejects hypotf@GLIBC_2.35 and _dl_find_object@GLIBC_2.35 (when this glibc has them); the shims avoid them and answer right"
}

if [ "${1:-}" = "--self-test" ]; then
    self_test
    exit
fi

dist=${1:-dist}
status=0
# make package passes its HANDLERS; run by hand, every handler of the catalogue.
for handler in ${HANDLERS:-$("$(dirname "$0")/handler-names.sh")}; do
    zip_file="$dist/$handler.zip"
    if [ ! -f "$zip_file" ]; then
        echo "FAIL $zip_file: missing (run make package)"
        status=1
        continue
    fi
    work=$(mktemp -d)
    unzip -q "$zip_file" -d "$work"
    problems=""
    [ "$(ls -A "$work")" = "bootstrap" ] || problems+="  the zip holds $(ls -A "$work" | tr '\n' ' ')instead of only bootstrap"$'\n'
    if [ -x "$work/bootstrap" ]; then
        problems+=$(check_binary "$work/bootstrap" || true)
        if readelf -S "$work/bootstrap" | grep -qw '\.symtab'; then
            problems+=$'\n'"  bootstrap is not stripped"
        fi
        # The unzipped bootstrap answers a broken event in stdin mode, with a clean environment.
        answer=$(printf '{not json' | env -i PATH=/usr/bin:/bin "$work/bootstrap" 2>/dev/null) || problems+=$'\n'"  bootstrap exited non-zero on a broken event"
        if ! python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(d["error"]["code"] != "INVALID_REQUEST")' "$answer" 2>/dev/null; then
            problems+=$'\n'"  bootstrap answered ${answer:-nothing} instead of INVALID_REQUEST"
        fi
        if ! libraries=$(first_event_libraries "$work/bootstrap"); then
            problems+=$'\n'"  under the Runtime API: $libraries"
        fi
    else
        problems+="  bootstrap is missing or not executable"
    fi
    # Infra/bootstrap, for one zip with several handlers: it must reach the one _HANDLER names.
    if [ "$handler" = signin ] && [ -x "$work/bootstrap" ]; then
        mv "$work/bootstrap" "$work/signin"
        cp "$(dirname "$0")/bootstrap" "$work/bootstrap"
        answer=$(printf '[]' | env -i PATH=/usr/bin:/bin _HANDLER=signin "$work/bootstrap" 2>/dev/null) || true
        if ! python3 -c 'import json,sys; sys.exit(json.loads(sys.argv[1])["error"]["code"] != "INVALID_REQUEST")' "$answer" 2>/dev/null; then
            problems+=$'\n'"  Infra/bootstrap with _HANDLER=signin answered ${answer:-nothing}"
        fi
    fi
    rm -rf "$work"
    size=$(stat -c %s "$zip_file")
    if [ "$size" -gt "$MAX_ZIP_BYTES" ]; then
        problems+=$'\n'"  the zip is $size bytes, over the $MAX_ZIP_BYTES of issue 15 (docs/packaging.md, \"Size and start-up\")"
    fi
    if [ -n "$(tr -d '[:space:]' <<<"$problems")" ]; then
        echo "FAIL $zip_file ($size bytes):"
        echo "$problems" | sed '/^$/d'
        status=1
    else
        echo "ok   $zip_file ($size bytes, at most $MAX_ZIP_BYTES): glibc <= $MAX_GLIBC, libstdc++ <= $MAX_GLIBCXX, al2023 libraries only, no Foundation, answers INVALID_REQUEST; ${libraries%%:*}"
    fi
done
exit $status
