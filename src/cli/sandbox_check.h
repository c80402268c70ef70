#pragma once
// `isolane sandbox-check`: spawns one worker exactly as `serve` spawns one (its environment,
// descriptors, user and seccomp filter), told to probe its sandbox from inside instead of
// serving (worker/sandbox_probe.h): one JSON line per probe on stdout, then a summary. Exit
// status 0 when every probe held. For operators, on the kernel their server runs on.

namespace isolane {

int sandboxCheck();

}  // namespace isolane
