#pragma once
// StopSignals: SIGINT and SIGTERM turned into something a thread can wait for, with sigaction
// and a self-pipe. Not sigwait with a blocked mask: inside the engine, node's own threads do not
// block the signals, and node's handlers (reset the terminal, re-raise) would end the process
// instead of draining it. Construct it after everything that installs handlers (node has by
// the time the engine runs): it replaces them.

namespace isolane {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Blocks until SIGINT or SIGTERM arrives; returns the signal number.
  int wait();
};

}  // namespace isolane
