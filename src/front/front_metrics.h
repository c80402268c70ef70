#pragma once
// FrontMetrics: what the HTTP front records. Per app, request counts by status and latency,
// recorded when the answer is written; and what the front refused or shed on its own.
//
// A request's figures are found once, not per request: the label-less metrics are held here, and
// an app's (AppFigures) are found when a connection first routes to that app and kept by the
// connection, so answering a request takes no lock and builds no label set.
//
// Thread rule: every method is safe from any thread (reactor threads record concurrently).

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "obs/metrics.h"

namespace isolane {

// One app's request figures.
class AppFigures {
 public:
  AppFigures(Family<Counter>& requests, Family<Histogram>& duration, std::string app);
  AppFigures(const AppFigures&) = delete;
  AppFigures& operator=(const AppFigures&) = delete;

  const std::string& app() const { return app_; }
  // One request answered with `status` after `seconds`.
  void record(int status, double seconds);

 private:
  static constexpr int kFirstStatus = 100;
  static constexpr int kStatuses = 500;  // 100..599: found once each; others every time

  Family<Counter>& requests_;
  const std::string app_;
  Histogram& duration_;
  std::array<std::atomic<Counter*>, kStatuses> byStatus_{};
};

struct FrontMetrics {
  explicit FrontMetrics(MetricsRegistry& registry);

  // The figures of `app`, made on first use and kept as long as this (a stable reference).
  AppFigures& app(const std::string& name);

  Family<Counter>& requests;
  Family<Histogram>& duration;
  Gauge& connections;
  Gauge& bufferedBytes;
  Family<Counter>& badRequests;
  Family<Counter>& connectionsRefused;
  Counter& idleClosed;
  Counter& internalErrors;
  Gauge& streamsOpen;
  Counter& streamBytes;
  Family<Counter>& streamsCut;
  Family<Counter>& buffersFull;

 private:
  std::mutex appsMu_;  // guards apps_
  std::unordered_map<std::string, std::unique_ptr<AppFigures>> apps_;
};

}  // namespace isolane
