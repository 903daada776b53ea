#!/usr/bin/env bash
# Installs, idempotently, what `make demo`, `make package` or `make test` needs beyond Swift, git,
# make and Python 3, and says what it did. Usage: prerequisites.sh demo|package|test|bench
#   demo:    nothing beyond the toolchain (libcurl is loaded with dlopen and its headers are not
#            needed to build); checked anyway so a broken machine fails with a clear line.
#   package: zip/unzip, advzip, binutils (strip, objdump, readelf) and a C compiler for the zips
#            and their checks.
#   test:    what package needs, and the Python packages the tests (and `make bench`) use as
#            independent peers (cryptography, joserfc, PyJWT, botocore, moto[server],
#            aws-embedded-metrics, jsonschema, cloudevents, openapi-spec-validator, schemathesis, standardwebhooks) and cfn-lint with the SAM translator;
#            soft-webauthn with python-fido2 1.x, and py_webauthn, each in a virtual environment of its own;
#            Debian's chromium and playwright (pinned) for the browser tests.
#   bench:   what test needs, and Debian's golang-go for the Go peer that `make bench` measures.
# Debian packages are installed with apt-get when running as root; otherwise the one missing
# package is named and the script exits 1. Python packages go through `python3 -m pip`.
set -euo pipefail
mode=${1:-test}

say() { echo "prerequisites: $*"; }
fail() { echo "prerequisites: $*" >&2; exit 1; }

command -v swift >/dev/null || fail "swift is not on PATH (install the Swift toolchain: https://www.swift.org/install/linux/)"
command -v python3 >/dev/null || fail "python3 is not on PATH (apt-get install python3)"

apt_updated=0
installed=0
install_debian() { # PACKAGE...: installs those that dpkg does not know as installed
    local missing=() package
    for package in "$@"; do
        dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
        fail "missing Debian package(s) ${missing[*]}: run 'sudo apt-get install ${missing[*]}' (or install them with your system's package manager), then retry"
    fi
    say "installing ${missing[*]} (apt-get)"
    installed=1
    if [ $apt_updated -eq 0 ]; then apt-get update -qq >/dev/null; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
        || fail "apt-get could not install ${missing[*]}"
}

# pip refuses to touch a Debian-managed Python (PEP 668) unless told to; a user install is the
# least intrusive way past that.
pip_install() { # REQUIREMENT...
    if ! python3 -m pip --version >/dev/null 2>&1; then
        install_debian python3-pip
    fi
    say "installing $* (pip)"
    installed=1
    python3 -m pip install -q --disable-pip-version-check "$@" 2>/tmp/prerequisites-pip.$$ \
        || python3 -m pip install -q --disable-pip-version-check --user --break-system-packages "$@" \
        || { cat /tmp/prerequisites-pip.$$ >&2; rm -f /tmp/prerequisites-pip.$$; fail "pip could not install $*"; }
    rm -f /tmp/prerequisites-pip.$$
}

python_has() { python3 -c "import $1" >/dev/null 2>&1; }

# The release link copies GCC's C++ runtime and unwinder in (libstdc++.a, libgcc_eh.a: see
# Infra/static-cxx). The Swift toolchain's own requirements include them (libstdc++-N-dev);
# checked so that a machine without them gets a line rather than a link error.
static_cxx_runtime() {
    local compiler archive directory
    compiler=$(command -v clang || command -v cc || true)
    [ -n "$compiler" ] || return 0
    for archive in libstdc++.a libgcc_eh.a; do
        [ -f "$("$compiler" -print-file-name=$archive)" ] && continue
        directory=$(dirname "$("$compiler" -print-libgcc-file-name)")
        command -v dpkg >/dev/null || fail "missing $archive (GCC's static C++ runtime): install your system's libstdc++ development package"
        install_debian "libstdc++-${directory##*/}-dev"
    done
}

packaging_tools() {
    if command -v dpkg >/dev/null; then
        install_debian zip unzip binutils gcc libc6-dev advancecomp
    else
        for tool in zip unzip advzip strip objdump readelf cc; do
            command -v $tool >/dev/null || fail "missing $tool: install it with your system's package manager"
        done
    fi
    static_cxx_runtime
}

case $mode in
demo)
    # The toolchain links through a C compiler driver and the C library headers.
    command -v dpkg >/dev/null && install_debian libc6-dev
    static_cxx_runtime
    ;;
package)
    packaging_tools
    ;;
test)
    packaging_tools
    python_has cryptography || pip_install cryptography
    python_has joserfc || pip_install joserfc
    python_has botocore || pip_install botocore
    { python_has moto.server && python_has flask_cors; } || pip_install 'moto[server]'
    python_has cfnlint.runner || pip_install cfn-lint
    # PyJWT: a third-party verifier of our access tokens (PyJWKClient fetching the JWKS); and the
    # SAM translator (cfn-lint brings it) that turns Infra/template.yaml into what CloudFormation deploys.
    python_has jwt || pip_install 'PyJWT[crypto]'
    python_has samtranslator.translator.transform || pip_install aws-sam-translator
    # AWS's own EMF library, whose validators check our metric lines (and jsonschema, for the spec's schema).
    python_has aws_embedded_metrics.validator || pip_install aws-embedded-metrics
    python_has jsonschema || pip_install jsonschema
    # The CloudEvents SDK reads every event the events handler and `events tail` publish
    # (cloudevents_check.py, written against 2.x's cloudevents.core): pinned, so a fresh machine
    # reads with the release the check was written for.
    python3 -c 'import cloudevents, sys; sys.exit(cloudevents.__version__ != "2.2.0")' >/dev/null 2>&1 \
        || pip_install 'cloudevents==2.2.0'
    # Standard Webhooks' own verifier checks the signatures of our URL hooks (hook_peer.py).
    python_has standardwebhooks || pip_install 'standardwebhooks==1.1.0'
    # A real authenticator's algorithm: codes made from the secret our totp-enroll uri carries (MFA tests).
    python_has pyotp || pip_install 'pyotp==2.9.0'
    # Validates Infra/openapi.json as an OpenAPI 3.1 document (ServeTests).
    python_has openapi_spec_validator || pip_install openapi-spec-validator
    # Fuzzes a served instance against it: only documented statuses and bodies, never a 5xx.
    python_has schemathesis || pip_install schemathesis
    # The browser tests (Tests/Scripts/browser_check.py): Debian's Chromium, driven headless by
    # Playwright from PyPI through its executable_path. Never `playwright install`: no browser is
    # downloaded, the one the system's package manager keeps is the one tested.
    if command -v dpkg >/dev/null; then
        install_debian chromium
    else
        command -v chromium >/dev/null || fail "missing chromium: install it with your system's package manager (the browser tests run it)"
    fi
    python3 -c 'import playwright, sys; from importlib.metadata import version; sys.exit(version("playwright") != "1.65.2")' >/dev/null 2>&1 \
        || pip_install 'playwright==1.65.2'
    # soft-webauthn, a software authenticator for the passkey tests (Tests/Scripts/webauthn_peer.py),
    # needs fido2 1.x and with it an older cryptography: in a virtual environment of its own, so
    # the packages above stay as they are.
    peers=.build/webauthn-peers
    if ! "$peers/bin/python" -c "import soft_webauthn" >/dev/null 2>&1; then
        python3 -m venv "$peers" >/dev/null 2>&1 || { install_debian python3-venv; python3 -m venv "$peers"; }
        say "installing soft-webauthn (pip, in $peers)"
        "$peers/bin/python" -m pip install -q --disable-pip-version-check soft-webauthn || fail "pip could not install soft-webauthn in $peers"
        installed=1
    fi
    # py_webauthn (Duo Labs), the second verifying peer of the passkey matrix
    # (Tests/Scripts/pywebauthn_check.py): it needs a newer cryptography than fido2 1.x allows, so
    # it has a virtual environment of its own too.
    pywebauthn=.build/py-webauthn-peer
    if ! "$pywebauthn/bin/python" -c "from webauthn import verify_registration_response, verify_authentication_response" >/dev/null 2>&1; then
        python3 -m venv "$pywebauthn" >/dev/null 2>&1 || { install_debian python3-venv; python3 -m venv "$pywebauthn"; }
        say "installing webauthn 3.x, py_webauthn (pip, in $pywebauthn)"
        "$pywebauthn/bin/python" -m pip install -q --disable-pip-version-check 'webauthn>=3,<4' || fail "pip could not install webauthn (py_webauthn) in $pywebauthn"
        installed=1
    fi
    ;;
bench)
    # make bench: what the tests need, and Go for the Go peer it measures ours against
    # (../shared/peers/go_signin, built by auth-bench's go-peer section).
    "$0" test
    if command -v dpkg >/dev/null; then
        install_debian golang-go
    else
        command -v go >/dev/null || fail "missing go: install Go with your system's package manager"
    fi
    ;;
*)
    fail "usage: prerequisites.sh demo|package|test|bench"
    ;;
esac
if [ $installed -eq 0 ]; then
    case $mode in
    demo) say "nothing to install for the demo (libcurl is loaded at run time: no development headers needed)" ;;
    package) say "everything the zips need is installed" ;;
    test) say "everything the tests need is installed" ;;
    bench) say "Go is installed" ;;
    esac
fi
