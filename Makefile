# snailtrail — the two commands that matter: `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := build

BIN := build/bin/snailtrail
JOBS ?= $(shell nproc)

# Debian packages the build, tests, benchmarks and fuzzers need.
DEB_PACKAGES := cmake ninja-build g++ make git clang-14 libclang-rt-14-dev clang-format \
  libsimdjson-dev libtomlplusplus-dev libcli11-dev libfmt-dev libzstd-dev liblz4-dev libsnappy-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev \
  libcpp-httplib-dev libmsgpack-cxx-dev python3 libbabeltrace2-dev python3-bt2 \
  chromium nodejs openmpi-bin libopenmpi-dev libdw-dev nats-server libnats-dev libssl-dev

.PHONY: deps build build-asan demo test test-release test-asan test-tsan test-tsan-nexmark test-browser bench fuzz format format-check clean

# Installs only what is missing; silent and fast when everything is present.
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@# npm comes with some builds of nodejs; Debian's nodejs needs its npm package.
	@command -v npm >/dev/null || { if [ "$$(id -u)" != 0 ]; then SUDO=sudo; fi; \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null; }
	@# playwright-core for the browser tests (tests/browser), pinned in package-lock.json;
	@# only when node_modules is missing or older than the lock file.
	@if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then \
	  npm ci --no-audit --no-fund --loglevel=error; fi

build: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

build-asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)

# Simulates Dhalion's word count with 30 % skew and shows that CP singles out the
# straggler (the count instance that owns the hot key) where durations do not.
# Under a minute: the simulation takes milliseconds, the analysis well under a second.
DEMO := build/demo/wordcount-skew-30
demo: build
	@mkdir -p build/demo
	@echo "== snailtrail simulate examples/wordcount-skew-30.toml -o $(DEMO).snail --truth $(DEMO).truth.json"
	@$(BIN) simulate examples/wordcount-skew-30.toml -o $(DEMO).snail --truth $(DEMO).truth.json
	@echo "== snailtrail analyze $(DEMO).snail --window 1s --summary activity,worker,operator,diagnostics"
	@$(BIN) analyze $(DEMO).snail --window 1s --summary activity,worker,operator,diagnostics --no-progress
	@echo
	@echo "Ground truth: $$(grep -o '"hot_worker": "[^"]*"' $(DEMO).truth.json). CP (WORKER, first column)"
	@echo "puts it far ahead of every other worker; busy time (busy) ranks it first only by ~2x."
	@echo "Next: docs/SIMULATOR.md (scenarios, the thesis' use cases) and docs/PAG.md (what CP is);"
	@echo "      other scenarios: examples/*.toml, e.g. $(BIN) simulate examples/spark-microbatch.toml -o spark.snail;"
	@echo "      per-window results for scripts: $(BIN) analyze $(DEMO).snail --format jsonl"
	@echo
	@echo "== snailtrail report $(DEMO).snail -o build/demo/report.html  (open it in a browser)"
	@$(BIN) report $(DEMO).snail -o build/demo/report.html --no-progress

test: test-release test-asan test-tsan
	@$(MAKE) --no-print-directory test-browser

test-release: build
	@cd build && ctest --output-on-failure -j $(JOBS)

# Tests labelled release-only (tests/CMakeLists.txt: most mpirun tests, golden) run in
# the release build only.
test-asan: build-asan
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -LE release-only

# The runtime's and Megaphone's tests under ThreadSanitizer: builds only them, in
# build-tsan/. NEXMark's (`make test-tsan-nexmark`) are left out of `make test`: its
# queries run on the same runtime and Megaphone code, single-threaded per worker, and
# building them under TSan took 4 of the CI's 60 minutes.
test-tsan: deps
	@cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNAILTRAIL_TSAN=ON \
	  -DSNAILTRAIL_BENCH=OFF >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target snailtrail_flow_tests snailtrail_megaphone_tests
	@TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/snailtrail_flow_tests
	@TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/snailtrail_megaphone_tests

test-tsan-nexmark: test-tsan
	@cmake --build build-tsan -j $(JOBS) --target snailtrail_nexmark_tests
	@TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/snailtrail_nexmark_tests

# The report and the live dashboard in Debian's chromium (playwright-core); screenshots in
# build/browser-artifacts/.
test-browser: build
	@SNAILTRAIL_BIN=build/bin/snailtrail SNAILTRAIL_ARTIFACTS=build/browser-artifacts \
	  node --test tests/browser/report.test.mjs tests/browser/timeline.test.mjs \
	    tests/browser/waterfall.test.mjs tests/browser/stages.test.mjs \
	    tests/browser/waterfall_live.test.mjs tests/browser/critical_flow.test.mjs \
	    tests/browser/flame_modes.test.mjs tests/browser/jobgraph.test.mjs \
	    tests/browser/jobgraph_live.test.mjs

# Whole-process suite against the paper and the floor (docs/PERFORMANCE.md), then the
# Google Benchmark micro-benchmarks.
bench: build
	@mkdir -p build/bench
	build/bin/snailtrail bench --svg build/bench/latency.svg --json build/bench/results.json
	build/bin/snailtrail_bench
	scripts/run-bench.sh
	scripts/megaphone-bench.py --quick
	scripts/logs-bench.sh 100000 400000 2000000
	scripts/nats-bench.sh 20
	scripts/otlp-bench.sh 20 600 50000

FUZZ_SECONDS ?= 60
fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)
	@mkdir -p fuzz-corpus/jsonl fuzz-corpus/scenario
	@cp -n examples/*.jsonl fuzz-corpus/jsonl/ 2>/dev/null || true
	@cp -n examples/*.toml fuzz-corpus/scenario/ 2>/dev/null || true
	@# Every target in fuzz/CMakeLists.txt, each with its own corpus folder.
	@for f in build-fuzz/bin/fuzz_*; do name=$${f##*/fuzz_}; mkdir -p fuzz-corpus/$$name; \
	  echo "== $$f ($(FUZZ_SECONDS) s)"; $$f -max_total_time=$(FUZZ_SECONDS) fuzz-corpus/$$name || exit 1; done

FORMAT_FILES = $(shell git ls-files '*.cpp' '*.hpp')
format:
	@clang-format -i $(FORMAT_FILES)

format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf build build-asan build-fuzz build-tsan
