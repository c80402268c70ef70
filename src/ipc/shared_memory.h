#pragma once
// Memory the master shares with one worker process (its status page, its stream blocks): a memfd
// of a fixed size, sealed before the worker gets it so that it can neither shrink nor grow it (a
// mapping of a shrunk file faults on access: the master would die reading it).
//
// Thread rule: plain functions, safe from any thread.

#include <cstddef>
#include <string>
#include <string_view>

#include "util/result.h"

namespace isolane {

// A new memfd of `bytes` zeros, sealed at that size (close-on-exec: it is passed with dup2).
Result<int> makeSealedMemory(const char* name, std::size_t bytes);

// Maps `bytes` of `fd` shared, with `prot` (PROT_READ, PROT_READ | PROT_WRITE).
Result<void*> mapSharedMemory(int fd, std::size_t bytes, int prot);

// The worker's side: maps what the master passed on `fd` read-write, after checking that it is
// `bytes` long, and closes `fd` (whether or not it could be mapped).
Result<void*> mapInheritedMemory(int fd, std::size_t bytes, const char* what);

// A copy of `bytes`, which lie in memory shared with a worker, made by the kernel: where the
// worker punched a page out and it cannot be made again (memory committed strictly), the copy
// fails (that part is zeros) instead of the master's own code taking a SIGBUS.
std::string sharedMemoryCopy(std::string_view bytes);

}  // namespace isolane
