#pragma once
// MetricReading: the registry's figures at one moment (what /metrics would render then), and the
// arithmetic the dashboard does on two of them: sums by label, rates, and quantiles of a
// histogram over the time between two readings (from the difference of their buckets, as
// Prometheus' histogram_quantile does over a rate).
//
// Thread rule: a value type; read it from one thread at a time.

#include <prometheus/metric_family.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace isolane {

class MetricsRegistry;

// Label constraints: every pair must match; an empty list matches every sample.
using LabelMatch = std::vector<std::pair<std::string, std::string>>;

struct MetricReading {
  std::vector<prometheus::MetricFamily> families;
  std::chrono::steady_clock::time_point at{};

  static MetricReading of(const MetricsRegistry& registry);

  // Counters and gauges: the sum of the matching samples' values; histograms: of their counts.
  double sum(const std::string& name, const LabelMatch& match = {}) const;
  // The same sum per value of `label` (samples without it are left out).
  std::map<std::string, double> sumBy(const std::string& name, const std::string& label,
                                      const LabelMatch& match = {}) const;
  // The `q` quantile (0..1) of a histogram's observations made between `before` and this reading,
  // interpolated within its bucket; nullopt when none were made.
  std::optional<double> quantileSince(const MetricReading& before, const std::string& name,
                                      double q, const LabelMatch& match = {}) const;
};

// (now - before) / seconds between them, never negative (a counter that went back: a restart).
double ratePerSecond(double now, double before, std::chrono::steady_clock::duration elapsed);

}  // namespace isolane
