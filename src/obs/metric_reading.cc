#include "obs/metric_reading.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "obs/metrics.h"

namespace isolane {

namespace {

bool matches(const prometheus::ClientMetric& metric, const LabelMatch& match) {
  for (const auto& [name, value] : match) {
    bool found = false;
    for (const auto& label : metric.label) {
      if (label.name == name) found = label.value == value;
    }
    if (!found) return false;
  }
  return true;
}

double valueOf(const prometheus::MetricFamily& family, const prometheus::ClientMetric& metric) {
  switch (family.type) {
    case prometheus::MetricType::Counter:
      return metric.counter.value;
    case prometheus::MetricType::Gauge:
      return metric.gauge.value;
    case prometheus::MetricType::Histogram:
      return static_cast<double>(metric.histogram.sample_count);
    case prometheus::MetricType::Untyped:
      return metric.untyped.value;
    default:
      return 0;
  }
}

const prometheus::MetricFamily* find(const MetricReading& r, const std::string& name) {
  for (const auto& family : r.families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

// Cumulative bucket counts by upper bound, summed over the matching samples.
std::map<double, double> buckets(const prometheus::MetricFamily* family, const LabelMatch& match) {
  std::map<double, double> out;
  if (!family || family->type != prometheus::MetricType::Histogram) return out;
  for (const auto& metric : family->metric) {
    if (!matches(metric, match)) continue;
    for (const auto& b : metric.histogram.bucket) {
      out[b.upper_bound] += static_cast<double>(b.cumulative_count);
    }
  }
  return out;
}

}  // namespace

MetricReading MetricReading::of(const MetricsRegistry& registry) {
  return MetricReading{registry.collect(), std::chrono::steady_clock::now()};
}

double MetricReading::sum(const std::string& name, const LabelMatch& match) const {
  const prometheus::MetricFamily* family = find(*this, name);
  if (!family) return 0;
  double total = 0;
  for (const auto& metric : family->metric) {
    if (matches(metric, match)) total += valueOf(*family, metric);
  }
  return total;
}

std::map<std::string, double> MetricReading::sumBy(const std::string& name,
                                                   const std::string& label,
                                                   const LabelMatch& match) const {
  std::map<std::string, double> out;
  const prometheus::MetricFamily* family = find(*this, name);
  if (!family) return out;
  for (const auto& metric : family->metric) {
    if (!matches(metric, match)) continue;
    for (const auto& l : metric.label) {
      if (l.name == label) out[l.value] += valueOf(*family, metric);
    }
  }
  return out;
}

std::optional<double> MetricReading::quantileSince(const MetricReading& before,
                                                   const std::string& name, double q,
                                                   const LabelMatch& match) const {
  std::map<double, double> now = buckets(find(*this, name), match);
  std::map<double, double> then = buckets(find(before, name), match);
  if (now.empty()) return std::nullopt;
  // Observations per bucket in the window (cumulative counts, so each is a running total).
  std::vector<std::pair<double, double>> window;  // (upper bound, cumulative count)
  for (const auto& [bound, count] : now) {
    auto old = then.find(bound);
    window.emplace_back(bound, std::max(0.0, count - (old == then.end() ? 0.0 : old->second)));
  }
  double total = window.back().second;  // the +Inf bucket holds every observation
  if (total <= 0) return std::nullopt;
  double rank = std::clamp(q, 0.0, 1.0) * total;
  double lowerBound = 0, lowerCount = 0;
  for (const auto& [bound, count] : window) {
    if (count >= rank) {
      // Past the last finite bound: the best that can be said is that bound.
      if (std::isinf(bound)) return lowerBound;
      double inBucket = count - lowerCount;
      if (inBucket <= 0) return bound;
      return lowerBound + (bound - lowerBound) * (rank - lowerCount) / inBucket;
    }
    lowerBound = bound;
    lowerCount = count;
  }
  return lowerBound;
}

double ratePerSecond(double now, double before, std::chrono::steady_clock::duration elapsed) {
  double seconds = std::chrono::duration<double>(elapsed).count();
  if (seconds <= 0 || now < before) return 0;
  return (now - before) / seconds;
}

}  // namespace isolane
