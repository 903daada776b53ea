#!/bin/sh
# The handler executables, in the catalogue's order, read from its Swift source rather than from
# a build, so that make and the package checks work on a fresh clone. CatalogueTests checks that
# this reads exactly HandlerCatalogue.all.
set -eu
catalogue="$(dirname "$0")/../Sources/LambdaAuth/Lambda/HandlerCatalogue.swift"
names=$(sed -n 's/^ *public static let [A-Za-z0-9]* = HandlerEntry(name: "\([a-z0-9-]*\)".*/\1/p' "$catalogue")
if [ -z "$names" ]; then
    echo "handler-names.sh: no HandlerEntry(name: ...) line in $catalogue" >&2
    exit 1
fi
# One line, space-separated: make's HANDLERS.
echo $names
