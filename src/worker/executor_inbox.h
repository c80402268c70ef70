#pragma once
// ExecutorInbox: a descriptor an executor thread reads itself, between its passes, instead of a
// reader thread reading it and handing the thread its work: in a worker with one executor
// thread, its socket to the master (worker/master_inbox.h). The thread waits for it and for its
// doorbell together, so a request the master sends wakes the thread that runs it, once.
//
// Thread rule: drain(), holdAnswers(), releaseAnswers() and answersDue() are called on the
// executor thread only; busy() on its watchdog's thread; flushAnswers() on either.

#include <chrono>

#include "util/doorbell.h"

namespace isolane {

class ExecutorInbox {
 public:
  virtual ~ExecutorInbox() = default;
  // The descriptor to wait for (non-blocking).
  virtual int fd() const = 0;
  // Reads what the descriptor holds now (a bounded amount) and hands it on, e.g. to the
  // executor's submit(). False: nothing more is to be read (the peer is gone, or said to stop);
  // the thread no longer waits for it.
  virtual bool drain() = 0;
  // The thread is inside a turn that has lasted kLongTurnMark (once per such turn): what the
  // descriptor holds may not wait for it (a withdrawal, a heartbeat), and may be read by another
  // thread until the next drain(); `wake` is the thread's doorbell, rung when that other thread
  // leaves it something to drain (then holding() says so). Must not block.
  virtual void busy(Doorbell& wake) { (void)wake; }
  // Safe from any thread: it holds what was read and not handed on, which the next drain() does,
  // however quiet the descriptor is.
  virtual bool holding() const { return false; }

  // Answers: what the thread sends back while it runs a pass may wait and leave together, in one
  // write, instead of one write (and one wake-up of the reader) each. holdAnswers() as a pass
  // begins and releaseAnswers() before the thread waits, on the executor thread; answersDue() on
  // it as each turn starts: those that have waited kAnswerHold leave then (a turn may be long);
  // flushAnswers() before work that is no request's (on the executor thread), and from the
  // watchdog's thread while a turn goes on.
  static constexpr std::chrono::microseconds kAnswerHold{100};
  virtual void holdAnswers() {}
  virtual void releaseAnswers() {}
  // (True when it wrote some.)
  virtual bool answersDue(std::chrono::steady_clock::time_point now) {
    (void)now;
    return false;
  }
  virtual void flushAnswers() {}
};

}  // namespace isolane
