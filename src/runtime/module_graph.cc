#include "runtime/module_graph.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include "runtime/context_state.h"
#include "runtime/js_errors.h"
#include "util/sha256.h"

namespace isolane {
namespace {

bool isRelative(const std::string& s) {
  return s.rfind("./", 0) == 0 || s.rfind("../", 0) == 0 || s.rfind('/', 0) == 0;
}

}  // namespace

const std::string* ModuleGraph::pathOf(v8::Local<v8::Module> module) const {
  auto range = byHash_.equal_range(module->GetIdentityHash());
  for (auto it = range.first; it != range.second; ++it) {
    const Entry& e = entries_[it->second];
    if (e.module == module) return &e.path;
  }
  return nullptr;
}

v8::MaybeLocal<v8::Module> ModuleGraph::compile(JsScope& js, const std::string& path,
                                                const std::string& source, std::string* error,
                                                EntryCache* entry) {
  v8::Isolate* isolate = js.isolate();
  v8::Local<v8::String> code;
  if (!v8::String::NewFromUtf8(isolate, source.data(), v8::NewStringType::kNormal,
                               static_cast<int>(source.size()))
           .ToLocal(&code)) {
    *error = path + ": module source is too large";
    return {};
  }
  v8::ScriptOrigin origin(js.str(path), 0, 0, false, -1, v8::Local<v8::Value>(), false, false,
                          /*is_module=*/true);
  // The entry module's code cache is used only for the very bytes it was made from: V8 itself
  // checks little more than the source's length.
  v8::ScriptCompiler::CachedData* cached = nullptr;
  if (entry && !entry->sha256.empty()) {  // a master that keeps no caches names no hash
    entry->report.sourceSha256 = sha256Hex(source);
    if (!entry->bytes.empty() && !entry->report.sourceSha256.empty() &&
        entry->report.sourceSha256 == entry->sha256) {
      cached = new v8::ScriptCompiler::CachedData(
          reinterpret_cast<const std::uint8_t*>(entry->bytes.data()),
          static_cast<int>(entry->bytes.size()), v8::ScriptCompiler::CachedData::BufferNotOwned);
    }
  }
  v8::ScriptCompiler::Source compilerSource(code, origin, cached);  // owns `cached`
  v8::TryCatch tryCatch(isolate);
  v8::Local<v8::Module> module;
  if (!v8::ScriptCompiler::CompileModule(
           isolate, &compilerSource,
           cached ? v8::ScriptCompiler::kConsumeCodeCache : v8::ScriptCompiler::kNoCompileOptions)
           .ToLocal(&module)) {
    *error = describeException(js, tryCatch);
    noteLocation(js, tryCatch, /*syntax=*/true);
    return {};
  }
  if (cached) {
    entry->report.cache = compilerSource.GetCachedData()->rejected ? CodeCacheUse::kRejected
                                                                   : CodeCacheUse::kAccepted;
  }

  std::size_t index = entries_.size();
  entries_.push_back(Entry{path, v8::Global<v8::Module>(isolate, module), {}});
  byPath_.emplace(path, index);
  byHash_.emplace(module->GetIdentityHash(), index);
  return module;
}

v8::MaybeLocal<v8::Module> ModuleGraph::load(JsScope& js, const std::string& path,
                                             std::string* error, EntryCache* entry) {
  if (auto it = byPath_.find(path); it != byPath_.end()) {
    return entries_[it->second].module.Get(js.isolate());
  }
  auto file = files_.find(path);
  if (file == files_.end()) {
    *error = "cannot read module " + path + ": its bytes were not given";
    return {};
  }
  if (!file->second->error.empty()) {
    *error = file->second->error;
    return {};
  }
  const ModuleFile& source = *file->second;
  v8::Local<v8::Module> module;
  if (!compile(js, path, source.source, error, entry).ToLocal(&module)) return {};
  std::size_t index = byPath_.at(path);
  v8::Local<v8::FixedArray> requests = module->GetModuleRequests();
  for (int i = 0; i < requests->Length(); ++i) {
    auto request = requests->Get(js.context(), i).As<v8::ModuleRequest>();
    std::string specifier = toUtf8(js, request->GetSpecifier());
    v8::Location loc = module->SourceOffsetToLocation(request->GetSourceOffset());
    std::string where = path + ":" + std::to_string(loc.GetLineNumber() + 1) + ": ";
    if (!isRelative(specifier)) {
      *error =
          where + "cannot import '" + specifier +
          "': bare module specifiers are not resolved at run time. Bundle the app into one "
          "file first, for example: esbuild app.js --bundle --format=esm --outfile=dist/app.js";
      return {};
    }
    // Resolved when the files were read (ipc/app_modules.h).
    const ModuleFile::Import* found = nullptr;
    for (const ModuleFile::Import& im : source.imports) {
      if (im.specifier == specifier) found = &im;
    }
    if (!found) {
      *error = where + "cannot import '" + specifier +
               "': it was not found when the app's files were read (an import is found by the "
               "string literal after `from` or `import`)";
      return {};
    }
    if (found->path.empty()) {
      *error = where + "cannot import '" + specifier + "': " + found->error;
      return {};
    }
    if (load(js, found->path, error).IsEmpty()) return {};
    entries_[index].resolved.emplace(specifier, found->path);
  }
  return module;
}

v8::MaybeLocal<v8::Module> ModuleGraph::resolveCallback(v8::Local<v8::Context> context,
                                                        v8::Local<v8::String> specifier,
                                                        v8::Local<v8::FixedArray> /*assertions*/,
                                                        v8::Local<v8::Module> referrer) {
  v8::Isolate* isolate = context->GetIsolate();
  ModuleGraph* self = ContextState::from(context)->modules;
  const std::string* from = self->pathOf(referrer);
  v8::String::Utf8Value spec(isolate, specifier);
  if (from) {
    const Entry& e = self->entries_[self->byPath_.at(*from)];
    if (auto it = e.resolved.find(*spec); it != e.resolved.end()) {
      return self->entries_[self->byPath_.at(it->second)].module.Get(isolate);
    }
  }
  // Every import was resolved while loading; reaching here means a bug of ours.
  isolate->ThrowException(v8::Exception::Error(
      v8::String::NewFromUtf8(isolate, "isolane: unresolved import").ToLocalChecked()));
  return {};
}

v8::MaybeLocal<v8::Object> ModuleGraph::loadMain(JsScope& js, const AppModules& modules,
                                                 std::string* error, const std::string& codeCache,
                                                 const std::string& sourceSha256,
                                                 AppLoadReport* report) {
  AppLoadReport unused;
  EntryCache entry{codeCache, sourceSha256, report ? *report : unused};
  if (!modules.error.empty() || modules.files.empty()) {
    *error = modules.error.empty() ? "no module to load" : modules.error;
    return {};
  }
  files_.clear();
  for (const ModuleFile& f : modules.files) files_.emplace(f.path, &f);
  struct Forget {
    std::unordered_map<std::string, const ModuleFile*>& files;
    ~Forget() { files.clear(); }
  } forget{files_};
  const std::string& absolute = modules.files.front().path;
  v8::Local<v8::Module> module;
  if (!load(js, absolute, error, &entry).ToLocal(&module)) return {};

  v8::Local<v8::Object> ns;
  if (!evaluate(js, module, absolute, error).ToLocal(&ns)) return {};
  // A new cache only for a master that keeps them (it named the module's hash).
  if (report && !sourceSha256.empty() && report->cache != CodeCacheUse::kAccepted) {
    std::unique_ptr<v8::ScriptCompiler::CachedData> made(
        v8::ScriptCompiler::CreateCodeCache(module->GetUnboundModuleScript()));
    if (made && made->length > 0) {
      report->producedCache.assign(reinterpret_cast<const char*>(made->data),
                                   static_cast<std::size_t>(made->length));
    }
  }
  return ns;
}

v8::MaybeLocal<v8::Object> ModuleGraph::evaluate(JsScope& js, v8::Local<v8::Module> module,
                                                 const std::string& name, std::string* error) {
  const std::string& absolute = name;
  v8::Isolate* isolate = js.isolate();
  v8::TryCatch tryCatch(isolate);
  if (!module->InstantiateModule(js.context(), &ModuleGraph::resolveCallback).FromMaybe(false)) {
    *error = describeException(js, tryCatch);
    noteLocation(js, tryCatch, false);
    return {};
  }
  v8::Local<v8::Value> result;
  if (!module->Evaluate(js.context()).ToLocal(&result)) {
    *error = describeException(js, tryCatch);
    return {};
  }
  isolate->PerformMicrotaskCheckpoint();
  if (module->GetStatus() == v8::Module::kErrored) {
    *error =
        "error while evaluating " + absolute + ": " + describeValue(js, module->GetException());
    return {};
  }
  if (result->IsPromise() && result.As<v8::Promise>()->State() == v8::Promise::kPending) {
    *error = absolute + ": top-level await did not settle while the app loaded";
    return {};
  }
  return module->GetModuleNamespace().As<v8::Object>();
}

v8::MaybeLocal<v8::Object> ModuleGraph::loadInMemory(JsScope& js, const std::string& entryName,
                                                     const std::string& entrySource,
                                                     const std::vector<GuestModule>& modules,
                                                     std::string* error, ErrorLocation* where) {
  memory_ = &modules;
  where_ = where;
  v8::Local<v8::Module> module;
  v8::Local<v8::Object> ns;
  bool ok = loadNamed(js, entryName, &entrySource, error).ToLocal(&module) &&
            evaluate(js, module, entryName, error).ToLocal(&ns);
  where_ = nullptr;
  if (!ok) return {};
  return ns;
}

v8::MaybeLocal<v8::Module> ModuleGraph::loadNamed(JsScope& js, const std::string& name,
                                                  const std::string* source, std::string* error) {
  v8::Isolate* isolate = js.isolate();
  if (auto it = byPath_.find(name); it != byPath_.end()) {
    return entries_[it->second].module.Get(isolate);
  }
  const GuestModule* found = nullptr;
  if (!source) {
    for (const GuestModule& m : *memory_) {
      if (m.name == name) found = &m;
    }
    if (!found) {
      *error =
          "cannot import '" + name + "': the execution's module map has no module of that name";
      return {};
    }
    source = &found->source;
  }
  v8::Local<v8::Module> module;
  if (found && found->json) {
    v8::Local<v8::String> exports[] = {js.str("default")};
    module = v8::Module::CreateSyntheticModule(
        isolate, js.str(name), v8::MemorySpan<const v8::Local<v8::String>>(exports, 1),
        &ModuleGraph::evaluateJson);
    std::size_t index = entries_.size();
    entries_.push_back(Entry{name, v8::Global<v8::Module>(isolate, module), {}});
    byPath_.emplace(name, index);
    byHash_.emplace(module->GetIdentityHash(), index);
    return module;
  }
  if (!compile(js, name, *source, error, nullptr).ToLocal(&module)) return {};
  std::size_t index = byPath_.at(name);
  v8::Local<v8::FixedArray> requests = module->GetModuleRequests();
  for (int i = 0; i < requests->Length(); ++i) {
    auto request = requests->Get(js.context(), i).As<v8::ModuleRequest>();
    std::string specifier = toUtf8(js, request->GetSpecifier());
    if (loadNamed(js, specifier, nullptr, error).IsEmpty()) {
      v8::Location loc = module->SourceOffsetToLocation(request->GetSourceOffset());
      if (where_ && where_->line == 0) {
        where_->file = name;
        where_->line = loc.GetLineNumber() + 1;
        where_->column = loc.GetColumnNumber() + 1;
      }
      *error = name + ":" + std::to_string(loc.GetLineNumber() + 1) + ": " + *error;
      return {};
    }
    entries_[index].resolved.emplace(specifier, specifier);
  }
  return module;
}

// A JSON module's evaluation: V8's parser, never the context's JSON (the guest may replace it).
v8::MaybeLocal<v8::Value> ModuleGraph::evaluateJson(v8::Local<v8::Context> context,
                                                    v8::Local<v8::Module> module) {
  v8::Isolate* isolate = context->GetIsolate();
  ModuleGraph* self = ContextState::from(context)->modules;
  const std::string* name = self->pathOf(module);
  const GuestModule* found = nullptr;
  if (name && self->memory_) {
    for (const GuestModule& m : *self->memory_) {
      if (m.name == *name) found = &m;
    }
  }
  v8::Local<v8::String> text;
  v8::Local<v8::Value> value;
  if (!found ||
      !v8::String::NewFromUtf8(isolate, found->source.data(), v8::NewStringType::kNormal,
                               static_cast<int>(found->source.size()))
           .ToLocal(&text) ||
      !v8::JSON::Parse(context, text).ToLocal(&value) ||
      module
          ->SetSyntheticModuleExport(isolate, v8::String::NewFromUtf8Literal(isolate, "default"),
                                     value)
          .IsNothing()) {
    if (!isolate->IsExecutionTerminating() && !found) {
      isolate->ThrowException(v8::Exception::Error(
          v8::String::NewFromUtf8Literal(isolate, "isolane: JSON module without its text")));
    }
    return {};
  }
  v8::Local<v8::Promise::Resolver> resolver;
  if (!v8::Promise::Resolver::New(context).ToLocal(&resolver) ||
      resolver->Resolve(context, v8::Undefined(isolate)).IsNothing()) {
    return {};
  }
  return resolver->GetPromise();
}

void ModuleGraph::noteLocation(JsScope& js, const v8::TryCatch& tryCatch, bool syntax) {
  if (!where_ || where_->line != 0) return;
  v8::Local<v8::Message> message = tryCatch.Message();
  if (message.IsEmpty()) return;
  where_->file = toUtf8(js, message->GetScriptResourceName());
  where_->line = message->GetLineNumber(js.context()).FromMaybe(0);
  where_->column = message->GetStartColumn(js.context()).FromMaybe(-1) + 1;
  where_->syntax = syntax;
}

}  // namespace isolane
