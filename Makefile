# Parley. `make run` starts a local server; `make test` runs every test.
# Every tool the targets need is built or installed here, from go.mod and
# package.json, so a fresh clone needs nothing but Go (and Node for the MCP
# client test).

GO        ?= go
ADDR      ?= 127.0.0.1:8080
BIN       := bin

.PHONY: run test vet build bench clean deploy simulate fuzz

# --- Lambda: one build-<LogicalId> target per function in template.yaml.
# `sam build` runs them with ARTIFACTS_DIR set; each writes one bootstrap.
ARTIFACTS_DIR  ?= bin/lambda
LAMBDA_GOFLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w'
lambda = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_GOFLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/$(1)

build-GetManifestFunction: ; $(call lambda,get_manifest)
build-WhoamiFunction:      ; $(call lambda,whoami)
build-PostFunction:        ; $(call lambda,post)
build-GetThreadFunction:   ; $(call lambda,get_thread)
build-ListThreadsFunction: ; $(call lambda,list_threads)
build-MarkFunction:        ; $(call lambda,mark)
build-ConfirmFunction:     ; $(call lambda,confirm)
build-ReopenFunction:      ; $(call lambda,reopen)
build-EventsFunction:      ; $(call lambda,events)
build-InboxFunction:       ; $(call lambda,inbox)
build-GetClaimFunction:    ; $(call lambda,get_claim)
build-ListClaimsFunction:  ; $(call lambda,list_claims)
build-QueueFunction:       ; $(call lambda,queue)
build-CreateTokenFunction: ; $(call lambda,create_token)
build-ListTokensFunction:  ; $(call lambda,list_tokens)
build-RevokeTokenFunction: ; $(call lambda,revoke_token)
build-McpFunction:         ; $(call lambda,mcp)
build-SubscribeFunction:   ; $(call lambda,subscribe)
build-ListSubscriptionsFunction: ; $(call lambda,list_subscriptions)
build-UnsubscribeFunction: ; $(call lambda,unsubscribe)
build-ConsoleFunction:     ; $(call lambda,console)
build-PushStreamFunction:  ; $(call lambda,push_stream)
build-PushDeliverFunction: ; $(call lambda,push_deliver)

# Deploys with the SAM CLI (not run in CI: it needs an AWS account).
deploy:
	sam build && sam deploy

# A short conversation against any running Parley over HTTP and MCP
# (infra/smoke; its test runs it against the local server in make test):
#   make smoke URL=https://<api-id>.execute-api.<region>.amazonaws.com TOKEN=<a human's token>
# The command is not echoed: it holds the token.
.PHONY: smoke
smoke:
	@test -n "$(URL)" && test -n "$(TOKEN)" || { echo "usage: make smoke URL=https://… TOKEN=<a human's token>"; exit 2; }
	@$(GO) run ./cmd/parley smoke --url "$(URL)" --token "$(TOKEN)"

# make smoke against a local server, as make test runs it: a throwaway
# human token, `parley serve` on a free port, the smoke, the server stopped.
.PHONY: smoke-local
smoke-local:
	@mkdir -p bin && $(GO) build -o bin/parley ./cmd/parley
	@tok=pt_smoke_$$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n'); \
	printf '[{"token":"%s","identity":"human:smoke","rights":[]}]\n' "$$tok" > bin/smoke-tokens.json; \
	bin/parley serve --addr 127.0.0.1:0 --tokens bin/smoke-tokens.json >bin/smoke-serve.out 2>bin/smoke-serve.log & pid=$$!; \
	for i in $$(seq 100); do grep -q '^Parley on ' bin/smoke-serve.out 2>/dev/null && break; sleep 0.1; done; \
	url=$$(sed -n 's/^Parley on \(http[^ ]*\).*/\1/p' bin/smoke-serve.out); \
	if [ -z "$$url" ]; then kill $$pid; cat bin/smoke-serve.log; echo "smoke-local: the server did not start"; exit 1; fi; \
	$(MAKE) --no-print-directory smoke URL="$$url" TOKEN="$$tok"; rc=$$?; \
	kill $$pid; wait $$pid 2>/dev/null; rm -f bin/smoke-tokens.json; exit $$rc
test: smoke-local

# The AWS Lambda Runtime Interface Emulator, pinned in go.mod as a tool; the
# Lambda tests run every bootstrap under it.
RIE := bin/aws-lambda-rie
$(RIE): go.mod go.sum
	$(GO) build -o $@ github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie

run:
	$(GO) run ./cmd/parley serve --addr $(ADDR)

build:
	$(GO) build -o $(BIN)/parley ./cmd/parley

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

TSCLIENT  := infra/mcpapi/tsclient

# The official MCP TypeScript client and the MCP Inspector CLI (pinned in
# package.json), for the interoperability tests.
$(TSCLIENT)/node_modules/.installed: $(TSCLIENT)/package.json $(TSCLIENT)/package-lock.json
	cd $(TSCLIENT) && npm ci --no-audit --no-fund
	touch $@

# Only the client-compatibility test (TypeScript SDK, Inspector CLI, Go SDK);
# docs/mcp.md has its table.
.PHONY: compat
compat: $(TSCLIENT)/node_modules/.installed
	$(GO) test -count=1 -run TestClientCompatibility -v ./infra/mcpapi

# moto with its server extras, for the strict DynamoDB backend of the tests
# (infra/testenv/moto.go): python3's own if it has them, else a .venv here.
.PHONY: moto
moto:
	@if [ -x .venv/bin/python ] && .venv/bin/python -c 'import moto.server, werkzeug' 2>/dev/null; then :; \
	elif [ ! -e .venv ] && python3 -c 'import moto.server, werkzeug' 2>/dev/null; then :; \
	else echo "moto[server] is not importable: creating .venv (python3 -m venv .venv && .venv/bin/pip install 'moto[server]')"; \
		python3 -m venv .venv && .venv/bin/pip install --quiet 'moto[server]'; fi
test: moto

# cfn-lint and aws-sam-translator, for the template's lint and the IAM test
# that expands the SAM transform (functions/iam_test.go): python3's own if it
# has them, else a .venv here (as for moto).
.PHONY: samtools lint
samtools:
	@if [ -x .venv/bin/python ] && .venv/bin/python -c 'import cfnlint, samtranslator' 2>/dev/null; then :; \
	elif [ ! -e .venv ] && python3 -c 'import cfnlint, samtranslator' 2>/dev/null; then :; \
	else echo "cfn-lint or aws-sam-translator is not importable: installing them into .venv (python3 -m venv .venv && .venv/bin/pip install cfn-lint aws-sam-translator)"; \
		python3 -m venv .venv && .venv/bin/pip install --quiet cfn-lint aws-sam-translator; fi

# template.yaml has no cfn-lint error and no warning (cfn-lint expands the
# SAM transform itself); any finding fails the build.
CFN_LINT := import sys; from cfnlint.runner import main; sys.exit(main())
lint: samtools
	@if [ -x .venv/bin/python ] && .venv/bin/python -c 'import cfnlint' 2>/dev/null; then .venv/bin/python -c '$(CFN_LINT)' template.yaml; \
	else python3 -c '$(CFN_LINT)' template.yaml; fi
	@echo "cfn-lint: template.yaml clean"
test: lint

# Chromium for the console's browser test (infra/console): Debian's package,
# installed when missing and we are root on Debian; otherwise how to get it.
# PARLEY_CHROMIUM may name another Chromium or Chrome binary.
.PHONY: chromium
chromium:
	@if [ -n "$$PARLEY_CHROMIUM" ] && command -v "$$PARLEY_CHROMIUM" >/dev/null; then :; \
	elif [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Chromium (apt-get install -y chromium)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null || \
		{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >/dev/null; }; \
	else echo "Chromium is missing; the console's browser test will fail. Install it: sudo apt-get install -y chromium (Debian), or set PARLEY_CHROMIUM=/path/to/chromium"; fi
test: chromium

FUZZ_TARGETS := FuzzDecodeEnvelope FuzzParseRef FuzzCursor
FUZZTIME     ?= 60s

# Every test, on both DynamoDB-compatible backends (infra/testenv); the
# fuzz targets' seed corpora run as tests, the fuzzing itself in make fuzz.
# The last lines say which backend each suite used.
BACKENDS := $(CURDIR)/bin/backends.txt
test: vet $(TSCLIENT)/node_modules/.installed $(RIE)
	@mkdir -p bin && rm -f $(BACKENDS)
	PARLEY_BACKEND_REPORT=$(BACKENDS) $(GO) test -count=1 ./...
	@echo "backends used:"; sort -u $(BACKENDS) | sed 's/^/  /'

# Fuzzing of the envelope decoder and the ref/cursor parsers; new
# failures land in core/testdata/fuzz/ as regression seeds, which go test
# then runs every time.
fuzz:
	@for f in $(FUZZ_TARGETS); do $(GO) test ./core -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; done

# Benchmarks: DynamoDB round trips, WRU/RRU and cost per operation, latency
# (p50/p99) through the handler; cold start and bootstrap size per function
# under the emulator. docs/performance.md explains and records the figures.
BENCHTIME ?= 200x
bench: $(RIE)
	$(GO) test -run '^$$' -bench Operations -benchtime $(BENCHTIME) ./infra/httpapi | tee bench.txt
	$(GO) test -run '^$$' -bench Race32 -benchtime 5x ./infra/httpapi | grep -E '^(Benchmark|ok)' | tee -a bench.txt
	$(GO) test -run '^$$' -bench PostWithPush -benchtime $(BENCHTIME) ./infra/push | grep -E '^(Benchmark|ok)' | tee -a bench.txt
	$(GO) test -run '^$$' -bench ColdStart -benchtime 7x -v ./functions | grep -E '^(Benchmark|ok)|hello-world' | tee -a bench.txt

# The loop-safety simulation: writes its table into docs/loop-safety.md.
simulate:
	$(GO) run ./cmd/parley simulate --write docs/loop-safety.md

clean:
	rm -rf $(BIN) .aws-sam
