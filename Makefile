# jobscope — build, test, install.
#
#   make            build build/jobscope (release flags)
#   make test       build and run every test (tests/run.sh)
#   make check      layers and clang-format (CI runs it)
#   make demo       run a small monitored job and show its events
#   make asan       build + tests under AddressSanitizer/UBSan (build-asan/)
#   make install    PREFIX=/usr/local DESTDIR=
#   make bench      optimised build in build-bench/ + bench/run (BENCH_ARGS=--quick)
#
# Sources: every src/*/*.c is part of the program; src/cli/main.c holds
# main(), everything else also goes into build/libjscore.a for unit tests.

.DEFAULT_GOAL := all
CC      ?= cc
BUILD   ?= build
PREFIX  ?= /usr/local
# systemd finds units in /usr/local/lib/systemd/system and /usr/lib/systemd/system
UNITDIR ?= $(PREFIX)/lib/systemd/system
OPT     ?= -O2 -g
CFLAGS  ?= $(OPT)
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter \
           -fno-strict-aliasing -pthread -Isrc -MMD -MP
LDLIBS  += -pthread -lm -ldl

# The network destinations need libcurl, rabbitmq-c and jansson (Debian: see
# deps.sh).  They live in a plugin, build/jobscope-net.so, that jobscope
# dlopens only when an output URL needs it: loading those libraries (and
# their TLS stacks) would otherwise triple the monitor's RSS for every job.
PKGS    := libcurl librabbitmq jansson
CFLAGS  += $(shell pkg-config --cflags $(PKGS))
NETLIBS := $(shell pkg-config --libs $(PKGS))

# The server side (`jobscope serve`, import, report, stats) is its own program,
# build/jobscope-serve, which `jobscope SUBCOMMAND` executes: the monitor's
# size, RSS and start-up never pay for the store, the HTTP server or the
# dashboard.  Its folders are listed here; every .c in them is part of it.
SERVE_DIRS := src/store src/query src/server src/repo src/report
SERVE_PKGS := libmicrohttpd sqlite3 libzstd zlib libpcre2-8
SERVE_SRCS := $(sort $(foreach d,$(SERVE_DIRS),$(wildcard $(d)/*.c)))
SERVE_OBJS := $(SERVE_SRCS:%.c=$(BUILD)/%.o)
SERVE_LIBS := $(shell pkg-config --libs $(SERVE_PKGS))
$(SERVE_OBJS): CFLAGS += $(shell pkg-config --cflags $(SERVE_PKGS))

# The web assets (web/src: dashboard and report pages; uPlot from npm) are
# compiled into jobscope-serve as a generated C file (docs/views.md "Build").
# `npm ci` runs when web/node_modules is missing (./deps.sh installs npm).
WEB_SRCS   := $(sort $(wildcard web/src/*))
WEB_ASSETS := web/node_modules/uplot/dist/uPlot.iife.min.js web/node_modules/uplot/dist/uPlot.min.css $(WEB_SRCS)
SERVE_OBJS += $(BUILD)/gen/web_assets.o

# src/sink/ is split by role (docs/hacking.md): its subfolders are built too;
# every network backend in src/sink/net/ goes into the plugin, with the
# time-series encoder it alone uses (jansson).
SRCS    := $(filter-out $(SERVE_SRCS) src/bpf/bpfload.c src/bpf/tree.bpf.c src/slurm/%,$(sort $(wildcard src/*/*.c src/sink/*/*.c)))

# The Slurm SPANK plugin (src/slurm, docs/slurm.md), built when Slurm's
# spank.h is here (Debian: libslurm-dev).  Loaded by slurmstepd, it links
# nothing of jobscope's: it starts `jobscope attach` for every task.
SPANK_OK := $(shell [ -r /usr/include/slurm/spank.h ] && echo 1)
SPANK_SRCS := src/slurm/jobscope_spank.c src/slurm/spank_conf.c
ifeq ($(SPANK_OK),1)
all: $(BUILD)/jobscope-spank.so
endif
$(BUILD)/jobscope-spank.so: $(SPANK_SRCS) src/slurm/spank_conf.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared -DJOBSCOPE_BIN='"$(PREFIX)/bin/jobscope"' $(LDFLAGS) -o $@ $(SPANK_SRCS)
$(BUILD)/tests/test_slurm: tests/unit/test_slurm.c src/slurm/spank_conf.c src/slurm/spank_conf.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< src/slurm/spank_conf.c -lcmocka $(LDFLAGS)

# The BPF sampler (src/bpf, docs/bpf.md) is built when clang, bpftool, libbpf
# and the kernel's BTF are here: tree.bpf.c is compiled with clang -target bpf
# against a vmlinux.h dumped from /sys/kernel/btf/vmlinux (CO-RE), and its
# libbpf skeleton is generated into $(BUILD)/bpf.  Without them the build
# still succeeds and `jobscope --version` says the BPF path is absent.
BPF_OK  := $(shell command -v clang >/dev/null 2>&1 && command -v bpftool >/dev/null 2>&1 && \
             pkg-config --exists libbpf 2>/dev/null && [ -r /sys/kernel/btf/vmlinux ] && echo 1)
BPF_ARCH := $(subst x86_64,x86,$(subst aarch64,arm64,$(shell uname -m)))
# Loading is a plugin, build/jobscope-bpf.so (bpfload.c), like the network
# one: only a run that loads the programs maps libbpf, libelf and libz; runs
# that find them pinned (src/bpf/bpfpin.h) use plain bpf(2) calls from the
# monitor itself (bpfsys.c, bpfsample.c).  $(BUILD)/bpf/tree_id.h names the
# compiled program: the pin directory of this build.
BPF_OBJ := $(BUILD)/pic/src/bpf/bpfload.o
BPF_CORE := $(BUILD)/src/bpf/bpfsample.o $(BUILD)/src/bpf/bpfpin.o $(BUILD)/src/bpf/bpfcount.o
ifeq ($(BPF_OK),1)
$(BPF_OBJ) $(BPF_CORE): CFLAGS += -DJOBSCOPE_BPF -I$(BUILD)/bpf -Isrc/bpf
$(BPF_OBJ): $(BUILD)/bpf/tree.skel.h
$(BPF_CORE): $(BUILD)/bpf/tree_id.h
BPF_LIBS := -lbpf
BPF_PLUGIN := $(BUILD)/jobscope-bpf.so
all: $(BPF_PLUGIN)
endif
$(BUILD)/jobscope-bpf.so: $(BPF_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -o $@ $^ $(BPF_LIBS)
$(BUILD)/bpf/vmlinux.h:
	@mkdir -p $(dir $@)
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@
$(BUILD)/bpf/tree.bpf.o: src/bpf/tree.bpf.c src/bpf/bpf_rec.h $(BUILD)/bpf/vmlinux.h
	clang -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BUILD)/bpf -Isrc/bpf -c $< -o $@
$(BUILD)/bpf/tree.skel.h: $(BUILD)/bpf/tree.bpf.o
	bpftool gen skeleton $< name tree_bpf > $@.tmp && mv $@.tmp $@
$(BUILD)/bpf/tree_id.h: $(BUILD)/bpf/tree.bpf.o
	echo "#define JOBSCOPE_BPF_ID \"$$(sha256sum $< | cut -c1-16)\"" > $@.tmp && mv $@.tmp $@
NET_SRCS := $(sort $(wildcard src/sink/net/*.c)) src/sink/formats/tsconv.c src/sink/formats/tsconv_set.c
NET_REG := $(BUILD)/pic/src/sink/net/net.o
OBJS    := $(filter-out $(NET_SRCS:%.c=$(BUILD)/%.o),$(SRCS:%.c=$(BUILD)/%.o))
NET_OBJS := $(NET_SRCS:%.c=$(BUILD)/pic/%.o)
CORE    := $(filter-out $(BUILD)/src/cli/main.o,$(OBJS)) $(NET_OBJS)
$(BUILD)/src/util/companion.o $(BUILD)/pic/src/util/companion.o: CFLAGS += -DJOBSCOPE_LIBDIR='"$(PREFIX)/lib/jobscope"'

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
HELPER_SRCS := $(sort $(wildcard tests/helpers/*.c))
HELPER_BINS := $(HELPER_SRCS:tests/helpers/%.c=$(BUILD)/helpers/%)
BENCH_SRCS  := $(sort $(wildcard bench/*.c))
BENCH_BINS  := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

.PHONY: all check test unit helpers deps demo asan asan-bins clean install bench bench-bins fake-nvml lib fuzz fuzz-bins man valgrind
all: $(BUILD)/jobscope $(BUILD)/jobscope-serve lib man

# -rdynamic: the plugin calls back into the core (publisher, spool, JSON writer).
$(BUILD)/jobscope: $(OBJS) $(BUILD)/jobscope-net.so
	$(CC) $(CFLAGS) $(LDFLAGS) -rdynamic -o $@ $(OBJS) $(LDLIBS)

$(BUILD)/jobscope-net.so: $(NET_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -o $@ $^ $(NETLIBS)

$(BUILD)/jobscope-serve: $(SERVE_OBJS) $(BUILD)/libjscore.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(SERVE_OBJS) $(NET_REG) $(BUILD)/libjscore.a \
	    $(SERVE_LIBS) $(NETLIBS) $(LDLIBS)

# The embedded web assets (see WEB_ASSETS above).
web/node_modules:
	@command -v npm >/dev/null || { echo "npm is needed for the dashboard's assets: ./deps.sh installs it" >&2; exit 1; }
	cd web && npm ci --no-audit --no-fund
$(BUILD)/gen/web_assets.c: web/embed.py $(WEB_SRCS) | web/node_modules
	python3 web/embed.py $@ $(WEB_ASSETS)
$(BUILD)/gen/web_assets.o: $(BUILD)/gen/web_assets.c
	$(CC) $(CFLAGS) -c -o $@ $<

# Everything of the server side but its main(), for unit tests of the store,
# the query engine and the server.
$(BUILD)/libjsserve.a: $(filter-out $(BUILD)/src/server/main.o,$(SERVE_OBJS))
	rm -f $@; ar rcs $@ $^

$(BUILD)/libjscore.a: $(CORE)
	rm -f $@; ar rcs $@ $^

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libjscore.a $(BUILD)/libjsserve.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags $(SERVE_PKGS)) -o $@ $< $(BUILD)/libjsserve.a \
	    $(NET_REG) $(BUILD)/libjscore.a -lcmocka $(SERVE_LIBS) $(NETLIBS) $(LDLIBS)

$(BUILD)/helpers/%: tests/helpers/%.c $(BUILD)/libjscore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(NET_REG) $(BUILD)/libjscore.a $(NETLIBS) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c bench/bench.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDLIBS)

# The store benchmark (bench/store/run, the `store` rows of make bench):
# jobscope serve against VictoriaMetrics, and the store in-process.
bench-bins: $(BUILD)/jobscope-serve $(BUILD)/bench/store_bench
$(BUILD)/bench/store_bench: bench/store/store_bench.c $(BUILD)/libjsserve.a $(BUILD)/libjscore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libjsserve.a $(BUILD)/libjscore.a $(SERVE_LIBS) $(LDLIBS)

# The socket ingest in-process (bench/serve_put/run, the `serve_put` rows of make bench):
# events into points, into the store.
bench-bins: $(BUILD)/bench/ingest_bench
$(BUILD)/bench/ingest_bench: bench/serve_put/ingest_bench.c $(BUILD)/libjsserve.a $(BUILD)/libjscore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libjsserve.a $(NET_REG) $(BUILD)/libjscore.a $(SERVE_LIBS) \
	    $(NETLIBS) $(LDLIBS)

# The repository at 100,000 jobs (bench/repo/run, issue 25); the browser
# tests fill their repository with it too, so `helpers` builds it.
$(BUILD)/bench/repo_bench: bench/repo/repo_bench.c $(BUILD)/libjsserve.a $(BUILD)/libjscore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags $(SERVE_PKGS)) -o $@ $< $(BUILD)/libjsserve.a \
	    $(NET_REG) $(BUILD)/libjscore.a $(SERVE_LIBS) $(NETLIBS) $(LDLIBS)
helpers: $(BUILD)/bench/repo_bench

# The BPF sampler against the procfs floor (bench/bpf, issue 15).
$(BUILD)/bench/bench_samplers: bench/bpf/bench_samplers.c $(BUILD)/libjscore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libjscore.a $(LDLIBS)

$(BUILD)/tests/test_bpfsample: tests/unit/test_bpfsample.c $(BUILD)/libjscore.a $(BPF_PLUGIN)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libjscore.a -lcmocka $(LDLIBS)
bench-bins: $(BUILD)/bench/bench_samplers

# A scripted stand-in for libnvidia-ml.so.1 (tests/fake_nvml, docs/gpu.md).
FAKE_NVML := $(BUILD)/fake-nvml/libnvidia-ml.so.1
$(FAKE_NVML): tests/fake_nvml/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $< -pthread
fake-nvml: $(FAKE_NVML)
$(BUILD)/tests/test_gpu_nvml $(BUILD)/tests/test_server_nodemetrics: $(FAKE_NVML)

# libjobscope: what jobs link to send custom metrics (lib/, docs/metrics.md).
# Self-contained (libc + pthread), built position-independent for the .so.
LIB_VERSION := 0.1.0
LIB_CFLAGS  := $(OPT) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -fPIC -pthread \
               -fvisibility=hidden -MMD -MP
# jobscope.py goes where $(PYTHON) looks: the entry of its sys.path under
# PREFIX (Debian: /usr/local/lib/python3.X/dist-packages, not site-packages),
# else the standard layout under PREFIX.
PYTHON      ?= python3
PYTHONDIR    = $(shell $(PYTHON) -c "import sys, sysconfig; \
               d = [p for p in sys.path if p.startswith('$(PREFIX)/') and p.endswith('-packages')]; \
               print(d[0] if d else sysconfig.get_path('purelib', 'posix_prefix', \
               vars={'base': '$(PREFIX)', 'platbase': '$(PREFIX)'}))" 2>/dev/null || \
               echo $(PREFIX)/lib/python3/dist-packages)
lib: $(BUILD)/libjobscope.so $(BUILD)/libjobscope.a

$(BUILD)/lib/jobscope.o: lib/jobscope.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -Ilib -c -o $@ $<

$(BUILD)/libjobscope.so: $(BUILD)/lib/jobscope.o
	$(CC) -shared -pthread $(LDFLAGS) -Wl,-soname,libjobscope.so.0 -o $@ $^

$(BUILD)/libjobscope.a: $(BUILD)/lib/jobscope.o
	rm -f $@; ar rcs $@ $^

# Test helpers named js_* are clients of the library.
$(BUILD)/helpers/js_%: tests/helpers/js_%.c $(BUILD)/libjobscope.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ilib -o $@ $< $(BUILD)/libjobscope.a $(LDLIBS)

# Man pages (man/*.scd, scdoc): jobscope(1), jobscope-run(1), ... libjobscope(3).
MAN_SRCS := $(sort $(wildcard man/*.scd))
MAN_PAGES := $(MAN_SRCS:man/%.scd=$(BUILD)/man/%)
man: $(MAN_PAGES)
$(BUILD)/man/%: man/%.scd
	@mkdir -p $(dir $@)
	scdoc < $< > $@

# remote write loads libsnappy at run time (net/remote_write.c); its test
# also undoes the compression
$(BUILD)/tests/test_remote_write: LDLIBS += -lsnappy

unit: $(UNIT_BINS)

# The benchmark (bench/README.md): its own optimised build, then the harness.
bench-bins: $(BUILD)/jobscope $(BPF_PLUGIN) $(BENCH_BINS)

bench:
	$(MAKE) BUILD=build-bench OPT="-O2 -DNDEBUG -g" bench-bins
	bench/run --build build-bench $(BENCH_ARGS)

test: deps
	$(MAKE) all unit helpers fake-nvml
	BUILD=$(BUILD) tests/run.sh

# The habits that keep the tree easy to change (docs/hacking.md): no #include
# up the layers, every C file as clang-format writes it (.clang-format), and
# no more pairs of repeated code in src/ than the budget (lower it as pairs go).
FORMAT_SRCS = $(shell find src lib -name '*.[ch]' | sort)
DUPLICATES_BUDGET = 20
check:
	python3 tests/check_layers.py src
	@clang-format --dry-run --Werror $(FORMAT_SRCS) && echo "clang-format: $(words $(FORMAT_SRCS)) files clean"
	python3 tests/check_duplicates.py $(DUPLICATES_BUDGET)
	@echo "make check: layers, formatting and duplicates clean"

deps:
	./deps.sh --test

helpers: $(HELPER_BINS)

demo: all
	./demo.sh

# ASAN_TESTS: name patterns of the tests to run (default: all); CI runs the
# unit tests and the core integration tests (.ci/run).
asan-bins:
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" \
	        LDFLAGS="-fsanitize=address,undefined" all unit helpers fake-nvml

asan: asan-bins
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	        BUILD=build-asan tests/run.sh $(ASAN_TESTS)

# Every unit test under valgrind's memcheck: invalid accesses, uninitialised
# reads and definite leaks fail it (tests/valgrind.sh: as many at once as CPUs).
# test_bpfsample is left out: valgrind does not know the bpf() commands
# libbpf uses, so it reports the kernel's writes as uninitialised memory.
VALGRIND_BINS := $(filter-out %/test_bpfsample,$(UNIT_BINS))
valgrind: unit fake-nvml
	@tests/valgrind.sh $(BUILD) $(VALGRIND_BINS)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/jobscope $(DESTDIR)$(PREFIX)/bin/jobscope
	install -d $(DESTDIR)$(PREFIX)/lib/jobscope
	install -m 755 $(BUILD)/jobscope-serve $(DESTDIR)$(PREFIX)/lib/jobscope/jobscope-serve
	install -d $(DESTDIR)$(PREFIX)/lib/jobscope
	install -m 644 $(BUILD)/jobscope-net.so $(DESTDIR)$(PREFIX)/lib/jobscope/jobscope-net.so
	if [ -f $(BUILD)/jobscope-bpf.so ]; then install -m 644 $(BUILD)/jobscope-bpf.so $(DESTDIR)$(PREFIX)/lib/jobscope/; fi
	if [ -f $(BUILD)/jobscope-spank.so ]; then install -m 644 $(BUILD)/jobscope-spank.so $(DESTDIR)$(PREFIX)/lib/jobscope/; fi
	install -m 755 dist/slurm/jobscope-slurm-epilog $(DESTDIR)$(PREFIX)/lib/jobscope/jobscope-slurm-epilog
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PYTHONDIR)
	install -m 644 lib/jobscope.h $(DESTDIR)$(PREFIX)/include/jobscope.h
	install -m 755 $(BUILD)/libjobscope.so $(DESTDIR)$(PREFIX)/lib/libjobscope.so.0
	ln -sf libjobscope.so.0 $(DESTDIR)$(PREFIX)/lib/libjobscope.so
	install -m 644 $(BUILD)/libjobscope.a $(DESTDIR)$(PREFIX)/lib/libjobscope.a
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(LIB_VERSION)|' lib/jobscope.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/jobscope.pc
	install -d $(DESTDIR)$(PYTHONDIR)/jobscope
	install -m 644 python/jobscope/__init__.py python/jobscope/dragon.py $(DESTDIR)$(PYTHONDIR)/jobscope/
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(PREFIX)/share/doc/jobscope
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@UNITDIR@|$(UNITDIR)|g' dist/jobscope-serve.service.in \
	    > $(DESTDIR)$(UNITDIR)/jobscope-serve.service
	install -m 644 dist/serve.conf.example docs/serve.md $(DESTDIR)$(PREFIX)/share/doc/jobscope/
	install -d $(DESTDIR)$(PREFIX)/share/jobscope/grafana/dashboards \
	    $(DESTDIR)$(PREFIX)/share/jobscope/grafana/provisioning/datasources \
	    $(DESTDIR)$(PREFIX)/share/jobscope/grafana/provisioning/dashboards
	install -m 644 grafana/dashboards/*.json $(DESTDIR)$(PREFIX)/share/jobscope/grafana/dashboards/
	install -m 644 grafana/provisioning/datasources/*.yaml $(DESTDIR)$(PREFIX)/share/jobscope/grafana/provisioning/datasources/
	install -m 644 grafana/provisioning/dashboards/*.yaml $(DESTDIR)$(PREFIX)/share/jobscope/grafana/provisioning/dashboards/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man3
	install -m 644 $(filter %.1,$(MAN_PAGES)) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(filter %.3,$(MAN_PAGES)) $(DESTDIR)$(PREFIX)/share/man/man3/

# Fuzzing (docs/testing.md): one libFuzzer target per parser of outside input
# (tests/fuzz/fuzz_*.c), built with clang and ASan+UBSan in build-fuzz/, each
# run for FUZZ_SECONDS on its seed corpus (tests/fuzz/corpus/NAME, copied so
# the committed seeds stay small).  CI runs them for 20 s each.
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_SRCS    := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS    := $(FUZZ_SRCS:tests/fuzz/%.c=build-fuzz/fuzz/%)

fuzz-bins:
	$(MAKE) BUILD=build-fuzz CC=clang OPT="$(FUZZ_FLAGS) -fsanitize=fuzzer-no-link" \
	        LDFLAGS="-fsanitize=address,undefined" build-fuzz/libjscore.a build-fuzz/libjsserve.a
	$(MAKE) BUILD=build-fuzz CC=clang $(FUZZ_BINS)

build-fuzz/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h build-fuzz/libjscore.a build-fuzz/libjsserve.a
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) -fsanitize=fuzzer -std=c11 -D_GNU_SOURCE -Isrc \
	    $(shell pkg-config --cflags $(PKGS) $(SERVE_PKGS)) -o $@ $< build-fuzz/libjsserve.a \
	    build-fuzz/pic/src/sink/net/net.o build-fuzz/libjscore.a $(SERVE_LIBS) $(NETLIBS) $(LDLIBS)

fuzz: fuzz-bins
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BINS)

clean:
	rm -rf build build-asan build-bench build-fuzz

-include $(OBJS:.o=.d) $(NET_OBJS:.o=.d) $(BPF_OBJ:.o=.d) $(SERVE_OBJS:.o=.d) $(BUILD)/lib/jobscope.d
