# Thin wrapper over CMake. `make` builds, `make test` runs every test under ASan+UBSan.
BUILD       ?= build
BUILD_ASAN  ?= build-asan
BUILD_FUZZ  ?= build-fuzz
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60

.PHONY: all setup test test-fast fuzz bench bench-proxy bench-proxy-tls bench-rbac bench-h2 bench-tcp bench-retry bench-pilot bench-pilot-kube demo soak soak-asan clean format

# No "Entering directory" lines from the recursive makes cmake runs.
MAKEFLAGS += --no-print-directory

all: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

setup:
	@scripts/setup

# The whole test suite (unit, conformance, integration) on the sanitizer build.
test: setup
	@cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD_ASAN) -j $(JOBS) -- --no-print-directory
	@rm -f $(BUILD_ASAN)/pytest/pytest-*.xml
	@cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --output-on-failure -j $(JOBS); rc=$$?; \
		/usr/bin/python3 $(CURDIR)/tests/pytest_summary.py pytest; exit $$rc

# The same tests without sanitizers (faster while developing).
test-fast: all
	@rm -f $(BUILD)/pytest/pytest-*.xml
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS); rc=$$?; \
		/usr/bin/python3 $(CURDIR)/tests/pytest_summary.py pytest; exit $$rc

# libFuzzer targets as name:corpus (fuzz/fuzz_<name>.c, seeds in fuzz/corpus/<corpus>/,
# dictionary fuzz/<name>.dict when there is one). fuzz/README.md lists them.
FUZZ_PAIRS = loader:loader h1_request:h1 h1_response:h1 path_norm:path_norm bootstrap:bootstrap \
	xds_compose:xds_compose grpc_frame:grpc_frame discovery:discovery access_log:access_log \
	stats_matcher:stats_matcher ca_request:ca_request jwt:jwt h2:h2 dns:dns \
	http_inspector:http_inspector tcp_mx:tcp_mx kube_stream:kube_stream agent_env:agent_env \
	prom_text:prom_text
FUZZ_TARGETS = $(foreach t,$(FUZZ_PAIRS),$(firstword $(subst :, ,$(t))))

fuzz: setup
	@CC=clang cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=Debug -DWEFT_FUZZ=ON >/dev/null
	@cmake --build $(BUILD_FUZZ) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))
	@for t in $(FUZZ_PAIRS); do \
		name=$${t%%:*}; corpus=$${t#*:}; \
		dict=; [ -f fuzz/$$name.dict ] && dict=-dict=fuzz/$$name.dict; \
		echo "fuzz_$$name: $(FUZZ_SECONDS) s"; \
		mkdir -p $(BUILD_FUZZ)/corpus-$$name && \
		$(BUILD_FUZZ)/fuzz_$$name -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=2048 \
			-timeout=10 $$dict $(BUILD_FUZZ)/corpus-$$name fuzz/corpus/$$corpus || exit 1; \
	done

bench: all
	@bench/run_analyze.sh $(BUILD)

# The cost of a retry policy in weft-proxy (bench/run_retry.sh, issue 4). BENCH_ARGS: e.g.
# "-r 5 -d 5" (rounds, seconds per run).
bench-retry: all
	@bench/setup.sh
	@bench/run_retry.sh $(BUILD) $(BENCH_ARGS)

# weft-pilot with 1,000 generated services + ch11/resources-600.yaml and 1,000 simulated
# sidecars (bench/xds_load.c): push convergence after a change, pilot RSS and CPU (issue 5).
# BENCH_ARGS: e.g. "-n 300 -r 3" (clients, rounds of changes).
bench-pilot: all
	@bench/run_pilot_scale.sh $(BUILD) $(BENCH_ARGS)

# The same at Kubernetes scale (issue 21): weft-pilot with its Kubernetes source against the test
# API server (tests/kubeapi) holding 1,000 Services, 5,000 Pods and their EndpointSlices, 1,000
# simulated sidecars, then 50 endpoint changes per second for 20 s: convergence p50/p99 of marked
# changes, pilot RSS and CPU; the folder source on the same mesh in the same run.
# BENCH_ARGS: e.g. "-n 300 --churn-s 10", "--source kube", "--batch 1" (bench/run_pilot_kube.sh).
bench-pilot-kube: all
	@bench/run_pilot_kube.sh $(BUILD) $(BENCH_ARGS)

# weft-proxy against nginx and HAProxy on this machine (installs them, wrk and h2load first).
# BENCH_ARGS: e.g. "-r 5 -d 5" (rounds, seconds per run) or "--quick". BENCH_BASELINE=REV
# (a git revision, e.g. 872295f or HEAD~3) also builds weft-proxy at REV (cached in
# build/bench-baseline/) and measures it as "weft-base" in the same interleaved run, with the
# verdict weft / weft-base >= 0.97 requests per proxy CPU-second (exit 3 when it fails);
# BENCH_ONLY_WEFT=1 leaves nginx and HAProxy out. Then the RBAC, HTTP/2 and TCP benches below
# (their own *_BENCH_ARGS). See bench/README.md.
bench-proxy: all
	@bench/setup.sh
	@bench/run_proxy.sh $(BUILD) $(BENCH_ARGS)
	@bench/run_rbac.sh $(BUILD) $(RBAC_BENCH_ARGS)
	@bench/run_h2.sh $(BUILD) $(H2_BENCH_ARGS)
	@bench/run_tcp.sh $(BUILD) $(TCP_BENCH_ARGS)

# The cost of a 10-rule ALLOW AuthorizationPolicy (the RBAC filter) on the request path
# (bench/run_rbac.sh, issue 18; also a step of bench-proxy). RBAC_BENCH_ARGS: e.g.
# "-r 5 -d 5".
bench-rbac: all
	@bench/setup.sh
	@bench/run_rbac.sh $(BUILD) $(RBAC_BENCH_ARGS)

# HTTP/2 downstream (issue 19): requests per proxy CPU-second of weft-proxy, HAProxy and nginx
# as h2c proxies under h2load, to the HTTP/1.1 backend (bench/run_h2.sh; also a step of
# bench-proxy). H2_BENCH_ARGS: e.g. "-r 5 -d 5 -c 8 -m 8".
bench-h2: all
	@bench/setup.sh
	@bench/run_h2.sh $(BUILD) $(H2_BENCH_ARGS)

# The TCP proxy's CPU per GiB forwarded against HAProxy mode tcp (issue 19; bench/run_tcp.sh,
# also the last step of bench-proxy). TCP_BENCH_ARGS: e.g. "-r 5 -m 256 -c 8".
bench-tcp: all
	@bench/setup.sh
	@bench/run_tcp.sh $(BUILD) $(TCP_BENCH_ARGS)

# TLS (issue 17): weft-proxy, HAProxy and nginx terminating TLS on the same ECDSA P-256 and RSA
# 2048 certificates (full handshakes and keep-alive requests per proxy CPU-second, memory per
# idle TLS connection) and the p50 that mTLS adds between two sidecars (bench/run_proxy_tls.sh).
bench-proxy-tls: all
	@bench/setup.sh
	@bench/run_proxy_tls.sh $(BUILD) $(BENCH_ARGS)

# Soak (issue 16): the local mesh with the catalog example and a standalone weft-proxy under
# steady load while faults fire every 1-2 s; checks crashes, fds, RSS, access-log flags,
# proxy-status and sanitizer reports (bench/soak/soak.py, bench/README.md). Runs as root in a
# private network namespace (skipped otherwise). SOAK_MINUTES (default 10), SOAK_SEED,
# SOAK_RATE, SOAK_ARGS; SOAK_ASAN=1 runs it on the sanitizer build (same as make soak-asan).
ifeq ($(SOAK_ASAN),1)
soak: soak-asan
else
soak: all
	@bench/soak/run.sh $(BUILD)
endif

soak-asan: setup
	@cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD_ASAN) -j $(JOBS) -- --no-print-directory
	@bench/soak/run.sh $(BUILD_ASAN)

# The book's catalog example on the local mesh, broken and fixed with weft's tools
# (scripts/demo.py, docs/getting-started.md). It prints the web view's URL
# (http://127.0.0.1:15014/ui/, docs/web-view.md) and what each step shows there.
# DEMO_PAUSE=1 waits for Enter between steps.
demo: all
	@/usr/bin/python3 scripts/demo.py --bin $(BUILD)

format:
	@clang-format -i $$(git ls-files 'src/*.c' 'src/*.h' 'tests/unit/*.c' 'fuzz/*.c' 'bench/*.c')

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
