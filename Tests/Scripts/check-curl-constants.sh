#!/usr/bin/env bash
# Compares the libcurl constants Sources/CCurl/shim.h declares with a real curl.h: the shim builds
# without libcurl's development headers, so this is where a wrong number would show. Usage:
#   check-curl-constants.sh [INCLUDE_DIR]   (default: the system's, e.g. /usr/include/x86_64-linux-gnu)
set -euo pipefail
cd "$(dirname "$0")/../.."
include=${1:-}
if [ -z "$include" ]; then
    for candidate in /usr/include /usr/include/*-linux-gnu; do
        [ -f "$candidate/curl/curl.h" ] && include=$candidate && break
    done
fi
if [ -z "$include" ] || [ ! -f "$include/curl/curl.h" ]; then
    echo "check-curl-constants: no curl/curl.h (pass the directory holding curl/ as the argument)" >&2
    exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
names=$(grep -oE 'static const [A-Za-z_]+ (CURL[A-Z_]+) = ' Sources/CCurl/shim.h | awk '{print $4}')
{
    echo '#include <stdio.h>'
    echo "#include \"$include/curl/curl.h\""
    echo 'int main(void) {'
    for name in $names; do echo "    printf(\"$name %ld\\n\", (long)($name));"; done
    echo '    return 0; }'
} > "$work/real.c"
{
    echo '#include <stdio.h>'
    echo "#include \"$PWD/Sources/CCurl/shim.h\""
    echo 'int main(void) {'
    for name in $names; do echo "    printf(\"$name %ld\\n\", (long)($name));"; done
    echo '    return 0; }'
} > "$work/shim.c"
cc -w -I"$include" -o "$work/real" "$work/real.c"
cc -o "$work/shim" "$work/shim.c"
if diff <("$work/real") <("$work/shim"); then
    echo "check-curl-constants: $(echo "$names" | wc -w) constants match $include/curl/curl.h"
else
    echo "check-curl-constants: Sources/CCurl/shim.h disagrees with $include/curl/curl.h (above)" >&2
    exit 1
fi
