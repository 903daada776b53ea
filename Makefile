# lambda-auth: the two commands are `make demo` and `make test`.
SWIFT ?= swift
# Release binaries are the shipped ones: Swift runtime linked in, libm calls bound to versions
# that glibc 2.34 (provided.al2023) has; no exported symbols and no PIE (half the page faults
# before the first event, a smaller zip); optimised for size, linked by lld without unwind tables
# and with identical functions folded (each zip under 7 MB); the C++ runtime and the unwinder
# linked in too and no RUNPATH, so that the loader maps only libc and libm (a cold process 1.5 ms
# shorter). Source paths are written relative to the checkout (`-ffile-prefix-map`,
# `-file-prefix-map`): BoringSSL's error records and assertions hold some 1,600 of them, so the
# zips' size no longer depends on the folder a clone sits in. No run-time exclusivity checks (the
# debug builds that the tests run keep them). See docs/packaging.md, "Size and start-up".
RELEASE_FLAGS := -c release --static-swift-stdlib -Xswiftc -Osize -Xcc -Os -Xcxx -Os -Xswiftc -enforce-exclusivity=unchecked \
	-Xcc -ffile-prefix-map=$(CURDIR)/= -Xcxx -ffile-prefix-map=$(CURDIR)/= -Xswiftc -file-prefix-map -Xswiftc $(CURDIR)/= \
	-Xswiftc -use-ld=lld -Xlinker --wrap=hypotf -Xlinker --no-export-dynamic -Xlinker -no-pie \
	-Xlinker --no-eh-frame-hdr -Xlinker $(CURDIR)/Infra/no-unwind-tables.ld -Xlinker --icf=safe -Xlinker -O2 \
	-Xswiftc -L$(CURDIR)/Infra/static-cxx -Xswiftc -Xclang-linker -Xswiftc -static-libgcc \
	-Xlinker --wrap=_dl_find_object --disable-local-rpath
# Every handler executable, from the catalogue (Sources/LambdaAuth/Lambda/HandlerCatalogue.swift).
HANDLERS := $(shell Infra/handler-names.sh)
ifeq ($(HANDLERS),)
$(error Infra/handler-names.sh found no handler in the catalogue)
endif
# The zips' handlers are built apart (.build/lambda) without reflection metadata (field and case
# names, for Mirror and for printing a value that has no description: nothing a handler answers
# or logs needs them; the whole test suite passes built without them): a smaller zip, the room passkeys need. authctl
# keeps them: swift-argument-parser finds its options through Mirror. C and C++ (BoringSSL) at -Oz
# there too: the hot cryptography is assembly either way (docs/packaging.md). And type metadata
# made by code rather than looked up by mangled name: each lookup of a generic type checked its
# requirements by searching every protocol conformance in the binary, a quarter of a whole-process
# sign-in's instructions (callgrind: 8.6 M to 6.2 M; 29 KB more code).
LAMBDA_SCRATCH := --scratch-path $(CURDIR)/.build/lambda
LAMBDA_FLAGS := $(RELEASE_FLAGS) $(LAMBDA_SCRATCH) -Xswiftc -Xfrontend -Xswiftc -disable-reflection-metadata -Xcc -Oz -Xcxx -Oz \
	-Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xcxx -ffunction-sections \
	-Xlinker --symbol-ordering-file=$(CURDIR)/Infra/handlers.order -Xlinker --no-warn-symbol-ordering
BIN := $(shell $(SWIFT) build -c release --show-bin-path 2>/dev/null)
# Expanded only where used (package, bench): no extra swift call for every other target.
LAMBDA_BIN = $(shell $(SWIFT) build -c release $(LAMBDA_SCRATCH) --show-bin-path 2>/dev/null)
DEBUG_BIN := $(shell $(SWIFT) build --show-bin-path 2>/dev/null)
HANDLER ?= signin
EVENT ?=

.PHONY: build test replay-moto demo serve bench invoke clean package package-check lint-infra symbol-order

# Named products only: a bare `swift build` would also link swift-argument-parser's plugin tools,
# which do not link CGlibcCompat and so cannot take the --wrap=hypotf flag.
build:
	for product in $(HANDLERS) authctl; do $(SWIFT) build $(RELEASE_FLAGS) --product $$product || exit 1; done

SMOKE := ../shared/conformance/smoke.py

# Each installs what it lacks first (Tests/Scripts/prerequisites.sh says what it did). The test
# build runs with libcurl's and OpenSSL's development headers hidden, proving neither is needed.
# The app's client library (Client/, a package of its own) is tested against this build's
# `authctl serve`; so is Tests/Packages/resource-server, an app's service verifying tokens with
# the revocation feed from a package of its own (a whole build of its own: here, not in swift test).
GOLDEN_EXPORTS = Tests/Golden/exports

test:
	Tests/Scripts/prerequisites.sh test
	Tests/Scripts/without-dev-headers.sh $(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	LAMBDA_AUTH_BIN=$(DEBUG_BIN) $(SWIFT) test --package-path Client
	$(SWIFT) build --package-path Tests/Packages/resource-server
	python3 Tests/Scripts/outside_resource_server.py $(DEBUG_BIN)/authctl \
		$$($(SWIFT) build --package-path Tests/Packages/resource-server --show-bin-path)/resource-server
	$(DEBUG_BIN)/authctl replay --exports $(GOLDEN_EXPORTS) Events/scenarios/*.json
	$(MAKE) replay-moto
	@if [ -f $(SMOKE) ]; then ACC_BINDIR=$(DEBUG_BIN) python3 $(SMOKE); \
	else echo "make test: NOTE: $(SMOKE) not found (it sits beside this checkout in CI); contract smoke test not run"; fi
	$(MAKE) lint-infra
	$(MAKE) package

# The same scenarios on DynamoDB and STS as moto_server implements them (started and stopped here).
# Both replays compare each scenario's table with the same golden export: a refactor that writes
# one attribute, count or item differently fails here (docs/replay.md, "Golden exports").
replay-moto:
	Tests/Scripts/replay-on-moto.sh $(DEBUG_BIN)/authctl --exports $(GOLDEN_EXPORTS) Events/scenarios/*.json

# dist/<handler>.zip, each holding a stripped static-stdlib executable named bootstrap; checked
# for provided.al2023 before it counts as built. advzip (Debian's advancecomp) recompresses each
# zip with 7-Zip's deflate: 4 % smaller than zip's, still plain deflate, 2 s a zip. Installs
# advancecomp, zip and binutils first when they are missing.
package:
	Tests/Scripts/prerequisites.sh package
	for handler in $(HANDLERS); do $(SWIFT) build $(LAMBDA_FLAGS) --product $$handler || exit 1; done
	rm -rf dist && mkdir -p dist
	for handler in $(HANDLERS); do \
		mkdir -p dist/$$handler && strip -o dist/$$handler/bootstrap $(LAMBDA_BIN)/$$handler && \
		(cd dist/$$handler && zip -q -X ../$$handler.zip bootstrap) && advzip -q -z -2 dist/$$handler.zip && \
		rm -rf dist/$$handler || exit 1; \
	done
	$(MAKE) package-check

# Symbol versions, shared libraries, no Foundation, and each unzipped bootstrap answering an event.
package-check:
	Infra/check-package.sh --self-test
	HANDLERS="$(HANDLERS)" Infra/check-package.sh dist

# cfn-lint through python3, so a `pip install --user` that left its script off PATH still works.
lint-infra:
	python3 -c 'import sys; from cfnlint.runner import main; sys.argv[0] = "cfn-lint"; sys.exit(main())' Infra/template.yaml

demo:
	Tests/Scripts/prerequisites.sh demo
	$(MAKE) build
	$(BIN)/authctl demo
	@echo "next: make serve, then curl -s -X POST http://127.0.0.1:8787/dev/idp/google/token -d '{\"sub\": \"123\"}' (docs/local-development.md)"

# The HTTP API on 127.0.0.1:8787 (docs/local-development.md); HOST=0.0.0.0 to reach it from a device.
serve:
	Tests/Scripts/prerequisites.sh demo
	$(SWIFT) build $(RELEASE_FLAGS) --product authctl
	$(BIN)/authctl serve $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

# Infra/handlers.order, the zips' link order, from one request of each handler under callgrind
# (needs valgrind; run it after changing what a request runs, then make package again).
symbol-order: package
	$(SWIFT) build $(RELEASE_FLAGS) --product auth-bench
	LAMBDA_AUTH_HANDLER_BIN=$(LAMBDA_BIN) $(BIN)/auth-bench symbol-order Infra/handlers.order

# After package, so that the zip sizes are measured too; the bench runs the handlers that the zips
# hold (LAMBDA_AUTH_HANDLER_BIN), and moto_server for the production-backend rows. It prints its table
# and writes docs/benchmarks.md (the table, the machine, the date, the commit): the only place the
# figures are written down.
bench:
	Tests/Scripts/prerequisites.sh bench
	$(MAKE) package
	for product in authctl auth-bench; do $(SWIFT) build $(RELEASE_FLAGS) --product $$product || exit 1; done
	LAMBDA_AUTH_HANDLER_BIN=$(LAMBDA_BIN) $(BIN)/auth-bench --markdown docs/benchmarks.md

invoke: build
	@test -n "$(EVENT)" || (echo "usage: make invoke HANDLER=signin EVENT=Events/..." >&2; exit 2)
	$(BIN)/authctl invoke $(HANDLER) $(EVENT)

clean:
	rm -rf .build dist .auth-store .auth-dev
