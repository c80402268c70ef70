#include "front/responses.h"

namespace isolane {

bool isHopByHopHeader(std::string_view name) {
  static const char* const kNames[] = {"connection",     "keep-alive",      "transfer-encoding",
                                       "content-length", "upgrade",         "te",
                                       "trailer",        "proxy-connection"};
  for (const char* n : kNames) {
    if (boost::beast::iequals(boost::beast::string_view(name.data(), name.size()), n)) {
      return true;
    }
  }
  return false;
}

namespace http = boost::beast::http;

void appendResponseHead(const http::response_header<>& head, std::string& out) {
  // As Beast's own serializer writes it (basic_fields::writer): the version, the three digits of
  // the status (checkResponseHead keeps an app's within 100-999), its reason, then each field.
  unsigned version = head.version();
  unsigned code = head.result_int();
  char line[] = {'H', 'T', 'T', 'P', '/', static_cast<char>('0' + version / 10 % 10), '.',
                 static_cast<char>('0' + version % 10), ' ',
                 static_cast<char>('0' + code / 100 % 10), static_cast<char>('0' + code / 10 % 10),
                 static_cast<char>('0' + code % 10), ' '};
  out.append(line, sizeof line);
  boost::beast::string_view reason = head.reason();
  out.append(reason.data(), reason.size()).append("\r\n");
  for (const auto& field : head) {
    boost::beast::string_view name = field.name_string();
    boost::beast::string_view value = field.value();
    out.append(name.data(), name.size()).append(": ");
    out.append(value.data(), value.size()).append("\r\n");
  }
  out.append("\r\n");
}

std::shared_ptr<StringResponse> simpleResponse(unsigned status, std::string body,
                                               const std::string& requestId, unsigned version) {
  auto res = std::make_shared<StringResponse>(static_cast<http::status>(status), version);
  res->set(http::field::content_type, "text/plain; charset=utf-8");
  if (!requestId.empty()) res->set("x-request-id", requestId);
  res->body() = std::move(body);
  res->prepare_payload();
  return res;
}

std::shared_ptr<StringResponse> failureResponse(const AppResponse& failure,
                                                const std::string& requestId, unsigned version) {
  std::string reason;
  switch (failure.failure) {
    case FailureKind::kTimeout:
      reason = "the app did not answer in time";
      break;
    case FailureKind::kOverloaded:
      reason = "the server is at capacity; retry shortly";
      break;
    case FailureKind::kShuttingDown:
      reason = "the server is shutting down";
      break;
    case FailureKind::kUnknownApp:
      reason = "no such app";
      break;
    case FailureKind::kCpuLimit:
      reason = "the app exceeded its CPU time limit";
      break;
    case FailureKind::kHeapLimit:
      reason = "the app exceeded its memory limit";
      break;
    case FailureKind::kWorkerCrashed:
      reason = "the worker running the request crashed; it is safe to retry";
      break;
    case FailureKind::kIsolateRecycled:
      reason = "the app's isolate was replaced while the request ran; it is safe to retry";
      break;
    default:
      reason = "internal server error";
      break;
  }
  auto res = simpleResponse(static_cast<unsigned>(failure.status),
                            reason + " (request id " + requestId + ")\n", requestId, version);
  res->set("x-isolane-error", std::string(failureCode(failure.failure)));
  return res;
}

}  // namespace isolane
