# treasury-server: one non-recursive Makefile.
#   make run     install missing Debian packages, build, start on ./var (embedded default)
#   make test    everything CI runs: build, generated-code drift, spec lint, unit, codegen and
#                HTTP tests (on SQLite, then on a throwaway PostgreSQL cluster), then the unit
#                and HTTP tests again under ASan+UBSan
#   make bench   wrk throughput on loopback, ratios against GET /healthz in the same run
#   make fuzz    each libFuzzer target for FUZZ_SECONDS (60) from its seeds (tests/fuzz/)
#   make V=1     show commands;  make SAN=1  build with sanitizers
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SUFFIXES:

PYTHON   := /usr/bin/python3
CC       ?= cc
VERSION  := 0.1.0

ifeq ($(SAN),1)
BUILD    ?= build/san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
OPT      := -O1 -g
else ifeq ($(CHECK),1)
BUILD    ?= build/check
SANFLAGS :=
OPT      := -O2 -g
else
BUILD    ?= build
SANFLAGS :=
OPT      := -O2 -g
endif
# Test builds validate every response against its schema (codegen/README.md), and have a
# settable clock and test hooks (a held fsync: runtime/group_commit.c).
ifneq ($(SAN)$(CHECK),)
DEFS     := -DTREASURY_CHECK_RESPONSES -DTREASURY_TEST_CLOCK -DTREASURY_TEST_HOOKS
endif

WARN     := -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes -Wshadow \
            -Wcast-qual -Wpointer-arith
CFLAGS   := -std=c11 $(OPT) $(WARN) -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
            -DTREASURY_VERSION='"$(VERSION)"' $(DEFS) $(SANFLAGS) -I. -I/usr/include/postgresql -MMD -MP
LDFLAGS  := $(SANFLAGS)
LDLIBS   := -lmicrohttpd -lsqlite3 -lpq -lcrypto -lcurl -lexpat -lpthread -lm

ifeq ($(V),1)
Q :=
else
Q := @
endif

# ---- sources ---------------------------------------------------------------------------
SPEC      := $(wildcard openapi/*.yaml)
CODEGEN   := $(wildcard codegen/*.py codegen/templates/*.j2)
RUNTIME   := $(filter-out runtime/main.c,$(wildcard runtime/*.c))
HANDLERS  := $(wildcard handlers/*.c)
GENERATED := $(wildcard generated/*.c)
# The schema: each component's migrations (runtime/sql/, handlers/sql/<api>/, in the order of
# handlers/sql/ORDER) embedded into one C file of the build by codegen/embed_sql.py (not
# committed). The folders are prerequisites too, so adding or removing a file regenerates it;
# the script rewrites it only when its bytes change.
SCHEMA_SQL := handlers/sql/ORDER $(wildcard runtime/sql/*.sql handlers/sql/*/*.sql)
SCHEMA_DIRS := runtime/sql handlers/sql $(wildcard handlers/sql/*/)
SCHEMA_C   := $(BUILD)/gen/schema_sql.c
SCHEMA_OBJ := $(BUILD)/obj/gen/schema_sql.o
SERVER_SRC := runtime/main.c $(RUNTIME) $(HANDLERS) $(GENERATED)
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/obj/%.o) $(SCHEMA_OBJ)
BIN       := $(BUILD)/treasury-server

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# Unit tests link the runtime modules they need (everything but main and the server glue).
UNIT_LINK := $(filter-out $(BUILD)/obj/runtime/server.o,$(RUNTIME:%.c=$(BUILD)/obj/%.o)) \
             $(SCHEMA_OBJ)

# ---- build -----------------------------------------------------------------------------
# `make` first brings generated/ up to date with openapi/ and codegen/ (write-if-changed, so an
# unchanged spec touches nothing), then builds in a second make so the list of generated
# sources is read after generation: a new API file's C files are picked up in the same run.
GEN_STAMP := build/generated.stamp

all: $(GEN_STAMP)
	$(Q)$(MAKE) --no-print-directory $(BIN)

$(GEN_STAMP): $(SPEC) $(CODEGEN) $(wildcard handlers/*.c runtime/*.c)
	$(Q)$(PYTHON) codegen/generate.py --spec openapi/openapi.yaml --out generated --sources handlers runtime
	@mkdir -p $(@D) && touch $@

$(BIN): $(SERVER_OBJ)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	@if [ "$(V)" != 1 ]; then echo "  CC      $<"; fi
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(SCHEMA_C): codegen/embed_sql.py $(SCHEMA_SQL) $(SCHEMA_DIRS)
	$(Q)$(PYTHON) codegen/embed_sql.py $@

$(SCHEMA_OBJ): $(SCHEMA_C)
	@mkdir -p $(@D)
	@if [ "$(V)" != 1 ]; then echo "  CC      $<"; fi
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(UNIT_LINK)
	@mkdir -p $(@D)
	@if [ "$(V)" != 1 ]; then echo "  CC/LD   $@"; fi
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The pattern test runs the fast matcher against regexec on the spec's own patterns.
$(BUILD)/tests/test_pattern: $(BUILD)/obj/generated/patterns.o
# The operator commands live with the handlers (they write API tables) but need only the runtime
# and the accounts API's directory writes (handlers/accounts_directory.c, runtime-only too, with
# the workspaces' generated row codec and encoder).
$(BUILD)/tests/test_admin: $(BUILD)/obj/handlers/admin_cli.o $(BUILD)/obj/handlers/accounts_directory.o \
                          $(BUILD)/obj/generated/rows_workspace.o \
                          $(BUILD)/obj/generated/schemas_workspace_json.o
# The ledger's balance moves (handlers/ledger_accounts.c), which no HTTP operation reaches
# until journal entries post, with the generated rows and codecs (the schemas refer to one
# another across the APIs) but no dispatcher.
$(BUILD)/tests/test_ledger_accounts: $(BUILD)/obj/handlers/ledger_accounts.o \
    $(filter-out %_dispatch.o %/routes.o,$(GENERATED:%.c=$(BUILD)/obj/%.o))
# The forward points of a custom curve (handlers/rates_curves.c: rates_forward), which the
# conversions API prices with and no operation of the rates API answers.
$(BUILD)/tests/test_rates_curves: $(BUILD)/obj/handlers/rates_curves.o \
    $(BUILD)/obj/handlers/rates_dates.o \
    $(filter-out %_dispatch.o %/routes.o,$(GENERATED:%.c=$(BUILD)/obj/%.o))
# The rate alerts' condition and their evaluation (handlers/rates_alerts.c), tested beside
# the HTTP tests against the schema itself, with the generated rows and codecs.
$(BUILD)/tests/test_rates_alerts: $(BUILD)/obj/handlers/rates_alerts.o \
    $(BUILD)/obj/handlers/rates_dates.o \
    $(filter-out %_dispatch.o %/routes.o,$(GENERATED:%.c=$(BUILD)/obj/%.o))

# ---- generated code -----------------------------------------------------------------------
# generated/ is committed; `make generate` rewrites only files whose bytes change.
generate:
	$(Q)$(PYTHON) codegen/generate.py --spec openapi/openapi.yaml --out generated --sources handlers runtime
	@mkdir -p $(dir $(GEN_STAMP)) && touch $(GEN_STAMP)

check-generated:
	@rm -rf $(BUILD)/gen-check && mkdir -p $(BUILD)/gen-check
	$(Q)$(PYTHON) codegen/generate.py --spec openapi/openapi.yaml --out $(BUILD)/gen-check
	$(Q)if diff -r generated $(BUILD)/gen-check > $(BUILD)/gen-check.diff; then \
	    echo "generated/ matches openapi/ and codegen/"; \
	else \
	    cat $(BUILD)/gen-check.diff | head -50; \
	    echo "ERROR: generated/ does not agree with openapi/ + codegen/. Fix: make generate"; exit 1; \
	fi

# ---- fuzzing (clang libFuzzer + ASan + UBSan; tests/fuzz/) --------------------------------
# `make fuzz FUZZ_SECONDS=N` builds every tests/fuzz/fuzz_*.c target and runs each for N
# seconds from its committed seed corpus (new inputs go to build/fuzz/corpus/), after replaying
# the crash inputs kept in tests/fuzz/regressions/<target>/. make test runs it for a few seconds.
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build/fuzz
FUZZ_CFLAGS  := -std=c11 -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
                -fno-sanitize-recover=all -fno-omit-frame-pointer $(WARN) -Wno-unused-command-line-argument \
                -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DTREASURY_VERSION='"$(VERSION)"' -I. \
                -I/usr/include/postgresql
FUZZ_TARGETS := $(filter-out req,$(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_RT_OBJ  := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(filter-out runtime/server.c runtime/req_mhd.c,$(RUNTIME))) \
                $(FUZZ_BUILD)/obj/gen/schema_sql.o
FUZZ_GEN_OBJ := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(GENERATED))

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	@if [ "$(V)" != 1 ]; then echo "  CLANG   $<"; fi
	$(Q)clang $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_BUILD)/gen/schema_sql.c: codegen/embed_sql.py $(SCHEMA_SQL) $(SCHEMA_DIRS)
	$(Q)$(PYTHON) codegen/embed_sql.py $@

$(FUZZ_BUILD)/obj/gen/schema_sql.o: $(FUZZ_BUILD)/gen/schema_sql.c
	@mkdir -p $(@D)
	$(Q)clang $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(FUZZ_BUILD)/stubs.c: tests/fuzz/stubs.py $(wildcard generated/*_api.h)
	@mkdir -p $(@D)
	$(Q)$(PYTHON) tests/fuzz/stubs.py $@ $(wildcard generated/*_api.h)

$(FUZZ_BUILD)/obj/stubs.o: $(FUZZ_BUILD)/stubs.c
	$(Q)clang $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_BUILD)/libfuzzrt.a: $(FUZZ_RT_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/libfuzzgen.a: $(FUZZ_GEN_OBJ) $(FUZZ_BUILD)/obj/stubs.o $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_req.o
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o $(FUZZ_BUILD)/libfuzzgen.a $(FUZZ_BUILD)/libfuzzrt.a
	@if [ "$(V)" != 1 ]; then echo "  FUZZ    $@"; fi
	$(Q)clang -fsanitize=fuzzer,address,undefined -o $@ $< -Wl,--start-group \
	    $(FUZZ_BUILD)/libfuzzgen.a $(FUZZ_BUILD)/libfuzzrt.a -Wl,--end-group $(LDLIBS)

# fuzz_small: the golden small spec's generated code (tests/codegen/small/expected, seen as
# build/fuzz/small/generated so that its headers come before generated/'s) with its test
# handlers, driven by fuzz_dispatch.c (tests/fuzz/fuzz_small.c says why).
FUZZ_SMALL     := $(FUZZ_BUILD)/small
FUZZ_SMALL_SRC := $(filter-out %/rows_things.c,$(wildcard tests/codegen/small/expected/*.c)) \
                  tests/codegen/small/handlers.c tests/codegen/small/handlers_exports.c \
                  tests/fuzz/fuzz_small.c tests/fuzz/fuzz_req.c
FUZZ_SMALL_OBJ := $(patsubst %.c,$(FUZZ_SMALL)/obj/%.o,$(FUZZ_SMALL_SRC))

$(FUZZ_SMALL)/generated:
	@mkdir -p $(@D)
	$(Q)ln -sfn ../../../tests/codegen/small/expected $@

$(FUZZ_SMALL)/obj/%.o: %.c | $(FUZZ_SMALL)/generated
	@mkdir -p $(@D)
	@if [ "$(V)" != 1 ]; then echo "  CLANG   $< (small spec)"; fi
	$(Q)clang $(FUZZ_CFLAGS) -iquote $(FUZZ_SMALL) -MMD -MP -c -o $@ $<

$(FUZZ_BUILD)/fuzz_small: $(FUZZ_SMALL_OBJ) $(FUZZ_BUILD)/libfuzzrt.a
	@if [ "$(V)" != 1 ]; then echo "  FUZZ    $@"; fi
	$(Q)clang -fsanitize=fuzzer,address,undefined -o $@ $(FUZZ_SMALL_OBJ) \
	    $(FUZZ_BUILD)/libfuzzrt.a $(LDLIBS)

fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)

fuzz: test-deps fuzz-build
	$(Q)tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

-include $(FUZZ_RT_OBJ:.o=.d) $(FUZZ_GEN_OBJ:.o=.d) $(FUZZ_BUILD)/obj/tests/fuzz/*.d \
         $(FUZZ_SMALL_OBJ:.o=.d)

# ---- dependencies ---------------------------------------------------------------------------
# What building and running need; the tests add their tools (a browser among them), so
# `make run` stays light on a fresh machine.
DEB_PACKAGES := gcc make pkg-config libmicrohttpd-dev libsqlite3-dev libpq-dev libssl-dev \
                libcurl4-gnutls-dev libexpat1-dev python3-jinja2 python3-yaml openssl curl tzdata
DEB_TEST_PACKAGES := python3-pytest python3-jwt wrk oathtool sslscan chromium clang \
                     libclang-rt-14-dev python3-aiosmtpd postgresql python3-psycopg2 haproxy

# Installs the Debian packages $(1) that are missing (apt-get update once), and node/npm.
define install_missing
	@missing=""; for p in $(1); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then \
	    echo "installing:$$missing"; \
	    SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	    $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PACKAGES))

test-deps:
	$(call install_missing,$(DEB_PACKAGES) $(DEB_TEST_PACKAGES))

node_modules/.stamp: package.json package-lock.json
	$(Q)npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# ---- run ------------------------------------------------------------------------------------
run: deps
	$(Q)$(MAKE) --no-print-directory all
	./$(BIN) $(ARGS)

# ---- tests ----------------------------------------------------------------------------------
# The sources, then the served document (generated/openapi.json: the sources plus what
# codegen/served.py adds) with the same rules, then the served document with Redocly's
# (openapi/redocly.yaml). Any finding fails.
lint-spec: node_modules/.stamp
	$(Q)npx --no-install spectral lint openapi/openapi.yaml --ruleset openapi/.spectral.yaml --fail-severity=warn
	$(Q)node tests/spec/ajv_check.mjs generated/openapi.json
	$(Q)npx --no-install spectral lint generated/openapi.json --ruleset openapi/.spectral.yaml --fail-severity=warn
	$(Q)REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true npx --no-install redocly lint \
	    generated/openapi.json --config openapi/redocly.yaml --format=stylish

# A TypeScript client (tests/sdk/client.ts) type-checked (tsc, strict) against the types
# openapi-typescript generates from the served document, as an integrator's SDK would be;
# sdk-build also compiles it for tests/http/test_sdk_client.py (build/sdk/out/client.js).
SDK_DIR := build/sdk

$(SDK_DIR)/api.d.ts: generated/openapi.json node_modules/.stamp
	@mkdir -p $(@D)
	$(Q)npx --no-install openapi-typescript generated/openapi.json --default-non-nullable false -o $@ > $(SDK_DIR)/openapi-typescript.log 2>&1 \
	    || { cat $(SDK_DIR)/openapi-typescript.log; exit 1; }

sdk-check: $(SDK_DIR)/api.d.ts
	$(Q)npx --no-install tsc -p tests/sdk/tsconfig.json --noEmit
	@echo "tests/sdk/client.ts type-checks against the types of generated/openapi.json"

$(SDK_DIR)/out/client.js: tests/sdk/client.ts tests/sdk/tsconfig.json $(SDK_DIR)/api.d.ts
	$(Q)npx --no-install tsc -p tests/sdk/tsconfig.json

sdk-build: $(SDK_DIR)/out/client.js

unit: $(UNIT_BIN)
	$(Q)tests/run-unit.sh $(UNIT_BIN)

test: test-deps
	$(Q)tests/run-all.sh

# Throughput of the release build over HTTPS with wrk, quoted against GET /healthz and against
# bare libmicrohttpd (tests/bench/bare_mhd.c), both measured in the same run
# (tests/bench/bench.py); about three minutes.
bench: test-deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/bench/ratelimit_bench $(BUILD)/bench/bare_mhd
	$(Q)$(BUILD)/bench/ratelimit_bench
	$(Q)$(PYTHON) tests/bench/bench.py

# Memory per idle keep-alive TLS connection at 1,000 connections.
bench-idle: test-deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(PYTHON) tests/bench/bench.py idle

$(BUILD)/bench/ratelimit_bench: tests/bench/ratelimit_bench.c $(UNIT_LINK)
	@mkdir -p $(@D)
	@if [ "$(V)" != 1 ]; then echo "  CC/LD   $@"; fi
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The floor the bench quotes the server against: bare libmicrohttpd with the same settings.
$(BUILD)/bench/bare_mhd: tests/bench/bare_mhd.c
	@mkdir -p $(@D)
	@if [ "$(V)" != 1 ]; then echo "  CC/LD   $@"; fi
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

clean:
	rm -rf build

.PHONY: all generate check-generated deps test-deps fuzz fuzz-build bench-idle run lint-spec sdk-check sdk-build unit test bench clean

-include $(SERVER_OBJ:.o=.d) $(UNIT_BIN:%=%.d) $(UNIT_LINK:.o=.d)
