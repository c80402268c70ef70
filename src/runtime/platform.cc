#include "runtime/platform.h"

#include <v8.h>

#include <cstdio>
#include <cstdlib>

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

std::vector<std::string> attachToNode() {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  v8::HandleScope handles(isolate);
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  gPlatform = node::GetMultiIsolatePlatform(node::GetCurrentEnvironment(context));
  // process.argv is [node, engine.so, args...] (node -e ... engine.so args...).
  std::vector<std::string> args;
  v8::Local<v8::Value> process, argv;
  if (!context->Global()
           ->Get(context, v8::String::NewFromUtf8Literal(isolate, "process"))
           .ToLocal(&process) ||
      !process->IsObject() ||
      !process.As<v8::Object>()
           ->Get(context, v8::String::NewFromUtf8Literal(isolate, "argv"))
           .ToLocal(&argv) ||
      !argv->IsArray()) {
    return args;
  }
  auto list = argv.As<v8::Array>();
  for (std::uint32_t i = 2; i < list->Length(); ++i) {
    v8::Local<v8::Value> item;
    if (!list->Get(context, i).ToLocal(&item) || !item->IsString()) continue;
    v8::String::Utf8Value text(isolate, item);
    args.emplace_back(*text ? *text : "", static_cast<std::size_t>(text.length()));
  }
  return args;
}

}  // namespace isolane
