#include "obs/metrics.h"

#include <cmath>
#include <cstdio>

namespace isolane {
namespace {

void escapeLabel(std::string& out, const std::string& v) {
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

void writeNumber(std::string& out, double v) {
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.9g", v);
  }
  out += buf;
}

std::vector<std::pair<std::string, std::string>> zip(const std::vector<std::string>& names,
                                                     const std::vector<std::string>& values) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    out.emplace_back(names[i], values[i]);
  }
  return out;
}

}  // namespace

void writeHeader(std::string& out, const std::string& name, const std::string& help,
                 const char* type) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void writeSample(std::string& out, const std::string& name,
                 const std::vector<std::pair<std::string, std::string>>& labels, double value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i) out += ',';
      out += labels[i].first + "=\"";
      escapeLabel(out, labels[i].second);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  writeNumber(out, value);
  out += '\n';
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      counts_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::observe(double v) {
  std::size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  double cur = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

std::vector<std::uint64_t> Histogram::cumulative() const {
  std::vector<std::uint64_t> out(bounds_.size() + 1);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    out[i] = running;
  }
  return out;
}

std::vector<double> latencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

template <>
void Family<Counter>::render(std::string& out, const char* type) const {
  writeHeader(out, name_, help_, type);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [values, metric] : metrics_) {
    writeSample(out, name_, zip(labels_, values), static_cast<double>(metric->value()));
  }
}

template <>
void Family<Gauge>::render(std::string& out, const char* type) const {
  writeHeader(out, name_, help_, type);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [values, metric] : metrics_) {
    writeSample(out, name_, zip(labels_, values), metric->value());
  }
}

template <>
void Family<Histogram>::render(std::string& out, const char* type) const {
  writeHeader(out, name_, help_, type);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [values, metric] : metrics_) {
    auto labels = zip(labels_, values);
    std::vector<std::uint64_t> counts = metric->cumulative();
    char le[32];
    for (std::size_t i = 0; i < counts.size(); ++i) {
      auto withLe = labels;
      if (i < metric->bounds().size()) {
        std::snprintf(le, sizeof le, "%g", metric->bounds()[i]);
        withLe.emplace_back("le", le);
      } else {
        withLe.emplace_back("le", "+Inf");
      }
      writeSample(out, name_ + "_bucket", withLe, static_cast<double>(counts[i]));
    }
    writeSample(out, name_ + "_sum", labels, metric->sum());
    writeSample(out, name_ + "_count", labels, static_cast<double>(counts.back()));
  }
}

Family<Counter>& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                          std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.push_back(std::make_unique<Family<Counter>>(
      name, help, std::move(labels), [] { return std::make_unique<Counter>(); }));
  return *counters_.back();
}

Family<Gauge>& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                                      std::vector<std::string> labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  gauges_.push_back(std::make_unique<Family<Gauge>>(name, help, std::move(labels),
                                                     [] { return std::make_unique<Gauge>(); }));
  return *gauges_.back();
}

Family<Histogram>& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                              std::vector<std::string> labels,
                                              std::vector<double> bounds) {
  std::lock_guard<std::mutex> lock(mutex_);
  histograms_.push_back(std::make_unique<Family<Histogram>>(
      name, help, std::move(labels),
      [bounds = std::move(bounds)] { return std::make_unique<Histogram>(bounds); }));
  return *histograms_.back();
}

void MetricsRegistry::addCollector(Collector collector) {
  std::lock_guard<std::mutex> lock(mutex_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& f : counters_) f->render(out, "counter");
  for (const auto& f : gauges_) f->render(out, "gauge");
  for (const auto& f : histograms_) f->render(out, "histogram");
  for (const auto& c : collectors_) c(out);
  return out;
}

}  // namespace isolane
