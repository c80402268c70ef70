# The README's two commands:  `make serve`  and  `make test`.
# Each installs what is missing (scripts/setup.sh), configures, and builds incrementally.
# `make test SANITIZE=1`: the same suites, built in build-sanitize with AddressSanitizer and
# UndefinedBehaviorSanitizer (the engine, loaded into an uninstrumented node, with UBSan only).
ifeq ($(SANITIZE),1)
BUILD ?= build-sanitize
CMAKE_FLAGS = -DISOLANE_SANITIZE=ON
TEST_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
endif
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all build setup serve test format tidy fuzz bench clean

all: build

setup:
	@scripts/setup.sh $(abspath $(BUILD))

$(BUILD)/build.ninja: CMakeLists.txt | setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null

build: setup $(BUILD)/build.ninja
	@cmake --build $(BUILD) -j $(JOBS)

serve: build
	$(BUILD)/isolane serve

test: build
	cd $(BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) --timeout 300

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

tidy: build
	@git ls-files 'src/*.cc' | xargs clang-tidy -p $(BUILD) --quiet

# libFuzzer on the frame reader and on the HTTP front's request reader (clang), each in its own
# build tree and for FUZZ_TIME seconds (default 60).
FUZZ_TIME ?= 60
FUZZ_FLAGS = -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -I$(BUILD)/gen
fuzz: build
	@mkdir -p $(BUILD)/fuzz/frames $(BUILD)/fuzz/http
	clang++ $(FUZZ_FLAGS) fuzz/frame_reader_fuzz.cc src/ipc/frame_codec.cc \
	  -o $(BUILD)/fuzz/frame_reader_fuzz
	$(BUILD)/fuzz/frame_reader_fuzz -max_total_time=$(FUZZ_TIME) $(BUILD)/fuzz/frames
	clang++ $(FUZZ_FLAGS) fuzz/http_request_fuzz.cc src/front/request_reader.cc \
	  -o $(BUILD)/fuzz/http_request_fuzz
	$(BUILD)/fuzz/http_request_fuzz -max_total_time=$(FUZZ_TIME) $(BUILD)/fuzz/http

clean:
	rm -rf $(BUILD)
