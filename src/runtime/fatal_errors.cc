#include "runtime/fatal_errors.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace isolane {
namespace {

thread_local const std::string* tlsApp = nullptr;

// No allocation, no logger, no locks: the heap may be exhausted and another thread may hold the
// logger's lock. One write(2) of a JSON line the log readers take like our own.
void report(const char* what, const char* location, const char* detail) {
  char line[1024];
  const char* app = tlsApp ? tlsApp->c_str() : "";
  int n = std::snprintf(line, sizeof line,
                        "{\"level\":\"error\",\"msg\":\"fatal V8 error; the worker ends\","
                        "\"kind\":\"%s\",\"app\":\"%.200s\",\"location\":\"%.200s\","
                        "\"detail\":\"%.300s\"}\n",
                        what, app, location ? location : "", detail ? detail : "");
  if (n > 0) {
    std::size_t len =
        static_cast<std::size_t>(n) < sizeof line ? static_cast<std::size_t>(n) : sizeof line - 1;
    ssize_t ignored = ::write(STDERR_FILENO, line, len);
    (void)ignored;
  }
}

void onFatalError(const char* location, const char* message) {
  report("fatal", location, message);
  std::abort();
}

void onOutOfMemory(const char* location, const v8::OOMDetails& details) {
  report(details.is_heap_oom ? "heap-oom" : "process-oom", location, details.detail);
  std::abort();
}

}  // namespace

void installFatalErrorHandlers(v8::Isolate* isolate) {
  isolate->SetFatalErrorHandler(&onFatalError);
  isolate->SetOOMErrorHandler(&onOutOfMemory);
}

CurrentApp::CurrentApp(const std::string& app) : previous_(tlsApp) { tlsApp = &app; }
CurrentApp::~CurrentApp() { tlsApp = previous_; }

}  // namespace isolane
