# lambda-auth: the two commands are `make demo` and `make test`.
SWIFT ?= swift
BIN := $(shell $(SWIFT) build -c release --show-bin-path 2>/dev/null)
DEBUG_BIN := $(shell $(SWIFT) build --show-bin-path 2>/dev/null)
HANDLER ?= signin
EVENT ?=

.PHONY: build test demo bench invoke clean

build:
	$(SWIFT) build -c release

test:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

demo: build
	@echo "make demo: the sign-in flow is not built yet"

bench: build
	$(BIN)/auth-bench

invoke: build
	@test -n "$(EVENT)" || (echo "usage: make invoke HANDLER=signin EVENT=Events/..." >&2; exit 2)
	$(BIN)/$(HANDLER) $(EVENT)

clean:
	rm -rf .build dist .auth-store
