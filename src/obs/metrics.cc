#include "obs/metrics.h"

#include <prometheus/text_serializer.h>

namespace isolane {

std::vector<double> latencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

void Scrape::family(const std::string& name, const std::string& help, const char* type) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = std::string(type) == "counter" ? prometheus::MetricType::Counter
                                          : prometheus::MetricType::Gauge;
  families.push_back(std::move(f));
}

void Scrape::sample(const std::vector<std::pair<std::string, std::string>>& labels, double value) {
  if (families.empty()) return;  // a collector's mistake: no family to put it in
  prometheus::MetricFamily& f = families.back();
  prometheus::ClientMetric m;
  for (const auto& [name, v] : labels) m.label.push_back({name, v});
  if (f.type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

MetricsRegistry::MetricsRegistry() : registry_(std::make_shared<prometheus::Registry>()) {}

Family<Counter>& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                          std::vector<std::string> labels) {
  auto& native = prometheus::BuildCounter().Name(name).Help(help).Register(*registry_);
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.push_back(std::make_unique<Family<Counter>>(
      std::move(labels),
      [&native](const prometheus::Labels& l) { return std::make_unique<Counter>(native.Add(l)); }));
  return *counters_.back();
}

Family<Gauge>& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                                      std::vector<std::string> labels) {
  auto& native = prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
  std::lock_guard<std::mutex> lock(mutex_);
  gauges_.push_back(std::make_unique<Family<Gauge>>(
      std::move(labels),
      [&native](const prometheus::Labels& l) { return std::make_unique<Gauge>(native.Add(l)); }));
  return *gauges_.back();
}

Family<Histogram>& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                              std::vector<std::string> labels,
                                              std::vector<double> bounds) {
  auto& native = prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_);
  std::lock_guard<std::mutex> lock(mutex_);
  histograms_.push_back(std::make_unique<Family<Histogram>>(
      std::move(labels), [&native, bounds = std::move(bounds)](const prometheus::Labels& l) {
        return std::make_unique<Histogram>(native.Add(l, bounds));
      }));
  return *histograms_.back();
}

void MetricsRegistry::addCollector(Collector collector) {
  std::lock_guard<std::mutex> lock(mutex_);
  collectors_.push_back(std::move(collector));
}

std::vector<prometheus::MetricFamily> MetricsRegistry::collect() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  Scrape scrape;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Collector& c : collectors_) c(scrape);
  }
  for (auto& f : scrape.families) families.push_back(std::move(f));
  return families;
}

std::string MetricsRegistry::render() const {
  return prometheus::TextSerializer().Serialize(collect());
}

}  // namespace isolane
