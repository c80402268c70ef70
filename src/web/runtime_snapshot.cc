#include "web/runtime_snapshot.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "obs/log.h"
#include "runtime/engine_key.h"
#include "web/host_functions.h"
#include "web/web_context.h"

extern const char kWebRuntimeJsSha256[];

namespace isolane {
namespace {

// The version says what the external references are (their order included): 2 added the
// runtime's source after the host natives.
constexpr char kMagic[] = "isolane runtime snapshot 2\n";

// The key line a usable snapshot carries (without its newline).
std::string snapshotKey() { return engineKey() + " runtime " + kWebRuntimeJsSha256; }

// The external references, null-terminated, as V8 wants them.
const intptr_t* externalReferences() {
  static const std::vector<intptr_t> list = [] {
    std::vector<intptr_t> l = hostFunctionReferences();
    l.push_back(runtimeSourceReference());
    l.push_back(0);
    return l;
  }();
  return list.data();
}

Status makeSnapshot(const std::string& path) {
  IsolateOwner owner(IsolateLimits{}, MakeSnapshot{externalReferences()});
  v8::Isolate* isolate = owner.isolate();
  v8::SnapshotCreator* creator = owner.creator();
  {
    v8::HandleScope handles(isolate);
    creator->SetDefaultContext(v8::Context::New(isolate));
    ContextState state;  // nobody's: the bundle's start-up calls no native that needs an app
    WebContext web;
    std::string error;
    if (!createWebContextFromSource(owner, state, &web, &error)) return Error{error};
    v8::Local<v8::Context> context = web.context.Get(isolate);
    v8::Local<v8::Object> host = web.host.Get(isolate);
    web = WebContext{};  // no global handle may survive into CreateBlob
    // The state's address means nothing in another process: each context gets its own after.
    context->SetAlignedPointerInEmbedderData(ContextState::kEmbedderSlot, nullptr);
    if (creator->AddData(context, host) != kSnapshotHostIndex ||
        creator->AddContext(context) != kSnapshotContextIndex) {
      return Error{"the snapshot's context or host object is not where loaders look for it"};
    }
  }
  // kClear: the only functions compiled so far are the bundle's start-up code, which never runs
  // again; keeping their bytecode made the blob 11% larger and each isolate 1 ms slower to make
  // (bench/micro BM_IsolateReady: 5.2 ms with it, 4.3 ms without).
  v8::StartupData blob = creator->CreateBlob(v8::SnapshotCreator::FunctionCodeHandling::kClear);
  std::unique_ptr<const char[]> owned(blob.data);
  if (!blob.data || blob.raw_size <= 0) return Error{"V8 made no snapshot"};

  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kMagic << snapshotKey() << '\n';
    out.write(blob.data, blob.raw_size);
    out.close();
    if (!out) return Error{"cannot write " + tmp};
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Error{"cannot rename " + tmp + " to " + path + ": " + why};
  }
  return Status::success();
}

// The snapshot this process uses, or why it uses none; mapped on first use, logged once.
const Result<IsolateSnapshot>& loadedSnapshot() {
  static const Result<IsolateSnapshot> loaded = [] {
    std::string path = runtimeSnapshotPath();
    Result<IsolateSnapshot> l =
        path == "off" ? Result<IsolateSnapshot>(Error{"turned off (ISOLANE_SNAPSHOT=off)"})
                      : mapRuntimeSnapshot(path);
    if (!l) {
      logEvent(Level::kWarn, "no runtime snapshot: every context runs the runtime bundle",
               {{"reason", l.error()}});
    }
    return l;
  }();
  return loaded;
}

}  // namespace

std::string runtimeSnapshotPath() {
  if (const char* path = std::getenv("ISOLANE_SNAPSHOT"); path && *path) return path;
  return ISOLANE_SNAPSHOT_PATH;
}

Status writeRuntimeSnapshot(const std::string& path) {
  Status result;
  // Not on the calling thread: node's own isolate is entered there.
  std::thread([&] { result = makeSnapshot(path); }).join();
  return result;
}

Result<IsolateSnapshot> mapRuntimeSnapshot(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    std::string why = path + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return Error{why};
  }
  auto size = static_cast<std::size_t>(st.st_size);
  void* map = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (map == MAP_FAILED) return Error{path + ": cannot map it"};
  std::string_view bytes(static_cast<const char*>(map), size);
  std::string header = std::string(kMagic) + snapshotKey() + "\n";
  if (bytes.substr(0, header.size()) != header || bytes.size() == header.size()) {
    munmap(map, size);
    return Error{path + ": made by another engine or for another runtime bundle (this one's key: " +
                 snapshotKey() + ")"};
  }
  // Mapped for the life of the process: V8 reads the blob again for every context it makes.
  IsolateSnapshot snapshot;
  snapshot.blob.data = bytes.data() + header.size();
  snapshot.blob.raw_size = static_cast<int>(bytes.size() - header.size());
  snapshot.externalReferences = externalReferences();
  return snapshot;
}

const IsolateSnapshot* runtimeSnapshot() {
  const Result<IsolateSnapshot>& loaded = loadedSnapshot();
  return loaded ? &loaded.value() : nullptr;
}

const std::string& runtimeSnapshotProblem() {
  static const std::string none;
  const Result<IsolateSnapshot>& loaded = loadedSnapshot();
  return loaded ? none : loaded.error();
}

}  // namespace isolane
