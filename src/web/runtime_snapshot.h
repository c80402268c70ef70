#pragma once
// The web runtime's V8 startup snapshot: a context in which the whole runtime bundle has run
// (every global of the web APIs made, `host` holding its natives and `dispatch`), serialized once
// by the build (`isolane snapshot`, under the same pinned node as the workers) and installed beside
// the engine. An isolate made from it gets such a context from Context::FromSnapshot in about a
// millisecond, instead of compiling and running 700 KB of JavaScript per context.
//
// The file is mapped, not read: its pages are shared by every worker process of the machine.
// It starts with a header line and a key line (runtime/engine_key.h plus the bundle's SHA-256);
// a file made by another engine, under other node options or for another bundle is not used:
// contexts are then made from source, and the reason is logged once.

#include <string>

#include "runtime/isolate_owner.h"
#include "util/result.h"

namespace isolane {

// Where the snapshot's context and its `host` object sit in the blob.
constexpr std::size_t kSnapshotContextIndex = 0;
constexpr std::size_t kSnapshotHostIndex = 0;

// Where this process looks for the snapshot: $ISOLANE_SNAPSHOT, else the file the build installs
// beside the engine. ISOLANE_SNAPSHOT=off makes every context from source.
std::string runtimeSnapshotPath();

// Makes the snapshot and writes it to `path` (a temporary file renamed into place). Its isolate
// runs on a thread of its own; call it once per process (the isolate is spent afterwards).
Status writeRuntimeSnapshot(const std::string& path);

// The snapshot isolates are made from, or null when there is none to use (see
// runtimeSnapshotProblem). Mapped on the first call, kept for the process's life; any thread.
const IsolateSnapshot* runtimeSnapshot();
// Maps the snapshot at `path` for the rest of the process's life, if its key is this process's.
Result<IsolateSnapshot> mapRuntimeSnapshot(const std::string& path);

// Why runtimeSnapshot() is null, or "" when it is not.
const std::string& runtimeSnapshotProblem();

}  // namespace isolane
