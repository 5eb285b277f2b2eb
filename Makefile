# SPDX-License-Identifier: Apache-2.0
# tenq — top-level commands.  The build itself is CMake; this file is the
# front door: `make`, `make run`, `make test`, `make bench-*`.

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
# make fuzz: seconds each libFuzzer target runs (make test-fuzz: 15)
FUZZ_SECONDS ?= 300
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all build asan run test test-plain test-asan test-fuzz fuzz fuzz-build format \
        format-check clean chaos \
        bench-engine bench-store bench-server bench-takeover bench-tx bench-tx-ceiling deps install bench-worker \
        screenshots bench-peers bench-peers-quick bench-cron bench-tls bench-backlog bench-steps

all: build

deps:
	@scripts/deps.sh build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTENQ_SANITIZE=ON $(CMAKE_ARGS)

asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# Starts the server on the embedded store (SQLite under ./tenq-data).
run: build
	./$(BUILD)/tenq serve

# Every test, in a plain build and under ASan+UBSan, plus the format check and a short run
# of every fuzz target.
test:
	@scripts/deps.sh test
	$(MAKE) format-check
	$(MAKE) test-plain
	$(MAKE) test-asan
	$(MAKE) test-fuzz

test-plain: build
	cd $(BUILD) && ctest --output-on-failure -j 2

test-asan: asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j 2

# The libFuzzer targets (tests/fuzz/README.md): built by clang with ASan+UBSan in their own
# build; test-fuzz runs each 15 s (CI), fuzz each FUZZ_SECONDS.  A crash fails the run and
# is kept in $(FUZZ_BUILD)/fuzz-work/TARGET/crashes/.
fuzz-build:
	@scripts/deps.sh fuzz
	@[ -f $(FUZZ_BUILD)/CMakeCache.txt ] || CC=clang cmake -S . -B $(FUZZ_BUILD) \
	    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENQ_FUZZ=ON $(CMAKE_ARGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz

test-fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_BUILD) 15

fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The chaos suite's long form: every run of tests/chaos five times over (TENQ_CHAOS_ROUNDS:
# leaders killed, paused and cut off, PostgreSQL crashed, one server killed -9 and restarted,
# workers frozen past their leases, the wall clock stepped; the full disk once); `make test`
# runs it once.
chaos: build
	TENQ_BIN=$(CURDIR)/$(BUILD)/tenq TENQ_CHAOS_ROUNDS=$${TENQ_CHAOS_ROUNDS:-5} \
	    tests/with-pg.sh python3 tests/chaos/test_cluster.py
	TENQ_BIN=$(CURDIR)/$(BUILD)/tenq TENQ_CHAOS_ROUNDS=$${TENQ_CHAOS_ROUNDS:-5} \
	    tests/with-pg.sh python3 tests/chaos/test_kill.py
	TENQ_BIN=$(CURDIR)/$(BUILD)/tenq TENQ_CHAOS_ROUNDS=$${TENQ_CHAOS_ROUNDS:-5} \
	    tests/with-pg.sh python3 tests/chaos/test_frozen.py
	TENQ_BIN=$(CURDIR)/$(BUILD)/tenq python3 tests/chaos/test_disk.py
	for i in $$(seq $${TENQ_CHAOS_ROUNDS:-5}); do \
	    TENQ_BIN=$(CURDIR)/$(BUILD)/tenq tests/with-pg.sh python3 tests/chaos/test_clock.py \
	        || exit 1; done

FORMAT_FILES = $(shell find src tests bench include examples tools -name '*.[ch]' 2>/dev/null)

format:
	clang-format -i $(FORMAT_FILES)

# the style and the house rules: clang-format, a licence line in every source file, the
# layers (no #include in src/ crosses a layer but to its public header)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format: ok"
	@scripts/check-spdx.sh
	@scripts/check-layers.sh
	@scripts/check-results.sh

bench-engine: build
	./$(BUILD)/bench_engine

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

# Reruns the dashboard's browser tests and refreshes docs/screenshots/ from them.
screenshots: build
	TENQ_BIN=$(CURDIR)/$(BUILD)/tenq tests/browser/run.sh

# Durable steps (bench/steps_bench.c): steps stored a second, one request a step and batched; W1 with
# a step a job beside plain W1; W1 beside 100,000 parked jobs; an event's wake-up latency
bench-steps: build
	./$(BUILD)/bench_steps ./$(BUILD)/tenq

bench-cron: build
	./$(BUILD)/bench_cron

bench-store: build
	tests/with-pg.sh ./$(BUILD)/bench_store both

bench-server: build
	tests/with-pg.sh ./$(BUILD)/bench_server ./$(BUILD)/tenq both

# A backlog larger than memory on SQLite (bench/backlog.py): 20M jobs of 1 KB, memory, the first
# lease after kill -9, the drain beside 10k queued; BACKLOG_OLD=<tenq binary> compares a build.
BACKLOG_ARGS ?=
bench-backlog: build
	python3 bench/backlog.py $(if $(BACKLOG_OLD),--old $(BACKLOG_OLD)) $(BACKLOG_ARGS)

# kill -9 of the leader to the first lease on the new one, 10k and 1M jobs queued (bench/takeover.py)
bench-takeover: build
	TENQ_BIN=$(CURDIR)/$(BUILD)/tenq tests/with-pg.sh python3 bench/takeover.py --runs 5

# Jobs submitted in the application's own transaction: tenq beside graphile-worker and pg-boss
# on one private PostgreSQL, fsync'd commits and then synchronous_commit off (bench/tx/run.sh)
bench-tx: build
	TENQ_BIN=$(CURDIR)/$(BUILD)/tenq bench/tx/run.sh --runs 3
	TENQ_BIN=$(CURDIR)/$(BUILD)/tenq bench/tx/run.sh --runs 3 --commit async

# What that PostgreSQL does under pgbench with no application driver (bench/tx/ceiling.sh)
bench-tx-ceiling: build
	TENQ_BIN=$(CURDIR)/$(BUILD)/tenq bench/tx/ceiling.sh 5
	TENQ_BIN=$(CURDIR)/$(BUILD)/tenq bench/tx/ceiling.sh 5 async

# ---- workers: make install, make bench-worker (docs/WORKER.md) --------------------------------
PREFIX  ?= /usr/local
DESTDIR ?=

# tenq, libtenq (shared and static), include/tenq/*.h and tenq.pc under $(PREFIX);
# staged under $(DESTDIR) when it is set (cmake --install reads DESTDIR).
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# tenq work (lines, exec) and the in-process C API draining a fresh SQLite server.
bench-worker: build
	./$(BUILD)/bench_worker ./$(BUILD)/tenq ./$(BUILD)/bench_lines_handler

# ---- the peer comparison (bench/peers/README.md) ----------------------------------------------
# Installs the peers (apt-get, npm), then runs W1-W4 three times on every system (about 35
# minutes on 2 cores) and W5 and MEM once (the 5M backlogs take the longest: pg-boss drains
# about 25 jobs/s there, so it measures 1,000 jobs).  Writes bench/peers/last-run.{json,md},
# the "Peers" section of bench/RESULTS.md and the headline table of README.md.
PEERS = python3 bench/peers/run.py --baseline tenq-sqlite --results bench/RESULTS.md --readme README.md

bench-peers: build
	bench/peers/setup.sh
	$(PEERS) --runs 3 --workloads W1,W2,W3,W4
	$(PEERS) --runs 1 --workloads W5,MEM --w5-backlogs 10000,1000000 --merge --timeout 1800
	$(PEERS) --runs 1 --workloads W5 --w5-backlogs 5000000 --merge --timeout 1800 \
	    --only beanstalkd,beanstalkd-binlog,sidekiq,graphile-worker,bullmq,tenq-sqlite,tenq-postgres
	$(PEERS) --runs 1 --workloads W5 --w5-backlogs 5000000 --w5-measure 1000 --merge --timeout 1800 \
	    --only pg-boss
	# the client libraries' workers (W1) beside their languages' queues: RQ, Celery, BullMQ, Sidekiq
	$(PEERS) --runs 3 --workloads W1 --merge --timeout 1800 \
	    --only tenq-python,tenq-python-async,tenq-node,tenq-ruby,rq,celery,bullmq,sidekiq
	# Ruby's ActiveJob path beside Sidekiq's ActiveJob adapter (W1)
	$(PEERS) --runs 3 --workloads W1 --merge --timeout 1800 \
	    --only tenq-ruby-activejob,tenq-ruby-activejob-bulk,sidekiq-activejob

# Small counts, one run, every system: a smoke test that the harness and every driver work
# (CI runs it); writes bench/out/peers-quick.{json,md} only.
# TLS handshakes a second, full and resumed, against a fresh tenq serve --tls-cert
bench-tls: build
	bench/tls_handshakes.sh $(BUILD) 10

bench-peers-quick: build
	bench/peers/setup.sh
	python3 bench/peers/run.py --quick --baseline tenq-sqlite
	bench/peers/w2_paired.sh 1 20
