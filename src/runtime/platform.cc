#include "runtime/platform.h"

#include <unistd.h>
#include <v8.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

namespace isolane {
namespace {

node::MultiIsolatePlatform* gPlatform = nullptr;

}  // namespace

node::MultiIsolatePlatform& nodePlatform() {
  if (!gPlatform) {
    std::fputs("isolane engine: not started inside node (attachToNode was not called)\n", stderr);
    std::abort();
  }
  return *gPlatform;
}

std::vector<std::string> processCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> words;
  for (std::size_t at = 0; at < all.size();) {
    std::size_t end = all.find('\0', at);
    if (end == std::string::npos) end = all.size();
    words.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

std::vector<std::string> attachToNode() {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  v8::HandleScope handles(isolate);
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  gPlatform = node::GetMultiIsolatePlatform(node::GetCurrentEnvironment(context));

  std::vector<std::string> args;
  std::vector<std::string> words = processCommandLine();
  // After "-e CODE", the next word is the engine; what follows is ours.
  for (std::size_t i = 0; i + 2 < words.size(); ++i) {
    if (words[i] == "-e") {
      args.assign(words.begin() + static_cast<std::ptrdiff_t>(i) + 3, words.end());
      break;
    }
  }
  return args;
}

void runInNode(const char* name, const std::function<int(std::vector<std::string>)>& main) {
  int status = 1;
  try {
    status = main(attachToNode());
  } catch (const std::exception& e) {
    std::cerr << name << ": unexpected failure: " << e.what() << "\n";
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(status);
}

}  // namespace isolane
