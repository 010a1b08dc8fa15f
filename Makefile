# Parley. `make run` starts a local server; `make test` runs every test.
# Every tool the targets need is built or installed here, from go.mod and
# package.json, so a fresh clone needs nothing but Go (and Node for the MCP
# client test).

GO        ?= go
ADDR      ?= 127.0.0.1:8080
BIN       := bin

.PHONY: run test vet build bench clean

run:
	$(GO) run ./cmd/parley serve --addr $(ADDR)

build:
	$(GO) build -o $(BIN)/parley ./cmd/parley

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

TSCLIENT  := infra/mcpapi/tsclient

# The official MCP TypeScript client, for the interoperability test.
$(TSCLIENT)/node_modules/.installed: $(TSCLIENT)/package.json $(TSCLIENT)/package-lock.json
	cd $(TSCLIENT) && npm ci --no-audit --no-fund
	touch $@

test: vet $(TSCLIENT)/node_modules/.installed
	$(GO) test -count=1 ./...

clean:
	rm -rf $(BIN) .aws-sam
